"""The training worker: relays each job to the training process from the training QThread.

The jobs run in a child process (:class:`~engine.training.process.TrainingProcess`), so the
trainer never competes with the GUI for the interpreter lock. A :class:`TrainJob` is immutable
apart from its ``threading.Event`` objects, the only channel from the GUI thread into a running
job: ``cancel`` (Stop) and ``running`` (cleared = paused). The worker passes both on to the
child while it waits for items; a paused child waits after its current item with its engine
generator suspended, and Stop sets ``cancel`` and then ``running`` so that a paused job wakes
up and ends at once.
"""

from __future__ import annotations

import dataclasses
import enum
import threading

from PySide6.QtCore import Signal

from engine.config.train import TrainConfig
from engine.training.process import TrainingProcess, export_job, lr_sweep_job, train_job
from gui.kit.i18n import translate
from gui.kit.job_worker import JobWorker

__all__ = ["TrainItem", "TrainJob", "TrainJobKind", "TrainWorker"]


class TrainJobKind(enum.Enum):
    """What a training job runs."""

    TRAIN = "train"
    """:func:`engine.training.trainer.iter_training` (yields ``TrainSnapshot``)."""
    LR_SWEEP = "lr_sweep"
    """:func:`engine.training.lr_sweep.iter_lr_sweep` (yields ``LrSweepProgress``)."""
    EXPORT = "export"
    """:func:`engine.training.export_qk.write_trained_tensors` of the last training run
    (yields the written path as a ``str``)."""


def _set_event() -> threading.Event:
    event = threading.Event()
    event.set()
    return event


@dataclasses.dataclass(frozen=True)
class TrainJob:
    """One request to the training worker.

    Parameters
    ----------
    request_id
        Increasing id; the controller ignores messages of other ids.
    kind
        Training run or learning-rate sweep.
    config
        What to train (the sweep overrides ``lr`` and ``seed``).
    lrs, seeds
        Learning rates and number of seeds of a sweep (unused for a training run).
    path, command
        Export only: the tensor file to write, and how the training was started (its meta).
    cancel
        Set (from the GUI thread) to stop the job after the current step.
    running
        Cleared to pause the job between two engine yields; set to resume.
    """

    request_id: int
    kind: TrainJobKind
    config: TrainConfig
    lrs: tuple[float, ...] = ()
    seeds: int = 1
    path: str = ""
    command: str = ""
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)
    running: threading.Event = dataclasses.field(default_factory=_set_event, compare=False)

    def pause(self) -> None:
        """Hold the job at its next yield."""
        self.running.clear()

    def resume(self) -> None:
        """Let a paused job continue."""
        self.running.set()

    def stop(self) -> None:
        """Cancel the job; wakes it if it is paused."""
        self.cancel.set()
        self.running.set()


@dataclasses.dataclass(frozen=True)
class TrainItem:
    """One item of the job's generator (a ``TrainSnapshot`` or an ``LrSweepProgress``)."""

    request_id: int
    kind: TrainJobKind
    item: object


class TrainWorker(JobWorker):
    """Runs :class:`TrainJob` objects in ``process`` from the thread it was moved to.

    It never touches widgets. The process keeps the session of the last training job, so that
    an export job (run after training ended) reads parameters that no update is writing.
    """

    itemReady = Signal(object)  # TrainItem

    def __init__(self, process: TrainingProcess) -> None:
        super().__init__()
        self._process = process

    def execute(self, job: TrainJob) -> None:
        """Train (or sweep learning rates, or export), emitting every item as it comes."""
        if job.kind is TrainJobKind.EXPORT:
            self._export(job)
            return
        if job.kind is TrainJobKind.TRAIN:
            request = train_job(job.config)
        else:
            request = lr_sweep_job(job.config, job.lrs, job.seeds)
        # After Stop the process ends the job after its current step and says so: the loop
        # ends then, with the session kept for an export.
        try:
            for item in self._process.run(request, job.cancel, job.running):
                self.itemReady.emit(TrainItem(job.request_id, job.kind, item))
        except ChildProcessError as exc:  # killed from outside, e.g. by the system out of memory
            raise ValueError(translate(
                "TrainTab", "The training process stopped unexpectedly ({0}). Start the run "
                "again; if it stops again, fewer tokens, a smaller batch or a smaller model "
                "need less memory.").format(exc)) from None

    def _export(self, job: TrainJob) -> None:
        try:
            for path in self._process.run(export_job(job.path, job.command), job.cancel,
                                          job.running):
                self.itemReady.emit(TrainItem(job.request_id, job.kind, str(path)))
        except (LookupError, ChildProcessError):  # no session: none trained, or its process died
            raise ValueError(
                translate("TrainTab", "There is no trained model to inspect.")) from None
        except OSError as exc:
            raise ValueError(translate("TrainTab", "Could not write {0}: {1}").format(
                job.path, exc.strerror or exc)) from None

