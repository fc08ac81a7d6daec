"""Learning-rate sweeps: final held-out loss per scaling rule over learning rates × seeds.

This is how the trainer shows SCIENCE.md §2's "learning-rate fragility": the unscaled model
diverges or stalls at learning rates where 1/√d_k trains well, and its largest stable learning
rate shrinks as d_k grows.

Definition of *stable* (per rule and learning rate): no seed diverged (see
:mod:`engine.training.trainer`) **and** the mean final held-out loss over the seeds is below
``stable_ratio`` × the mean initial held-out loss (default ½). The ratio is below 1 on purpose:
the readout alone learns the uniform answer distribution within a few steps, which already
brings the loss a little below its initial value, so "below the initial loss" would also count
runs that stalled at chance level. The *largest stable learning rate* of a rule is the largest
swept learning rate that is stable (``None`` when none is).
"""

from __future__ import annotations

import csv
import io
import math
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import IO

import numpy as np

from engine.config import ScalingRule
from engine.config.train import TRAIN_LIMITS, TrainConfig
from engine.training.session import TrainingSession
from engine.training.trainer import blas_threads, wait_for_gate

__all__ = [
    "LR_SWEEP_CSV_COLUMNS",
    "LrRunResult",
    "LrSweepProgress",
    "LrSweepResult",
    "LrSweepRow",
    "iter_lr_sweep",
    "lr_sweep_table",
    "run_lr_sweep",
    "write_lr_sweep_csv",
]

#: Default ``stable_ratio`` (see the module docstring).
DEFAULT_STABLE_RATIO = 0.5

#: Progress is reported at least this often while a run trains (seconds).
PROGRESS_INTERVAL_S = 0.1


@dataclass(frozen=True, slots=True)
class LrRunResult:
    """One rule trained at one learning rate and seed."""

    rule: ScalingRule
    lr: float
    seed: int
    initial_loss: float
    final_loss: float  # NaN when diverged
    final_accuracy: float  # NaN when diverged
    diverged_at: int | None


@dataclass(frozen=True, slots=True)
class LrSweepRow:
    """Summary of one rule at one learning rate over all seeds.

    ``final_loss_mean``/``std``/``min``/``max`` and ``final_accuracy_mean`` are over the seeds
    that did not diverge (NaN when all diverged); ``std`` is the population standard deviation.
    """

    rule: ScalingRule
    lr: float
    seeds: tuple[int, ...]
    final_losses: tuple[float, ...]
    final_loss_mean: float
    final_loss_std: float
    final_loss_min: float
    final_loss_max: float
    final_accuracy_mean: float
    initial_loss_mean: float
    diverged: int
    stable: bool


@dataclass(frozen=True, slots=True)
class LrSweepResult:
    """A finished sweep: one row per (rule, lr) and the largest stable learning rate per rule."""

    config: TrainConfig
    lrs: tuple[float, ...]
    seeds: tuple[int, ...]
    stable_ratio: float
    runs: tuple[LrRunResult, ...]
    rows: tuple[LrSweepRow, ...]
    largest_stable_lr: Mapping[ScalingRule, float | None]

    def row(self, rule: ScalingRule | str, lr: float) -> LrSweepRow:
        """The row of ``rule`` at ``lr``."""
        rule = ScalingRule(rule)
        for r in self.rows:
            if r.rule is rule and r.lr == lr:
                return r
        raise KeyError(f"no row for rule {rule.value} at lr {lr}")


@dataclass(frozen=True, slots=True)
class LrSweepProgress:
    """Progress of :func:`iter_lr_sweep`.

    ``done_runs`` of ``total_runs`` (lr, seed) runs are finished; ``step`` is the step of the
    current run. ``result`` is set on the last item only.
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
        """Overall progress in [0, 1]."""
        return min(1.0, (self.done_runs + self.step / self.steps) / self.total_runs)


def _check_lrs(lrs: Sequence[float]) -> tuple[float, ...]:
    if isinstance(lrs, int | float):
        lrs = (lrs,)
    out = []
    low, high = TRAIN_LIMITS["lr"]
    for lr in lrs:
        if isinstance(lr, bool) or not isinstance(lr, int | float) or not math.isfinite(lr):
            raise ValueError(f"learning rates must be finite numbers, got {lr!r}")
        if not low <= lr <= high:
            raise ValueError(f"learning rates must be in [{low:g}, {high:g}], got {lr:g}")
        out.append(float(lr))
    if not out:
        raise ValueError("lrs must hold at least one learning rate")
    if len(set(out)) != len(out):
        raise ValueError(f"lrs must not repeat a value, got {out}")
    return tuple(sorted(out))


def _check_seeds(seeds: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(seeds, bool):
        raise ValueError(f"seeds must be a count or a list of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        if not 1 <= seeds <= 1000:
            raise ValueError(f"seeds (a count) must be in [1, 1000], got {seeds}")
        return tuple(range(seeds))
    out = []
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= 2**32 - 1:
            raise ValueError(f"each seed must be an integer in [0, 2^32 - 1], got {s!r}")
        out.append(s)
    if not out or len(set(out)) != len(out):
        raise ValueError(f"seeds must be a non-empty list without repeats, got {out}")
    return tuple(out)


def _summarise(
    config: TrainConfig,
    lrs: tuple[float, ...],
    seeds: tuple[int, ...],
    runs: list[LrRunResult],
    stable_ratio: float,
) -> LrSweepResult:
    rows = []
    largest: dict[ScalingRule, float | None] = {rule: None for rule in config.rules}
    for rule in config.rules:
        for lr in lrs:
            group = [r for r in runs if r.rule is rule and r.lr == lr]
            finals = np.array([r.final_loss for r in group if r.diverged_at is None])
            accs = np.array([r.final_accuracy for r in group if r.diverged_at is None])
            diverged = sum(r.diverged_at is not None for r in group)
            initial = float(np.mean([r.initial_loss for r in group]))
            if finals.size:
                mean, std = float(finals.mean()), float(finals.std())
                lo, hi, acc = float(finals.min()), float(finals.max()), float(accs.mean())
            else:
                mean = std = lo = hi = acc = float("nan")
            stable = diverged == 0 and finals.size > 0 and mean < stable_ratio * initial
            if stable:
                largest[rule] = lr  # lrs are sorted ascending
            rows.append(
                LrSweepRow(
                    rule=rule,
                    lr=lr,
                    seeds=tuple(r.seed for r in group),
                    final_losses=tuple(r.final_loss for r in group),
                    final_loss_mean=mean,
                    final_loss_std=std,
                    final_loss_min=lo,
                    final_loss_max=hi,
                    final_accuracy_mean=acc,
                    initial_loss_mean=initial,
                    diverged=diverged,
                    stable=bool(stable),
                )
            )
    return LrSweepResult(
        config=config,
        lrs=lrs,
        seeds=seeds,
        stable_ratio=stable_ratio,
        runs=tuple(runs),
        rows=tuple(rows),
        largest_stable_lr=MappingProxyType(largest),
    )


def iter_lr_sweep(
    config: TrainConfig,
    lrs: Sequence[float],
    seeds: int | Sequence[int] = 3,
    cancel: threading.Event | None = None,
    *,
    stable_ratio: float = DEFAULT_STABLE_RATIO,
    step_gate: threading.Event | None = None,
) -> Iterator[LrSweepProgress]:
    """Train ``config`` at every learning rate and seed, yielding progress.

    Parameters
    ----------
    config
        Everything but ``lr`` and ``seed`` (which the sweep sets).
    lrs
        Learning rates (distinct, sorted ascending in the result).
    seeds
        A count N (seeds 0..N−1) or explicit seeds.
    cancel
        When set, the generator returns promptly (after the current step).
    stable_ratio
        See the module docstring; in (0, 1].
    step_gate
        Optional "may step" flag waited for before each optimisation step: a GUI clears it
        while it paints so the sweep does not compete for the interpreter lock. ``cancel`` is
        still honoured while it is cleared (:func:`engine.training.trainer.wait_for_gate`).

    Yields
    ------
    LrSweepProgress
        At least every ~0.1 s and after each run; the last one carries the ``result``.
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(config).__name__}")
    lr_values = _check_lrs(lrs)
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
                        if not wait_for_gate(step_gate, cancel):
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
                runs.append(
                    LrRunResult(
                        rule=rule,
                        lr=lr,
                        seed=seed,
                        initial_loss=run.initial_eval_loss,
                        final_loss=ev.loss if ev is not None else float("nan"),
                        final_accuracy=ev.accuracy if ev is not None else float("nan"),
                        diverged_at=run.diverged_at,
                    )
                )
            done += 1
            result = None
            if done == total:
                result = _summarise(config, lr_values, seed_values, runs, float(stable_ratio))
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


#: Columns of :func:`lr_sweep_table` and :func:`write_lr_sweep_csv`.
LR_SWEEP_CSV_COLUMNS = (
    "task",
    "d_k",
    "d_model",
    "heads",
    "n",
    "steps",
    "optimizer",
    "rule",
    "rule_label",
    "lr",
    "seeds",
    "n_seeds",
    "final_loss_mean",
    "final_loss_std",
    "final_loss_min",
    "final_loss_max",
    "final_accuracy_mean",
    "initial_loss_mean",
    "diverged",
    "stable",
    "largest_stable_lr",
)


def lr_sweep_table(result: LrSweepResult) -> tuple[list[str], list[list[float | int | str]]]:
    """The sweep's summary as a table: one row per (rule, lr), columns :data:`LR_SWEEP_CSV_COLUMNS`.

    Values are unformatted (floats stay floats, NaN where every seed diverged); ``seeds`` is
    the ``;``-joined list of seeds, ``stable`` is 0 or 1 and ``largest_stable_lr`` (the rule's,
    repeated on each of its rows) is ``""`` when no learning rate was stable. Shared by
    :func:`write_lr_sweep_csv` and the GUI's CSV export.

    Parameters
    ----------
    result
        A finished sweep.

    Returns
    -------
    tuple[list[str], list[list[float | int | str]]]
        The header and the rows.
    """
    c = result.config
    rows: list[list[float | int | str]] = []
    for r in result.rows:
        best = result.largest_stable_lr.get(r.rule)
        rows.append([
            c.task.value, c.d_k, c.model_width, c.heads, c.n, c.steps, c.optimizer.value,
            r.rule.value, r.rule.label, r.lr, ";".join(str(s) for s in r.seeds), len(r.seeds),
            r.final_loss_mean, r.final_loss_std, r.final_loss_min, r.final_loss_max,
            r.final_accuracy_mean, r.initial_loss_mean, r.diverged, int(r.stable),
            "" if best is None else best,
        ])
    return list(LR_SWEEP_CSV_COLUMNS), rows


def _fmt(value: float | int | str) -> float | int | str:
    """Floats with 6 significant digits ("nan" when not finite); other cells as they are."""
    if isinstance(value, float):
        return "nan" if not math.isfinite(value) else f"{value:.6g}"
    return value


def write_lr_sweep_csv(result: LrSweepResult, file: IO[str] | str) -> None:
    """Write :func:`lr_sweep_table` (one CSV row per (rule, lr)) to a path or an open file."""
    if isinstance(file, str):
        with open(file, "w", newline="", encoding="utf-8") as fh:
            write_lr_sweep_csv(result, fh)
        return
    header, rows = lr_sweep_table(result)
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_fmt(v) for v in row])


def lr_sweep_csv_text(result: LrSweepResult) -> str:
    """The CSV of :func:`write_lr_sweep_csv` as a string."""
    buf = io.StringIO()
    write_lr_sweep_csv(result, buf)
    return buf.getvalue()
