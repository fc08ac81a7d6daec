"""The tour's claim evaluation, run by a :class:`gui.kit.jobs.WorkerHost` off the GUI thread.

A learning-rate claim trains for about a second, so the engine numbers of a step are computed
in the background; a newer step supersedes (cancels) the evaluation of an older one, and a
cancelled learning-rate claim stops within one optimisation step.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import Signal

from engine.config import AttentionConfig
from engine.tour.claims import ClaimResult
from engine.tour.evaluate import evaluate_claims
from gui.kit.job_worker import JobWorker

__all__ = ["ClaimJob", "ClaimWorker", "ClaimsEvaluated"]


@dataclasses.dataclass(frozen=True)
class ClaimJob:
    """Evaluate the claims of tour step ``index`` for ``config``."""

    request_id: int
    index: int
    claims: tuple[Mapping[str, Any], ...]
    config: AttentionConfig
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)

    def stop(self) -> None:
        """Cancel the evaluation (a training claim stops after its current step)."""
        self.cancel.set()


@dataclasses.dataclass(frozen=True)
class ClaimsEvaluated:
    """The results of a :class:`ClaimJob` that ran to its end."""

    request_id: int
    index: int
    results: tuple[ClaimResult, ...]


class ClaimWorker(JobWorker):
    """Runs :class:`ClaimJob` objects in its thread (failures and the end: :class:`JobWorker`)."""

    evaluated = Signal(object)  # ClaimsEvaluated

    def execute(self, job: ClaimJob) -> None:
        """Evaluate ``job``'s claims; emit them unless the job was cancelled meanwhile."""
        results = tuple(evaluate_claims(list(job.claims), job.config, cancel=job.cancel))
        if not job.cancel.is_set():
            self.evaluated.emit(ClaimsEvaluated(job.request_id, job.index, results))
