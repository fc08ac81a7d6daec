"""The worker that runs the explorer's engine plans on its background QThread.

Each request is a kit :class:`~gui.kit.jobs.Job` (id, cancel event) of an immutable
:class:`ExplorerTask` holding the engine's plan (:class:`~engine.analysis.explorer.ExplorerPlan`).
The engine decided what the plan computes or re-uses; the worker only iterates it
(:func:`~engine.analysis.explorer.iter_plan`) and reports immutable messages to its
:class:`gui.kit.jobs.WorkerHost`, which hands on only those of the job it runs. The worker never
touches widgets or shared mutable state: besides the job's cancel event, the only channel into
a running job is its task's ``temperature_inbox`` queue, read between sweep points.
"""

from __future__ import annotations

import dataclasses
import enum
import queue

from engine.analysis.explorer import ExplorerPlan, Part, iter_plan, plan_temperature
from engine.config import AttentionConfig
from engine.core.threads import limit_blas_threads
from gui.kit.job_worker import JobWorker
from gui.kit.jobs import Job

__all__ = [
    "ExplorerTask",
    "FastParts",
    "JobKind",
    "SweepPointReady",
    "TemperatureReady",
    "Worker",
]

#: The parts of a full plan shown together, in one :class:`FastParts` message.
_FAST = frozenset({Part.SNAPSHOT, Part.CORRELATION, Part.TEMPERATURE})


class JobKind(enum.Enum):
    """What a job computes."""

    FULL = "full"
    """Snapshot, correlation, temperature comparison, then the streamed d_k sweep."""
    TEMPERATURE = "temperature"
    """Only the temperature comparison (the temperature view's slider moved)."""


@dataclasses.dataclass(frozen=True)
class ExplorerTask:
    """What one explorer job computes (the task of a kit :class:`~gui.kit.jobs.Job`).

    Parameters
    ----------
    kind
        What to compute.
    plan
        The engine's plan (its ``config`` is the job's configuration).
    temperature
        Temperature T of the temperature comparison.
    temperature_id
        Id of the temperature request answered by the comparison.
    temperature_inbox
        Newer ``(temperature_id, T)`` requests that arrive while the sweep runs.
    """

    kind: JobKind
    plan: ExplorerPlan
    temperature: float
    temperature_id: int
    temperature_inbox: queue.SimpleQueue = dataclasses.field(
        default_factory=queue.SimpleQueue, compare=False
    )

    @property
    def config(self) -> AttentionConfig:
        """The configuration the job computes."""
        return self.plan.config


@dataclasses.dataclass(frozen=True)
class FastParts:
    """The fast part of a full job: everything except the sweep."""

    config: AttentionConfig
    snapshot: object
    temperature: float
    temperature_id: int
    temperature_comparison: object
    correlation: object


@dataclasses.dataclass(frozen=True)
class TemperatureReady:
    """A recomputed temperature comparison for ``config``."""

    config: AttentionConfig
    temperature: float
    temperature_id: int
    temperature_comparison: object


@dataclasses.dataclass(frozen=True)
class SweepPointReady:
    """One streamed sweep point (``point.index`` of ``point.total``)."""

    point: object


class Worker(JobWorker):
    """Runs :class:`ExplorerTask` jobs in the thread it was moved to; reports the immutable
    message dataclasses of this module."""

    def execute(self, job: Job[ExplorerTask]) -> None:
        """Iterate the job's plan, reporting each part as it is ready."""
        # The GUI thread needs a core of its own on a two-core machine, and a two-thread
        # GEMM of a few milliseconds is slower, not faster, once another process competes
        # for the second core.
        with limit_blas_threads(1):
            self._run_plan(job)

    def _run_plan(self, job: Job[ExplorerTask]) -> None:
        task = job.task
        parts: dict[Part, object] = {}
        for ready in iter_plan(task.plan, job.cancel):
            if ready.part in (Part.SWEEP_POINT, Part.LENGTH_POINT):
                self.report(SweepPointReady(ready.value))
                self._drain_temperature_inbox(task, parts.get(Part.SNAPSHOT))
                if job.cancel.is_set():
                    return
                continue
            parts[ready.part] = ready.value
            if task.kind is JobKind.TEMPERATURE:
                self.report(TemperatureReady(task.config, task.temperature, task.temperature_id,
                                             ready.value))
            elif parts.keys() == _FAST:
                self.report(FastParts(
                    task.config, parts[Part.SNAPSHOT], task.temperature, task.temperature_id,
                    parts[Part.TEMPERATURE], parts[Part.CORRELATION]))
        if task.kind is JobKind.FULL:
            self._drain_temperature_inbox(task, parts.get(Part.SNAPSHOT))

    def _drain_temperature_inbox(self, task: ExplorerTask, snapshot: object) -> None:
        latest = None
        while True:
            try:
                latest = task.temperature_inbox.get_nowait()
            except queue.Empty:
                break
        if latest is None:
            return
        temperature_id, temperature = latest
        plan = plan_temperature(task.config, temperature, snapshot,  # type: ignore[arg-type]
                                head=task.plan.head)
        for ready in iter_plan(plan):
            self.report(TemperatureReady(task.config, temperature, temperature_id, ready.value))
