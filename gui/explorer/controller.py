"""The explorer's controller: current configuration, the worker, result pushing.

Every request is a kit :class:`~gui.kit.jobs.Job` of an immutable
:class:`~gui.explorer.worker.ExplorerTask`, the engine's plan of what to compute or re-use; a
:class:`~gui.kit.jobs.WorkerHost` runs at most one and keeps at most one wanted, so a newer
request supersedes the older and input bursts never queue. The host hands on only the messages
of the job it runs, and none once closed: every message here is the running job's. Input is
throttled (:class:`~gui.kit.view_push.Throttle`: the first change at once, later ones collapse into
one). Results reach the handlers here on the GUI thread; a :class:`~gui.kit.view_push.ViewPusher`
pushes the latest :class:`~gui.explorer.results.ExplorerResults` to the visible views and a
:class:`~gui.kit.split_paint.SplitPaint` paints them in later passes. The q, k are random or a
real head's (:meth:`ExplorerController.set_real_head`), loaded by the worker.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from PySide6.QtCore import QObject, Signal, Slot

from engine.analysis.experiment import check_snapshot_memory
from engine.analysis.explorer import (
    ALL_RULES,
    DEFAULT_SWEEP_SAMPLES_CAP,
    DEFAULT_SWEEP_VALUES,
    plan_full,
    plan_temperature,
    snapshot_head,
)
from engine.analysis.length import LENGTH_VALUES
from engine.analysis.real_head import HeadRef, explorer_config_for, with_own_rule
from engine.config import AttentionConfig, SweepParam
from gui.explorer.results import ExplorerResults
from gui.explorer.worker import (
    ExplorerTask,
    FastParts,
    JobKind,
    SweepPointReady,
    TemperatureReady,
    Worker,
)
from gui.kit.jobs import HostOwner, JobFailed, JobFinished, WorkerHost
from gui.kit.split_paint import SplitPaint
from gui.kit.view_push import Throttle, ViewPusher

__all__ = ["ExplorerController"]


class ExplorerController(HostOwner):
    """Owns the current config and the worker thread; pushes results to the views.

    Parameters
    ----------
    config
        Initial configuration (no work starts until :meth:`start` or :meth:`set_config`).
    temperature
        Initial temperature of the temperature view.
    views
        Objects with ``show_results(results)`` (normally the :class:`ExplorerView` widgets).
    sweep_values, sweep_samples_cap, length_values
        The d_k sweep's values and largest samples per point, and the length view's n values
        (empty: no length sweep); tests use short lists.
    throttle_ms, push_interval_ms
        Input throttle window and the minimum interval between pushes to the views.
    """

    resultsShown = Signal(object)  # ExplorerResults, after every visible view got it
    resultsPainted = Signal()  # the views that got results have painted them
    progressChanged = Signal(int, int)  # sweep points done, total
    busyChanged = Signal(bool)  # a job is running or wanted
    errorOccurred = Signal(str)  # a user-facing message from a failed request
    configRefused = Signal(str)  # why set_config refused its config (also errorOccurred)
    realHeadChanged = Signal(object)  # HeadRef | None: the source of q, k of the next results
    configApplied = Signal(object)  # AttentionConfig the controller set itself (a real head)
    workerStopped = Signal()  # the worker thread has ended (after begin_shutdown/shutdown)

    def __init__(
        self,
        config: AttentionConfig | None = None,
        *,
        temperature: float | None = None,
        views: Iterable[object] = (),
        sweep_values: Sequence[int] = DEFAULT_SWEEP_VALUES,
        sweep_samples_cap: int = DEFAULT_SWEEP_SAMPLES_CAP,
        length_values: Sequence[int] = LENGTH_VALUES,
        throttle_ms: int = 50,
        push_interval_ms: int = 33,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._config = config or AttentionConfig()
        self._temperature = float(temperature if temperature is not None
                                  else self._config.temperature)
        self._sweep_values = tuple(sweep_values)
        self._sweep_samples_cap = int(sweep_samples_cap)
        self._length_values = tuple(length_values)
        self._results: ExplorerResults | None = None
        self._temperature_id = 0
        self._applied_temperature_id = -1
        self._busy = False
        self._last_error = ""
        self._head: HeadRef | None = None
        self._random_config: AttentionConfig | None = None  # restored by set_real_head(None)

        self._input = Throttle(throttle_ms, self.start, self)
        # Hidden views (other tabs) skip pushes and catch up when shown: see refresh_view.
        # Each push's paint comes in later event-loop passes, prepared a little at a time.
        self._paint = SplitPaint(self)
        self._paint.painted.connect(self.resultsPainted)
        self._pusher = ViewPusher(views, self.results, push_interval_ms,
                                  pushed=self._on_pushed, parent=self)
        self._host = WorkerHost(Worker(), "explorer-worker", self, handlers={
            FastParts: self._on_fast_parts, TemperatureReady: self._on_temperature_ready,
            SweepPointReady: self._on_sweep_point, JobFailed: self._on_failed})
        self._hosts = [self._host]
        self._host.jobFinished.connect(self._on_finished)
        self._host.workerStopped.connect(self.workerStopped)

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
        return self._host.is_busy() or self._input.is_pending()

    def is_settled(self) -> bool:
        """True when no job runs or waits and the latest results are pushed and painted."""
        return not (self.is_busy() or self._pusher.is_pending() or self._paint.is_pending())

    def shows_current(self) -> bool:
        """True when the views show the fast results (everything but the sweeps) of the
        latest configuration and temperature; the sweeps may still be running."""
        results = self._results
        return (not self._input.is_pending() and results is not None
                and results.config == self._config
                and self._applied_temperature_id == self._temperature_id
                and not self._pusher.is_pending())

    def real_head(self) -> HeadRef | None:
        """The real head whose q, k are requested, or ``None`` for random q, k."""
        return self._head

    def last_error(self) -> str:
        """The message of the most recent failed request ("" after a success)."""
        return self._last_error

    # ------------------------------------------------------------------------------- requests
    def start(self) -> None:
        """Submit a request for the current configuration now (no throttling); nothing once
        shut down."""
        if self._host.request(self._full_task):
            self._set_busy(True)

    @Slot(object)
    def set_config(self, config: AttentionConfig) -> None:
        """Request results for ``config`` (throttled; the last call always wins)."""
        if self._host.is_closed():
            return
        # The door of every request: its memory is checked here, once, and the worker trusts it.
        try:
            if self._head is not None:  # the head fixes the geometry; the mask stays the user's
                config = explorer_config_for(self._head, config, keep_mask=True)
            else:
                check_snapshot_memory(config, ALL_RULES)
        except ValueError as exc:
            self._report(str(exc))
            self.configRefused.emit(str(exc))
            return
        self._config = config
        self._input.trigger()

    @Slot(object)
    def set_real_head(self, ref: HeadRef | None) -> None:
        """Show the real head ``ref``'s q, k in every view; ``None``: the random configuration
        from before the first head again. Geometry and mask come from the file; a new file
        brings its model's own rule, another head of the same file keeps the rule. A head that
        cannot be shown emits :attr:`errorOccurred`; the results stay."""
        if self._host.is_closed() or ref == self._head:
            return
        if ref is None:
            config = self._random_config or self._config
            self._random_config = None
        else:
            base = self._config
            if self._head is None or self._head.file != ref.file:
                base = with_own_rule(ref, base)
            try:
                config = explorer_config_for(ref, base)
            except ValueError as exc:
                self._report(str(exc))
                return
            if self._head is None:
                self._random_config = self._config
        self._switch_source(ref, config)
        self._input.trigger()

    @Slot(float)
    def set_temperature(self, temperature: float) -> None:
        """Recompute only the temperature comparison at ``temperature``."""
        if self._host.is_closed() or temperature == self._temperature:
            return
        self._temperature = float(temperature)
        self._temperature_id += 1
        running = self._host.running()
        if running is not None:
            if running.task.kind is JobKind.FULL and not running.cancel.is_set():
                # The running sweep keeps going; the worker answers between sweep points.
                running.task.temperature_inbox.put((self._temperature_id, self._temperature))
            # Otherwise _on_finished notices the stale temperature and submits a job.
            return
        if self._results is not None:
            self._request_temperature()

    @Slot()
    def cancel(self) -> None:
        """Cancel the running job (the sweep stops; results received so far stay shown)."""
        self._input.stop()
        self._host.cancel()

    def refresh_views(self) -> None:
        """Push the latest results to every view now, hidden ones too (e.g. before exporting)."""
        self._pusher.refresh_views()

    @Slot(object)
    def refresh_view(self, view: object) -> None:
        """Bring ``view`` up to date (called when a hidden view becomes visible)."""
        self._pusher.refresh_view(view)

    def is_stale(self, view: object) -> bool:
        """True if ``view`` missed a push while hidden (it catches up when shown)."""
        return self._pusher.is_stale(view)

    def begin_shutdown(self) -> None:
        """Stop timers, cancel work and ask the thread to end without waiting (idempotent);
        :attr:`workerStopped` follows once it has ended (after the engine call it is in)."""
        self._input.stop()
        self._pusher.close()
        self._paint.close()
        super().begin_shutdown()

    # -------------------------------------------------------------------------------- private
    def _switch_source(self, ref: HeadRef | None, config: AttentionConfig) -> None:
        changed = ref != self._head
        self._head, self._config = ref, config
        if changed:
            self.realHeadChanged.emit(ref)
        self.configApplied.emit(config)

    def _report(self, message: str) -> None:
        self._last_error = message
        self.errorOccurred.emit(message)

    def _full_task(self) -> ExplorerTask:
        computed = self._results.computed() if self._results is not None else None
        plan = plan_full(self._config, self._temperature, computed,
                         sweep_values=self._sweep_values,
                         sweep_samples_cap=self._sweep_samples_cap, head=self._head,
                         length_values=self._length_values)
        return ExplorerTask(JobKind.FULL, plan, self._temperature, self._temperature_id)

    def _request_temperature(self) -> None:
        """Recompute the temperature comparison of the results shown, at the newest T."""
        results = self._results
        assert results is not None
        plan = plan_temperature(results.config, self._temperature, results.snapshot,
                                head=snapshot_head(results.snapshot))
        task = ExplorerTask(JobKind.TEMPERATURE, plan, self._temperature, self._temperature_id)
        if self._host.request(lambda: task):
            self._set_busy(True)

    def _on_fast_parts(self, message: FastParts) -> None:
        # The running full job's: its plan re-uses the sweeps of the results it was planned
        # from, and those are still ``self._results`` (only this job's messages came since).
        previous, plan = self._results, self._host.running().task.plan
        sweep, length = plan.sweep(), plan.length()
        reuse = previous is not None and sweep is None
        keep_length = previous is not None and length is None  # n changes only the d_k sweep
        self._applied_temperature_id = message.temperature_id
        self._results = ExplorerResults(
            config=message.config,
            snapshot=message.snapshot,
            temperature=message.temperature,
            temperature_comparison=message.temperature_comparison,
            sweep_points=previous.sweep_points if reuse else (),
            sweep_done=previous.sweep_done if reuse else False,
            length_points=previous.length_points if keep_length else (),  # type: ignore[union-attr]
            length_done=previous.length_done if keep_length else False,  # type: ignore[union-attr]
            correlation=message.correlation,
            sweep_plan=previous.sweep_plan if reuse else sweep,  # type: ignore[union-attr]
            length_plan=previous.length_plan if keep_length else length,  # type: ignore[union-attr]
        )
        self._last_error = ""
        if not reuse:
            total = len(self._sweep_values) * len(sweep.rules) if sweep is not None else 0
            self.progressChanged.emit(0, total)
        self._pusher.schedule()

    def _on_temperature_ready(self, message: TemperatureReady) -> None:
        # A full job cancelled before its fast parts may still answer its temperature inbox,
        # for its own configuration, not the one shown.
        results = self._results
        if (results is None or message.config != results.config
                or message.temperature_id < self._applied_temperature_id):
            return
        self._applied_temperature_id = message.temperature_id
        self._results = results.replace(temperature=message.temperature,
                                        temperature_comparison=message.temperature_comparison)
        self._pusher.schedule()

    def _on_sweep_point(self, message: SweepPointReady) -> None:
        # The running full job's: its plan streams sweeps only after its fast parts, so the
        # results are already this job's.
        results = self._results
        assert results is not None
        point = message.point
        if point.param is SweepParam.N:  # the length view's n sweep
            self._results = results.replace(length_points=(*results.length_points, point))
        else:
            self._results = results.replace(sweep_points=(*results.sweep_points, point))
        self.progressChanged.emit(int(point.index) + 1, int(point.total))
        self._pusher.schedule()

    def _on_failed(self, message: JobFailed) -> None:
        task = self._host.running().task  # of the failed job: the host hands on only its messages
        results = self._results
        shown = snapshot_head(results.snapshot) if results is not None else None
        if (task.kind is JobKind.FULL and task.plan.head != shown
                and self._head == task.plan.head):
            # The new source could not be shown (unreadable head): back to the source on
            # screen, so that later edits do not fail again.
            config = results.config if results is not None else self._config
            if shown is None and self._random_config is not None:
                config, self._random_config = self._random_config, None
            self._switch_source(shown, config)
        self._report(message.message)

    @Slot(object)
    def _on_finished(self, message: JobFinished) -> None:
        # A full job that ran to its end reported its fast parts, then its sweeps: the results
        # are its own.
        results = self._results
        if (
            message.completed and message.task.kind is JobKind.FULL and results is not None
            and not (results.sweep_done and results.length_done)
        ):
            self._results = results.replace(sweep_done=True, length_done=True)
            self._pusher.schedule()
        if self._host.has_wanted():
            return  # the host starts it right after this slot
        if (
            self._results is not None
            and self._applied_temperature_id < self._temperature_id
            and (message.completed or message.task.kind is JobKind.FULL)
        ):
            # The temperature moved while a job ran (a comparison that failed or was
            # cancelled is not run again).
            self._request_temperature()
        else:
            self._set_busy(self._input.is_pending())

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)

    def _on_pushed(self, results: object, changed: Sequence[object]) -> None:
        # Held before resultsShown, so that a listener sees the paint pending (is_settled).
        self._paint.paint_later(changed)
        self.resultsShown.emit(results)

