"""The Train tab's split paint: a push's update and its paint in two event-loop passes.

A push updates the views inside :meth:`SplitPaint.timed`; :meth:`SplitPaint.paint_later` holds
the viewports it changed and paints them in a second timed block after one pass of the event
loop, so two short stalls of the event loop replace one long one (in
``benchmarks/bench_train_gui.py`` the curves' worst stall is 11-13 ms with it, 17-25 without).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer, Slot
from PySide6.QtWidgets import QGraphicsView, QWidget

__all__ = ["SplitPaint"]


class SplitPaint(QObject):
    """Paints the views a push changed one event-loop pass after it, and times both."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._closed = False
        self._depth = 0  # nesting of timed blocks: only the outermost counts
        #: Seconds spent in timed blocks so far (view updates and paints).
        self.busy_s = 0.0
        # Viewports updated by the last push, their updates disabled until the paint timer.
        self._held: list[QWidget] = []
        self._paint_timer = QTimer(self)
        self._paint_timer.setSingleShot(True)
        self._paint_timer.setInterval(0)
        self._paint_timer.timeout.connect(self._paint_held)

    def paint_later(self, views: Sequence[object]) -> None:
        """Hold the viewports of ``views`` and paint them after the event loop's next pass."""
        if views:
            # Timed: the scenes' dirty-item processing is Python (pyqtgraph's bounding
            # rectangles), 1-3 ms of each curves push.
            with self.timed():
                self._hold(views)
            self._paint_timer.start()

    def close(self) -> None:
        """Re-enable every held viewport and paint nothing more."""
        self._closed = True
        self._paint_held()

    def _hold(self, views: Sequence[object]) -> None:
        """Let the scenes of ``views`` take in their changes now, painting nothing yet.

        In Qt 6.10 a scene's queued dirty-item processing paints the window synchronously: left
        to the event loop it would paint at once, right after the push, and untimed. With the
        viewport's updates disabled it only records the change; :meth:`_paint_held` enables
        them again (which schedules a full update) and delivers the paint.
        """
        for graphics in _graphics_views(views):
            viewport = graphics.viewport()
            if viewport.updatesEnabled():
                viewport.setUpdatesEnabled(False)
                self._held.append(viewport)
            scene = graphics.scene()
            if scene is not None:
                QCoreApplication.sendPostedEvents(scene, QEvent.Type.MetaCall)

    @contextlib.contextmanager
    def timed(self) -> Iterator[None]:
        """Count the time of the body (views' updates or paints) in :attr:`busy_s`."""
        self._depth += 1
        start = time.perf_counter()
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:  # a nested block is counted by the outer one
                self.busy_s += time.perf_counter() - start

    @Slot()
    def _paint_held(self) -> None:
        """Paint the viewports held by the last push, in a timed block."""
        held, self._held = self._held, []
        self._paint_timer.stop()
        if not held:
            return
        with self.timed():
            for viewport in held:
                viewport.setUpdatesEnabled(True)  # never leave a viewport frozen
            if self._closed:
                return
            windows = dict.fromkeys(viewport.window() for viewport in held)
            for window in windows:
                QCoreApplication.sendPostedEvents(window, QEvent.Type.UpdateRequest)


def _graphics_views(views: Sequence[object]) -> list[QGraphicsView]:
    """The visible graphics views inside ``views`` (a train view is a container widget)."""
    return [
        graphics
        for view in views
        if isinstance(view, QWidget)
        for graphics in view.findChildren(QGraphicsView)
        if graphics.isVisible()
    ]

