"""The Heads view's controller: the open tensor file, its streamed diagnostics, the replay.

Two :class:`~gui.kit.jobs.WorkerHost` threads: one scans the file (open, check, diagnose every
head), one replays the selected head under every rule, so picking a head while a large file is
still being scanned does not cancel the scan. In each, a newer request supersedes the older one.
A file that cannot be opened leaves the file shown before (and its diagnostics) in place.
Every error message names the file it is about.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal, Slot

from engine.analysis.head_scan import HeadRecord
from engine.io.tensors import TensorFile
from gui.heads.worker import (
    FileOpened,
    HeadsJobFinished,
    HeadsWorker,
    RecordsReady,
    ReplayJob,
    ReplayReady,
    RuleParams,
    ScanJob,
)
from gui.kit.jobs import JobFailed, WorkerHost

__all__ = ["HeadsController"]


class HeadsController(QObject):
    """Owns the open tensor file, the diagnostics received so far and the replay.

    Signals
    -------
    fileOpened(object)
        A :class:`~engine.io.tensors.TensorFile` is now the file shown (its diagnostics follow).
    recordsChanged(object)
        The tuple of :class:`~engine.analysis.head_scan.HeadRecord` received so far.
    progressChanged(int, int)
        Heads diagnosed, heads in the file.
    replayReady(object)
        A :class:`~gui.heads.worker.ReplayReady` for the selected head.
    busyChanged(bool)
        A scan or a replay is running.
    errorOccurred(str)
        A user-facing message (a file that cannot be read, a head that cannot be diagnosed),
        starting with the file's name.
    workerStopped()
        Both threads have ended.
    """

    fileOpened = Signal(object)
    recordsChanged = Signal(object)
    progressChanged = Signal(int, int)
    replayReady = Signal(object)
    busyChanged = Signal(bool)
    errorOccurred = Signal(str)
    workerStopped = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._tensor_file: TensorFile | None = None
        self._records: tuple[HeadRecord, ...] = ()
        self._params = RuleParams()
        self._scan_id = -1
        self._replay_id = -1
        self._pending_path = ""
        self._pending_params = self._params
        self._selected: tuple[int, int, int] | None = None
        self._busy = False
        self._closed = False
        self._hosts = []
        for name, failed in (("heads-scan", self._on_scan_failed),
                             ("heads-replay", self._on_replay_failed)):
            worker = HeadsWorker()
            worker.opened.connect(self._on_opened)
            worker.recordsReady.connect(self._on_records)
            worker.replayReady.connect(self._on_replay)
            worker.failed.connect(failed)
            host = WorkerHost(worker, name, self)
            host.jobFinished.connect(self._on_finished)
            host.workerStopped.connect(self._on_worker_stopped)
            self._hosts.append(host)
        self._scan_host, self._replay_host = self._hosts

    # ----------------------------------------------------------------------------- accessors
    def tensor_file(self) -> TensorFile | None:
        """The file shown (None before the first file opened)."""
        return self._tensor_file

    def records(self) -> tuple[HeadRecord, ...]:
        """The diagnostics received so far for the file shown."""
        return self._records

    def params(self) -> RuleParams:
        """The rule and parameters of the diagnostics and the replay."""
        return self._params

    def pending_path(self) -> str:
        """The file being opened ("" when none is)."""
        return self._pending_path

    def selected(self) -> tuple[int, int, int] | None:
        """The selected (layer, head, batch entry), or None."""
        return self._selected

    def is_busy(self) -> bool:
        """True while a scan or a replay runs or waits."""
        return any(host.is_busy() for host in self._hosts)

    def is_running(self) -> bool:
        """True while either worker thread is alive."""
        return any(host.is_running() for host in self._hosts)

    def wait_stopped(self, timeout_ms: int) -> bool:
        """Block at most ``timeout_ms`` (per thread) for both threads to end."""
        return all(host.wait_stopped(timeout_ms) for host in self._hosts)

    # ------------------------------------------------------------------------------ requests
    def open_file(self, path: str, params: RuleParams | None = None) -> None:
        """Open and diagnose ``path`` (under ``params``, default the current ones); the file
        shown, and its parameters, stay until the new one has opened."""
        if self._closed:
            return
        self._pending_path = str(path)
        self._pending_params = params if params is not None else self._params
        self._scan_host.request(self._scan_job)
        self._set_busy(True)

    def set_params(self, params: RuleParams) -> None:
        """Diagnose the file shown again under ``params`` and replay the selected head."""
        if self._closed or params == self._params:
            return
        self._params = params
        self._pending_params = params
        if self._tensor_file is not None or self._pending_path:
            self._scan_host.request(self._scan_job)
            self._request_replay()
            self._set_busy(True)

    def select_head(self, layer: int, head: int, batch_entry: int = 0) -> None:
        """Replay (layer, head) of the file shown under every rule."""
        if self._closed or self._tensor_file is None:
            return
        self._selected = (int(layer), int(head), int(batch_entry))
        self._request_replay()
        self._set_busy(True)

    @Slot()
    def cancel(self) -> None:
        """Stop the scan and the replay (the diagnostics received so far stay)."""
        for host in self._hosts:
            host.cancel()

    def begin_shutdown(self) -> None:
        """Cancel work and ask both threads to end, without waiting; idempotent."""
        if self._closed:
            return
        self._closed = True
        for host in self._hosts:
            host.begin_shutdown()

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """Stop both threads and wait for them (bounded, then without bound)."""
        self.begin_shutdown()
        return all([host.shutdown(timeout_ms) for host in self._hosts])

    # -------------------------------------------------------------------------------- private
    def _scan_job(self, request_id: int) -> ScanJob:
        self._scan_id = request_id
        reuse = None if self._pending_path else self._tensor_file
        path = self._pending_path or (str(reuse.path) if reuse is not None else "")
        params = self._pending_params if self._pending_path else self._params
        return ScanJob(request_id, path, reuse, params)

    def _request_replay(self) -> None:
        if self._selected is None or self._tensor_file is None:
            return
        tensor_file, params = self._tensor_file, self._params
        layer, head, batch_entry = self._selected

        def make(request_id: int) -> ReplayJob:
            self._replay_id = request_id
            return ReplayJob(request_id, tensor_file, layer, head, batch_entry, params)

        self._replay_host.request(make)

    @Slot(object)
    def _on_opened(self, message: FileOpened) -> None:
        if self._closed or message.request_id != self._scan_id:
            return
        if self._pending_path:
            self._params = self._pending_params
        self._pending_path = ""
        new_file = message.tensor_file is not self._tensor_file
        self._tensor_file = message.tensor_file
        self._records = ()
        if new_file:
            self._selected = None
            self.fileOpened.emit(message.tensor_file)
        self.recordsChanged.emit(self._records)
        self.progressChanged.emit(0, len(message.tensor_file.layers) * message.tensor_file.heads)

    @Slot(object)
    def _on_records(self, message: RecordsReady) -> None:
        if self._closed or message.request_id != self._scan_id or self._tensor_file is None:
            return
        self._records = (*self._records, *message.records)
        tf = self._tensor_file
        self.recordsChanged.emit(self._records)
        self.progressChanged.emit(len(self._records), len(tf.layers) * tf.heads)

    @Slot(object)
    def _on_replay(self, message: ReplayReady) -> None:
        if self._closed or message.request_id != self._replay_id:
            return
        if message.tensor_file is self._tensor_file:
            self.replayReady.emit(message)

    @Slot(object)
    def _on_scan_failed(self, message: JobFailed) -> None:
        if not self._closed and message.request_id == self._scan_id:
            shown = self._tensor_file
            path = self._pending_path or (str(shown.path) if shown is not None else "")
            self._pending_path = ""  # the file shown stays; later scans re-use it
            self._pending_params = self._params
            self.errorOccurred.emit(_naming(path, message.message))

    @Slot(object)
    def _on_replay_failed(self, message: JobFailed) -> None:
        if not self._closed and message.request_id == self._replay_id:
            shown = self._tensor_file
            self.errorOccurred.emit(
                _naming(str(shown.path) if shown is not None else "", message.message))

    @Slot(object)
    def _on_finished(self, message: HeadsJobFinished) -> None:
        if not self._closed:
            self._set_busy(self.is_busy())

    @Slot()
    def _on_worker_stopped(self) -> None:
        if not self.is_running():
            self.workerStopped.emit()

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)


def _naming(path: str, message: str) -> str:
    """``message`` starting with the name of the file it is about (once)."""
    name = Path(path).name
    if not name or message.startswith(name) or name in message.split(":", 1)[0]:
        return message
    return f"{name}: {message}"
