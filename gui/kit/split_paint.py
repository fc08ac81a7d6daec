"""Split paint: a push's update, the scenes' preparation and the paint in separate event-loop
passes, so that several short stalls of the event loop replace one long one.

A push updates the views inside :meth:`SplitPaint.timed`; :meth:`SplitPaint.paint_later` holds
the viewports it changed. Later passes, a few milliseconds at a time, let each scene take in its
changes and prepare it the way a paint would: each plot's auto-range, then the pictures of the
axes whose range or size changed. The last pass paints what is held. ``benchmarks/bench_gui.py`` and
``benchmarks/bench_train_gui.py`` print the worst stall this leaves.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from functools import partial

import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer, Signal, Slot
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView, QWidget

from gui.kit.axes import PlotAxis

__all__ = ["SplitPaint"]

#: Preparation steps run in one event-loop pass until this many seconds have gone by; a step is
#: one plot's auto-range or one axis picture.
PASS_BUDGET_S = 0.008


class SplitPaint(QObject):
    """Prepares and paints the views a push changed in later event-loop passes; times it all."""

    #: Emitted after the held viewports were painted (GUI thread).
    painted = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._closed = False
        self._depth = 0  # nesting of timed blocks: only the outermost counts
        #: Seconds spent in timed blocks so far (view updates, preparation and paints).
        self.busy_s = 0.0
        # Viewports updated by the pushes, their updates disabled until the paint.
        self._held: list[QWidget] = []
        self._pending = False
        # Preparation steps still to run before the paint, in order: (item, its method).
        self._steps: deque[tuple[object, Callable[[], None]]] = deque()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._next_pass)

    def paint_later(self, views: Sequence[object]) -> None:
        """Hold the viewports of ``views``; prepare and paint them in the next passes, then emit
        :attr:`painted` (also for no views)."""
        if self._closed:
            return
        with self.timed():
            self._hold(views)
        self._pending = True
        self._timer.start()

    def is_pending(self) -> bool:
        """True until the paint of the last :meth:`paint_later` is done."""
        return self._pending

    def close(self) -> None:
        """Re-enable every held viewport and prepare or paint nothing more."""
        self._closed = True
        self._steps.clear()
        self._paint_held()

    def _hold(self, views: Sequence[object]) -> None:
        """Disable the updates of the viewports of ``views``; queue their scenes' work.

        In Qt 6.10 a scene's queued dirty-item processing paints the window synchronously: left
        to the event loop it would paint at once, right after the push. With the viewport's
        updates disabled it only records the change; :meth:`_paint_held` enables them again
        (which schedules a full update) and delivers the paint. The processing itself (Python:
        pyqtgraph's bounding rectangles) is the first step of a later pass.
        """
        for graphics in _graphics_views(views):
            viewport = graphics.viewport()
            if viewport.updatesEnabled():
                viewport.setUpdatesEnabled(False)
                self._held.append(viewport)
            scene = graphics.scene()
            if scene is not None:
                self._steps.append((scene, partial(self._take_in, scene)))

    def _take_in(self, scene: QGraphicsScene) -> None:
        """Let ``scene`` process its changes, then queue what its paint would prepare."""
        QCoreApplication.sendPostedEvents(scene, QEvent.Type.MetaCall)
        self._steps.extend(_preparation_steps(scene))

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
    def _next_pass(self) -> None:
        """Run preparation steps for one pass's budget; paint once none is left."""
        if not self._steps:
            self._paint_held()
            return
        with self.timed():
            start = time.perf_counter()
            while self._steps and time.perf_counter() - start < PASS_BUDGET_S:
                item, step = self._steps.popleft()
                if shiboken6.isValid(item):  # a view may have dropped a plot meanwhile
                    step()
        self._timer.start()

    def _paint_held(self) -> None:
        """Paint the viewports held by the pushes, in a timed block."""
        held, self._held = self._held, []
        self._timer.stop()
        pending, self._pending = self._pending, False
        with self.timed():
            for viewport in held:
                viewport.setUpdatesEnabled(True)  # never leave a viewport frozen
            if self._closed:
                return
            windows = dict.fromkeys(viewport.window() for viewport in held)
            for window in windows:
                QCoreApplication.sendPostedEvents(window, QEvent.Type.UpdateRequest)
        if pending:
            self.painted.emit()


def _graphics_views(views: Sequence[object]) -> list[QGraphicsView]:
    """The visible graphics views among ``views`` and inside them (container widgets)."""
    found = []
    for view in views:
        if isinstance(view, QWidget):
            found += [view] if isinstance(view, QGraphicsView) else []
            found += view.findChildren(QGraphicsView)
    return [graphics for graphics in found if graphics.isVisible()]


def _preparation_steps(scene: QGraphicsScene) -> list[tuple[object, Callable[[], None]]]:
    """What the next paint of ``scene`` would do first: every plot's auto-range, then the
    picture of every visible axis (each a no-op when nothing changed)."""
    boxes, axes = [], []
    for item in scene.items():
        if isinstance(item, pg.ViewBox):
            boxes.append(item)
        elif isinstance(item, PlotAxis) and item.isVisible():
            axes.append(item)
    return [*((box, box.prepareForPaint) for box in boxes),
            *((axis, axis.prepare_picture) for axis in axes)]
