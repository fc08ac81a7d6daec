"""The training worker: relays each job to the training process from the training QThread.

The jobs run in a child process (:class:`~engine.training.process.TrainingProcess`), so the
trainer never competes with the GUI for the interpreter lock. Each job is a kit
:class:`~gui.kit.jobs.Job` of a :class:`TrainTask`; its ``threading.Event`` objects are the only
channel from the GUI thread into a running job: ``cancel`` (Stop) and ``running`` (cleared =
paused). The worker passes both on to the child while it waits for items; a paused child waits
after its current item with its engine generator suspended, and Stop sets ``cancel`` and then
``running`` so that a paused job wakes up and ends at once.
"""

from __future__ import annotations

import dataclasses
import enum

from engine.config.train import TrainConfig
from engine.training.process import TrainingProcess, export_job, lr_sweep_job, train_job
from gui.kit.i18n import translate
from gui.kit.job_worker import JobWorker
from gui.kit.jobs import Job

__all__ = ["TrainItem", "TrainJobKind", "TrainTask", "TrainWorker"]


class TrainJobKind(enum.Enum):
    """What a training job runs."""

    TRAIN = "train"
    """:func:`engine.training.trainer.iter_training` (yields ``TrainSnapshot``)."""
    LR_SWEEP = "lr_sweep"
    """:func:`engine.training.lr_sweep.iter_lr_sweep` (yields ``LrSweepProgress``)."""
    EXPORT = "export"
    """:func:`engine.training.export_qk.write_trained_tensors` of the last training run
    (yields the written path as a ``str``)."""


@dataclasses.dataclass(frozen=True)
class TrainTask:
    """What a training job does (the task of a kit :class:`~gui.kit.jobs.Job`).

    Parameters
    ----------
    kind
        Training run, learning-rate sweep or export.
    config
        What to train (the sweep overrides ``lr`` and ``seed``).
    lrs, seeds
        Learning rates and number of seeds of a sweep (unused for a training run).
    path, command
        Export only: the tensor file to write, and how the training was started (its meta).
    """

    kind: TrainJobKind
    config: TrainConfig
    lrs: tuple[float, ...] = ()
    seeds: int = 1
    path: str = ""
    command: str = ""


@dataclasses.dataclass(frozen=True)
class TrainItem:
    """One item of the job's generator (a ``TrainSnapshot``, an ``LrSweepProgress`` or the
    written path of an export)."""

    kind: TrainJobKind
    item: object


class TrainWorker(JobWorker):
    """Runs :class:`TrainTask` jobs in ``process`` from the thread it was moved to.

    It never touches widgets. The process keeps the session of the last training job, so that
    an export job (run after training ended) reads parameters that no update is writing.
    """

    def __init__(self, process: TrainingProcess) -> None:
        super().__init__()
        self._process = process

    def execute(self, job: Job[TrainTask]) -> None:
        """Train (or sweep learning rates, or export), reporting every item as it comes."""
        task = job.task
        if task.kind is TrainJobKind.EXPORT:
            self._export(job)
            return
        if task.kind is TrainJobKind.TRAIN:
            request = train_job(task.config)
        else:
            request = lr_sweep_job(task.config, task.lrs, task.seeds)
        # After Stop the process ends the job after its current step and says so: the loop
        # ends then, with the session kept for an export.
        try:
            for item in self._process.run(request, job.cancel, job.running):
                self.report(TrainItem(task.kind, item))
        except ChildProcessError as exc:  # killed from outside, e.g. by the system out of memory
            raise ValueError(translate(
                "TrainTab", "The training process stopped unexpectedly ({0}). Start the run "
                "again; if it stops again, fewer tokens, a smaller batch or a smaller model "
                "need less memory.").format(exc)) from None

    def _export(self, job: Job[TrainTask]) -> None:
        task = job.task
        try:
            for path in self._process.run(export_job(task.path, task.command), job.cancel,
                                          job.running):
                self.report(TrainItem(task.kind, str(path)))
        except (LookupError, ChildProcessError):  # no session: none trained, or its process died
            raise ValueError(
                translate("TrainTab", "There is no trained model to inspect.")) from None
        except OSError as exc:
            raise ValueError(translate("TrainTab", "Could not write {0}: {1}").format(
                task.path, exc.strerror or exc)) from None

