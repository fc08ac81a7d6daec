"""The training controller: one worker thread, Start/Pause/Resume/Stop/Reset, ≤ 30 Hz pushes.

Same pattern as :mod:`gui.controller` (DESIGN.md §3): a persistent ``QThread`` with one
:class:`~gui.train.worker.TrainWorker`; each request is an immutable
:class:`~gui.train.worker.TrainJob` with an id, and messages of other ids are dropped. Items
arrive as ``object`` signals into ``@Slot`` methods here (GUI thread) and only replace the
latest state; a single-shot timer pushes that state to the *visible* views at most every
``push_interval_ms`` (hidden views catch up in :meth:`refresh_view`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterable, Sequence
from types import MappingProxyType

import numpy as np
from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from engine.config import ScalingRule
from engine.trainer_config import TrainConfig
from gui.train.results import TrainResults
from gui.train.worker import (
    TrainItem,
    TrainJob,
    TrainJobFailed,
    TrainJobFinished,
    TrainJobKind,
    TrainWorker,
)

__all__ = ["TRAINING_SWITCH_INTERVAL_S", "TrainController", "TrainState"]

#: Python's GIL switch interval while a training job runs (default 5 ms). The worker is a
#: CPU-bound Python thread of many small numpy calls; with the default interval the GUI thread
#: waits up to 5 ms for the GIL after *each* release during a repaint (PySide releases it around
#: Qt calls). Measured on the loaded 2-core machine while the curves repainted at 30 Hz: a 5 ms
#: heartbeat's median lateness 76-87 ms with 5 ms, 0.35 ms with 0.5 ms (worst 150 vs 48 ms).
TRAINING_SWITCH_INTERVAL_S = 0.0005


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
        Objects with ``show_train(results)`` and ``clear()`` (the training views).
    push_interval_ms
        Minimum interval between two pushes to the views (33 ms: ≤ 30 Hz).
    """

    resultsShown = Signal(object)  # TrainResults, after the visible views got them
    stateChanged = Signal(str)  # TrainState value
    progressChanged = Signal(float, float)  # fraction done in [0, 1], ETA in s (NaN: unknown)
    errorOccurred = Signal(str)  # user-facing message of a failed job
    _jobSubmitted = Signal(object)  # TrainJob -> worker thread (queued)

    def __init__(
        self,
        views: Iterable[object] = (),
        *,
        push_interval_ms: int = 33,
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
        self._grad_steps: list[int] = []
        self._grad_norms: dict[ScalingRule, list[float]] = {}
        # Active (not paused) running time of the current job, for the ETA.
        self._active_s = 0.0
        self._resumed_at = math.nan
        self._saved_switch_interval: float | None = None
        self.pushes = 0

        self._push_timer = QTimer(self)
        self._push_timer.setSingleShot(True)
        self._push_timer.setInterval(push_interval_ms)
        self._push_timer.timeout.connect(self._on_push_timer)

        self._thread = QThread(self)
        self._thread.setObjectName("train-worker")
        self._worker = TrainWorker()
        self._worker.moveToThread(self._thread)
        self._jobSubmitted.connect(self._worker.run)
        self._worker.itemReady.connect(self._on_item)
        self._worker.failed.connect(self._on_failed)
        self._worker.finished.connect(self._on_finished)
        self._thread.finished.connect(self._worker.deleteLater)
        self._thread.start()

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

    # ------------------------------------------------------------------------------ commands
    def start_training(self, config: TrainConfig) -> bool:
        """Train ``config``; the curves restart. Returns False when a job is still running."""
        if not self._can_start():
            return False
        self._grad_steps, self._grad_norms = [], {}
        self._results = self._results.replace(
            snapshot=None, grad_steps=np.zeros(0, dtype=int), grad_norms=MappingProxyType({})
        )
        self._submit(TrainJob(self._new_id(), TrainJobKind.TRAIN, config))
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
        if self._job is not None and self._state in (TrainState.RUNNING, TrainState.PAUSED):
            self._job.stop()
            self._set_state(TrainState.STOPPING)

    @Slot()
    def reset(self) -> None:
        """Stop any job and clear every view."""
        self.stop()
        self._grad_steps, self._grad_norms = [], {}
        self._results = TrainResults()
        self._dirty = False
        self._last_error = ""
        for view in self._views:
            view.clear()  # type: ignore[attr-defined]
        self._stale.clear()
        self.progressChanged.emit(0.0, math.nan)

    def refresh_views(self) -> None:
        """Push the latest results to every view now, hidden ones too (e.g. before export)."""
        for view in self._views:
            view.show_train(self._results)  # type: ignore[attr-defined]
        self._stale.clear()

    @Slot(object)
    def refresh_view(self, view: object) -> None:
        """Bring ``view`` up to date (called when a hidden view becomes visible)."""
        if view in self._stale:
            self._stale.discard(view)
            view.show_train(self._results)  # type: ignore[attr-defined]

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """Stop the job and the thread, waiting at most ``timeout_ms`` (then without bound).

        Returns
        -------
        bool
            True if the thread stopped within ``timeout_ms``.
        """
        if self._closed:
            return not self._thread.isRunning()
        self._closed = True
        self._push_timer.stop()
        if self._job is not None:
            self._job.stop()
        self._thread.quit()
        stopped = self._thread.wait(timeout_ms)
        if not stopped:
            # One engine step cannot be interrupted; destroying a running QThread would abort
            # the process (ENVIRONMENT.md trap 2), so wait for it.
            self._thread.wait()
        self._restore_switch_interval()
        return stopped

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
                grad_steps=np.array(self._grad_steps, dtype=int),
                grad_norms=MappingProxyType(
                    {rule: np.array(v) for rule, v in self._grad_norms.items()}
                ),
            )
            fraction = float(item.progress)
        else:
            self._results = self._results.replace(sweep=item)
            fraction = float(item.fraction)
        active = self._active_seconds()
        eta = active * (1.0 - fraction) / fraction if fraction > 0 else math.nan
        self.progressChanged.emit(fraction, eta)
        self._schedule_push()

    def _record_gradients(self, snapshot: object) -> None:
        step = int(snapshot.step)  # type: ignore[attr-defined]
        if step == 0:
            return  # no gradient before the first step
        self._grad_steps.append(step)
        for rule, st in snapshot.rules.items():  # type: ignore[attr-defined]
            alive = st.diverged_at is None or step < st.diverged_at
            self._grad_norms.setdefault(rule, []).append(float(st.grad_norm) if alive else math.nan)

    @Slot(object)
    def _on_failed(self, message: TrainJobFailed) -> None:
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
            self._push()
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

    def _push(self) -> None:
        self._dirty = False
        results = self._results
        for view in self._views:
            visible = getattr(view, "isVisible", None)
            if visible is None or visible():
                view.show_train(results)  # type: ignore[attr-defined]
                self._stale.discard(view)
            else:
                self._stale.add(view)
        self.pushes += 1
        self.resultsShown.emit(results)
