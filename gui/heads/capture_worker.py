"""The worker that opens a model and captures its q and k for the Heads tab.

A :class:`CaptureTask` (run as a kit :class:`~gui.kit.jobs.Job`) opens the model folder or GGUF
file (the opened model is kept while its path and modification time stay the same, so a second
text does not read the weights' headers again), tokenizes the text in a helper process
(building a tokenizer holds Python's interpreter lock for 0.1 s, which would freeze the
window), runs the model layer by layer, reporting :class:`CaptureProgress` after each one, and
ends with a :class:`CaptureReady` holding the capture and its checked tensor file. Cancelling
takes effect between two layers.
"""

from __future__ import annotations

import dataclasses

from engine.core.parallel import limit_threads
from engine.core.threads import limit_blas_threads
from engine.io.files import describe_os_error
from engine.io.tensors import TensorFile
from engine.models import Capture, CaptureCancelled, layers_text
from engine.models.capture import UNFORESEEN_ERRORS, unforeseen
from engine.models.tokenize import TokenizerProcess
from gui.kit.job_worker import JobWorker
from gui.kit.jobs import Job
from gui.kit.opened_model import OpenedModel

__all__ = ["CaptureProgress", "CaptureReady", "CaptureTask", "CaptureWorker",
           "SaveTask", "SaveWorker", "Saved"]


@dataclasses.dataclass(frozen=True)
class CaptureTask:
    """Run the model at ``path`` on ``text``; ``layers`` as typed ("" for all of them).
    Cancelling its job stops opening the model and each layer at their next step."""

    path: str
    text: str
    max_tokens: int | None = None
    layers: str = ""
    keep_v: bool = False
    threads: int = 1
    memory_budget: int | None = None


@dataclasses.dataclass(frozen=True)
class CaptureProgress:
    """``done`` of ``total`` steps; ``model`` names the model once it has opened."""

    done: int
    total: int
    model: str


@dataclasses.dataclass(frozen=True)
class CaptureReady:
    """The finished capture and the tensor file the Heads tab opens from it."""

    capture: Capture
    tensor_file: TensorFile


class CaptureWorker(JobWorker):
    """Runs :class:`CaptureTask` jobs in the thread it was moved to."""

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

    def execute(self, job: Job[CaptureTask]) -> None:
        """Open the model (or re-use it), capture, and report the result."""
        task = job.task
        try:
            model = self._opened.open(task.path, job.cancel.is_set)
        except CaptureCancelled:
            return
        if job.cancel.is_set():
            return
        layers = layers_text(task.layers, model.spec.layers) if task.layers.strip() else None
        name = model.name

        def progress(done: int, total: int) -> None:
            self.report(CaptureProgress(done, total, name))

        progress(0, len(layers) if layers is not None else model.spec.layers)
        # The threads the user allows (the GUI thread keeps a core on a two-core machine):
        # BLAS's and the engine's own (the attention's row blocks).
        with limit_blas_threads(task.threads), limit_threads(task.threads):
            try:
                capture = model.capture(
                    task.text, max_tokens=task.max_tokens, layers=layers, keep_v=task.keep_v,
                    progress=progress, cancelled=job.cancel.is_set,
                    tokenize=lambda text, limit: self._tokenizer.encode(
                        model.tokenizer_source, text, limit, job.cancel.is_set),
                    memory_budget=task.memory_budget)
            except CaptureCancelled:
                return
            except UNFORESEEN_ERRORS as exc:
                raise unforeseen(task.path, exc) from exc
        tensor_file = capture.tensor_file()
        if not job.cancel.is_set():
            self.report(CaptureReady(capture, tensor_file))

    def release(self) -> None:
        """End the tokenizer's helper process."""
        self._tokenizer.close()


@dataclasses.dataclass(frozen=True)
class SaveTask:
    """Write ``capture`` to ``path`` (``.npz`` or ``.safetensors``); its host is not
    interruptible: a save asked for is never dropped, not by a newer one (which runs after it)
    nor by closing the window (which waits for it)."""

    capture: Capture
    path: str


@dataclasses.dataclass(frozen=True)
class Saved:
    """The end of a :class:`SaveTask`: the file written, or ``error`` saying why not."""

    capture: Capture
    path: str
    error: str = ""


class SaveWorker(JobWorker):
    """Writes captures in the thread it was moved to: tens of megabytes (35 MB for SmolLM2
    at 256 tokens, 0.06-0.1 s to a fast disk, seconds to a slow one) must not freeze the
    window."""

    def execute(self, job: Job[SaveTask]) -> None:
        """Write the capture; a disk error becomes a :class:`Saved` with its message."""
        task = job.task
        try:
            written = task.capture.save(task.path)
        except OSError as exc:
            self.report(Saved(task.capture, task.path, describe_os_error(exc)))
            return
        self.report(Saved(task.capture, str(written)))

