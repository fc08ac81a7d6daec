"""Results of a learning-rate sweep: per run, per (rule, lr) over the seeds, and as a table.

Definition of *stable* (per rule and learning rate): no seed diverged (see
:mod:`engine.training.session`) **and** the mean final held-out loss over the seeds is below
``stable_ratio`` × the mean initial held-out loss (default ½). The ratio is below 1 on purpose:
the readout alone learns the uniform answer distribution within a few steps, which already
brings the loss a little below its initial value, so "below the initial loss" would also count
runs that stalled at chance level. The *largest stable learning rate* of a rule is the largest
swept learning rate that is stable (``None`` when none is).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import IO

import numpy as np

from engine.config import ScalingRule
from engine.config.train import TrainConfig
from engine.io.files import atomic_output

__all__ = [
    "DEFAULT_STABLE_RATIO",
    "LR_SWEEP_CSV_COLUMNS",
    "LrRunResult",
    "LrSweepResult",
    "LrSweepRow",
    "lr_sweep_table",
    "summarise",
    "write_lr_sweep_csv",
]

#: Default ``stable_ratio`` (see the module docstring).
DEFAULT_STABLE_RATIO = 0.5


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


def summarise(
    config: TrainConfig,
    lrs: tuple[float, ...],
    seeds: tuple[int, ...],
    runs: list[LrRunResult],
    stable_ratio: float,
) -> LrSweepResult:
    """Summarise the runs of a sweep into one row per (rule, lr) and the largest stable lr."""
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
    """Write :func:`lr_sweep_table` (one CSV row per (rule, lr)) to a path or an open file.

    A path is written whole or not at all (:func:`engine.io.files.atomic_output`).
    """
    if isinstance(file, str):
        with atomic_output(file, "w") as fh:
            write_lr_sweep_csv(result, fh)
        return
    header, rows = lr_sweep_table(result)
    writer = csv.writer(file, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([_fmt(v) for v in row])
