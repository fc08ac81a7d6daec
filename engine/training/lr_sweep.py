"""Learning-rate sweeps: final held-out loss per scaling rule over learning rates × seeds.

This is how the trainer shows learning-rate fragility: the unscaled model diverges or stalls at
learning rates where 1/√d_k trains well, and its largest stable learning rate shrinks as d_k
grows. What counts as *stable* is defined in :mod:`engine.training.lr_results`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from engine.config.base import Interval, check_int, check_number
from engine.config.train import TRAIN_FIELDS, TrainConfig
from engine.training.lr_results import DEFAULT_STABLE_RATIO, LrRunResult, LrSweepResult, summarise
from engine.training.session import TrainingSession
from engine.training.trainer import blas_threads

__all__ = [
    "LrSweepProgress",
    "check_lrs",
    "iter_lr_sweep",
    "run_lr_sweep",
]

#: Progress is reported at least this often while a run trains (seconds).
PROGRESS_INTERVAL_S = 0.1


@dataclass(frozen=True, slots=True)
class LrSweepProgress:
    """Progress of :func:`iter_lr_sweep`.

    ``done_runs`` of ``total_runs`` (lr, seed) runs are finished; ``step`` is the step of the
    current run (``steps`` on the item that reports a run finished, which ``done_runs`` already
    counts). ``result`` is set on the last item only.
    """

    done_runs: int
    total_runs: int
    lr: float
    seed: int
    step: int
    steps: int
    elapsed_s: float
    runs: tuple[LrRunResult, ...]
    result: LrSweepResult | None = None

    @property
    def fraction(self) -> float:
        """Overall progress in [0, 1] (a finished run counts once, not also by its steps)."""
        running = self.step / self.steps if self.step < self.steps else 0.0
        return min(1.0, (self.done_runs + running) / self.total_runs)


def check_lrs(lrs: float | Sequence[float]) -> tuple[float, ...]:
    """The learning rates of a sweep, sorted; ValueError naming the first bad value."""
    if isinstance(lrs, int | float):
        lrs = (lrs,)
    out = [check_number("learning rates", lr, TRAIN_FIELDS["lr"].interval) for lr in lrs]
    if not out:
        raise ValueError("the learning-rate list is empty")
    if len(set(out)) != len(out):
        raise ValueError(f"learning rates must not repeat a value, got {out}")
    return tuple(sorted(out))


def _check_seeds(seeds: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(seeds, bool):
        raise ValueError(f"seeds must be a count or a list of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        return tuple(range(check_int("seeds (a count)", seeds, Interval(1, 1000))))
    out = [check_int("each seed", s, Interval(0, 2**32 - 1), integral_floats=False)
           for s in seeds]
    if not out or len(set(out)) != len(out):
        raise ValueError(f"seeds must be a non-empty list without repeats, got {out}")
    return tuple(out)


def iter_lr_sweep(
    config: TrainConfig,
    lrs: Sequence[float],
    seeds: int | Sequence[int] = 3,
    cancel: threading.Event | None = None,
    *,
    stable_ratio: float = DEFAULT_STABLE_RATIO,
) -> Iterator[LrSweepProgress]:
    """Train ``config`` at every learning rate and seed, yielding progress.

    Parameters
    ----------
    config
        Everything but ``lr`` and ``seed`` (which the sweep sets).
    lrs, seeds
        Distinct learning rates (sorted ascending in the result); a count N (seeds 0..N−1) or
        explicit seeds.
    cancel
        When set, the generator returns promptly (after the current step).
    stable_ratio
        In (0, 1]; see :mod:`engine.training.lr_results`.

    Yields
    ------
    LrSweepProgress
        At least every ~0.1 s and after each run; the last one carries the ``result``.
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(config).__name__}")
    lr_values = check_lrs(lrs)
    seed_values = _check_seeds(seeds)
    if isinstance(stable_ratio, bool) or not isinstance(stable_ratio, int | float) or not (
        0 < stable_ratio <= 1
    ):
        raise ValueError(f"stable_ratio must be in (0, 1], got {stable_ratio!r}")
    total = len(lr_values) * len(seed_values)
    stop = cancel.is_set if cancel is not None else None
    runs: list[LrRunResult] = []
    start = time.perf_counter()
    done = 0
    for lr in lr_values:
        for seed in seed_values:
            cfg = config.replace(lr=lr, seed=seed)
            last = time.perf_counter()
            with blas_threads(cfg):
                session = TrainingSession(cfg)
            while session.step < cfg.steps and session.alive:
                with blas_threads(cfg):
                    while session.step < cfg.steps and session.alive:
                        if cancel is not None and cancel.is_set():
                            return
                        if not session.train_step(stop):
                            return
                        if time.perf_counter() - last >= PROGRESS_INTERVAL_S:
                            break
                if session.step < cfg.steps and session.alive:
                    yield LrSweepProgress(done, total, lr, seed, session.step, cfg.steps,
                                          time.perf_counter() - start, tuple(runs))
                    last = time.perf_counter()
            with blas_threads(cfg):
                if not session.evaluate(stop):
                    return
            for rule, run in session.runs.items():
                ev = run.last_eval if run.diverged_at is None else None
                runs.append(LrRunResult(
                    rule=rule, lr=lr, seed=seed, initial_loss=run.initial_eval_loss,
                    final_loss=ev.loss if ev is not None else float("nan"),
                    final_accuracy=ev.accuracy if ev is not None else float("nan"),
                    diverged_at=run.diverged_at))
            done += 1
            result = None
            if done == total:
                result = summarise(config, lr_values, seed_values, runs, float(stable_ratio))
            yield LrSweepProgress(done, total, lr, seed, cfg.steps, cfg.steps,
                                  time.perf_counter() - start, tuple(runs), result)


def run_lr_sweep(
    config: TrainConfig,
    lrs: Sequence[float],
    seeds: int | Sequence[int] = 3,
    cancel: threading.Event | None = None,
    *,
    stable_ratio: float = DEFAULT_STABLE_RATIO,
) -> LrSweepResult:
    """Run :func:`iter_lr_sweep` to the end and return its result.

    Raises
    ------
    RuntimeError
        If ``cancel`` was set before the sweep finished.
    """
    for progress in iter_lr_sweep(config, lrs, seeds, cancel, stable_ratio=stable_ratio):
        if progress.result is not None:
            return progress.result
    raise RuntimeError("the learning-rate sweep was cancelled")
