"""The base of the workers a :class:`~gui.kit.jobs.WorkerHost` runs on its thread."""

from __future__ import annotations

import traceback
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from gui.kit.jobs import Job, JobFailed, JobFinished

__all__ = ["JobWorker"]


class JobWorker(QObject):
    """Runs one job at a time in the thread it was moved to; never touches widgets.

    Subclasses implement :meth:`execute` (:meth:`report` results as they come). A ``ValueError`` is
    input the user can fix (its message is shown as it is); any other exception is a bug,
    printed with its traceback and reported by type, and neither kills the thread nor the
    window.

    Signals
    -------
    reported(object)
        ``(request_id, message)``: a message of the running job (:meth:`report`), or a
        :class:`~gui.kit.jobs.JobFailed` naming the reason it failed.
    finished(object)
        A :class:`~gui.kit.jobs.JobFinished`, emitted exactly once per job, last.
    """

    reported = Signal(object)  # (request_id, message)
    finished = Signal(object)  # JobFinished

    def __init__(self) -> None:
        super().__init__()
        self._request_id = -1  # of the job running in this worker's thread

    @Slot(object)
    def run(self, job: Job[Any]) -> None:
        """Run ``job`` to completion, cancellation or failure; always emit :attr:`finished`."""
        self._request_id = job.request_id
        completed = False
        try:
            if job.cancel.is_set():
                return
            self.execute(job)
            completed = not job.cancel.is_set()
        except ValueError as exc:  # includes MemoryBudgetError: the user can fix the input
            self.report(JobFailed(str(exc)))
        except Exception as exc:  # a bug must not kill the thread or the window
            traceback.print_exc()
            self.report(JobFailed(f"{type(exc).__name__}: {exc}"))
        finally:
            self.finished.emit(JobFinished(job.request_id, completed, job.task))

    def report(self, message: object) -> None:
        """Send ``message`` of the running job to the host (from :meth:`execute`)."""
        self.reported.emit((self._request_id, message))

    def execute(self, job: Job[Any]) -> None:
        """Do the work of ``job``, checking ``job.cancel`` between steps."""
        raise NotImplementedError

    def warm_up(self) -> None:
        """Prepare in the worker's thread as soon as it starts (default: nothing); a job
        submitted meanwhile waits until this returns."""

    def release(self) -> None:
        """Free what the worker holds outside Python objects (a helper process); called on
        the GUI thread once the worker's thread has ended, just before it is deleted."""
