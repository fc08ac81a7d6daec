"""The worker that runs the explorer's engine plans on its background QThread.

A :class:`Job` is an immutable request with an id, the engine's plan
(:class:`~engine.analysis.explorer.ExplorerPlan`) and a ``threading.Event`` for cancellation.
The engine decided what the plan computes or re-uses; the worker only iterates it
(:func:`~engine.analysis.explorer.iter_plan`) and reports immutable messages through ``object``
signals. The worker never touches widgets or shared mutable state: the only channel back into
a running job is its ``temperature_inbox`` queue, read between sweep points. Its thread is
owned by a :class:`gui.kit.jobs.WorkerHost`.
"""

from __future__ import annotations

import dataclasses
import enum
import queue
import threading

from PySide6.QtCore import Signal

from engine.analysis.explorer import ExplorerPlan, Part, iter_plan, plan_temperature
from engine.config import AttentionConfig
from engine.core.threads import limit_blas_threads
from gui.kit.job_worker import JobWorker

__all__ = [
    "FastParts",
    "Job",
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
class Job:
    """One request to the worker.

    Parameters
    ----------
    request_id
        Increasing id; the controller drops messages of superseded ids.
    kind
        What to compute.
    plan
        The engine's plan (its ``config`` is the job's configuration).
    temperature
        Temperature T of the temperature comparison.
    temperature_id
        Id of the temperature request answered by the comparison.
    cancel
        Set from the GUI thread to stop the job between engine yields.
    temperature_inbox
        Newer ``(temperature_id, T)`` requests that arrive while the sweep runs.
    """

    request_id: int
    kind: JobKind
    plan: ExplorerPlan
    temperature: float
    temperature_id: int
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)
    temperature_inbox: queue.SimpleQueue = dataclasses.field(
        default_factory=queue.SimpleQueue, compare=False
    )

    @property
    def config(self) -> AttentionConfig:
        """The configuration the job computes."""
        return self.plan.config

    def stop(self) -> None:
        """Cancel the job (it ends at the engine's next check)."""
        self.cancel.set()


@dataclasses.dataclass(frozen=True)
class FastParts:
    """The fast part of a full job: everything except the sweep."""

    request_id: int
    config: AttentionConfig
    snapshot: object
    temperature: float
    temperature_id: int
    temperature_comparison: object
    correlation: object


@dataclasses.dataclass(frozen=True)
class TemperatureReady:
    """A recomputed temperature comparison for ``config``."""

    request_id: int
    config: AttentionConfig
    temperature: float
    temperature_id: int
    temperature_comparison: object


@dataclasses.dataclass(frozen=True)
class SweepPointReady:
    """One streamed sweep point (``point.index`` of ``point.total``)."""

    request_id: int
    point: object


class Worker(JobWorker):
    """Runs :class:`Job` objects in the thread it was moved to.

    Signals carry the immutable message dataclasses of this module as ``object`` payloads.
    """

    fastPartsReady = Signal(object)  # FastParts
    temperatureReady = Signal(object)  # TemperatureReady
    sweepPointReady = Signal(object)  # SweepPointReady

    def execute(self, job: Job) -> None:
        """Iterate ``job``'s plan, emitting each part as it is ready."""
        # The GUI thread needs a core of its own on a two-core machine, and a two-thread
        # GEMM of a few milliseconds is slower, not faster, once another process competes
        # for the second core.
        with limit_blas_threads(1):
            self._run_plan(job)

    def _run_plan(self, job: Job) -> None:
        parts: dict[Part, object] = {}
        for ready in iter_plan(job.plan, job.cancel):
            if ready.part in (Part.SWEEP_POINT, Part.LENGTH_POINT):
                self.sweepPointReady.emit(SweepPointReady(job.request_id, ready.value))
                self._drain_temperature_inbox(job, parts.get(Part.SNAPSHOT))
                if job.cancel.is_set():
                    return
                continue
            parts[ready.part] = ready.value
            if job.kind is JobKind.TEMPERATURE:
                self.temperatureReady.emit(TemperatureReady(
                    job.request_id, job.config, job.temperature, job.temperature_id,
                    ready.value))
            elif parts.keys() == _FAST:
                self.fastPartsReady.emit(FastParts(
                    job.request_id, job.config, parts[Part.SNAPSHOT], job.temperature,
                    job.temperature_id, parts[Part.TEMPERATURE], parts[Part.CORRELATION]))
        if job.kind is JobKind.FULL:
            self._drain_temperature_inbox(job, parts.get(Part.SNAPSHOT))

    def _drain_temperature_inbox(self, job: Job, snapshot: object) -> None:
        latest = None
        while True:
            try:
                latest = job.temperature_inbox.get_nowait()
            except queue.Empty:
                break
        if latest is None:
            return
        temperature_id, temperature = latest
        plan = plan_temperature(job.config, temperature, snapshot,  # type: ignore[arg-type]
                                head=job.plan.head)
        for ready in iter_plan(plan):
            self.temperatureReady.emit(TemperatureReady(
                job.request_id, job.config, temperature, temperature_id, ready.value))
