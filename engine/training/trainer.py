"""Train the tiny attention model for several scaling rules side by side.

:func:`iter_training` yields immutable :class:`~engine.training.snapshot.TrainSnapshot` objects
every ``config.snapshot_every`` steps and at least every ~50 ms, checks ``cancel`` after every
step, and is deterministic for a seed. The held-out set is evaluated at step 0, every
``config.snapshot_every`` steps and after the last step only, so the evaluations are the same
steps in every run; the snapshots in between report the training loss and the latest
evaluation. The training itself is a :class:`~engine.training.session.TrainingSession`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from engine.config.train import TrainConfig
from engine.core.threads import limit_blas_threads
from engine.training.session import TrainingSession
from engine.training.snapshot import TrainSnapshot
from engine.training.tasks import make_task

__all__ = [
    "blas_threads",
    "iter_training",
    "run_training",
]

#: A snapshot is emitted at the latest this long after the previous one (seconds).
SNAPSHOT_INTERVAL_S = 0.05

#: Below this many multiply-adds in the largest matrix product of a step, BLAS runs on one
#: thread. At the default size (64·17·64·128 ≈ 9e6) a second OpenBLAS thread costs more in
#: hand-off and spinning than it saves, and when the other cores are busy it makes every
#: product several times slower.
SINGLE_THREAD_MACS = 5e7


def blas_threads(config: TrainConfig) -> contextlib.AbstractContextManager[object]:
    """Context manager that limits BLAS to one thread for small models.

    Models whose largest matrix product has fewer than :data:`SINGLE_THREAD_MACS` multiply-adds
    run on one BLAS thread; larger ones keep BLAS as it is. The limit is process-wide, so
    callers hold it only while computing, never across a ``yield``.
    """
    task = make_task(config)
    macs = config.batch * task.seq_len * config.model_width * 2 * config.head_dims
    return limit_blas_threads(1 if macs < SINGLE_THREAD_MACS else None)


def iter_training(
    config: TrainConfig,
    cancel: threading.Event | None = None,
    *,
    session: TrainingSession | None = None,
) -> Iterator[TrainSnapshot]:
    """Train every rule of ``config`` side by side, yielding snapshots.

    Parameters
    ----------
    config
        What to train.
    cancel
        When set, the generator returns after the current step (no further snapshot).
    session
        A new :class:`TrainingSession` of ``config``, kept by the caller to read the trained
        parameters afterwards; None: the generator makes its own.

    Yields
    ------
    TrainSnapshot
        At step 0, every ``config.snapshot_every`` steps (evaluated) or at least every ~50 ms
        (not evaluated), and with ``done=True`` after the last step or once every rule diverged.
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(config).__name__}")
    if session is not None and (session.config != config or session.step != 0):
        raise ValueError("session must be a new TrainingSession of the same config")
    if cancel is not None and cancel.is_set():
        return
    stop = cancel.is_set if cancel is not None else None
    start = time.perf_counter()
    with blas_threads(config):
        if session is None:
            session = TrainingSession(config)
        snap = session.snapshot(done=False, elapsed_s=time.perf_counter() - start)
    yield snap
    every = config.snapshot_every
    report_cost = 0.0  # duration of the last evaluation + snapshot, budgeted into the interval
    while True:
        last_yield = time.perf_counter()
        with blas_threads(config):
            while True:
                if cancel is not None and cancel.is_set():
                    return
                if not session.train_step(stop):
                    return
                done = session.step >= config.steps or not session.alive
                if (
                    done
                    or session.step % every == 0
                    or time.perf_counter() - last_yield + report_cost >= SNAPSHOT_INTERVAL_S
                ):
                    break
            t_report = time.perf_counter()
            # Time-triggered snapshots do not evaluate: at the default size an evaluation of
            # every rule costs as much as a few steps, so evaluating on a timer would take a
            # large share of the run and make the evaluated steps depend on the machine's speed.
            if (done or session.step % every == 0) and not session.evaluate(stop):
                return
            snap = session.snapshot(done=done, elapsed_s=time.perf_counter() - start)
            report_cost = time.perf_counter() - t_report
        yield snap
        if done:
            return


def run_training(config: TrainConfig, cancel: threading.Event | None = None) -> TrainSnapshot:
    """Train to the end and return the last snapshot.

    Raises
    ------
    RuntimeError
        If ``cancel`` was set before the run finished.
    """
    last: TrainSnapshot | None = None
    for snap in iter_training(config, cancel):
        last = snap
    if last is None or not last.done:
        raise RuntimeError("training was cancelled")
    return last
