"""The Model tab's worker thread: relays a task to the tab's child process and its messages back.

The engine work runs in :class:`~gui.model.process.SweepProcess` (its own interpreter lock);
this thread only hands a :class:`~gui.model.task.ModelTask` over and reports each message
(:class:`~gui.model.task.PointReady` as each sweep point is computed, …) to the
:class:`~gui.kit.jobs.WorkerHost`, which hands them to the controller. Cancelling returns within
:data:`~gui.model.process.POLL_S`; the child stops inside the engine step it is computing.
"""

from __future__ import annotations

from gui.kit.job_worker import JobWorker
from gui.kit.jobs import Job
from gui.model.process import SweepProcess
from gui.model.task import (
    ContinuationReady,
    ModelOpened,
    ModelTask,
    PointReady,
    Progress,
)

__all__ = ["ContinuationReady", "ModelOpened", "ModelTask", "ModelWorker", "PointReady",
           "Progress"]


class ModelWorker(JobWorker):
    """Runs :class:`ModelTask` jobs through the child process; never touches widgets."""

    def __init__(self) -> None:
        super().__init__()
        self._process = SweepProcess()  # started by the first task

    def execute(self, job: Job[ModelTask]) -> None:
        """Hand the task to the child and report every message it sends back."""
        for message in self._process.run(job.request_id, job.task, job.cancel.is_set):
            self.report(message)

    def release(self) -> None:
        """End the child process (GUI thread, after this worker's thread has ended)."""
        self._process.close()
