"""The job kit: WorkerHost (newest supersedes, stale messages dropped, bounded shutdown),
Throttle, ViewPusher."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
import shiboken6
from PySide6.QtCore import QObject, Qt, Signal, Slot

from gui.kit.job_worker import JobWorker
from gui.kit.jobs import Job, JobFailed, WorkerHost
from gui.kit.plot_view import PlotView
from gui.kit.qt_lifetime import wait_until
from gui.kit.view_push import Throttle, ViewPusher


@dataclasses.dataclass(frozen=True)
class Done:
    request_id: int
    cancelled: bool


class SleepWorker(QObject):
    """Sleeps in 5 ms steps until the job's time (its task, in seconds) is up or it is
    cancelled; records its runs. A worker without reports: only ``run`` and ``finished``."""

    finished = Signal(object)

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.runs: list[int] = []
        self.running = 0
        self.most_at_once = 0

    @Slot(object)
    def run(self, job: Job[float]) -> None:
        with self.lock:
            self.runs.append(job.request_id)
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        end = time.perf_counter() + job.task
        while time.perf_counter() < end and not job.cancel.wait(0.005):
            pass
        with self.lock:
            self.running -= 1
        self.finished.emit(Done(job.request_id, job.cancel.is_set()))


@pytest.fixture
def host(qapp):
    made = []

    def factory():
        worker = SleepWorker()
        made_host = WorkerHost(worker, "test-worker")
        made_host.worker = worker
        made_host.done = []
        made_host.jobFinished.connect(made_host.done.append)
        made.append(made_host)
        return made_host

    yield factory
    for made_host in made:
        assert made_host.shutdown(1000)
        assert not made_host.is_running()
        made_host.deleteLater()


def test_the_newest_request_supersedes_and_one_job_runs_at_a_time(host):
    h = host()
    configs = []

    def job(seconds, tag):
        def make():
            configs.append(tag)
            return seconds
        return make

    h.request(job(10.0, "first"))
    for i in range(20):  # a burst while the first job runs: only the last one is kept
        h.request(job(0.01, f"burst {i}"))
    assert wait_until(lambda: not h.is_busy(), (h.jobFinished,), 5000)
    assert configs == ["first", "burst 19"]
    assert h.worker.runs == [1, 2] and h.worker.most_at_once == 1
    assert [d.cancelled for d in h.done] == [True, False]


def test_cancel_reaches_the_running_job(host):
    h = host()
    h.request(lambda: 60.0)
    deadline = time.perf_counter() + 5
    while h.worker.running == 0 and time.perf_counter() < deadline:  # the worker thread starts it
        time.sleep(0.001)
    assert h.worker.running == 1
    h.cancel()
    assert wait_until(lambda: not h.is_busy(), (h.jobFinished,), 30_000)
    assert h.done[-1].cancelled  # it stopped on the cancel, not at the end of its minute


def test_shutdown_is_bounded_and_announced(host):
    h = host()
    stopped = []
    h.workerStopped.connect(lambda: stopped.append(True))
    h.request(lambda: 10.0)
    h.begin_shutdown()  # does not wait
    assert h.is_running()
    assert wait_until(lambda: bool(stopped), (h.workerStopped,), 2000)
    assert not h.is_running() and h.is_closed()
    assert h.done == []  # the job cancelled by the shutdown ended after it: not handed on
    assert not h.request(lambda: 0.0)  # refused once closed
    assert h.running() is None


class DeletionProbe(SleepWorker):
    """Records the thread its C++ object is destroyed in (through ``destroyed``)."""

    def __init__(self) -> None:
        super().__init__()
        self.destroyed_in: list[str] = []
        probe = self.destroyed_in
        self.destroyed.connect(lambda *_: probe.append(threading.current_thread().name),
                               Qt.ConnectionType.DirectConnection)


@pytest.mark.parametrize("waiting", [True, False])
def test_the_worker_is_deleted_on_the_gui_thread_after_its_thread_ends(qapp, waiting):
    # Deleted in its own thread, the worker's wrapper waited there for the interpreter lock
    # while Qt held a signal-slot mutex that the GUI thread (holding the lock) needed: a
    # deadlock at window close.
    worker = DeletionProbe()
    destroyed_in = worker.destroyed_in
    host = WorkerHost(worker, "deletion-test")
    stopped = []
    host.workerStopped.connect(lambda: stopped.append(True))
    host.request(lambda: 10.0)
    if waiting:
        assert host.shutdown(2000)
    else:
        host.begin_shutdown()
        assert wait_until(lambda: bool(stopped), (host.workerStopped,), 2000)
    assert not shiboken6.isValid(worker)
    assert destroyed_in == [threading.main_thread().name]
    host.deleteLater()


def test_throttle_calls_at_once_then_once_per_interval(qapp):
    calls = []
    throttle = Throttle(40, lambda: calls.append(time.perf_counter()))
    for _ in range(100):
        throttle.trigger()
    assert len(calls) == 1 and throttle.is_pending()
    wait_until(lambda: not throttle.is_pending(), (), 500)
    wait_until(None, (), 100)
    assert len(calls) == 2  # the burst collapsed into one trailing call
    assert calls[1] - calls[0] >= 0.035
    throttle.trigger()  # quiet again: at once
    assert len(calls) == 3 and throttle.is_pending() is False
    throttle.stop()
    throttle.deleteLater()


class View:
    def __init__(self, visible=True):
        self.visible = visible
        self.shown = []

    def isVisible(self):
        return self.visible

    def show_results(self, results):
        self.shown.append(results)


def test_view_pusher_pushes_the_latest_to_visible_views_and_catches_up_hidden_ones(qapp):
    front, hidden = View(), View(visible=False)
    latest = {"value": None}
    pushed = []
    pusher = ViewPusher([front, hidden], lambda: latest["value"], 30,
                        pushed=lambda results, shown: pushed.append((results, list(shown))))
    for i in range(50):
        latest["value"] = i
        pusher.schedule()
    assert front.shown == [0] and hidden.shown == []
    assert wait_until(lambda: not pusher.is_pending(), (), 500)
    assert front.shown == [0, 49] and pushed[-1] == (49, [front])
    assert pusher.is_stale(hidden)
    hidden.visible = True
    pusher.refresh_view(hidden)
    assert hidden.shown == [49] and not pusher.is_stale(hidden)
    pusher.close()
    pusher.deleteLater()


class PartView(PlotView):
    """Shows one part of the results (``results["part"]``), skipping it when unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.updates = 0

    def show_results(self, results) -> None:
        if self._is_new("part", results["part"]):
            self.updates += 1


def test_view_pusher_hands_on_only_the_views_a_push_changed(qtbot):
    # A view that changed nothing needs no paint: the pusher's callbacks do not get it, neither
    # after a push of the same part nor after the catch-up of a hidden view (painted as it came up).
    view = PartView()
    qtbot.addWidget(view)
    view.show()
    latest = {"value": {"part": "a"}}
    changed = []
    pusher = ViewPusher([view], lambda: latest["value"], 0,
                        pushed=lambda results, views: changed.append(list(views)))
    pusher.schedule()
    assert changed == [[view]] and view.updates == 1
    latest["value"] = {"part": "a"}  # new results, same part
    wait_until(None, (), 20)
    pusher.schedule()
    assert changed == [[view], []] and view.updates == 1
    view.hide()
    latest["value"] = {"part": "b"}
    wait_until(None, (), 20)
    pusher.schedule()
    assert pusher.is_stale(view) and changed[-1] == []
    view.show()
    pusher.refresh_view(view)
    assert view.updates == 2
    wait_until(None, (), 20)
    pusher.schedule()
    assert changed[-1] == []  # the catch-up's change is not painted a second time
    pusher.close()
    pusher.deleteLater()


class WarmingWorker(SleepWorker):
    """Records the thread of its warm-up and whether a job had started by then."""

    def __init__(self) -> None:
        super().__init__()
        self.warmed_in: str | None = None
        self.runs_when_warmed: list[int] | None = None

    def warm_up(self) -> None:
        time.sleep(0.05)  # long enough for a job submitted at once to be waiting
        self.warmed_in = threading.current_thread().name
        self.runs_when_warmed = list(self.runs)


def test_warm_up_runs_in_the_worker_thread_before_the_first_job(qapp):
    worker = WarmingWorker()
    made_host = WorkerHost(worker, "warming-worker")
    done: list[Done] = []
    made_host.jobFinished.connect(done.append)
    try:
        made_host.request(lambda: 0.0)
        assert wait_until(lambda: bool(done), (made_host.jobFinished,), 5_000)
        assert worker.warmed_in not in (None, threading.main_thread().name)
        assert worker.runs_when_warmed == []  # the job waited for the warm-up
        assert worker.runs == [done[0].request_id]
    finally:
        assert made_host.shutdown(1000)
        made_host.deleteLater()


@dataclasses.dataclass(frozen=True)
class Said:
    task: str


class ReportingWorker(JobWorker):
    """Reports its task, then waits for its cancel (at most ``task`` seconds if a number)."""

    def execute(self, job: Job) -> None:
        if job.task == "fail":
            raise ValueError("bad input")
        self.report(Said(job.task))
        job.cancel.wait(float(job.task) if job.task.replace(".", "").isdigit() else 30.0)


def test_the_host_hands_on_only_the_running_jobs_messages_and_none_once_closed(qapp):
    said, failed, stopped = [], [], []
    worker = ReportingWorker()
    reporting = WorkerHost(worker, "reporting", handlers={Said: said.append,
                                                            JobFailed: failed.append})
    reporting.workerStopped.connect(lambda: stopped.append(True))
    assert reporting.request(lambda: "first")
    assert wait_until(lambda: bool(said), (), 5_000)
    assert said == [Said("first")] and reporting.running().task == "first"
    worker.reported.emit((reporting.running().request_id + 1, Said("not asked for")))
    assert said == [Said("first")]  # another id than the running job's: dropped
    reporting.request(lambda: "fail")  # supersedes (cancels) the first
    assert wait_until(lambda: bool(failed), (), 5_000)
    assert [f.message for f in failed] == ["bad input"]
    assert reporting.request(lambda: "second")
    assert wait_until(lambda: len(said) == 2, (), 5_000)
    reporting.begin_shutdown()
    worker.reported.emit((reporting.running().request_id, Said("after close")))
    assert not reporting.request(lambda: "refused")  # closed: refused, and says so
    assert wait_until(lambda: bool(stopped), (reporting.workerStopped,), 5_000)
    assert said == [Said("first"), Said("second")]
    reporting.deleteLater()


def test_an_uninterruptible_job_is_not_stopped_by_a_newer_request_nor_a_cancel(qapp):
    said, done = [], []
    writing = WorkerHost(ReportingWorker(), "writing", handlers={Said: said.append},
                         interruptible=False)
    writing.jobFinished.connect(done.append)
    writing.request(lambda: "0.3")
    writing.request(lambda: "0")
    writing.cancel()  # forgets the wanted "0"; the running "0.3" goes on
    assert wait_until(lambda: bool(done), (writing.jobFinished,), 5_000)
    assert said == [Said("0.3")] and done[0].completed
    assert writing.shutdown(1000)
    writing.deleteLater()
