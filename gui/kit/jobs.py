"""The job kit: one worker thread per feature, each running one job at a time.

:class:`WorkerHost` owns one ``QThread`` with one worker ``QObject``. Each request is a
:class:`Job`: an increasing ``request_id``, the worker's immutable ``task`` and the events that
cancel or pause it. The host hands at most one job at a time to the worker and keeps only the
newest wanted one, so input bursts never build a queue. Like napari's slice requests, every
message a worker reports carries its job's id, and the host hands on only those of the job
it runs, and nothing once closed: its owner never sees a superseded job's message and never
compares ids. A worker's ``@Slot(object)`` ``run(job)`` always ends by emitting ``finished``;
cross-thread signals carry ``object`` payloads into ``@Slot`` methods (no lambdas across
threads). :class:`Throttle` coalesces input (the first call at once, later ones into one at the
interval's end); :class:`ViewPusher` pushes the latest results to the visible views at most
once per interval, and hidden views catch up when shown.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import shiboken6
from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

__all__ = ["HostOwner", "Job", "JobFailed", "JobFinished", "WorkerHost"]


TaskT = TypeVar("TaskT")


def _set_event() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


@dataclasses.dataclass(frozen=True)
class Job(Generic[TaskT]):
    """One request handed to a worker: its id, what to do, and the events that steer it.

    Parameters
    ----------
    request_id
        Given by the host, increasing; the host drops messages of other ids.
    task
        What to do: the worker's own immutable request.
    cancel
        Set from the GUI thread to stop the job; the worker checks it between steps.
    running
        Cleared to hold the job at its next step (pause), set to let it go on.
    """

    request_id: int
    task: TaskT
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)
    running: threading.Event = dataclasses.field(default_factory=_set_event, compare=False)

    def stop(self) -> None:
        """Cancel the job; wakes it if it is paused."""
        self.cancel.set()
        self.running.set()

    def pause(self) -> None:
        """Hold the job at its next step."""
        self.running.clear()

    def resume(self) -> None:
        """Let a paused job go on."""
        self.running.set()


@dataclasses.dataclass(frozen=True)
class JobFinished:
    """A job ended; ``completed`` is False when it was cancelled or failed. ``task`` is the
    job's task."""

    request_id: int
    completed: bool
    task: Any = None


@dataclasses.dataclass(frozen=True)
class JobFailed:
    """A job raised; ``message`` is meant for the user (reported like any other message)."""

    message: str


class WorkerHost(QObject):
    """Runs one worker in its own ``QThread``: request ids, newest supersedes, bounded shutdown.

    Parameters
    ----------
    worker
        A parentless ``QObject`` with a ``run(job)`` slot and a ``finished`` signal (payload with
        ``request_id``), normally a :class:`~gui.kit.job_worker.JobWorker`. It is moved to the
        thread and deleted on the GUI thread once the thread has ended, the only safe order
        (docs/design-notes.md).
    name
        Object name of the thread (shows in debuggers).
    handlers
        The slot (GUI thread) of each message type the worker reports; a message reaches it
        only while its job runs and the host is not closed.
    interruptible
        False: a running job is never stopped, neither by a newer request (which runs after
        it) nor by :meth:`cancel` or a shutdown (which waits for it), e.g. a file being written.

    Signals
    -------
    jobFinished(object)
        The running job's ``finished`` message (GUI thread), before a wanted job starts; not
        emitted once the host is closed.
    workerStopped()
        The thread has ended (after :meth:`begin_shutdown` or :meth:`shutdown`).
    """

    jobFinished = Signal(object)
    workerStopped = Signal()
    _submitted = Signal(object)  # job -> worker thread (queued connection)

    def __init__(self, worker: QObject, name: str, parent: QObject | None = None, *,
                 handlers: Mapping[type, Callable[[Any], None]] | None = None,
                 interruptible: bool = True) -> None:
        super().__init__(parent)
        self._next_id = 0
        self._running: Job[Any] | None = None
        self._wanted: Callable[[], Any] | None = None
        self._closed = False
        self._handlers = dict(handlers or {})
        self._interruptible = interruptible
        self._submitted.connect(worker.run)  # type: ignore[attr-defined]
        worker.finished.connect(self._on_worker_finished)  # type: ignore[attr-defined]
        reported = getattr(worker, "reported", None)
        if reported is not None:
            reported.connect(self._on_reported)
        self._thread = QThread(self)
        self._thread.setObjectName(name)
        worker.moveToThread(self._thread)
        self._worker: QObject | None = worker
        self._thread.finished.connect(self._on_thread_finished)
        warm_up = getattr(worker, "warm_up", None)
        if warm_up is not None:  # runs in the new thread: the worker already lives there
            self._thread.started.connect(warm_up, Qt.ConnectionType.DirectConnection)
        self._thread.start()

    # ----------------------------------------------------------------------------- accessors
    def running(self) -> Any:
        """The job handed to the worker and not finished yet, or ``None``."""
        return self._running

    def has_wanted(self) -> bool:
        """True while a newer job waits for the running one to finish."""
        return self._wanted is not None

    def is_busy(self) -> bool:
        """True while a job runs or is wanted."""
        return self._running is not None or self._wanted is not None

    def is_closed(self) -> bool:
        """True once :meth:`begin_shutdown` (or :meth:`shutdown`) was called: nothing runs
        any more and no message is handed on; its owner refuses input from then on."""
        return self._closed

    def is_running(self) -> bool:
        """True while the worker thread is alive."""
        return self._thread.isRunning()

    def wait_stopped(self, timeout_ms: int) -> bool:
        """Block at most ``timeout_ms`` for the thread to end; True if it has ended."""
        return self._thread.wait(max(0, int(timeout_ms)))

    # ------------------------------------------------------------------------------ requests
    def request(self, make_task: Callable[[], Any]) -> bool:
        """Run a :class:`Job` of ``make_task()`` now if idle; else cancel the running job and
        run it next. False once the host is closed (nothing will run).

        ``make_task`` is called only when the job is handed to the worker, so it sees the
        state of that moment; a later :meth:`request` replaces a wanted one that has not
        started (newest supersedes). ``make_task`` must not emit signals: slots connected to
        them would see the host between two states.
        """
        if self._closed:
            return False
        if self._running is None:
            self._submit(make_task)
        else:
            self._wanted = make_task
            self._stop_running()
        return True

    def cancel(self) -> None:
        """Cancel the running job and forget the wanted one."""
        self._wanted = None
        self._stop_running()

    def begin_shutdown(self) -> None:
        """Cancel work and ask the thread to end, without waiting; safe to call twice.

        :attr:`workerStopped` is emitted once the thread has ended: a job inside one long
        engine call ends when that call returns.
        """
        if self._closed:
            return
        self._closed = True
        self.cancel()
        self._thread.quit()

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """Cancel work, stop the thread and wait for it; True if it stopped within the timeout.

        One engine call cannot be interrupted and destroying a running ``QThread`` aborts the
        process, so after the bounded wait this waits for the thread without bound.
        """
        self.begin_shutdown()
        stopped = self._thread.wait(max(0, int(timeout_ms)))
        if not stopped:
            self._thread.wait()
        self._delete_worker()
        return stopped

    # -------------------------------------------------------------------------------- private
    def _stop_running(self) -> None:
        if self._running is not None and self._interruptible:
            self._running.stop()

    def _submit(self, make_task: Callable[[], Any]) -> None:
        self._next_id += 1
        job = Job(self._next_id, make_task())
        self._running = job
        self._submitted.emit(job)

    @Slot(object)
    def _on_reported(self, report: tuple[int, Any]) -> None:
        request_id, message = report
        running = self._running
        if self._closed or running is None or request_id != running.request_id:
            return  # a superseded job's message, or the owner is closing
        self._handlers[type(message)](message)  # a message without a handler is a bug

    @Slot(object)
    def _on_worker_finished(self, message: Any) -> None:
        running = self._running
        if running is None or message.request_id != running.request_id:
            return
        self._running = None
        if not self._closed:
            self.jobFinished.emit(message)
        wanted, self._wanted = self._wanted, None
        if wanted is not None and not self._closed and self._running is None:
            self._submit(wanted)

    @Slot()
    def _on_thread_finished(self) -> None:
        # A job queued behind the thread's quit never runs and never reports: forget it.
        self._running = None
        self._wanted = None
        self._delete_worker()
        self.workerStopped.emit()

    def _delete_worker(self) -> None:
        """Destroy the worker here, on the GUI thread, after its thread has ended."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        # ``finished`` is emitted at the very end of the thread: this wait returns at once.
        self._thread.wait()
        release = getattr(worker, "release", None)
        if release is not None:
            release()
        shiboken6.delete(worker)


class HostOwner(QObject):
    """A controller that owns worker threads (its ``_hosts``, :class:`WorkerHost` objects)."""

    _hosts: list[WorkerHost]

    def is_running(self) -> bool:
        """True while a worker thread is alive."""
        return any(host.is_running() for host in self._hosts)

    def is_closed(self) -> bool:
        """True once its hosts are shut down (or shutting down): input is refused from then on."""
        return any(host.is_closed() for host in self._hosts)

    def wait_stopped(self, timeout_ms: int) -> bool:
        """Block at most ``timeout_ms`` (per thread) for every thread to end; True if they have."""
        return all(host.wait_stopped(timeout_ms) for host in self._hosts)

    def begin_shutdown(self) -> None:
        """Cancel work and ask every thread to end, without waiting; idempotent."""
        for host in self._hosts:
            host.begin_shutdown()

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """:meth:`begin_shutdown`, then wait for every thread (bounded, then without bound);
        True if each ended within ``timeout_ms``."""
        self.begin_shutdown()
        return all([host.shutdown(timeout_ms) for host in self._hosts])
