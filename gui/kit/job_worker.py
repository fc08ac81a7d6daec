"""The base of the workers a :class:`~gui.kit.jobs.WorkerHost` runs on its thread."""

from __future__ import annotations

import traceback
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from gui.kit.jobs import JobFailed, JobFinished

__all__ = ["JobWorker"]


class JobWorker(QObject):
    """Runs one job at a time in the thread it was moved to; never touches widgets.

    Subclasses implement :meth:`execute` (emit results as they come). A ``ValueError`` is
    input the user can fix (its message is shown as it is); any other exception is a bug,
    printed with its traceback and reported by type, and neither kills the thread nor the
    window.

    Signals
    -------
    failed(object)
        A :class:`~gui.kit.jobs.JobFailed` naming the job and the reason.
    finished(object)
        A :class:`~gui.kit.jobs.JobFinished`, emitted exactly once per job, last.
    """

    failed = Signal(object)  # JobFailed
    finished = Signal(object)  # JobFinished

    @Slot(object)
    def run(self, job: Any) -> None:
        """Run ``job`` to completion, cancellation or failure; always emit :attr:`finished`."""
        completed = False
        try:
            if job.cancel.is_set():
                return
            self.execute(job)
            completed = not job.cancel.is_set()
        except ValueError as exc:  # includes MemoryBudgetError: the user can fix the input
            self.failed.emit(JobFailed(job.request_id, str(exc)))
        except Exception as exc:  # a bug must not kill the thread or the window
            traceback.print_exc()
            self.failed.emit(JobFailed(job.request_id, f"{type(exc).__name__}: {exc}"))
        finally:
            self.finished.emit(JobFinished(job.request_id, completed, getattr(job, "kind", None)))

    def execute(self, job: Any) -> None:
        """Do the work of ``job``, checking ``job.cancel`` between steps."""
        raise NotImplementedError

    def warm_up(self) -> None:
        """Prepare in the worker's thread as soon as it starts (default: nothing); a job
        submitted meanwhile waits until this returns."""

    def release(self) -> None:
        """Free what the worker holds outside Python objects (a helper process); called on
        the GUI thread once the worker's thread has ended, just before it is deleted."""
