"""The training controller: one worker thread, Start/Pause/Resume/Stop/Reset, ≤ 10 Hz pushes.

Same pattern as :mod:`gui.explorer.controller` (DESIGN.md §3): a persistent ``QThread`` with one
:class:`~gui.train.worker.TrainWorker`; each request is an immutable
:class:`~gui.train.worker.TrainJob` with an id, and messages of other ids are dropped. Items
arrive as ``object`` signals into ``@Slot`` methods here (GUI thread) and only replace the
latest state; a single-shot timer pushes that state to the *visible* views at most every
``push_interval_ms`` (hidden views catch up in :meth:`refresh_view`). A view may ask for fewer
updates with a ``push_interval_s`` attribute (the probe maps: 5 Hz).

Why so few pushes: the training thread and the GUI thread share the GIL, and pyqtgraph's
``setData`` and painting are mostly Python. Every millisecond the GUI spends drawing is a
millisecond the trainer cannot run (benchmarks/bench_train_gui.py): at 25 Hz the curves took
~40 % of the GIL and training ran at ~0.5× its engine-only speed. Training curves read just as
well at 10 Hz.

The step gate: the controller owns a ``threading.Event`` that the engine waits for before each
optimisation step (``iter_training(step_gate=...)``). A push clears it while it updates the
views and sets it again in a ``finally``; the paint follows as a second gated block after one
pass of the event loop (the viewports' updates are disabled in between, so Qt cannot paint the
frame ungated first, or twice). Why: the trainer's many small numpy calls take the GIL in
between the GUI's Python (pyqtgraph ``setData`` and paint code), and one 20-30 ms block of
update + paint was the worst heartbeat stall. Measured (benchmarks/bench_train_gui.py, curves
in front, 2-core machine, load 0.5-1): before, worst stall 46 ms and 0.64× engine-only steps/s;
with the gate, split paint and the curves' steady y ranges and axis widths, 20-23 ms and
0.66-0.75×. Most of that is the split paint and the curves' changes: with the gate disabled,
21-22 ms and 0.65-0.71×, i.e. the gate's own gain is within the noise here. The gate is cleared
only inside :meth:`_gated`, Stop and shutdown set it again, and the engine honours ``cancel``
while gated, so a run can never be left blocked.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from types import MappingProxyType

import numpy as np
from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QObject,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtWidgets import QGraphicsView, QWidget

from engine.config import ScalingRule
from engine.config.train import TrainConfig
from gui.explorer.worker import (
    JobFailed,
    request_thread_stop,
    start_worker_thread,
    stop_worker_thread,
)
from gui.train.results import TrainResults
from gui.train.worker import (
    TrainItem,
    TrainJob,
    TrainJobFinished,
    TrainJobKind,
    TrainWorker,
)

__all__ = [
    "DEFAULT_PUSH_INTERVAL_MS",
    "TRAINING_SWITCH_INTERVAL_S",
    "TrainController",
    "TrainState",
]

#: Python's GIL switch interval while a training job runs (default 5 ms). The worker is a
#: CPU-bound Python thread of many small numpy calls; with the default interval the GUI thread
#: waits up to 5 ms for the GIL after *each* release during a repaint (PySide releases it around
#: Qt calls). Measured on the loaded 2-core machine while the curves repainted at 30 Hz: a 5 ms
#: heartbeat's median lateness 76-87 ms with 5 ms, 0.35 ms with 0.5 ms (worst 150 vs 48 ms).
#: On the idle machine (benchmarks/bench_train_gui.py --switch-interval): at 25 Hz pushes worst
#: stall 42-46 ms with 0.5 ms against 63-64 ms with 5 ms; at today's 10 Hz no difference beyond
#: the noise (41-45 ms either way, same steps/s). Kept for the loaded case; restored when the
#: job ends and in shutdown().
TRAINING_SWITCH_INTERVAL_S = 0.0005

#: Default minimum interval between two pushes to the training views (10 Hz).
DEFAULT_PUSH_INTERVAL_MS = 100


class _GrowingArray:
    """An append-only 1-D array whose filled part is handed out without copying.

    :meth:`view` returns a read-only view of the entries so far; entries never change once
    written and a reallocation leaves the old buffer to the views already handed out, so a
    view stays valid for as long as it is held. Replaces converting a growing Python list to a
    new array on every snapshot (O(steps) per snapshot on the GUI thread).
    """

    def __init__(self, dtype: type) -> None:
        self._data = np.empty(256, dtype=dtype)
        self._size = 0

    def append(self, value: float) -> None:
        if self._size == self._data.size:
            grown = np.empty(2 * self._data.size, dtype=self._data.dtype)
            grown[: self._size] = self._data
            self._data = grown
        self._data[self._size] = value
        self._size += 1

    def view(self) -> np.ndarray:
        out = self._data[: self._size]
        out.flags.writeable = False
        return out


class TrainState:
    """Controller states (plain strings so that signals carry them as ``str``)."""

    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"


class TrainController(QObject):
    """Owns the training worker thread and the latest :class:`TrainResults`.

    Parameters
    ----------
    views
        Objects with ``show_results(results)`` and ``clear()`` (the training views); an optional
        ``push_interval_s`` attribute makes a view skip pushes that come sooner after its last.
    push_interval_ms
        Minimum interval between two pushes to the views (100 ms: ≤ 10 Hz).
    """

    resultsShown = Signal(object)  # TrainResults, after the visible views got them
    stateChanged = Signal(str)  # TrainState value
    progressChanged = Signal(float, float)  # fraction done in [0, 1], ETA in s (NaN: unknown)
    errorOccurred = Signal(str)  # user-facing message of a failed job
    workerStopped = Signal()  # the worker thread has ended (after begin_shutdown/shutdown)
    _jobSubmitted = Signal(object)  # TrainJob -> worker thread (queued)

    def __init__(
        self,
        views: Iterable[object] = (),
        *,
        push_interval_ms: int = DEFAULT_PUSH_INTERVAL_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._views = list(views)
        self._stale: set[object] = set()
        self._results = TrainResults()
        self._job: TrainJob | None = None
        self._next_id = 0
        self._state = TrainState.IDLE
        self._closed = False
        self._dirty = False
        self._last_error = ""
        self._grad_steps = _GrowingArray(np.int64)
        self._grad_norms: dict[ScalingRule, _GrowingArray] = {}
        self._shown_at: dict[object, float] = {}  # view -> perf_counter() of its last push
        self._progress = (0.0, math.nan)  # latest (fraction, ETA s), emitted with each push
        # Active (not paused) running time of the current job, for the ETA.
        self._active_s = 0.0
        self._resumed_at = math.nan
        self._saved_switch_interval: float | None = None
        self.pushes = 0
        # Shared with every job's engine generator: cleared only inside _gated() (see the
        # module docstring); set otherwise.
        self._step_gate = threading.Event()
        self._step_gate.set()
        # Viewports updated by the last push, their updates disabled until the paint timer.
        self._held: list[QWidget] = []

        self._push_timer = QTimer(self)
        self._push_timer.setSingleShot(True)
        self._push_timer.setInterval(push_interval_ms)
        self._push_timer.timeout.connect(self._on_push_timer)
        self._paint_timer = QTimer(self)
        self._paint_timer.setSingleShot(True)
        self._paint_timer.setInterval(0)
        self._paint_timer.timeout.connect(self._paint_held)

        self._worker = TrainWorker()
        self._jobSubmitted.connect(self._worker.run)
        self._worker.itemReady.connect(self._on_item)
        self._worker.failed.connect(self._on_failed)
        self._worker.finished.connect(self._on_finished)
        self._thread = start_worker_thread(self, self._worker, "train-worker")
        self._thread.finished.connect(self._on_thread_finished)

    # ----------------------------------------------------------------------------- accessors
    def state(self) -> str:
        """The current :class:`TrainState`."""
        return self._state

    def results(self) -> TrainResults:
        """The latest results (possibly not pushed yet)."""
        return self._results

    def job(self) -> TrainJob | None:
        """The running job, if any."""
        return self._job

    def last_error(self) -> str:
        """Message of the most recent failed job ("" after a success)."""
        return self._last_error

    def is_running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread.isRunning()

    def wait_stopped(self, timeout_ms: int) -> bool:
        """Block at most ``timeout_ms`` for the thread to end; True if it has ended."""
        return self._thread.wait(max(0, int(timeout_ms)))

    def step_gate(self) -> threading.Event:
        """The engine's step gate (set except while the GUI thread pushes and paints)."""
        return self._step_gate

    # ------------------------------------------------------------------------------ commands
    def start_training(self, config: TrainConfig) -> bool:
        """Train ``config``; the curves restart. Returns False when a job is still running."""
        if not self._can_start():
            return False
        self._grad_steps, self._grad_norms = _GrowingArray(np.int64), {}
        self._results = self._results.replace(
            snapshot=None, grad_steps=np.zeros(0, dtype=int), grad_norms=MappingProxyType({})
        )
        self._submit(
            TrainJob(self._new_id(), TrainJobKind.TRAIN, config, step_gate=self._step_gate)
        )
        return True

    def start_lr_sweep(self, config: TrainConfig, lrs: Sequence[float], seeds: int) -> bool:
        """Sweep ``lrs`` × ``seeds`` for ``config``. Returns False when a job is still running."""
        if not self._can_start():
            return False
        self._results = self._results.replace(sweep=None)
        self._submit(
            TrainJob(
                self._new_id(),
                TrainJobKind.LR_SWEEP,
                config,
                lrs=tuple(float(x) for x in lrs),
                seeds=int(seeds),
                step_gate=self._step_gate,
            )
        )
        return True

    @Slot()
    def pause(self) -> None:
        """Hold the running job between two engine yields."""
        if self._job is not None and self._state == TrainState.RUNNING:
            self._job.pause()
            self._active_s += time.perf_counter() - self._resumed_at
            self._set_state(TrainState.PAUSED)

    @Slot()
    def resume(self) -> None:
        """Continue a paused job."""
        if self._job is not None and self._state == TrainState.PAUSED:
            self._resumed_at = time.perf_counter()
            self._job.resume()
            self._set_state(TrainState.RUNNING)

    @Slot()
    def stop(self) -> None:
        """Cancel the running job (it ends after its current step; results so far stay)."""
        self._step_gate.set()  # never needed here; a gated engine honours cancel anyway
        if self._job is not None and self._state in (TrainState.RUNNING, TrainState.PAUSED):
            self._job.stop()
            self._set_state(TrainState.STOPPING)

    @Slot()
    def reset(self) -> None:
        """Stop any job and clear every view."""
        self.stop()
        self._grad_steps, self._grad_norms = _GrowingArray(np.int64), {}
        self._results = TrainResults()
        self._dirty = False
        self._last_error = ""
        for view in self._views:
            view.clear()  # type: ignore[attr-defined]
        self._stale.clear()
        self._progress = (0.0, math.nan)
        self.progressChanged.emit(0.0, math.nan)

    def refresh_views(self) -> None:
        """Push the latest results to every view now, hidden ones too (e.g. before export)."""
        now = time.perf_counter()
        with self._gated():
            for view in self._views:
                view.show_results(self._results)  # type: ignore[attr-defined]
                self._shown_at[view] = now
            self._stale.clear()

    @Slot(object)
    def refresh_view(self, view: object) -> None:
        """Bring ``view`` up to date (called when a hidden view becomes visible)."""
        if view in self._stale:
            self._stale.discard(view)
            with self._gated():
                view.show_results(self._results)  # type: ignore[attr-defined]
                self._shown_at[view] = time.perf_counter()

    def begin_shutdown(self) -> None:
        """Stop the job and ask the thread to end, without waiting for it.

        :attr:`workerStopped` is emitted (GUI thread) once the thread has ended: a run inside
        one long optimisation step ends when that step returns. Safe to call more than once.
        """
        if self._closed:
            return
        self._closed = True
        self._push_timer.stop()
        self._paint_held()  # re-enables the viewports a push held; paints nothing when closed
        self._step_gate.set()
        if self._job is not None:
            self._job.stop()
        request_thread_stop(self._thread)

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """Stop the job and the thread, waiting at most ``timeout_ms`` (then without bound).

        Returns
        -------
        bool
            True if the thread stopped within ``timeout_ms``.
        """
        self.begin_shutdown()
        stopped = stop_worker_thread(self._thread, timeout_ms)
        self._restore_switch_interval()
        return stopped

    @Slot()
    def _on_thread_finished(self) -> None:
        self._restore_switch_interval()
        self.workerStopped.emit()

    # -------------------------------------------------------------------------------- private
    def _can_start(self) -> bool:
        return not self._closed and self._job is None

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _submit(self, job: TrainJob) -> None:
        self._job = job
        self._last_error = ""
        self._active_s = 0.0
        self._resumed_at = time.perf_counter()
        self._set_state(TrainState.RUNNING)
        self._progress = (0.0, math.nan)
        self.progressChanged.emit(0.0, math.nan)
        if self._saved_switch_interval is None:
            self._saved_switch_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(TRAINING_SWITCH_INTERVAL_S, self._saved_switch_interval))
        self._jobSubmitted.emit(job)

    def _restore_switch_interval(self) -> None:
        if self._saved_switch_interval is not None:
            sys.setswitchinterval(self._saved_switch_interval)
            self._saved_switch_interval = None

    def _set_state(self, state: str) -> None:
        if state != self._state:
            self._state = state
            self.stateChanged.emit(state)

    def _active_seconds(self) -> float:
        if self._state == TrainState.RUNNING:
            return self._active_s + time.perf_counter() - self._resumed_at
        return self._active_s

    @Slot(object)
    def _on_item(self, message: TrainItem) -> None:
        job = self._job
        if self._closed or job is None or message.request_id != job.request_id:
            return
        item = message.item
        if message.kind is TrainJobKind.TRAIN:
            self._record_gradients(item)
            self._results = self._results.replace(
                snapshot=item,
                grad_steps=self._grad_steps.view(),
                grad_norms=MappingProxyType(
                    {rule: v.view() for rule, v in self._grad_norms.items()}
                ),
            )
            fraction = float(item.progress)
        else:
            self._results = self._results.replace(sweep=item)
            fraction = float(item.fraction)
        active = self._active_seconds()
        eta = active * (1.0 - fraction) / fraction if fraction > 0 else math.nan
        # Emitted with the next push: a progress-bar repaint per snapshot (30 Hz) is wasted.
        self._progress = (fraction, eta)
        self._schedule_push()

    def _record_gradients(self, snapshot: object) -> None:
        step = int(snapshot.step)  # type: ignore[attr-defined]
        if step == 0:
            return  # no gradient before the first step
        self._grad_steps.append(step)
        for rule, st in snapshot.rules.items():  # type: ignore[attr-defined]
            alive = st.diverged_at is None or step < st.diverged_at
            norms = self._grad_norms.setdefault(rule, _GrowingArray(np.float64))
            norms.append(float(st.grad_norm) if alive else math.nan)

    @Slot(object)
    def _on_failed(self, message: JobFailed) -> None:
        if self._closed or self._job is None or message.request_id != self._job.request_id:
            return
        self._last_error = message.message
        self.errorOccurred.emit(message.message)

    @Slot(object)
    def _on_finished(self, message: TrainJobFinished) -> None:
        if self._job is None or message.request_id != self._job.request_id:
            return
        self._job = None
        self._restore_switch_interval()
        if self._closed:
            return
        if self._state == TrainState.RUNNING:
            self._active_s += time.perf_counter() - self._resumed_at
        # Show the final state before announcing idle, so idle means "everything is shown".
        if self._dirty:
            self._push(force=True)
        self._set_state(TrainState.IDLE)

    def _schedule_push(self) -> None:
        self._dirty = True
        if not self._push_timer.isActive():
            self._push()
            self._push_timer.start()

    @Slot()
    def _on_push_timer(self) -> None:
        if self._dirty and not self._closed:
            self._push()
            self._push_timer.start()

    def _push(self, force: bool = False) -> None:
        """Show the latest results on the visible views that are due (all when ``force``)."""
        self._dirty = False
        results = self._results
        now = time.perf_counter()
        with self._gated():
            shown = []
            for view in self._views:
                visible = getattr(view, "isVisible", None)
                if visible is not None and not visible():
                    self._stale.add(view)
                    continue
                # 0.9: the push timer's jitter must not make a 200 ms view wait for 300 ms.
                interval = 0.9 * float(getattr(view, "push_interval_s", 0.0))
                if not force and now - self._shown_at.get(view, -math.inf) < interval:
                    self._dirty = True  # this view still owes the latest results: push again
                    continue
                view.show_results(results)  # type: ignore[attr-defined]
                self._shown_at[view] = now
                self._stale.discard(view)
                shown.append(view)
            self.pushes += 1
            # Before the paint: the progress bar and status line go into the same repaint.
            self.progressChanged.emit(*self._progress)
            self.resultsShown.emit(results)
        # The paint is a second gated block after the event loop's next pass: a push is ~10 ms
        # of setData and ~10 ms of painting, and two blocks with timers and input handled in
        # between stall the loop half as long as one.
        if shown:
            self._hold(shown)
            self._paint_timer.start()

    def _hold(self, views: Sequence[object]) -> None:
        """Let the scenes of ``views`` take in their changes now, painting nothing yet.

        In Qt 6.10 a scene's queued dirty-item processing paints the window synchronously: left
        to the event loop it would paint ungated, right after the push. With the viewport's
        updates disabled it only records the change; :meth:`_paint_held` enables them again
        (which schedules a full update) and delivers the paint.
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
    def _gated(self) -> Iterator[None]:
        """Hold the trainer's next step while the body updates or paints views."""
        if not self._step_gate.is_set():  # nested: the outer block sets it again
            yield
            return
        self._step_gate.clear()
        try:
            yield
        finally:
            self._step_gate.set()

    @Slot()
    def _paint_held(self) -> None:
        """Paint the viewports held by the last push, with the step gate closed."""
        held, self._held = self._held, []
        self._paint_timer.stop()
        if not held:
            return
        with self._gated():
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
