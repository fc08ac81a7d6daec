"""The training worker: runs one engine generator per job on the training QThread.

A :class:`TrainJob` is immutable apart from its ``threading.Event`` objects, the only
channel from the GUI thread into a running job: ``cancel`` (Stop) and ``running`` (cleared =
paused). Pausing never busy-waits: after each item the worker blocks in ``running.wait()``
while the engine generator stays suspended at its ``yield``; Stop sets ``cancel`` and then
``running`` so that a paused worker wakes up and returns at once. A third event, shared by all
jobs of a controller, is passed to the engine as ``step_gate``: the controller clears it briefly
while it paints the views so that the trainer does not compete for the GIL (the engine still
honours ``cancel`` while gated).
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from typing import Any

from PySide6.QtCore import Signal

from engine.config.train import TrainConfig
from gui.kit.i18n import translate
from gui.kit.job_worker import JobWorker

__all__ = [
    "TrainItem",
    "TrainJob",
    "TrainJobFinished",
    "TrainJobKind",
    "TrainWorker",
]


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
    step_gate
        Passed to the engine: cleared (by the GUI thread, briefly) holds the next optimisation
        step; None: never held.
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
    step_gate: threading.Event | None = dataclasses.field(default=None, compare=False)

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


@dataclasses.dataclass(frozen=True)
class TrainJobFinished:
    """The job ended; ``completed`` is False when it was stopped or failed."""

    request_id: int
    kind: TrainJobKind
    completed: bool


class TrainWorker(JobWorker):
    """Runs :class:`TrainJob` objects in the thread it was moved to (never touches widgets).

    It keeps the session of the last training job, so that an export job (run by the same
    thread, after training ended) reads parameters that no update is writing.
    """

    itemReady = Signal(object)  # TrainItem

    def __init__(self) -> None:
        super().__init__()
        self._session: Any = None  # TrainingSession of the last TRAIN job (this thread only)

    def execute(self, job: TrainJob) -> None:
        """Train (or sweep learning rates, or export), emitting every item as it comes."""
        if job.kind is TrainJobKind.EXPORT:
            self._export(job)
            return
        if job.kind is TrainJobKind.TRAIN:
            from engine.training.session import TrainingSession
            from engine.training.trainer import blas_threads, iter_training

            self._session = None  # freed before the new one is allocated
            with blas_threads(job.config):
                self._session = TrainingSession(job.config)
            items = iter_training(job.config, job.cancel, step_gate=job.step_gate,
                                  session=self._session)
        else:
            from engine.training.lr_sweep import iter_lr_sweep

            items = iter_lr_sweep(
                job.config, job.lrs, job.seeds, job.cancel, step_gate=job.step_gate
            )
        try:
            for item in items:
                self.itemReady.emit(TrainItem(job.request_id, job.kind, item))
                # Paused: block here (no polling) with the generator suspended at its yield.
                job.running.wait()
                if job.cancel.is_set():
                    break
        finally:
            items.close()

    def _export(self, job: TrainJob) -> None:
        from engine.training.export_qk import write_trained_tensors

        if self._session is None:
            raise ValueError(translate("TrainTab", "There is no trained model to inspect."))
        try:
            path = write_trained_tensors(job.path, self._session, command=job.command)
        except OSError as exc:
            raise ValueError(translate("TrainTab", "Could not write {0}: {1}").format(
                job.path, exc.strerror or exc)) from None
        self.itemReady.emit(TrainItem(job.request_id, job.kind, str(path)))

    def finished_message(self, job: TrainJob, completed: bool) -> TrainJobFinished:
        """The end of ``job``."""
        return TrainJobFinished(job.request_id, job.kind, completed)
