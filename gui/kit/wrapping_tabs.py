"""Tab widgets whose tabs wrap onto a second row instead of hiding behind scroll arrows.

A ``QTabBar`` keeps one row: at 1024×768 the explorer's nine view titles do not fit, and the
last views (Precision, Length) would be reachable only through a small arrow that new users do
not notice. :class:`WrappingTabWidget` is a ``QTabWidget`` (the same API for pages, titles, current
page and signals) whose own bar is hidden; :attr:`WrappingTabWidget.bar` shows one checkable
button per page in a :class:`FlowLayout`, so every title stays visible at any width.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt, Slot
from PySide6.QtWidgets import (
    QLayout,
    QLayoutItem,
    QSizePolicy,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
    QWidgetItem,
)

from gui.kit.layout_fit import scroll_area_for

__all__ = ["FlowLayout", "WrappingTabWidget", "tab_page"]

_BAR_STYLE = """
QToolButton {
    border: 1px solid palette(mid);
    border-bottom: 3px solid palette(midlight);
    border-radius: 3px;
    padding: 2px 8px;
    background: palette(button);
}
QToolButton:checked {
    background: palette(base);
    border-color: palette(highlight);
}
QToolButton:hover:!checked { background: palette(light); }
"""


class FlowLayout(QLayout):
    """Items left to right, starting a new row where the next one would not fit.

    It reports :meth:`heightForWidth`, so the widget holding it grows by a row when narrowed.
    """

    def __init__(self, parent: QWidget | None = None, spacing: int = 3,
                 hint_columns: int | None = None) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._hint_columns = hint_columns  # items per row in the size hint (None: all)
        self.setSpacing(spacing)
        self.setContentsMargins(QMargins(4, 3, 4, 2))

    def addItem(self, item: QLayoutItem) -> None:  # Qt override
        """Append ``item`` (``addWidget`` calls this)."""
        self._items.append(item)

    def insertWidget(self, index: int, widget: QWidget) -> None:
        """Place ``widget`` at position ``index`` of the flow."""
        self.addChildWidget(widget)
        self._items.insert(index, QWidgetItem(widget))
        self.invalidate()

    def count(self) -> int:  # Qt override
        """How many items the flow holds."""
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # Qt override
        """The item at ``index`` (None past the end, as Qt expects)."""
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # Qt override
        """Remove and return the item at ``index``."""
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:  # Qt override
        """Neither: the flow takes the width it is given and the height its rows need."""
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # Qt override
        """Yes: fewer columns, more rows."""
        return True

    def heightForWidth(self, width: int) -> int:  # Qt override
        """The height the rows need at ``width``."""
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # Qt override
        """Lay the items out inside ``rect``."""
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:  # Qt override
        """All items in one row, or ``hint_columns`` to a row."""
        margins = self.contentsMargins()
        per_row = self._hint_columns or max(len(self._items), 1)
        rows = [self._items[i:i + per_row] for i in range(0, len(self._items), per_row)]
        width = max((sum(item.sizeHint().width() for item in row)
                     + self.spacing() * (len(row) - 1) for row in rows), default=0)
        height = sum(max(item.sizeHint().height() for item in row) for row in rows)
        height += self.spacing() * max(len(rows) - 1, 0)
        return QSize(width + margins.left() + margins.right(),
                     height + margins.top() + margins.bottom())

    def minimumSize(self) -> QSize:  # Qt override
        """The widest item: any narrower and it would be cut."""
        margins = self.contentsMargins()
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return size.grownBy(margins)

    def _place(self, rect: QRect, *, move: bool) -> int:
        margins = self.contentsMargins()
        area = rect.marginsRemoved(margins)
        x, y, row_height = area.x(), area.y(), 0
        gap = self.spacing()
        for item in self._items:
            if item.widget() is not None and item.widget().isHidden():
                continue
            hint = item.sizeHint()
            if x > area.x() and x + hint.width() > area.right() + 1:
                x = area.x()
                y += row_height + gap
                row_height = 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + gap
            row_height = max(row_height, hint.height())
        return y + row_height - rect.y() + margins.bottom()


class _TabBarRow(QWidget):
    """The button rows above a :class:`WrappingTabWidget`."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("wrappingTabBar")
        self.flow = FlowLayout(self)
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.setStyleSheet(_BAR_STYLE)

    def minimumSizeHint(self) -> QSize:  # Qt override
        """The widest button (the flow wraps the others below it)."""
        return self.flow.minimumSize()


class WrappingTabWidget(QTabWidget):
    """A ``QTabWidget`` whose tab titles wrap onto more rows in :attr:`bar`.

    Place :attr:`bar` above the widget (:func:`tab_page` does); pages, titles, the current
    page and ``currentChanged`` work as on any ``QTabWidget``, and Ctrl+Tab still cycles.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        self.bar = _TabBarRow()
        self._buttons: list[QToolButton] = []
        super().__init__(parent)
        self.setDocumentMode(True)
        self.tabBar().hide()
        self.currentChanged.connect(self._check_current)

    # -- QTabWidget hooks ---------------------------------------------------------------------
    def tabInserted(self, index: int) -> None:  # Qt override
        """Add the page's button at the same place."""
        super().tabInserted(index)
        button = QToolButton()
        button.setCheckable(True)
        button.setAutoRaise(False)
        button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        button.setText(self.tabText(index))
        button.clicked.connect(self._on_button)
        self._buttons.insert(index, button)
        self.bar.flow.insertWidget(index, button)
        self._check_current(self.currentIndex())

    def tabRemoved(self, index: int) -> None:  # Qt override
        """Drop the page's button."""
        super().tabRemoved(index)
        button = self._buttons.pop(index)
        self.bar.flow.removeWidget(button)
        button.deleteLater()
        self._check_current(self.currentIndex())

    def setTabText(self, index: int, text: str) -> None:
        """Title page ``index`` (its button too)."""
        super().setTabText(index, text)
        if 0 <= index < len(self._buttons):
            self._buttons[index].setText(text)
            self.bar.flow.invalidate()
            self.bar.updateGeometry()

    # -- for tests and screenshots ------------------------------------------------------------
    def tab_button(self, index: int) -> QToolButton:
        """The button that brings page ``index`` to the front."""
        return self._buttons[index]

    # -- internals ----------------------------------------------------------------------------
    @Slot()
    def _on_button(self) -> None:
        button = self.sender()
        if button in self._buttons:
            self.setCurrentIndex(self._buttons.index(button))
        self._check_current(self.currentIndex())  # a click on the current page unchecked it

    @Slot(int)
    def _check_current(self, index: int) -> None:
        for position, button in enumerate(self._buttons):
            button.setChecked(position == index)


def tab_page(tabs: WrappingTabWidget, scroll_name: str) -> QWidget:
    """The tab rows above ``tabs`` in a scroll area (named ``scroll_name``): the rows stay in
    place while a page too large for the window scrolls."""
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(0)
    layout.addWidget(tabs.bar)
    layout.addWidget(scroll_area_for(tabs, scroll_name), 1)
    return page
