"""The controller: current configuration, request ids, the worker thread, result pushing.

Pattern: one ``QThread`` with one :class:`~gui.explorer.worker.Worker`; every request is an
immutable :class:`~gui.explorer.worker.Job` with an increasing id and its own cancel event. At most
one job runs and at most one is *wanted* next, so input bursts never build a queue: a newer
request cancels the running job and replaces the wanted one. Results arrive as ``object``
signals into ``@Slot`` methods here (GUI thread); a ~30 Hz timer pushes only the latest
:class:`~gui.explorer.results.ExplorerResults` to the views, then emits :attr:`resultsShown`.

Input is throttled with a single-shot timer (leading and trailing edge, ~50 ms): the first
change after a quiet period is submitted at once (low latency), later changes within the
window collapse into one submission at its end, which always carries the last state.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from engine.config import AttentionConfig, ScalingRule, SweepConfig, SweepParam
from gui.explorer.results import ExplorerResults
from gui.explorer.worker import (
    FastParts,
    Job,
    JobFailed,
    JobFinished,
    JobKind,
    SweepPointReady,
    TemperatureReady,
    Worker,
    request_thread_stop,
    start_worker_thread,
    stop_worker_thread,
)

__all__ = ["DEFAULT_SWEEP_VALUES", "ExplorerController", "sweep_config_for"]

#: d_k values of the streamed sweep: powers of two 1..1024.
DEFAULT_SWEEP_VALUES: tuple[int, ...] = tuple(2**i for i in range(11))
#: Upper bound of query rows per sweep point (the panel's sample count can be much larger).
DEFAULT_SWEEP_SAMPLES_CAP = 2000
_SWEEP_RULES = (ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR)


def sweep_config_for(
    config: AttentionConfig,
    values: Sequence[int] = DEFAULT_SWEEP_VALUES,
    samples_cap: int = DEFAULT_SWEEP_SAMPLES_CAP,
) -> SweepConfig:
    """Return the d_k sweep shown by the laws and gradient views for ``config``.

    Parameters
    ----------
    config
        The current attention configuration (n, ρ, seed, rule parameters are taken from it).
    values
        The d_k values.
    samples_cap
        Largest number of query rows per point.
    """
    rules = _SWEEP_RULES + ((config.rule,) if config.rule not in _SWEEP_RULES else ())
    return SweepConfig(
        param=SweepParam.D_K,
        values=tuple(values),
        rules=rules,
        n_tokens=config.n_tokens,
        rho=config.rho,
        samples=min(config.samples, samples_cap),
        seed=config.seed,
        temperature=config.temperature,
        gain=config.gain,
        cap=config.cap,
    )


class ExplorerController(QObject):
    """Owns the current config and the worker thread; pushes results to the views.

    Parameters
    ----------
    config
        Initial configuration (no work starts until :meth:`start` or :meth:`set_config`).
    temperature
        Initial temperature of the temperature view.
    views
        Objects with ``show_results(results)`` (normally the :class:`ExplorerView` widgets).
    sweep_values
        d_k values of the sweep (tests use short lists).
    sweep_samples_cap
        Largest samples per sweep point.
    throttle_ms, push_interval_ms
        Input throttle window and the minimum interval between pushes to the views.
    """

    resultsShown = Signal(object)  # ExplorerResults, after every visible view got it
    progressChanged = Signal(int, int)  # sweep points done, total
    busyChanged = Signal(bool)  # a job is running or wanted
    errorOccurred = Signal(str)  # a user-facing message from a failed request
    workerStopped = Signal()  # the worker thread has ended (after begin_shutdown/shutdown)
    _jobSubmitted = Signal(object)  # Job -> worker thread (queued connection)

    def __init__(
        self,
        config: AttentionConfig | None = None,
        *,
        temperature: float | None = None,
        views: Iterable[object] = (),
        sweep_values: Sequence[int] = DEFAULT_SWEEP_VALUES,
        sweep_samples_cap: int = DEFAULT_SWEEP_SAMPLES_CAP,
        throttle_ms: int = 50,
        push_interval_ms: int = 33,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._config = config or AttentionConfig()
        self._temperature = float(temperature if temperature is not None
                                  else self._config.temperature)
        self._views: list[object] = list(views)
        # Hidden views (other tabs) skip pushes and catch up when shown: see refresh_view.
        self._stale: set[object] = set()
        self._sweep_values = tuple(sweep_values)
        self._sweep_samples_cap = int(sweep_samples_cap)
        self._results: ExplorerResults | None = None
        self._next_id = 0
        self._latest_full_id = -1
        self._temperature_id = 0
        self._applied_temperature_id = -1
        self._running: Job | None = None
        self._want_full = False
        self._input_pending = False
        self._dirty = False
        self._closed = False
        self._busy = False
        self._last_error = ""
        self.last_push_time = math.nan
        #: Jobs handed to the worker so far, and the most ever running at once (always 1).
        self.jobs_started = 0
        self.max_jobs_in_flight = 0

        self._input_timer = QTimer(self)
        self._input_timer.setSingleShot(True)
        self._input_timer.setInterval(throttle_ms)
        self._input_timer.timeout.connect(self._on_input_timer)
        self._push_timer = QTimer(self)
        self._push_timer.setSingleShot(True)
        self._push_timer.setInterval(push_interval_ms)
        self._push_timer.timeout.connect(self._on_push_timer)

        self._worker = Worker()
        self._jobSubmitted.connect(self._worker.run)
        self._worker.fastPartsReady.connect(self._on_fast_parts)
        self._worker.temperatureReady.connect(self._on_temperature_ready)
        self._worker.sweepPointReady.connect(self._on_sweep_point)
        self._worker.failed.connect(self._on_failed)
        self._worker.finished.connect(self._on_finished)
        self._thread = start_worker_thread(self, self._worker, "explorer-worker")
        self._thread.finished.connect(self._on_thread_finished)

    # ----------------------------------------------------------------------------- accessors
    def config(self) -> AttentionConfig:
        """The configuration most recently set (possibly not computed yet)."""
        return self._config

    def temperature(self) -> float:
        """The temperature most recently requested for the temperature view."""
        return self._temperature

    def results(self) -> ExplorerResults | None:
        """The latest accepted results (possibly not pushed to the views yet)."""
        return self._results

    def is_busy(self) -> bool:
        """True while a job runs or a newer one is waiting."""
        return self._running is not None or self._want_full or self._input_pending

    def is_settled(self) -> bool:
        """True when no job runs or waits and the latest results have been pushed."""
        return not self.is_busy() and not self._dirty

    def is_running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread.isRunning()

    def wait_stopped(self, timeout_ms: int) -> bool:
        """Block at most ``timeout_ms`` for the thread to end; True if it has ended."""
        return self._thread.wait(max(0, int(timeout_ms)))

    def last_error(self) -> str:
        """The message of the most recent failed request ("" after a success)."""
        return self._last_error

    def set_views(self, views: Iterable[object]) -> None:
        """Replace the objects that receive results."""
        self._views = list(views)
        self._stale = set(self._views)

    # ------------------------------------------------------------------------------- requests
    def start(self) -> None:
        """Submit a request for the current configuration now (no throttling)."""
        self._request_full()

    @Slot(object)
    def set_config(self, config: AttentionConfig) -> None:
        """Request results for ``config`` (throttled; the last call always wins)."""
        if self._closed:
            return
        self._config = config
        if self._input_timer.isActive():
            self._input_pending = True
            return
        self._request_full()
        self._input_timer.start()

    @Slot(float)
    def set_temperature(self, temperature: float) -> None:
        """Recompute only the temperature comparison at ``temperature``."""
        if self._closed or temperature == self._temperature:
            return
        self._temperature = float(temperature)
        self._temperature_id += 1
        running = self._running
        if running is not None:
            if running.kind is JobKind.FULL and not running.cancel.is_set():
                # The running sweep keeps going; the worker answers between sweep points.
                running.temperature_inbox.put((self._temperature_id, self._temperature))
            # Otherwise _on_finished notices the stale temperature and submits a job.
            return
        if self._results is not None:
            self._start_job(JobKind.TEMPERATURE)

    @Slot()
    def cancel(self) -> None:
        """Cancel the running job (the sweep stops; results received so far stay shown)."""
        self._input_timer.stop()
        self._input_pending = False
        self._want_full = False
        if self._running is not None:
            self._running.cancel.set()

    def refresh_views(self) -> None:
        """Push the latest results to every view now, hidden ones too (e.g. before exporting)."""
        results = self._results
        if results is None:
            return
        for view in self._views:
            view.show_results(results)  # type: ignore[attr-defined]
        self._stale.clear()

    @Slot(object)
    def refresh_view(self, view: object) -> None:
        """Bring ``view`` up to date (called when a hidden view becomes visible)."""
        if self._results is not None and view in self._stale:
            self._stale.discard(view)
            view.show_results(self._results)  # type: ignore[attr-defined]

    def begin_shutdown(self) -> None:
        """Stop timers, cancel work and ask the thread to end, without waiting for it.

        :attr:`workerStopped` is emitted (GUI thread) once the thread has ended; a job inside
        one long engine call ends when that call returns. Safe to call more than once.
        """
        if self._closed:
            return
        self._closed = True
        self._input_timer.stop()
        self._push_timer.stop()
        self._want_full = False
        if self._running is not None:
            self._running.cancel.set()
        request_thread_stop(self._thread)

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """Stop timers, cancel work, stop the thread and wait for it (bounded).

        Returns
        -------
        bool
            True if the thread stopped within ``timeout_ms``.
        """
        self.begin_shutdown()
        return stop_worker_thread(self._thread, timeout_ms)

    @Slot()
    def _on_thread_finished(self) -> None:
        self.workerStopped.emit()

    # -------------------------------------------------------------------------------- private
    @Slot()
    def _on_input_timer(self) -> None:
        if self._input_pending:
            self._input_pending = False
            self._request_full()
            self._input_timer.start()

    def _request_full(self) -> None:
        self._want_full = True
        if self._running is not None:
            self._running.cancel.set()
        else:
            self._start_job(JobKind.FULL)
        self._set_busy(True)

    def _sweep_for(self, config: AttentionConfig) -> SweepConfig | None:
        sweep = sweep_config_for(config, self._sweep_values, self._sweep_samples_cap)
        current = self._results
        if current is not None and current.sweep_done and current.sweep_points:
            previous = sweep_config_for(current.config, self._sweep_values,
                                        self._sweep_samples_cap)
            if previous == sweep:
                return None  # d_k, σ, heads... do not enter the sweep: keep its points
        return sweep

    def _start_job(self, kind: JobKind) -> None:
        self._next_id += 1
        if kind is JobKind.FULL:
            self._want_full = False
            self._latest_full_id = self._next_id
            job = Job(self._next_id, kind, self._config, self._temperature, self._temperature_id,
                      sweep=self._sweep_for(self._config))
        else:
            assert self._results is not None
            job = Job(self._next_id, kind, self._results.config, self._temperature,
                      self._temperature_id, snapshot=self._results.snapshot)
        in_flight = 1 + (self._running is not None)
        self._running = job
        self.jobs_started += 1
        self.max_jobs_in_flight = max(self.max_jobs_in_flight, in_flight)
        self._set_busy(True)
        self._jobSubmitted.emit(job)

    @Slot(object)
    def _on_fast_parts(self, message: FastParts) -> None:
        if self._closed or message.request_id != self._latest_full_id:
            return
        previous = self._results
        job = self._running
        reuse = (
            job is not None and job.request_id == message.request_id and job.sweep is None
            and previous is not None
        )
        self._applied_temperature_id = message.temperature_id
        self._results = ExplorerResults(
            request_id=message.request_id,
            config=message.config,
            compare_rule=message.config.rule,
            snapshot=message.snapshot,
            temperature=message.temperature,
            temperature_comparison=message.temperature_comparison,
            sweep_points=previous.sweep_points if reuse else (),
            sweep_done=previous.sweep_done if reuse else False,
            correlation=message.correlation,
        )
        self._last_error = ""
        if not reuse:
            total = (len(self._sweep_values) * len(job.sweep.rules)
                     if job is not None and job.sweep is not None else 0)
            self.progressChanged.emit(0, total)
        self._schedule_push()

    @Slot(object)
    def _on_temperature_ready(self, message: TemperatureReady) -> None:
        results = self._results
        if (
            self._closed or results is None
            or message.config != results.config
            or message.temperature_id < self._applied_temperature_id
        ):
            return
        self._applied_temperature_id = message.temperature_id
        self._results = results.replace(
            temperature=message.temperature,
            temperature_comparison=message.temperature_comparison,
        )
        self._schedule_push()

    @Slot(object)
    def _on_sweep_point(self, message: SweepPointReady) -> None:
        results = self._results
        if self._closed or results is None or message.request_id != results.request_id:
            return
        point = message.point
        self._results = results.replace(sweep_points=(*results.sweep_points, point))
        self.progressChanged.emit(int(point.index) + 1, int(point.total))
        self._schedule_push()

    @Slot(object)
    def _on_failed(self, message: JobFailed) -> None:
        if self._closed or message.request_id < self._latest_full_id:
            return
        self._last_error = message.message
        self.errorOccurred.emit(message.message)

    @Slot(object)
    def _on_finished(self, message: JobFinished) -> None:
        if self._running is not None and self._running.request_id == message.request_id:
            self._running = None
        if self._closed:
            return
        results = self._results
        if (
            message.completed and message.kind is JobKind.FULL and results is not None
            and results.request_id == message.request_id and not results.sweep_done
        ):
            self._results = results.replace(sweep_done=True)
            self._schedule_push()
        if self._want_full:
            self._start_job(JobKind.FULL)
        elif (
            self._results is not None
            and self._applied_temperature_id < self._temperature_id
            and self._results.request_id == self._latest_full_id
        ):
            self._start_job(JobKind.TEMPERATURE)
        else:
            self._set_busy(self._input_pending)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)

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
        if results is None:
            return
        for view in self._views:
            visible = getattr(view, "isVisible", None)
            if visible is None or visible():
                view.show_results(results)  # type: ignore[attr-defined]
                self._stale.discard(view)
            else:
                self._stale.add(view)
        self.last_push_time = time.perf_counter()
        self.resultsShown.emit(results)
