"""The job kit: one worker thread per feature, an input throttle and a view pusher.

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

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import shiboken6
from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot

from gui.kit.plot_view import PlotView

__all__ = ["HostOwner", "Job", "JobFailed", "JobFinished", "Throttle", "ViewPusher", "WorkerHost"]


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


class Throttle(QObject):
    """Leading- and trailing-edge throttle: coalesces bursts of calls into few callbacks.

    The first :meth:`trigger` after a quiet period calls ``callback`` at once (low latency);
    later triggers within ``interval_ms`` collapse into one call at the end of the interval,
    so the last state always gets through.
    """

    def __init__(self, interval_ms: int, callback: Callable[[], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._callback = callback
        self._pending = False
        self._calling = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(int(interval_ms))
        self._timer.timeout.connect(self._on_timeout)

    def trigger(self) -> None:
        """Call back now, or at the end of the current interval."""
        if self._timer.isActive() or self._calling:
            self._pending = True
            return
        self._call()

    def is_pending(self) -> bool:
        """True while a call waits for the end of the interval."""
        return self._pending

    def discard(self) -> None:
        """Forget a waiting call (the interval keeps running)."""
        self._pending = False

    def stop(self) -> None:
        """Stop the timer and forget a waiting call."""
        self._timer.stop()
        self._pending = False

    def _call(self) -> None:
        # The interval starts when the callback returns (a slow push must not shorten the
        # pause after it); a trigger from inside the callback waits for that interval.
        self._calling = True
        try:
            self._callback()
        finally:
            self._calling = False
        self._timer.start()

    @Slot()
    def _on_timeout(self) -> None:
        if self._pending:
            self._pending = False
            self._call()


class ViewPusher(QObject):
    """Pushes the latest results to the visible views, at most once per ``interval_ms``.

    Parameters
    ----------
    views
        Objects with ``show_results(results)``; a hidden one is skipped and marked stale
        (:meth:`refresh_view` catches it up).
    latest
        Returns the results to push (``None``: nothing yet).
    interval_ms
        Minimum interval between two pushes.
    pushed, after_push
        Called after every push, inside ``guard`` with the results and the views whose content
        it changed (:meth:`PlotView.take_change`), and outside it with those views.
    guard
        Context manager factory wrapped around every batch of view updates.
    """

    def __init__(
        self,
        views: Iterable[Any],
        latest: Callable[[], object | None],
        interval_ms: int,
        *,
        pushed: Callable[[object, Sequence[object]], None] | None = None,
        after_push: Callable[[Sequence[object]], None] | None = None,
        guard: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._views: list[Any] = list(views)
        self._latest = latest
        self._pushed = pushed
        self._after_push = after_push
        self._guard = guard
        self._stale: set[object] = set()
        self._closed = False
        self._throttle = Throttle(interval_ms, self._push, self)

    def schedule(self) -> None:
        """New results: push now if the last push is an interval ago, else at its end."""
        if not self._closed:
            self._throttle.trigger()

    def is_pending(self) -> bool:
        """True while newer results wait for the next push."""
        return self._throttle.is_pending()

    def flush(self) -> None:
        """Push a waiting update now to every visible view, due or not."""
        if self._throttle.is_pending() and not self._closed:
            self._throttle.discard()
            self._push()

    def discard(self) -> None:
        """Forget a waiting update and every stale mark (e.g. the views were cleared)."""
        self._throttle.discard()
        self._stale.clear()

    def close(self) -> None:
        """Push nothing any more (shutdown)."""
        self._closed = True
        self._throttle.stop()

    def is_stale(self, view: object) -> bool:
        """True if ``view`` missed a push while hidden."""
        return view in self._stale

    def refresh_views(self) -> None:
        """Push the latest results to every view now, hidden ones too (e.g. before export)."""
        results = self._latest()
        if results is None:
            return
        with self._guard():
            for view in self._views:
                view.show_results(results)
        self._stale.clear()

    def refresh_view(self, view: Any) -> None:
        """Bring ``view`` up to date if it missed pushes while hidden."""
        results = self._latest()
        if results is not None and view in self._stale:
            self._stale.discard(view)
            with self._guard():
                view.show_results(results)

    def _show_changes(self, view: Any, results: object) -> bool:
        """Show ``results`` in ``view``; whether that changed what it shows (if not, the
        view needs no paint)."""
        if not isinstance(view, PlotView):
            view.show_results(results)
            return True
        view.take_change()  # what a catch-up while hidden changed was painted as it came up
        view.show_results(results)
        return view.take_change()

    def _push(self) -> None:
        results = self._latest()
        if results is None or self._closed:
            return
        shown: list[object] = []
        with self._guard():
            for view in self._views:
                visible = getattr(view, "isVisible", None)
                if visible is not None and not visible():
                    self._stale.add(view)
                    continue
                if self._show_changes(view, results):
                    shown.append(view)
                self._stale.discard(view)
            if self._pushed is not None:
                self._pushed(results, shown)
        if self._after_push is not None:
            self._after_push(shown)
