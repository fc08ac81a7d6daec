"""The Heads view's controller: the open tensor file, its streamed diagnostics, the replay.

One :class:`~gui.kit.jobs.WorkerHost` thread each scans the file, replays the selected head (so
that picking a head does not cancel a scan), captures a model's q and k (opened like a file) and
writes a capture; a newer request supersedes the older one. Each host hands on only the
messages of the job it runs, and none once closed. A file that cannot be opened leaves the file
shown in place; every error message names the file it is about.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from engine.analysis.head_scan import HeadRecord
from engine.io.tensors import TensorFile
from gui.heads.capture_worker import (
    CaptureProgress,
    CaptureReady,
    CaptureTask,
    CaptureWorker,
    Saved,
    SaveTask,
    SaveWorker,
)
from gui.heads.worker import (
    FileOpened,
    HeadsWorker,
    Logits,
    RecordsReady,
    ReplayReady,
    ReplayTask,
    ScanTask,
)
from gui.kit.jobs import HostOwner, JobFailed, JobFinished, WorkerHost

__all__ = ["HeadsController"]


class HeadsController(HostOwner):
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
        A message for the user, starting with the name of the file it is about.
    captureProgress(int, int, str)
        Layers captured, layers to capture, the model's name ("" until it has opened).
    captureReady(object)
        A :class:`~gui.heads.capture_worker.CaptureReady`; its tensor file is being opened.
    captureFailed(str)
        A capture could not run (the message names the model or the input to change).
    captureBusyChanged(bool)
        A capture is running.
    captureSaved(str, bool)
        The capture was written to this path; True if it is the one shown (now not unsaved).
    captureSaveFailed(str, str)
        The path that could not be written and why.
    workerStopped()
        Every thread has ended.
    """

    fileOpened = Signal(object)
    recordsChanged = Signal(object)
    progressChanged = Signal(int, int)
    replayReady = Signal(object)
    busyChanged = Signal(bool)
    errorOccurred = Signal(str)
    captureProgress = Signal(int, int, str)
    captureReady = Signal(object)
    captureFailed = Signal(str)
    captureBusyChanged = Signal(bool)
    captureSaved = Signal(str, bool)
    captureSaveFailed = Signal(str, str)
    workerStopped = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._tensor_file: TensorFile | None = None
        self._records: tuple[HeadRecord, ...] = ()
        self._logits = Logits()
        self._pending_path = ""
        self._pending_file: TensorFile | None = None
        self._pending_logits = self._logits
        self._capture: CaptureReady | None = None
        self._capture_logits = self._logits
        self._selected: tuple[int, int, int] | None = None
        self._busy = False
        self._saving = False  # from the request until its Saved (the host's own busy lasts longer)
        self._hosts: list[WorkerHost] = []
        self._scan_host = self._add_host(HeadsWorker(), "heads-scan", {
            FileOpened: self._on_opened, RecordsReady: self._on_records,
            JobFailed: self._on_scan_failed})
        self._replay_host = self._add_host(HeadsWorker(), "heads-replay", {
            ReplayReady: self._on_replay, JobFailed: self._on_replay_failed})
        for host in self._hosts:
            host.jobFinished.connect(self._on_finished)
        self._capture_host = self._add_host(CaptureWorker(), "heads-capture", {
            CaptureProgress: self._on_capture_progress, CaptureReady: self._on_captured,
            JobFailed: self._on_capture_failed})
        self._capture_host.jobFinished.connect(self._on_capture_finished)
        self._save_host = self._add_host(SaveWorker(), "heads-save", {
            Saved: self._on_saved, JobFailed: self._on_save_failed}, interruptible=False)

    def _add_host(self, worker: QObject, name: str, handlers: dict[type, Callable[[Any], None]],
                  *, interruptible: bool = True) -> WorkerHost:
        host = WorkerHost(worker, name, self, handlers=handlers, interruptible=interruptible)
        host.workerStopped.connect(self._on_worker_stopped)
        self._hosts.append(host)
        return host

    # ----------------------------------------------------------------------------- accessors
    def tensor_file(self) -> TensorFile | None:
        """The file shown (None before the first file opened)."""
        return self._tensor_file

    def records(self) -> tuple[HeadRecord, ...]:
        """The diagnostics received so far for the file shown."""
        return self._records

    def logits(self) -> Logits:
        """The rule and parameters of the diagnostics and the replay."""
        return self._logits

    def pending_path(self) -> str:
        """The file being opened ("" when none is)."""
        return self._pending_path

    def selected(self) -> tuple[int, int, int] | None:
        """The selected (layer, head, batch entry), or None."""
        return self._selected

    def is_busy(self) -> bool:
        """True while a scan or a replay runs or waits (a capture is :meth:`is_capturing`)."""
        return self._scan_host.is_busy() or self._replay_host.is_busy()

    def is_capturing(self) -> bool:
        """True while a capture runs or waits."""
        return self._capture_host.is_busy()

    def unsaved_capture(self) -> CaptureReady | None:
        """The capture shown when it has not been saved to a file, else None."""
        capture = self._capture
        return capture if capture is not None and capture.tensor_file is self._tensor_file else None

    # ------------------------------------------------------------------------------ requests
    def open_file(self, path: str, logits: Logits | None = None,
                  tensor_file: TensorFile | None = None) -> None:
        """Open and diagnose ``path`` (under ``logits``, default the current ones); the file
        shown, and its parameters, stay until the new one has opened. ``tensor_file`` is one
        already open (a capture's) to show under the name ``path``."""
        if self.is_closed():
            return
        self._pending_path = str(path)
        self._pending_file = tensor_file
        self._pending_logits = logits if logits is not None else self._logits
        self._scan_host.request(self._scan_task)
        self._set_busy(True)

    def set_logits(self, logits: Logits) -> None:
        """Diagnose the file shown again under ``logits`` and replay the selected head."""
        if self.is_closed() or logits == self._logits:
            return
        self._logits = logits
        self._pending_logits = logits
        if self._tensor_file is not None or self._pending_path:
            self._scan_host.request(self._scan_task)
            self._request_replay()
            self._set_busy(True)

    def select_head(self, layer: int, head: int, batch_entry: int = 0) -> None:
        """Replay (layer, head) of the file shown under every rule."""
        if self.is_closed() or self._tensor_file is None:
            return
        self._selected = (int(layer), int(head), int(batch_entry))
        self._request_replay()
        self._set_busy(True)

    def capture_model(self, path: str, text: str, *, max_tokens: int | None = None,
                      layers: str = "", keep_v: bool = False,
                      logits: Logits | None = None, memory_budget: int | None = None) -> None:
        """Run the model at ``path`` on ``text`` and open what it captured, diagnosed under
        ``logits`` (default the current ones), within ``memory_budget`` bytes (default the
        engine's); a newer capture supersedes a running one."""
        if self.is_closed():
            return
        # One core stays with the GUI thread; the rest run the model's matrix products.
        threads = max(1, (os.cpu_count() or 2) - 1)
        self._capture_logits = logits if logits is not None else self._logits
        task = CaptureTask(str(path), text, max_tokens, layers, keep_v, threads, memory_budget)
        self._capture_host.request(lambda: task)
        self.captureBusyChanged.emit(True)

    def save_capture(self, path: str) -> bool:
        """Write the unsaved capture shown to ``path`` on a worker (:attr:`captureSaved` or
        :attr:`captureSaveFailed` follows); False without one or while a write runs (a second
        click must not queue a second copy)."""
        if self.is_closed() or self._capture is None or self._saving:
            return False
        task = SaveTask(self._capture.capture, str(path))
        self._saving = True
        self._save_host.request(lambda: task)
        return True

    def is_saving(self) -> bool:
        """True while a capture is being written."""
        return self._saving

    @Slot()
    def cancel_capture(self) -> None:
        """Stop the running capture (nothing it computed is shown)."""
        self._capture_host.cancel()

    @Slot()
    def cancel(self) -> None:
        """Stop the scan, the replay and a capture (the diagnostics received so far stay)."""
        for host in self._hosts:
            host.cancel()

    # -------------------------------------------------------------------------------- private
    def _shown_path(self) -> str:
        return str(self._tensor_file.path) if self._tensor_file is not None else ""

    def _scan_task(self) -> ScanTask:
        if self._pending_path:
            return ScanTask(self._pending_path, self._pending_file, self._pending_logits)
        return ScanTask(self._shown_path(), self._tensor_file, self._logits)

    def _request_replay(self) -> None:
        if self._selected is None or self._tensor_file is None:
            return
        task = ReplayTask(self._tensor_file, *self._selected, self._logits)
        self._replay_host.request(lambda: task)

    # Handlers of the hosts' messages: each is of the job its host runs, never after close.
    def _on_opened(self, message: FileOpened) -> None:
        if self._pending_path:
            self._logits = self._pending_logits
        self._pending_path = ""
        self._pending_file = None
        new_file = message.tensor_file is not self._tensor_file
        self._tensor_file = message.tensor_file
        self._records = ()
        if new_file:
            self._selected = None
            self.fileOpened.emit(message.tensor_file)
        self.recordsChanged.emit(self._records)
        self.progressChanged.emit(0, len(message.tensor_file.layers) * message.tensor_file.heads)

    def _on_records(self, message: RecordsReady) -> None:
        assert self._tensor_file is not None  # the scan reported its file first (FileOpened)
        self._records = (*self._records, *message.records)
        self.recordsChanged.emit(self._records)
        self.progressChanged.emit(len(self._records),
                                  len(self._tensor_file.layers) * self._tensor_file.heads)

    def _on_replay(self, message: ReplayReady) -> None:
        if message.tensor_file is self._tensor_file:  # a scan may have opened another file
            self.replayReady.emit(message)

    def _on_scan_failed(self, message: JobFailed) -> None:
        path = self._pending_path or self._shown_path()
        self._pending_path = ""  # the file shown stays; later scans re-use it
        self._pending_file = None
        self._pending_logits = self._logits
        self.errorOccurred.emit(_naming(path, message.message))

    def _on_replay_failed(self, message: JobFailed) -> None:
        self.errorOccurred.emit(_naming(self._shown_path(), message.message))

    def _on_capture_progress(self, message: CaptureProgress) -> None:
        self.captureProgress.emit(message.done, message.total, message.model)

    def _on_captured(self, message: CaptureReady) -> None:
        self._capture = message
        self.captureReady.emit(message)
        self.open_file(message.capture.name, self._capture_logits, message.tensor_file)

    def _on_capture_failed(self, message: JobFailed) -> None:
        self.captureFailed.emit(message.message)

    def _on_saved(self, message: Saved) -> None:
        self._saving = False
        if message.error:
            self.captureSaveFailed.emit(message.path, message.error)
            return
        shown = self._capture is not None and self._capture.capture is message.capture
        if shown:
            self._capture = None  # the capture shown is in a file now
        self.captureSaved.emit(message.path, shown)

    def _on_save_failed(self, message: JobFailed) -> None:
        self._saving = False
        self.captureSaveFailed.emit(self._save_host.running().task.path, message.message)

    @Slot(object)
    def _on_capture_finished(self, message: JobFinished) -> None:
        if not self._capture_host.is_busy():
            self.captureBusyChanged.emit(False)

    @Slot(object)
    def _on_finished(self, message: JobFinished) -> None:
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
