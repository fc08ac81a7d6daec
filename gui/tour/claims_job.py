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

from PySide6.QtCore import QObject, Signal, Slot

from engine.config import AttentionConfig
from engine.tour.claims import ClaimResult
from engine.tour.evaluate import evaluate_claims

__all__ = ["ClaimJob", "ClaimWorker", "ClaimsDone"]


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
class ClaimsDone:
    """The end of a :class:`ClaimJob`: its results, or the error that stopped it."""

    request_id: int
    index: int
    results: tuple[ClaimResult, ...] | None
    error: str = ""


class ClaimWorker(QObject):
    """Runs :class:`ClaimJob` objects in its thread; never touches widgets."""

    finished = Signal(object)  # ClaimsDone

    @Slot(object)
    def run(self, job: ClaimJob) -> None:
        """Evaluate ``job``'s claims; always emit :attr:`finished`."""
        results: tuple[ClaimResult, ...] | None = None
        error = ""
        try:
            if not job.cancel.is_set():
                results = tuple(evaluate_claims(list(job.claims), job.config, cancel=job.cancel))
        except (ValueError, RuntimeError, MemoryError) as exc:
            error = str(exc) or type(exc).__name__
        finally:
            self.finished.emit(ClaimsDone(job.request_id, job.index, results, error))
