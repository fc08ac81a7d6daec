"""Let plot areas scroll instead of being cut off when the window is too small for them.

A pyqtgraph ``GraphicsView`` sizes its scene's layout to the viewport, but a layout cannot
shrink below its own minimum (axis widths, titles, legends): in a narrow window (1024×768 with a
dock open, or side-by-side mode) the right-hand plots would be drawn outside the viewport, cut
off and unreachable. Here the view's *widget* minimum follows the scene layout's minimum while the
view is shown, and the tab widgets sit in scroll areas: when the layout needs more room than the
window has, a scroll bar reaches the rest. Views that can reflow (the gradient view) shrink
their minimum first, so they rarely need the scroll bar. """

from __future__ import annotations

import math
from collections.abc import Callable

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

__all__ = ["SceneMinimumTracker", "WidthFollower", "fit_legend_columns", "legend_width",
           "scroll_area_for", "track_scene_minimums"]


class SceneMinimumTracker(QObject):
    """Keep ``view``'s minimum widget size equal to its scene layout's minimum while shown.

    Hidden views (other tabs) get no minimum, so that a crowded tab does not widen the others:
    a ``QStackedWidget`` takes the largest minimum of all its pages, shown or not.
    """

    def __init__(self, view: pg.GraphicsView) -> None:
        super().__init__(view)
        self._view = view
        view.installEventFilter(self)
        # Graphics layouts post LayoutRequest to their top-level graphics widget whenever a
        # size hint inside changes (new title, legend entry, rebuilt grid).
        self._central = view.centralWidget
        self._central.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """Re-read the minimum on show/hide of the view and on every layout request."""
        kind = event.type()
        if kind == QEvent.Type.LayoutRequest or (
            watched is self._view and kind in (QEvent.Type.Show, QEvent.Type.Hide)
        ):
            self.update_minimum()
        return False

    def minimum_needed(self) -> QSize:
        """The widget size at which the scene's layout fits the viewport."""
        central = self._view.centralWidget
        hint = central.effectiveSizeHint(Qt.SizeHint.MinimumSize)
        frame = 2 * self._view.frameWidth()
        scale = getattr(self._view, "scale_factor", lambda: 1.0)()  # presentation mode
        return QSize(math.ceil(hint.width() * scale) + frame,
                     math.ceil(hint.height() * scale) + frame)

    def update_minimum(self) -> None:
        """Apply :meth:`minimum_needed` (or no minimum while hidden)."""
        view = self._view
        size = self.minimum_needed() if view.isVisible() else QSize(0, 0)
        if size != view.minimumSize():
            view.setMinimumSize(size)


def track_scene_minimums(root: QWidget) -> list[SceneMinimumTracker]:
    """Attach a :class:`SceneMinimumTracker` to every pyqtgraph view inside ``root``."""
    return [SceneMinimumTracker(view) for view in root.findChildren(pg.GraphicsView)]


class _FittingScrollArea(QScrollArea):
    """A scroll area that notices when its content's minimum size changes.

    QScrollArea re-sizes its content on its *own* LayoutRequest, but a content widget without
    a parent layout posts that request to the scroll area's viewport, which drops it: a view
    that grew its minimum would stay squeezed (and cut off) until the window is resized.
    """

    def viewportEvent(self, event: QEvent) -> bool:  # Qt override
        if event.type() == QEvent.Type.LayoutRequest:
            self.event(event)
        return super().viewportEvent(event)


def scroll_area_for(widget: QWidget, name: str) -> QScrollArea:
    """Return a frameless scroll area that resizes ``widget`` and scrolls when it cannot."""
    area = _FittingScrollArea()
    area.setObjectName(name)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidget(widget)
    return area


def legend_width(legend: pg.LegendItem, columns: int) -> float:
    """The least width of ``legend`` laid out in ``columns`` columns (its frame included).

    pyqtgraph fills a legend row by row, entry ``i`` in column ``i % columns``; each column is
    as wide as its widest sample and label.
    """
    widths = [0.0] * max(columns, 1)
    minimum = Qt.SizeHint.MinimumSize
    for index, (sample, label) in enumerate(legend.items):
        entry = (sample.effectiveSizeHint(minimum).width()
                 + label.effectiveSizeHint(minimum).width())
        widths[index % len(widths)] = max(widths[index % len(widths)], entry)
    grid = legend.layout
    left, _top, right, _bottom = grid.getContentsMargins()
    return sum(widths) + grid.horizontalSpacing() * (2 * len(widths) - 1) + left + right


def fit_legend_columns(legend: pg.LegendItem, room: float, most: int) -> int:
    """Give ``legend`` the most columns (up to ``most``) whose width fits ``room`` (scene
    units), at least one; return that count. Set only on a change: a legend laid out again
    asks its layout to run again, which would come back here."""
    count = next((c for c in range(max(most, 1), 1, -1) if legend_width(legend, c) <= room), 1)
    if count != legend.columnCount:
        legend.setColumnCount(count)
    return count


class WidthFollower(QObject):
    """Tell ``view`` (through ``fit(width)``) the width the window gives it, whenever that
    changes or the view is shown.

    That width is the viewport of the scroll area around the view less what lies beside the
    view in the area (tab frames), not the view's own width: a view never shrinks below the
    minimum of its current arrangement, so a too-wide legend or grid would otherwise keep the
    view too wide for good and the area would scroll sideways.
    """

    def __init__(self, view: QWidget, fit: Callable[[int], None]) -> None:
        super().__init__(view)
        self._view, self._fit = view, fit
        self._area: QScrollArea | None = None
        view.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """Follow the area's viewport on resize; find the area when the view is shown."""
        kind = event.type()
        if kind not in (QEvent.Type.Show, QEvent.Type.Resize):
            return False
        # Events still reach the filter while the view is torn down, its wrapper half gone.
        view = getattr(self, "_view", None)
        if view is None or not shiboken6.isValid(view) or not shiboken6.isValid(self):
            return False
        if watched is view and kind == QEvent.Type.Show:
            self._follow_area()
            self.refit()
        elif kind == QEvent.Type.Resize and view.isVisible():
            self.refit()
        return False

    def available_width(self) -> int:
        """The width (px) the view may take without the area scrolling sideways."""
        view, area = self._view, self._area
        if area is None or area.widget() is None:
            return view.width()
        beside = max(area.widget().width() - view.width(), 0)
        return area.viewport().width() - beside

    def refit(self) -> None:
        """Call ``fit`` with :meth:`available_width` (after a change of content, too)."""
        self._fit(self.available_width())

    def _follow_area(self) -> None:
        area = self._view.parentWidget()
        while area is not None and not isinstance(area, QScrollArea):
            area = area.parentWidget()
        if area is not self._area:
            if self._area is not None:
                self._area.viewport().removeEventFilter(self)
            self._area = area
            if area is not None:
                area.viewport().installEventFilter(self)
