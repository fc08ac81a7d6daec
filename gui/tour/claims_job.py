"""The tour's claim evaluation, run by a :class:`gui.kit.jobs.WorkerHost` off the GUI thread.

A learning-rate claim trains for about a second, so the engine numbers of a step are computed
in the background; a newer step supersedes (cancels) the evaluation of an older one, and a
cancelled learning-rate claim stops within one optimisation step.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from engine.config import AttentionConfig
from engine.tour.claims import ClaimResult
from engine.tour.evaluate import evaluate_claims
from gui.kit.job_worker import JobWorker
from gui.kit.jobs import Job, JobFailed, JobFinished, WorkerHost

__all__ = ["ClaimEvaluations", "ClaimTask", "ClaimWorker", "ClaimsEvaluated"]


@dataclasses.dataclass(frozen=True)
class ClaimTask:
    """Evaluate the claims of tour step ``index`` for ``config``."""

    index: int
    claims: tuple[Mapping[str, Any], ...]
    config: AttentionConfig


@dataclasses.dataclass(frozen=True)
class ClaimsEvaluated:
    """The results of a :class:`ClaimTask` that ran to its end."""

    index: int
    results: tuple[ClaimResult, ...]


class ClaimWorker(JobWorker):
    """Runs :class:`ClaimTask` jobs in its thread (failures and the end: :class:`JobWorker`)."""

    def execute(self, job: Job[ClaimTask]) -> None:
        """Evaluate the claims; report them unless the job was cancelled meanwhile (a training
        claim stops after its current step)."""
        task = job.task
        results = tuple(evaluate_claims(list(task.claims), task.config, cancel=job.cancel))
        if not job.cancel.is_set():
            self.report(ClaimsEvaluated(task.index, results))


class ClaimEvaluations(QObject):
    """The engine numbers of the tour's steps: evaluated off the GUI thread, kept per step.

    The worker thread starts with the first request. A newer request cancels the running one;
    results with a NaN are not kept, so the step is evaluated again when it is shown again.

    Signals
    -------
    finished(int)
        The newest evaluation, of step ``index``, ended: :meth:`results` or :meth:`error`
        say how.
    """

    finished = Signal(int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._host: WorkerHost | None = None
        self._closed = False
        self._wanted = -1  # step index of the newest request
        self._results: dict[int, list[ClaimResult]] = {}
        self._errors: dict[int, str] = {}

    def results(self, index: int) -> list[ClaimResult] | None:
        """The engine results of step ``index``, None if not evaluated (yet)."""
        return self._results.get(index)

    def error(self, index: int) -> str | None:
        """Why the engine could not evaluate step ``index``, None if it did not fail."""
        return self._errors.get(index)

    def request(self, index: int, claims: tuple[Mapping[str, Any], ...],
                config: AttentionConfig) -> None:
        """Evaluate the ``claims`` of step ``index`` for ``config``, unless already underway."""
        if self._closed:
            return
        if self._host is None:
            self._host = WorkerHost(ClaimWorker(), "tour-claims", self, handlers={
                ClaimsEvaluated: self._on_evaluated, JobFailed: self._on_failed})
            self._host.jobFinished.connect(self._on_finished)
        if self._host.is_busy() and self._wanted == index:
            return
        self._wanted = index
        self._errors.pop(index, None)
        self._host.request(lambda: ClaimTask(index, claims, config))

    def is_running(self) -> bool:
        """True while the worker thread is alive."""
        return self._host is not None and self._host.is_running()

    def shutdown(self, timeout_ms: int) -> None:
        """Cancel the evaluation and wait for the thread (a later request starts a new one)."""
        host, self._host = self._host, None
        if host is not None:
            host.shutdown(timeout_ms)

    def begin_shutdown(self) -> None:
        """Cancel the evaluation and let the thread end without waiting; evaluate no more."""
        self._closed = True
        if self._host is not None:
            self._host.begin_shutdown()

    def _on_evaluated(self, evaluated: ClaimsEvaluated) -> None:
        if not any(math.isnan(r.value) for r in evaluated.results):
            self._results[evaluated.index] = list(evaluated.results)

    def _on_failed(self, failure: JobFailed) -> None:
        assert self._host is not None  # it reports the failure of the job it runs
        self._errors[self._host.running().task.index] = failure.message

    @Slot(object)
    def _on_finished(self, finished: JobFinished) -> None:
        self.finished.emit(finished.task.index)
