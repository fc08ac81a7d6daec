"""Monte Carlo sweeps of attention-row statistics over d_k, the logit std s, ρ or n.

A sweep point is one (value, rule) pair: ``config.samples`` independent query rows of n keys
each, summarised by the pooled logit moments, the mean entropy and p_max (with standard
errors), quantiles of the Jacobian norms and the share of saturated rows.

How the rows are drawn (exactly, for the stated constructions) is described in
:mod:`engine.analysis.sweep_rows`.

Rules and their "raw" gradient: logits are ``s = c·S_raw`` (none, sqrt, linear, temperature,
log_n and ssmax with n = the point's keys per row, yarn),
so ``‖∂p/∂S_raw‖_F = c·‖J‖_F``; soft-cap ``s = cap·tanh(c·S_raw/cap)`` gives
``‖J·diag(c·sech²)‖_F`` (computed exactly); QK-norm logits are not a function of ``S_raw``
(the vectors are normalised), so its ``jac_raw_*`` are NaN.

Numerics: logits, softmax and every accumulation are float64; the rules at one value see the
same rows (common random numbers), and a sweep is deterministic for a given config.
"""

from __future__ import annotations

import csv
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import IO

import numpy as np

from engine.analysis.sweep_precision import (
    PrecisionStat,
    PrecisionTally,
    grid_combos,
    grid_rows,
)
from engine.analysis.sweep_rows import (
    BYTES_PER_LOGIT,
    Setting,
    chunk_rows,
    draw_rows,
    point_rows,
    setting_for,
)
from engine.config import ScalingRule, SweepConfig, SweepParam
from engine.core import theory
from engine.core.memory import check_memory
from engine.core.precision import reference_weights
from engine.core.scaling import scale_factor
from engine.core.softmax import softmax
from engine.core.stats import SATURATION_THRESHOLD, jacobian_fro_norm, row_summary

__all__ = [
    "SWEEP_CSV_COLUMNS",
    "PrecisionStat",
    "SweepPoint",
    "iter_sweep",
    "run_sweep",
    "sweep_csv_row",
    "write_sweep_csv",
]

#: Rules the precision grid is computed for (the precision view's curves).
_GRID_RULES = (ScalingRule.NONE, ScalingRule.SQRT)

#: Bytes kept per sample for the quantiles (two float64 norms).
_BYTES_PER_SAMPLE = 16


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """Summary of ``samples`` query rows at one (value, rule).

    Attributes
    ----------
    param, value, rule
        The swept quantity, its value and the scaling rule.
    logit_mean, logit_var
        Mean and variance of the (scaled) logits pooled over all rows and keys.
    logit_var_theory
        Closed form of ``logit_var`` (NaN where none exists: soft-cap, QK-norm with ρ ≠ 0).
    entropy_mean, entropy_sem
        Mean row entropy (nats) and its standard error.
    p_max_mean, p_max_sem
        Mean largest weight and its standard error.
    jac_fro_median, jac_fro_q10, jac_fro_q90
        Median and 10 %/90 % quantiles of ``‖J‖_F = ‖∂p/∂s‖_F`` (s the logits).
    jac_raw_median, jac_raw_q10, jac_raw_q90
        The same for ``‖∂p/∂S_raw‖_F`` (S_raw = q·k unscaled); NaN for QK-norm.
    saturated_share
        Fraction of rows with ``p_max > SATURATION_THRESHOLD`` (0.99).
    samples
        Number of rows.
    index, total
        Position of this point in the sweep (0-based) and the number of points.
    overflow_share, weight_err_mean
        In the sweep's format, softmax form and rounding: the share of rows whose
        exponentials, their sum or their weights are not finite, and the mean over the other
        rows of ``max_j |p_j − p_ref_j|`` against float64 (see
        :mod:`engine.analysis.sweep_precision`).
    logit_absmax_mean
        Mean over rows of ``max_j |z_j|`` (the scaled logits in float64).
    precision
        With ``precision_grid`` and rules none / sqrt: one :class:`PrecisionStat` per
        :func:`~engine.analysis.sweep_precision.grid_combos` entry, over the first
        ``grid_rows(n)`` rows (512 at n = 64); otherwise empty.
    """

    param: SweepParam
    value: float
    rule: ScalingRule
    logit_mean: float
    logit_var: float
    logit_var_theory: float
    entropy_mean: float
    entropy_sem: float
    p_max_mean: float
    p_max_sem: float
    jac_fro_median: float
    jac_fro_q10: float
    jac_fro_q90: float
    jac_raw_median: float
    jac_raw_q10: float
    jac_raw_q90: float
    saturated_share: float
    samples: int
    index: int
    total: int
    overflow_share: float = 0.0
    weight_err_mean: float = 0.0
    logit_absmax_mean: float = math.nan
    precision: tuple[PrecisionStat, ...] = ()

    @property
    def entropy_ratio(self) -> float:
        """Mean entropy over ln n (1 = uniform over the n keys); NaN unless n is swept, n > 1."""
        if self.param is not SweepParam.N or self.value <= 1:
            return math.nan
        return self.entropy_mean / math.log(self.value)


#: CSV header: the first twelve columns are fixed by the project contract.
SWEEP_CSV_COLUMNS: tuple[str, ...] = (
    "param",
    "value",
    "rule",
    "logit_mean",
    "logit_var",
    "logit_var_theory",
    "entropy_mean",
    "p_max_mean",
    "jac_fro_median",
    "jac_fro_q10",
    "jac_fro_q90",
    "saturated_share",
    "entropy_sem",
    "p_max_sem",
    "jac_raw_median",
    "jac_raw_q10",
    "jac_raw_q90",
    "samples",
    "overflow_share",
    "weight_err_mean",
)

assert set(SWEEP_CSV_COLUMNS) <= {f.name for f in fields(SweepPoint)}


class _Moments:
    """Count, mean and sum of squared deviations, merged chunk by chunk (Chan et al.)."""

    __slots__ = ("count", "m2", "mean")

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, values: np.ndarray) -> None:
        n_b = values.size
        if n_b == 0:
            return
        mean_b = float(values.mean())
        m2_b = float(np.sum((values - mean_b) ** 2))
        n_a = self.count
        total = n_a + n_b
        delta = mean_b - self.mean
        self.mean += delta * n_b / total
        self.m2 += m2_b + delta * delta * n_a * n_b / total
        self.count = total

    @property
    def var(self) -> float:
        return self.m2 / self.count if self.count else math.nan

    @property
    def sem(self) -> float:
        if self.count < 2:
            return math.nan
        return math.sqrt(self.m2 / (self.count - 1) / self.count)


def _theory_var(config: SweepConfig, st: Setting, rule: ScalingRule, c: float) -> float:
    if rule is ScalingRule.SOFTCAP:
        return math.nan
    if rule is ScalingRule.QK_NORM:
        if st.rho != 0.0:
            return math.nan
        g = math.sqrt(st.d_k) if config.gain is None else config.gain
        return g * g / st.d_k
    if st.s is not None:
        return c * c * st.s * st.s
    return c * c * theory.correlated_dot_variance(st.d_k, st.rho)


def _rule_scale(config: SweepConfig, rule: ScalingRule, d_k: int, n: int) -> float:
    temperature = None
    if rule is ScalingRule.TEMPERATURE:
        temperature = math.sqrt(d_k) if config.temperature is None else config.temperature
    # Sweep rows are unmasked: log_n and ssmax use the row's n keys.
    return scale_factor(rule, d_k, temperature=temperature, n=n, ssmax_s=config.ssmax_s,
                        yarn_factor=config.yarn_factor)


def _quantiles(values: np.ndarray) -> tuple[float, float, float]:
    if np.isnan(values).all():
        return math.nan, math.nan, math.nan
    q10, q50, q90 = np.quantile(values, [0.1, 0.5, 0.9])
    return float(q50), float(q10), float(q90)


def iter_sweep(
    config: SweepConfig,
    cancel: threading.Event | None = None,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> Iterator[SweepPoint]:
    """Run the sweep lazily, yielding one :class:`SweepPoint` per (value, rule).

    Points come value by value, rules in ``config.rules`` order. The work is done in chunks of
    at most 2¹⁶ logits (a few milliseconds each); ``cancel`` is checked before every chunk and,
    when set, the generator simply returns (no exception, the unfinished point is dropped), so
    cancellation takes effect within one chunk. Because one point is ``samples × n`` logits,
    consecutive *points* may be further apart than one chunk; ``on_progress(done, total)``
    (logit rows finished / to do over the whole sweep) is called after every chunk for a
    progress display that moves smoothly.

    Parameters
    ----------
    config
        The sweep (see :class:`~engine.config.SweepConfig` and the module docstring).
    cancel
        Optional event; setting it stops the sweep promptly.
    on_progress
        Optional callback ``(rows_done, rows_total)``; runs in the iterating thread.

    Raises
    ------
    MemoryBudgetError
        If keeping ``samples`` Jacobian norms per point exceeds the memory budget.
    """
    check_memory(
        _BYTES_PER_SAMPLE * config.samples,
        f"per-point Jacobian-norm samples ({config.samples} rows)",
        config.memory_budget_bytes,
    )
    n_max = max(setting_for(config, v).n for v in config.values)
    check_memory(
        BYTES_PER_LOGIT * n_max,
        f"working memory of one query row of {n_max} keys",
        config.memory_budget_bytes,
    )
    rules = config.rules
    need_cos = ScalingRule.QK_NORM in rules
    total = len(config.values) * len(rules)
    rows_total = sum(point_rows(config, setting_for(config, v).n) for v in config.values)
    rows_total *= len(rules)
    rows_done = 0
    index = 0
    for v_index, value in enumerate(config.values):
        st = setting_for(config, value)
        samples = point_rows(config, st.n)
        rows_per_chunk = min(chunk_rows(config, st.n), samples)
        n_chunks = -(-samples // rows_per_chunk)
        accs = [_RuleAcc(config, st, rule, samples) for rule in rules]
        start = 0
        for c_index in range(n_chunks):
            rows = min(rows_per_chunk, samples - start)
            if cancel is not None and cancel.is_set():
                return
            # One draw per chunk serves every rule (common random numbers): each point is the
            # one a loop over rules, drawing the same chunks again, would give.
            raw, cos = draw_rows(config, st, v_index, c_index, rows, need_cos)
            for acc in accs:
                if cancel is not None and cancel.is_set():
                    return
                acc.add(raw, cos, slice(start, start + rows))
                rows_done += rows
                if on_progress is not None:
                    on_progress(rows_done, rows_total)
            start += rows
        for acc in accs:
            # The value's points are all computed; a cancel still stops before the next yield.
            if cancel is not None and cancel.is_set():
                return
            yield acc.point(value, samples, index, total)
            index += 1


class _RuleAcc:
    """One rule's running statistics at one swept value, fed chunk by chunk."""

    def __init__(self, config: SweepConfig, st: Setting, rule: ScalingRule, samples: int):
        self.config, self.st, self.rule = config, st, rule
        self.c = _rule_scale(config, rule, st.d_k, st.n)
        self.moments, self.entropy, self.pmax = _Moments(), _Moments(), _Moments()
        self.saturated = 0
        self.jac = np.empty(samples)
        self.jac_raw = np.empty(samples)
        # The precision lab: the sweep's own format and softmax form, and (for the explorer's
        # Precision view) every format × form × rounding on the first rows of the point.
        self.absmax = _Moments()
        self.main_tally = PrecisionTally(config.dtype, config.softmax, config.rounding)
        self.grid = [PrecisionTally(*combo) for combo in grid_combos()] if (
            config.precision_grid and rule in _GRID_RULES) else []

    def add(self, raw: np.ndarray, cos: np.ndarray | None, block: slice) -> None:
        config, rule, c = self.config, self.rule, self.c
        col_scale = None
        if rule is ScalingRule.QK_NORM:
            assert cos is not None
            g = math.sqrt(self.st.d_k) if config.gain is None else config.gain
            logits = g * cos
        elif rule is ScalingRule.SOFTCAP:
            t = np.tanh(raw * (c / config.cap))
            logits = config.cap * t
            col_scale = c * (1.0 - t * t)  # ∂s/∂S_raw = c·sech²(c·S_raw/cap)
        else:
            logits = raw * c if c != 1.0 else raw
        self.moments.add(logits)
        self.absmax.add(np.abs(logits).max(axis=1))
        reference = None if self.main_tally.is_reference else reference_weights(logits)
        self.main_tally.add(logits, reference)
        grid_end = grid_rows(self.st.n) - block.start
        if self.grid and grid_end > 0:
            part = logits[:grid_end]
            ref_part = reference_weights(part) if reference is None else reference[:grid_end]
            for tally in self.grid:
                tally.add(part, ref_part)
        p = softmax(logits)
        h, pm, jf = row_summary(p)
        self.entropy.add(h)
        self.pmax.add(pm)
        self.saturated += int(np.count_nonzero(pm > SATURATION_THRESHOLD))
        self.jac[block] = jf
        if rule is ScalingRule.QK_NORM:
            self.jac_raw[block] = math.nan
        elif col_scale is not None:
            self.jac_raw[block] = jacobian_fro_norm(p, col_scale)
        else:
            self.jac_raw[block] = c * jf

    def point(self, value: float, samples: int, index: int, total: int) -> SweepPoint:
        j50, j10, j90 = _quantiles(self.jac)
        r50, r10, r90 = _quantiles(self.jac_raw)
        main = self.main_tally.stat()
        return SweepPoint(
            param=self.config.param,
            value=float(value),
            rule=self.rule,
            logit_mean=self.moments.mean,
            logit_var=self.moments.var,
            logit_var_theory=_theory_var(self.config, self.st, self.rule, self.c),
            entropy_mean=self.entropy.mean,
            entropy_sem=self.entropy.sem,
            p_max_mean=self.pmax.mean,
            p_max_sem=self.pmax.sem,
            jac_fro_median=j50,
            jac_fro_q10=j10,
            jac_fro_q90=j90,
            jac_raw_median=r50,
            jac_raw_q10=r10,
            jac_raw_q90=r90,
            saturated_share=self.saturated / samples,
            samples=samples,
            index=index,
            total=total,
            overflow_share=main.overflow_share,
            weight_err_mean=main.weight_err_mean,
            logit_absmax_mean=self.absmax.mean,
            precision=tuple(tally.stat() for tally in self.grid),
        )


def run_sweep(config: SweepConfig) -> list[SweepPoint]:
    """Run the whole sweep and return its points (see :func:`iter_sweep`)."""
    return list(iter_sweep(config))


def _format(value: object) -> str:
    if isinstance(value, ScalingRule | SweepParam):
        return value.value
    if isinstance(value, float):
        return repr(value)  # shortest round-trip text; 'nan' for NaN
    return str(value)


def sweep_csv_row(point: SweepPoint) -> list[str]:
    """Format one point as CSV cells in :data:`SWEEP_CSV_COLUMNS` order.

    Integer-valued parameters (d_k, n) are written as integers, other floats as their
    shortest round-trip representation.
    """
    cells = [_format(getattr(point, name)) for name in SWEEP_CSV_COLUMNS]
    if point.param in (SweepParam.D_K, SweepParam.N):
        cells[1] = str(int(point.value))
    return cells


def write_sweep_csv(points: Iterable[SweepPoint], file: IO[str], *, header: bool = True) -> None:
    """Write points to a text file as CSV, one row per point, as they arrive.

    ``points`` may be a generator (e.g. :func:`iter_sweep`): each row is written and the file
    flushed as soon as its point exists, so partial results survive an interruption.
    """
    writer = csv.writer(file, lineterminator="\n")
    if header:
        writer.writerow(SWEEP_CSV_COLUMNS)
    for point in points:
        writer.writerow(sweep_csv_row(point))
        file.flush()

