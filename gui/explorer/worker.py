"""The worker that runs engine computations on the single background QThread.

This is the only module that touches both the engine generators and Qt threads. A
:class:`Job` is an immutable request with an id and a ``threading.Event`` for cancellation; the
worker runs it in its thread and reports immutable messages through ``object`` signals. The
worker never touches widgets or shared mutable state: the only channel back into a running job
is its ``temperature_inbox`` queue, read between sweep points.
"""

from __future__ import annotations

import dataclasses
import enum
import queue
import threading
import traceback

from PySide6.QtCore import QObject, QThread, Signal, Slot

from engine.config import AttentionConfig, ScalingRule, SweepConfig

__all__ = [
    "ALL_RULES",
    "CORRELATION_D_K",
    "CORRELATION_SAMPLES_CAP",
    "FastParts",
    "Job",
    "JobFailed",
    "JobFinished",
    "JobKind",
    "SweepPointReady",
    "TemperatureReady",
    "Worker",
    "compute_correlation",
    "compute_fast_parts",
    "compute_temperature",
    "correlation_key",
    "request_thread_stop",
    "start_worker_thread",
    "stop_worker_thread",
]

#: Every scaling rule; the snapshot always holds all of them so that switching views is free.
ALL_RULES: tuple[ScalingRule, ...] = tuple(ScalingRule)


class JobKind(enum.Enum):
    """What a job computes."""

    FULL = "full"
    """Snapshot, temperature comparison, correlation, then the streamed d_k sweep."""
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
    config
        The attention configuration.
    temperature
        Temperature T of the temperature comparison.
    temperature_id
        Id of the temperature request answered by the comparison.
    sweep
        The d_k sweep to stream, or ``None`` to skip it (e.g. the previous one still applies).
    snapshot
        For temperature jobs: the snapshot of ``config`` whose raw scores the comparison
        re-uses (``None``: q, k are drawn again).
    cancel
        Set from the GUI thread to stop the job between engine yields.
    temperature_inbox
        Newer ``(temperature_id, T)`` requests that arrive while the sweep runs.
    """

    request_id: int
    kind: JobKind
    config: AttentionConfig
    temperature: float
    temperature_id: int
    sweep: SweepConfig | None = None
    snapshot: object = dataclasses.field(default=None, compare=False)
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)
    temperature_inbox: queue.SimpleQueue = dataclasses.field(
        default_factory=queue.SimpleQueue, compare=False
    )


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


@dataclasses.dataclass(frozen=True)
class JobFailed:
    """The job raised; ``message`` is meant for the user."""

    request_id: int
    message: str


@dataclasses.dataclass(frozen=True)
class JobFinished:
    """The job ended; ``completed`` is False when it was cancelled or failed."""

    request_id: int
    kind: JobKind
    completed: bool


def compute_temperature(config: AttentionConfig, temperature: float,
                        snapshot: object = None) -> object:
    """Return the engine's temperature comparison of ``config`` at temperature ``temperature``.

    With ``snapshot`` (``run_experiment(config)``) its raw scores are re-used instead of
    drawing q, k again; the result is the same to the bit.
    """
    from engine.analysis.experiment import temperature_comparison

    return temperature_comparison(config, temperature, snapshot=snapshot)  # type: ignore[arg-type]


#: d_k values of the correlation view (its sampling is exact and cheap at any d_k).
CORRELATION_D_K: tuple[int, ...] = tuple(2**i for i in range(13))
#: Upper bound of (q, k) pairs per d_k for the correlation view.
CORRELATION_SAMPLES_CAP = 20_000


def correlation_key(config: AttentionConfig) -> tuple[object, ...]:
    """The fields of ``config`` the correlation view depends on (ρ, samples, seed)."""
    return (config.rho, min(config.samples, CORRELATION_SAMPLES_CAP), config.seed)


def compute_correlation(config: AttentionConfig) -> object:
    """Return the engine's q–k correlation RMS comparison for ``config``'s ρ and seed."""
    from engine.analysis.correlation import correlation_rms

    rho, samples, seed = correlation_key(config)
    return correlation_rms(CORRELATION_D_K, rho, samples, seed)  # type: ignore[arg-type]


def compute_fast_parts(config: AttentionConfig, temperature: float,
                       correlation: object = None) -> tuple[object, ...]:
    """Compute ``(snapshot, temperature_comparison, correlation)`` synchronously.

    The worker calls exactly this, so tests can compare the threaded path against it.
    ``correlation``, when given, is returned instead of recomputing it (the caller checked
    that :func:`correlation_key` did not change).
    """
    from engine.analysis.experiment import run_experiment

    snapshot = run_experiment(config, rules=ALL_RULES)
    if correlation is None:
        correlation = compute_correlation(config)
    return snapshot, compute_temperature(config, temperature, snapshot), correlation


class _BlasLimit:
    """Limits BLAS to one thread while a job runs (when threadpoolctl is installed).

    The GUI thread needs a core of its own on a two-core machine, and a two-thread GEMM of a
    few milliseconds is slower, not faster, once another process competes for the second
    core (measured: median 10.8 ms with two threads vs 7.4 ms with one at n = 256,
    d_k = 1024 under load; 2.3 vs 3.0 ms when the machine is quiet).
    """

    def __init__(self) -> None:
        self._controller: object = None
        self._loaded = False

    def limit(self) -> object:
        """Return a context manager for the limit (a no-op one without threadpoolctl)."""
        import contextlib

        if not self._loaded:
            self._loaded = True
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # optional at run time: only speed depends on it
                self._controller = None
            else:
                self._controller = ThreadpoolController()
        if self._controller is None:
            return contextlib.nullcontext()
        return self._controller.limit(limits=1, user_api="blas")  # type: ignore[attr-defined]


def start_worker_thread(owner: QObject, worker: QObject, name: str) -> QThread:
    """Move ``worker`` to a new QThread owned by ``owner``, start it and return it.

    Connect the worker's signals before or after this call (they are queued either way); the
    worker is deleted in its own thread when the thread finishes.
    """
    thread = QThread(owner)
    thread.setObjectName(name)
    worker.moveToThread(thread)
    thread.finished.connect(worker.deleteLater)
    thread.start()
    return thread


def request_thread_stop(thread: QThread) -> None:
    """Ask ``thread``'s event loop to end once its current job returns; do not wait."""
    thread.quit()


def stop_worker_thread(thread: QThread, timeout_ms: int) -> bool:
    """Quit ``thread`` and wait for it; return True if it stopped within ``timeout_ms``.

    The caller has already asked the running job to stop. One engine call cannot be
    interrupted, and destroying a running QThread aborts the process (ENVIRONMENT.md trap 2),
    so after the bounded wait this waits for the thread without bound.
    """
    thread.quit()
    stopped = thread.wait(timeout_ms)
    if not stopped:
        thread.wait()
    return stopped


class Worker(QObject):
    """Runs :class:`Job` objects in the thread it was moved to.

    Signals carry the immutable message dataclasses of this module as ``object`` payloads.
    """

    fastPartsReady = Signal(object)  # FastParts
    temperatureReady = Signal(object)  # TemperatureReady
    sweepPointReady = Signal(object)  # SweepPointReady
    failed = Signal(object)  # JobFailed
    finished = Signal(object)  # JobFinished

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._blas = _BlasLimit()
        # The last correlation result and its key: only ρ, samples and seed enter it, so most
        # requests re-use it (and the correlation view skips re-plotting the same object).
        # Touched only in the worker thread.
        self._correlation: tuple[tuple[object, ...], object] | None = None
        self._snapshot: object = None  # snapshot of the running full job (worker thread only)

    @Slot(object)
    def run(self, job: Job) -> None:
        """Run ``job`` to completion, cancellation or failure; always emit :attr:`finished`."""
        completed = False
        try:
            if job.cancel.is_set():
                return
            with self._blas.limit():  # type: ignore[attr-defined]
                if job.kind is JobKind.TEMPERATURE:
                    self._snapshot = job.snapshot
                    self._emit_temperature(job, job.temperature_id, job.temperature)
                else:
                    self._run_full(job)
            completed = not job.cancel.is_set()
        except ValueError as exc:  # includes MemoryBudgetError: the user can fix the input
            self.failed.emit(JobFailed(job.request_id, str(exc)))
        except Exception as exc:  # a bug must not kill the thread or the window
            traceback.print_exc()
            self.failed.emit(JobFailed(job.request_id, f"{type(exc).__name__}: {exc}"))
        finally:
            self._snapshot = None
            self.finished.emit(JobFinished(job.request_id, job.kind, completed))

    def _run_full(self, job: Job) -> None:
        key = correlation_key(job.config)
        cached = self._correlation
        previous = cached[1] if cached is not None and cached[0] == key else None
        snapshot, comparison, correlation = compute_fast_parts(job.config, job.temperature,
                                                               previous)
        self._correlation = (key, correlation)
        self._snapshot = snapshot
        self.fastPartsReady.emit(
            FastParts(job.request_id, job.config, snapshot, job.temperature, job.temperature_id,
                      comparison, correlation)
        )
        if job.sweep is not None and not job.cancel.is_set():
            from engine.analysis.sweep import iter_sweep

            for point in iter_sweep(job.sweep, cancel=job.cancel):
                self.sweepPointReady.emit(SweepPointReady(job.request_id, point))
                self._drain_temperature_inbox(job)
                if job.cancel.is_set():
                    return
        self._drain_temperature_inbox(job)

    def _drain_temperature_inbox(self, job: Job) -> None:
        latest = None
        while True:
            try:
                latest = job.temperature_inbox.get_nowait()
            except queue.Empty:
                break
        if latest is not None:
            self._emit_temperature(job, *latest)

    def _emit_temperature(self, job: Job, temperature_id: int, temperature: float) -> None:
        snapshot = self._snapshot
        if snapshot is not None and getattr(snapshot, "config", None) != job.config:
            snapshot = None  # never compare against another configuration's scores
        comparison = compute_temperature(job.config, temperature, snapshot)
        self.temperatureReady.emit(
            TemperatureReady(job.request_id, job.config, temperature, temperature_id, comparison)
        )
