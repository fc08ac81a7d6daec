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

from PySide6.QtCore import Signal

from engine.config.train import TrainConfig
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
    """Runs :class:`TrainJob` objects in the thread it was moved to (never touches widgets)."""

    itemReady = Signal(object)  # TrainItem

    def execute(self, job: TrainJob) -> None:
        """Train (or sweep learning rates), emitting every snapshot or run as it comes."""
        if job.kind is TrainJobKind.TRAIN:
            from engine.training.trainer import iter_training

            items = iter_training(job.config, job.cancel, step_gate=job.step_gate)
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

    def finished_message(self, job: TrainJob, completed: bool) -> TrainJobFinished:
        """The end of ``job``."""
        return TrainJobFinished(job.request_id, job.kind, completed)
