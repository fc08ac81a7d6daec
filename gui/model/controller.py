"""The Model tab's controller: one worker thread, the points received so far, the continuations.

A Run supersedes the one running (its points go; the host cancels it within one engine step).
Cancel keeps every point computed so far, on screen and in the exports. The results are one
immutable :class:`ModelResults`, replaced at every message: the view draws the latest one.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QObject, Signal, Slot

from engine.models import SweepPoint, TextScore
from gui.kit.jobs import HostOwner, JobFailed, JobFinished, WorkerHost
from gui.model.worker import (
    ContinuationReady,
    ModelOpened,
    ModelTask,
    ModelWorker,
    PointReady,
    Progress,
)

__all__ = ["ModelController", "ModelResults"]


@dataclasses.dataclass(frozen=True)
class ModelResults:
    """What the Model tab shows: the task, the model, the points and continuations so far.

    ``state`` is ``"idle"`` (nothing asked yet), ``"running"``, ``"done"``, ``"cancelled"`` or
    ``"failed"`` (``error`` says why).
    """

    task: ModelTask | None = None
    model: ModelOpened | None = None
    alpha_points: tuple[SweepPoint, ...] = ()
    second_points: tuple[SweepPoint, ...] = ()
    own: ContinuationReady | None = None
    intervened: ContinuationReady | None = None
    progress: tuple[int, int] = (0, 0)
    state: str = "idle"
    error: str = ""

    def score_at(self, alpha: float) -> TextScore | None:
        """The α sweep's score at ``alpha`` (None until that point is computed)."""
        for point in self.alpha_points:
            if abs(point.alpha - alpha) <= 1e-9 * max(1.0, abs(alpha)):
                return point.score
        return None

    def reference(self) -> TextScore | None:
        """The score at the model's own scale (α = 1 of the α sweep)."""
        return self.score_at(1.0)


class ModelController(HostOwner):
    """Owns the Model tab's worker thread and the results received so far.

    Signals
    -------
    resultsChanged(object)
        The new :class:`ModelResults` (after every message of the running job).
    busyChanged(bool)
        A job runs (or waits) or not.
    workerStopped()
        The thread has ended.
    """

    resultsChanged = Signal(object)
    busyChanged = Signal(bool)
    workerStopped = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._results = ModelResults()
        self._wanted_alpha: float | None = None  # a continuation asked for while a run goes
        self._host = WorkerHost(ModelWorker(), "model-sweep", self, handlers={
            ModelOpened: self._on_opened, PointReady: self._on_point,
            ContinuationReady: self._on_continuation, Progress: self._on_progress,
            JobFailed: self._on_failed})
        self._host.jobFinished.connect(self._on_finished)
        self._host.workerStopped.connect(self.workerStopped)
        self._hosts = [self._host]

    # ----------------------------------------------------------------------------- accessors
    def results(self) -> ModelResults:
        """The latest results (points kept after a cancel)."""
        return self._results

    def is_busy(self) -> bool:
        """True while a job runs or waits."""
        return self._host.is_busy()

    # ------------------------------------------------------------------------------ requests
    def run(self, task: ModelTask) -> None:
        """Start ``task`` (a ``"run"``): the points shown go, the running job is cancelled."""
        if self.is_closed():
            return
        self._wanted_alpha = None
        self._set(ModelResults(task=task, state="running"))
        self._host.request(lambda: task)
        self.busyChanged.emit(True)

    def continue_at(self, alpha: float) -> None:
        """Continue the text under ``alpha`` (the scope, rule and precision of the last run);
        while a run goes, once it has ended."""
        task = self._results.task
        if self.is_closed() or task is None or self._results.model is None:
            return
        if self._host.is_busy():
            self._wanted_alpha = alpha
            return
        chosen = self._results.intervened
        if chosen is not None and chosen.alpha == alpha:
            return
        follow = dataclasses.replace(task, kind="continue", chosen_alpha=alpha)
        self._set(dataclasses.replace(self._results, task=follow, intervened=None,
                                      state="running", error=""))
        self._host.request(lambda: follow)
        self.busyChanged.emit(True)

    @Slot()
    def cancel(self) -> None:
        """Stop the running job; the points computed so far stay."""
        self._wanted_alpha = None
        self._host.cancel()

    # -------------------------------------------------------------------------------- private
    def _set(self, results: ModelResults) -> None:
        self._results = results
        self.resultsChanged.emit(results)

    def _update(self, **changes: object) -> None:
        self._set(dataclasses.replace(self._results, **changes))

    def _on_opened(self, opened: ModelOpened) -> None:
        self._update(model=opened)

    def _on_point(self, ready: PointReady) -> None:
        point, results = ready.point, self._results
        if point.kind == "alpha":
            self._update(alpha_points=(*results.alpha_points, point))
        else:
            self._update(second_points=(*results.second_points, point))

    def _on_continuation(self, ready: ContinuationReady) -> None:
        self._update(**{"own" if ready.own else "intervened": ready})

    def _on_progress(self, progress: Progress) -> None:
        self._update(progress=(progress.done, progress.total))

    def _on_failed(self, failure: JobFailed) -> None:
        self._update(state="failed", error=failure.message)

    @Slot(object)
    def _on_finished(self, finished: JobFinished) -> None:
        if finished.task is not self._results.task:
            return  # a superseded run: the newer one's results are shown
        if self._results.state == "running":
            self._update(state="done" if finished.completed else "cancelled")
        wanted, self._wanted_alpha = self._wanted_alpha, None
        if not self._host.is_busy():
            self.busyChanged.emit(False)
            if wanted is not None and self._results.state == "done":
                self.continue_at(wanted)
