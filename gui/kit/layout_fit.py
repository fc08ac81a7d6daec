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

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

__all__ = ["SceneMinimumTracker", "scroll_area_for", "track_scene_minimums"]


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
