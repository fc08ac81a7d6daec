"""The worker that opens a model and captures its q and k for the Heads tab.

A :class:`CaptureJob` opens the model folder or GGUF file (the opened model is kept while its
path and modification time stay the same, so a second text does not read the weights' headers
again), tokenizes the text in a helper process (building a tokenizer holds Python's
interpreter lock for 0.1 s, which would freeze the window), runs the model layer by layer,
reporting :class:`CaptureProgress` after each one, and ends with a :class:`CaptureReady`
holding the capture and its checked tensor file. Cancelling takes effect between two layers.
"""

from __future__ import annotations

import dataclasses
import threading

from PySide6.QtCore import Signal

from engine.core.threads import limit_blas_threads
from engine.io.files import describe_os_error
from engine.io.tensors import TensorFile
from engine.models import Capture, CaptureCancelled, layers_text
from engine.models.capture import UNFORESEEN_ERRORS, unforeseen
from engine.models.tokenize import TokenizerProcess
from gui.kit.job_worker import JobWorker
from gui.kit.opened_model import OpenedModel

__all__ = ["CaptureJob", "CaptureProgress", "CaptureReady", "CaptureWorker",
           "SaveJob", "SaveWorker", "Saved"]


@dataclasses.dataclass(frozen=True)
class CaptureJob:
    """Run the model at ``path`` on ``text``; ``layers`` as typed ("" for all of them)."""

    request_id: int
    path: str
    text: str
    max_tokens: int | None = None
    layers: str = ""
    keep_v: bool = False
    threads: int = 1
    memory_budget: int | None = None
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)

    def stop(self) -> None:
        """Cancel the capture: opening the model and each layer stop at their next step."""
        self.cancel.set()


@dataclasses.dataclass(frozen=True)
class CaptureProgress:
    """``done`` of ``total`` steps; ``model`` names the model once it has opened."""

    request_id: int
    done: int
    total: int
    model: str


@dataclasses.dataclass(frozen=True)
class CaptureReady:
    """The finished capture and the tensor file the Heads tab opens from it."""

    request_id: int
    capture: Capture
    tensor_file: TensorFile


class CaptureWorker(JobWorker):
    """Runs :class:`CaptureJob` objects in the thread it was moved to."""

    progressed = Signal(object)  # CaptureProgress
    captured = Signal(object)  # CaptureReady

    def __init__(self) -> None:
        super().__init__()
        self._opened = OpenedModel()
        self._tokenizer = TokenizerProcess()  # started by the first capture

    def warm_up(self) -> None:
        """Import what a capture needs besides the engine (``gguf`` and what it imports).

        Run when the window starts, in this thread: during the first capture the import held
        the interpreter lock long enough to pause the window for 60-70 ms.
        """
        try:
            import gguf  # noqa: F401
        except ImportError:
            pass  # the capture of a GGUF file says what is missing

    def execute(self, job: CaptureJob) -> None:
        """Open the model (or re-use it), capture, and emit the result."""
        try:
            model = self._opened.open(job.path, job.cancel.is_set)
        except CaptureCancelled:
            return
        if job.cancel.is_set():
            return
        layers = layers_text(job.layers, model.spec.layers) if job.layers.strip() else None
        name = model.name

        def progress(done: int, total: int) -> None:
            self.progressed.emit(CaptureProgress(job.request_id, done, total, name))

        progress(0, len(layers) if layers is not None else model.spec.layers)
        # The threads the user allows (the GUI thread keeps a core on a two-core machine).
        with limit_blas_threads(job.threads):
            try:
                capture = model.capture(
                    job.text, max_tokens=job.max_tokens, layers=layers, keep_v=job.keep_v,
                    progress=progress, cancelled=job.cancel.is_set,
                    tokenize=lambda text, limit: self._tokenizer.encode(
                        model.tokenizer_source, text, limit, job.cancel.is_set),
                    memory_budget=job.memory_budget)
            except CaptureCancelled:
                return
            except UNFORESEEN_ERRORS as exc:
                raise unforeseen(job.path, exc) from exc
        tensor_file = capture.tensor_file()
        if not job.cancel.is_set():
            self.captured.emit(CaptureReady(job.request_id, capture, tensor_file))

    def release(self) -> None:
        """End the tokenizer's helper process."""
        self._tokenizer.close()


@dataclasses.dataclass(frozen=True)
class SaveJob:
    """Write ``capture`` to ``path`` (``.npz`` or ``.safetensors``)."""

    request_id: int
    capture: Capture
    path: str
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)

    def stop(self) -> None:
        """Nothing: a save asked for is never dropped, not by a newer one (which runs after
        it) nor by closing the window (which waits for it)."""


@dataclasses.dataclass(frozen=True)
class Saved:
    """The end of a :class:`SaveJob`: the file written, or ``error`` saying why not."""

    request_id: int
    capture: Capture
    path: str
    error: str = ""


class SaveWorker(JobWorker):
    """Writes captures in the thread it was moved to: tens of megabytes (35 MB for SmolLM2
    at 256 tokens, 0.06-0.1 s to a fast disk, seconds to a slow one) must not freeze the
    window."""

    saved = Signal(object)  # Saved

    def execute(self, job: SaveJob) -> None:
        """Write the capture; a disk error becomes :attr:`saved` with its message."""
        try:
            written = job.capture.save(job.path)
        except OSError as exc:
            self.saved.emit(Saved(job.request_id, job.capture, job.path,
                                  describe_os_error(exc)))
            return
        self.saved.emit(Saved(job.request_id, job.capture, str(written)))

