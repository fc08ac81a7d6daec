"""Items that live in a cell of a plot layout: a label that wraps, a legend that stays put.

Both fix a pyqtgraph behaviour that moved the plots of a view when a text changed; the shared
look (colours, sizes, frame) is :func:`gui.kit.style.make_label`'s and ``make_legend``'s.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

__all__ = ["CellLegend", "WrappingLabel"]


class CellLegend(pg.LegendItem):
    """A legend that stays where its layout cell puts it.

    pyqtgraph's ``updateSize`` (run by every ``addItem``, ``removeItem`` and ``clear``) sets
    the geometry to (0, 0, w, h), which puts a relabelled legend in its parent's corner, half
    its frame outside the picture, until the next resize. Here the layout places it again.
    """

    #: The most columns the view wants; fewer when the window is narrow (see
    #: :func:`gui.kit.layout_fit.fit_legend_columns`).
    most_columns = 1

    def updateSize(self) -> None:  # pyqtgraph override
        self.updateGeometry()


class WrappingLabel(pg.LabelItem):
    """A :class:`pyqtgraph.LabelItem` whose text wraps to its cell instead of widening it.

    A plain LabelItem is at least its text's one-line width wide, so a long note would make
    the layout wider than the window and cut off the right-hand plot.
    """

    MIN_WIDTH = 160.0

    _reserved = ""
    _reserved_height: tuple[str, float, float] | None = None  # (text, width, height)

    def reserve_text(self, text: str) -> None:
        """Keep the height that ``text`` would need (at the cell's width) even while a shorter
        text is shown, so that a note which gains or loses a line while points stream in does
        not re-lay out the plots of its view. ``""`` reserves nothing."""
        if text != self._reserved:
            self._reserved = text
            self.updateMin()

    def _text_height(self, text: str) -> float:
        """Height of ``text`` in this label's style, wrapped to the label's current width."""
        # The same span as pyqtgraph's setText builds (labels here set colour and size only).
        color = pg.mkColor(self.opts.get("color") or pg.getConfigOption("foreground"))
        css = f"color: {color.name(QColor.NameFormat.HexArgb)}"
        if "size" in self.opts:
            css += f"; font-size: {self.opts['size']}"
        document = self.item.document().clone()
        document.setHtml(f"<span style='{css}'>{text}</span>")
        document.setTextWidth(self.item.textWidth())
        return document.size().height()

    def resizeEvent(self, ev: object) -> None:  # pyqtgraph/Qt override
        width = self.rect().width()
        if width > 0 and abs(self.item.textWidth() - width) > 0.5:
            self.item.setTextWidth(width)
            # Height for width: the wrapped text may need more or fewer lines now.
            if abs(self.itemRect().height() - self.minimumHeight()) > 0.5:
                self.updateMin()
        super().resizeEvent(ev)

    def updateMin(self) -> None:  # pyqtgraph override
        # Constant width hints: the wrapped width would make the layout depend on the sizes
        # the widget had before (two exports in a row would differ), the one-line width would
        # re-lay out every plot whenever the text changes.
        height = self.itemRect().height()
        if self._reserved:
            # Measured once per text and width, not on every setText of a streaming note.
            width = self.item.textWidth()
            cached = self._reserved_height
            if cached is None or cached[:2] != (self._reserved, width):
                cached = (self._reserved, width, self._text_height(self._reserved))
                self._reserved_height = cached
            height = max(height, cached[2])
        self.setMinimumWidth(self.MIN_WIDTH)
        self.setMinimumHeight(height)
        self._sizeHint = {
            Qt.SizeHint.MinimumSize: (self.MIN_WIDTH, height),
            Qt.SizeHint.PreferredSize: (self.MIN_WIDTH, height),
            Qt.SizeHint.MaximumSize: (-1, -1),
            Qt.SizeHint.MinimumDescent: (0, 0),
        }
        self.updateGeometry()
