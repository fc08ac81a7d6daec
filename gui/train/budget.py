"""The Train tab's split paint and push budget: the views' time, measured and bounded.

A push updates the views inside :meth:`SplitPaint.timed`; :meth:`SplitPaint.paint_later` holds
the viewports it changed and paints them in a second timed block after one pass of the event
loop, so two short stalls of the event loop replace one long one. :class:`PushBudget` spaces
the pushes so that those blocks take at most a share of the time.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence

from PySide6.QtCore import QCoreApplication, QEvent, QObject, QTimer, Slot
from PySide6.QtWidgets import QGraphicsView, QWidget

__all__ = ["PushBudget", "SplitPaint"]


class SplitPaint(QObject):
    """Paints the views a push changed one event-loop pass after it, and times both."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._closed = False
        self._depth = 0  # nesting of timed blocks: only the outermost counts
        #: Seconds spent in timed blocks so far (view updates and paints): the GUI's share of
        #: the time, which the controller keeps within a budget.
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
            # Timed, so that the budget counts it: the scenes' dirty-item processing is
            # Python (pyqtgraph's bounding rectangles), 1-3 ms of each curves push.
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


class PushBudget(QObject):
    """Spaces the pushes to the views so that they take at most ``share`` of the wall time.

    A push (update and paint) that took c seconds inside ``paint``'s timed blocks lets the
    next one start c / ``share`` after it; results that come sooner wait for a single-shot
    timer, and newer ones only replace them. ``schedule`` hands the latest results to the
    pusher (GUI thread).
    """

    def __init__(self, paint: SplitPaint, share: float, schedule: Callable[[], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._paint = paint
        self._share = share
        self._schedule = schedule
        self._last_push_at = -math.inf
        self._busy_mark = 0.0  # the paint's busy time when the last push began
        self._waiting = False  # results newer than the last push exist
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._on_timeout)

    def request(self) -> None:
        """New results: schedule them now if the budget allows, else when it does."""
        self._waiting = True
        if not self._timer.isActive():
            self._schedule_when_due()

    def _schedule_when_due(self) -> None:
        # The cost is read again whenever this runs: results that arrive between a push's
        # update and its paint see only the update's cost, and the timer they start must not
        # push before the paint has been paid for too. (Before, a timeout pushed at once: in
        # benchmarks/bench_train_gui.py the curves, whose paint costs about as much as their
        # update, took up to 14 % of the time instead of VIEW_SHARE.)
        cost = self._paint.busy_s - self._busy_mark
        wait = self._last_push_at + cost / self._share - time.perf_counter()
        if wait > 0:
            self._timer.start(math.ceil(1000 * wait))
        else:
            self._schedule()

    def pushed(self) -> None:
        """A push begins (its timed update and paint count from here on)."""
        self._last_push_at = time.perf_counter()
        self._busy_mark = self._paint.busy_s
        self._waiting = False

    def settle(self) -> None:
        """The job ended: schedule waiting results at once (the run's last state shows)."""
        self._timer.stop()
        if self._waiting:
            self._schedule()

    def discard(self) -> None:
        """Forget waiting results and stop the timer (Reset, shutdown)."""
        self._timer.stop()
        self._waiting = False

    @Slot()
    def _on_timeout(self) -> None:
        if self._waiting:
            self._schedule_when_due()


def _graphics_views(views: Sequence[object]) -> list[QGraphicsView]:
    """The visible graphics views inside ``views`` (a train view is a container widget)."""
    return [
        graphics
        for view in views
        if isinstance(view, QWidget)
        for graphics in view.findChildren(QGraphicsView)
        if graphics.isVisible()
    ]

