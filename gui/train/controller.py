"""The training controller: one worker thread, Start/Pause/Resume/Stop/Reset, pushes to views.

Same job kit as :mod:`gui.explorer.controller`: a :class:`~gui.kit.jobs.WorkerHost` runs one
:class:`~gui.train.worker.TrainWorker` in its thread; each request is a kit
:class:`~gui.kit.jobs.Job` of an immutable :class:`~gui.train.worker.TrainTask`, and the host
hands on only the messages of the job it runs, and none once closed. Items reach the handlers
here (GUI thread) and only replace the latest state; a :class:`~gui.kit.view_push.ViewPusher` pushes
that state to the *visible* views at most every ``push_interval_ms`` (hidden views catch up in
:meth:`refresh_view`).

The worker thread only relays: the jobs run in a child process
(:class:`~engine.training.process.TrainingProcess`, one per controller, ended when the worker
thread ends), so that the trainer, a Python loop of many small numpy calls, never shares an
interpreter lock with the GUI's Python (``benchmarks/bench_train_gui.py`` states the GUI's
training speed against the engine alone).

A push's paint follows its update after one pass of the event loop
(:class:`~gui.kit.split_paint.SplitPaint`), so two short stalls of the event loop replace one
long one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

from PySide6.QtCore import QObject, Signal, Slot

from engine.config.train import TrainConfig
from engine.training.process import TrainingProcess
from gui.kit.jobs import HostOwner, Job, JobFailed, JobFinished, WorkerHost
from gui.kit.split_paint import SplitPaint
from gui.kit.view_push import ViewPusher
from gui.train.results import TrainResults
from gui.train.state import TrainState
from gui.train.worker import TrainItem, TrainJobKind, TrainTask, TrainWorker

__all__ = [
    "DEFAULT_PUSH_INTERVAL_MS",
    "TrainController",
]

#: Default minimum interval between two pushes to the training views (10 Hz).
DEFAULT_PUSH_INTERVAL_MS = 100


class TrainController(HostOwner):
    """Owns the training worker thread and the latest :class:`TrainResults`.

    Parameters
    ----------
    views
        Objects with ``show_results(results)`` and ``clear()`` (the training views).
    push_interval_ms
        Minimum interval between two pushes to the views (100 ms: ≤ 10 Hz).
    """

    resultsShown = Signal(object)  # TrainResults, after the visible views got them
    stateChanged = Signal(object)  # TrainState
    progressChanged = Signal(float, float)  # fraction done in [0, 1], ETA in s (NaN: unknown)
    errorOccurred = Signal(str)  # user-facing message of a failed job
    tensorsWritten = Signal(str)  # path of the tensor file an export job wrote
    workerStopped = Signal()  # the worker thread has ended (after begin_shutdown/shutdown)

    def __init__(
        self,
        views: Iterable[object] = (),
        *,
        push_interval_ms: int = DEFAULT_PUSH_INTERVAL_MS,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._views = list(views)
        self._results = TrainResults()
        self._state = TrainState.IDLE
        self._last_error = ""
        self._progress = (0.0, math.nan)  # latest (fraction, ETA s), emitted with each push
        # Active (not paused) running time of the current job, for the ETA.
        self._active_s = 0.0
        self._resumed_at = math.nan
        self.pushes = 0
        self._paint = SplitPaint(self)

        self._pusher = ViewPusher(
            self._views, self.results, push_interval_ms, pushed=self._on_pushed,
            after_push=self._paint.paint_later, guard=self._paint.timed, parent=self,
        )

        self._process = TrainingProcess()
        self._host = WorkerHost(TrainWorker(self._process), "train-worker", self, handlers={
            TrainItem: self._on_item, JobFailed: self._on_failed})
        self._hosts = [self._host]
        self._host.jobFinished.connect(self._on_finished)
        self._host.workerStopped.connect(self._on_thread_finished)

    # ----------------------------------------------------------------------------- accessors
    def state(self) -> TrainState:
        """The current :class:`TrainState`."""
        return self._state

    def results(self) -> TrainResults:
        """The latest results (possibly not pushed yet)."""
        return self._results

    def job(self) -> Job[TrainTask] | None:
        """The running job, if any."""
        job: Job[TrainTask] | None = self._host.running()
        return job

    def last_error(self) -> str:
        """Message of the most recent failed job ("" after a success)."""
        return self._last_error

    def has_trained_model(self) -> bool:
        """True when the current training run has taken a step (its q and k can be written)."""
        snap = self._results.snapshot
        return snap is not None and snap.step > 0

    def views_busy_s(self) -> float:
        """Seconds the views have taken so far while jobs ran (updates, scene work, paints)."""
        return self._paint.busy_s

    # ------------------------------------------------------------------------------ commands
    def start_training(self, config: TrainConfig) -> bool:
        """Train ``config``; the curves restart. Returns False when a job is still running."""
        if not self._submit(TrainTask(TrainJobKind.TRAIN, config)):
            return False
        self._results = self._results.replace(snapshot=None)
        self._started()
        return True

    def start_lr_sweep(self, config: TrainConfig, lrs: Sequence[float], seeds: int) -> bool:
        """Sweep ``lrs`` × ``seeds`` for ``config``. Returns False when a job is still running."""
        task = TrainTask(TrainJobKind.LR_SWEEP, config, lrs=tuple(float(x) for x in lrs),
                         seeds=int(seeds))
        if not self._submit(task):
            return False
        self._results = self._results.replace(sweep=None)
        self._started()
        return True

    def export_tensors(self, path: str, command: str = "") -> bool:
        """Write the trained q and k of the current run to ``path`` on the training thread.

        :attr:`tensorsWritten` carries the path when done; a failure emits
        :attr:`errorOccurred` and keeps everything else. ``command`` says how the training was
        started (stored in the file's meta). Returns False when a job runs or no run has
        trained yet.
        """
        if not self.has_trained_model() or not self._submit(TrainTask(
                TrainJobKind.EXPORT, self._results.snapshot.config, path=str(path),
                command=command)):
            return False
        self._last_error = ""
        self._set_state(TrainState.EXPORTING)
        return True

    @Slot()
    def pause(self) -> None:
        """Hold the running job between two engine yields."""
        job = self.job()
        if job is not None and self._state == TrainState.RUNNING:
            job.pause()
            self._active_s += time.perf_counter() - self._resumed_at
            self._set_state(TrainState.PAUSED)

    @Slot()
    def resume(self) -> None:
        """Continue a paused job."""
        job = self.job()
        if job is not None and self._state == TrainState.PAUSED:
            self._resumed_at = time.perf_counter()
            job.resume()
            self._set_state(TrainState.RUNNING)

    @Slot()
    def stop(self) -> None:
        """Cancel the running job (it ends after its current step; results so far stay)."""
        if self.job() is not None and self._state in (TrainState.RUNNING, TrainState.PAUSED):
            self._host.cancel()
            self._set_state(TrainState.STOPPING)

    @Slot()
    def reset(self) -> None:
        """Stop any job and clear every view."""
        self.stop()
        self._results = TrainResults()
        self._last_error = ""
        for view in self._views:
            view.clear()  # type: ignore[attr-defined]
        self._pusher.discard()
        self._progress = (0.0, math.nan)
        self.progressChanged.emit(0.0, math.nan)

    def refresh_views(self) -> None:
        """Push the latest results to every view now, hidden ones too (e.g. before export)."""
        self._pusher.refresh_views()

    @Slot(object)
    def refresh_view(self, view: object) -> None:
        """Bring ``view`` up to date (called when a hidden view becomes visible)."""
        self._pusher.refresh_view(view)

    def begin_shutdown(self) -> None:
        """Stop the job and ask the thread to end, without waiting for it.

        :attr:`workerStopped` is emitted (GUI thread) once the thread has ended: a run inside
        one long optimisation step ends when that step returns. Safe to call more than once.
        """
        self._pusher.close()
        self._paint.close()  # re-enables the viewports a push held
        super().begin_shutdown()

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """Stop the job and the thread, waiting ``timeout_ms`` (then without bound); True if
        it stopped within ``timeout_ms``."""
        stopped = super().shutdown(timeout_ms)
        self._process.close()  # the worker thread, its only user, has ended
        return stopped

    @Slot()
    def _on_thread_finished(self) -> None:
        self._process.close()  # the worker thread, its only user, has ended
        self.workerStopped.emit()

    # -------------------------------------------------------------------------------- private
    def _submit(self, task: TrainTask) -> bool:
        """Hand ``task`` to the worker if it is idle and not closed; True if it runs."""
        return self._host.running() is None and self._host.request(lambda: task)

    def _started(self) -> None:
        """A training or sweep job runs: reset the error, the clock and the progress."""
        self._last_error = ""
        self._active_s = 0.0
        self._resumed_at = time.perf_counter()
        self._set_state(TrainState.RUNNING)
        self._progress = (0.0, math.nan)
        self.progressChanged.emit(0.0, math.nan)

    def _set_state(self, state: TrainState) -> None:
        if state != self._state:
            self._state = state
            self.stateChanged.emit(state)

    def _active_seconds(self) -> float:
        if self._state == TrainState.RUNNING:
            return self._active_s + time.perf_counter() - self._resumed_at
        return self._active_s

    def _on_item(self, message: TrainItem) -> None:
        item = message.item
        if message.kind is TrainJobKind.EXPORT:
            self.tensorsWritten.emit(str(item))
            return
        if message.kind is TrainJobKind.TRAIN:
            self._results = self._results.replace(snapshot=item)
            fraction = float(item.progress)
        else:
            self._results = self._results.replace(sweep=item)
            fraction = float(item.fraction)
        active = self._active_seconds()
        eta = active * (1.0 - fraction) / fraction if fraction > 0 else math.nan
        # Emitted with the next push: a progress-bar repaint per snapshot (30 Hz) is wasted.
        self._progress = (fraction, eta)
        self._pusher.schedule()

    def _on_failed(self, message: JobFailed) -> None:
        self._last_error = message.message
        self.errorOccurred.emit(message.message)

    @Slot(object)
    def _on_finished(self, message: JobFinished) -> None:
        if self._state == TrainState.RUNNING:
            self._active_s += time.perf_counter() - self._resumed_at
        # Show the final state before announcing idle, so idle means "everything is shown".
        self._pusher.flush()
        self._set_state(TrainState.IDLE)

    def _on_pushed(self, results: object, shown: Sequence[object]) -> None:
        self.pushes += 1
        # Before the paint: the progress bar and status line go into the same repaint.
        self.progressChanged.emit(*self._progress)
        self.resultsShown.emit(results)

