"""Monte Carlo sweeps of attention-row statistics over d_k, the logit std s, ρ or n.

A sweep point is one (value, rule) pair: ``config.samples`` independent query rows of n keys
each, summarised by the pooled logit moments, the mean entropy and p_max (with standard
errors), quantiles of the Jacobian norms and the share of saturated rows.

How the rows are generated (exact, not approximate, for the stated constructions):

* ``d_k``, ``rho`` and ``n`` (with ``logit_std=None``): q ~ N(0, I_d) and keys
  ``k_j = ρq + √(1−ρ²)ξ_j`` with ξ_j ~ N(0, I_d) iid. Given q, ``q·ξ_j = ‖q‖z_j`` with z_j iid
  N(0, 1), hence ``q·k_j = ρ‖q‖² + √(1−ρ²)‖q‖z_j`` with ``‖q‖² ~ χ²_d``. This is exact **only**
  for iid Gaussian q and ξ (rotation invariance); it makes a d_k sweep cost n normals per row
  instead of 2·n·d_k. Note that here every key is correlated with the query, so the shift
  ``ρ‖q‖²`` is common to the whole row and the softmax ignores it; ρ shows up in the logit
  moments (mean ``cρd``, variance ``c²d(1+ρ²)``).
* QK-norm needs the cosine ``q̂·k̂_j``. Writing ``ξ_j = z_j q̂ + ξ⊥`` with ``‖ξ⊥‖² ~ χ²_{d−1}``
  independent of z_j: ``q̂·k_j = a_j = ρ‖q‖ + √(1−ρ²)z_j`` and
  ``‖k_j‖² = a_j² + (1−ρ²)‖ξ⊥‖²``, so ``cos_j = a_j/√(a_j² + (1−ρ²)χ²_{d−1})``, sampled
  exactly with one extra Gamma draw per key (for ρ = 0 it is ``z/√(z² + χ²_{d−1})``).
* ``s`` (and ``n`` with a given ``logit_std``): the unscaled logits are drawn directly as
  N(0, s²); each rule rescales them with its c computed from the fixed ``config.d_k``. QK-norm
  removes the scale of q and k, so its logits do not depend on s: they are the exact cosines
  above for the fixed d_k and ρ.

Rules and their "raw" gradient: logits are ``s = c·S_raw`` (none, sqrt, linear, temperature),
so ``‖∂p/∂S_raw‖_F = c·‖J‖_F``; soft-cap ``s = cap·tanh(c·S_raw/cap)`` gives
``‖J·diag(c·sech²)‖_F`` (computed exactly); QK-norm logits are not a function of ``S_raw``
(the vectors are normalised), so its ``jac_raw_*`` are NaN.

Numerics: Gaussian draws are float32 (random-number generation dominates the cost); logits,
softmax and every accumulation are float64. Each value index v and chunk index i gets its own
stream ``SeedSequence(seed, spawn_key=(v, i))`` (and ``(v, i, 1)`` for QK-norm's extra draw),
so the rules at one value see the same rows (common random numbers) and a sweep is
deterministic for a given config (chunk sizes depend only on n and the memory budget).
"""

from __future__ import annotations

import csv
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import IO

import numpy as np

from engine.config import ScalingRule, SweepConfig, SweepParam
from engine.core import theory
from engine.core.memory import check_memory
from engine.core.scaling import scale_factor
from engine.core.softmax import softmax
from engine.core.stats import jacobian_fro_norm, row_summary

__all__ = [
    "SATURATION_THRESHOLD",
    "SWEEP_CSV_COLUMNS",
    "SweepPoint",
    "iter_sweep",
    "run_sweep",
    "sweep_csv_row",
    "write_sweep_csv",
]

#: A row counts as saturated when its largest weight exceeds this.
SATURATION_THRESHOLD = 0.99

#: Logits per chunk: a few ms of work on a quiet machine, so cancel is checked often.
_CHUNK_LOGITS = 1 << 16

#: Bytes of working memory per logit in one chunk (float32 draws, float64 logits, weights and
#: the temporaries of the row statistics), used to shrink chunks under a small memory budget.
_BYTES_PER_LOGIT = 160

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
        Fraction of rows with ``p_max > 0.99``.
    samples
        Number of rows.
    index, total
        Position of this point in the sweep (0-based) and the number of points.
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


@dataclass(frozen=True, slots=True)
class _Setting:
    """Everything fixed at one swept value."""

    d_k: int
    n: int
    rho: float
    s: float | None  # std of directly drawn unscaled logits; None = q·k construction


def _setting(config: SweepConfig, value: float) -> _Setting:
    p = config.param
    if p is SweepParam.D_K:
        return _Setting(d_k=int(value), n=config.n_tokens, rho=config.rho, s=None)
    if p is SweepParam.RHO:
        return _Setting(d_k=config.d_k, n=config.n_tokens, rho=float(value), s=None)
    if p is SweepParam.S:
        return _Setting(d_k=config.d_k, n=config.n_tokens, rho=config.rho, s=float(value))
    return _Setting(d_k=config.d_k, n=int(value), rho=config.rho, s=config.logit_std)


def _chunk_rows(config: SweepConfig, n: int) -> int:
    by_time = max(1, _CHUNK_LOGITS // n)
    by_memory = max(1, config.memory_budget_bytes // (_BYTES_PER_LOGIT * n))
    return min(by_time, by_memory, config.samples)


def _theory_var(config: SweepConfig, st: _Setting, rule: ScalingRule, c: float) -> float:
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


def _rule_scale(config: SweepConfig, rule: ScalingRule, d_k: int) -> float:
    temperature = None
    if rule is ScalingRule.TEMPERATURE:
        temperature = math.sqrt(d_k) if config.temperature is None else config.temperature
    return scale_factor(rule, d_k, temperature=temperature)


def _draw(
    config: SweepConfig, st: _Setting, v_index: int, c_index: int, rows: int, need_cos: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the unscaled logits (rows, n) float64 and, if needed, the cosines for QK-norm."""
    ss = np.random.SeedSequence(config.seed, spawn_key=(v_index, c_index))
    rng = np.random.Generator(np.random.PCG64(ss))
    d, n, rho = st.d_k, st.n, st.rho
    r2 = rng.chisquare(d, rows)  # ‖q‖², drawn first so the z stream is shared by all modes
    z = rng.standard_normal((rows, n), dtype=np.float32)
    if st.s is not None:
        raw = z.astype(np.float64)
        raw *= st.s
    else:
        r = np.sqrt(r2)[:, None]
        raw = z.astype(np.float64)
        raw *= math.sqrt(1.0 - rho * rho) * r
        if rho != 0.0:
            raw += rho * r2[:, None]
    if not need_cos:
        return raw, None
    rng_cos = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        config.seed, spawn_key=(v_index, c_index, 1))))
    a = z.astype(np.float64)
    a *= math.sqrt(1.0 - rho * rho)
    if rho != 0.0:
        a += rho * np.sqrt(r2)[:, None]
    if d > 1:
        w = rng_cos.standard_gamma((d - 1) / 2.0, size=(rows, n), dtype=np.float32)
        perp = 2.0 * (1.0 - rho * rho) * w.astype(np.float64)
    else:
        perp = np.zeros_like(a)
    denom = np.sqrt(a * a + perp)
    # a = 0 and perp = 0 together has probability 0 except for ρ = ±1 with a = ρ‖q‖ ≠ 0.
    cos = np.divide(a, denom, out=np.zeros_like(a), where=denom > 0)
    return raw, cos


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
    samples = config.samples
    check_memory(
        _BYTES_PER_SAMPLE * samples,
        f"per-point Jacobian-norm samples ({samples} rows)",
        config.memory_budget_bytes,
    )
    rules = config.rules
    total = len(config.values) * len(rules)
    rows_total = total * samples
    rows_done = 0
    index = 0
    for v_index, value in enumerate(config.values):
        st = _setting(config, value)
        rows_per_chunk = _chunk_rows(config, st.n)
        n_chunks = -(-samples // rows_per_chunk)
        for rule in rules:
            c = _rule_scale(config, rule, st.d_k)
            moments = _Moments()
            entropy = _Moments()
            pmax = _Moments()
            saturated = 0
            jac = np.empty(samples)
            jac_raw = np.empty(samples)
            start = 0
            for c_index in range(n_chunks):
                if cancel is not None and cancel.is_set():
                    return
                rows = min(rows_per_chunk, samples - start)
                raw, cos = _draw(
                    config, st, v_index, c_index, rows, rule is ScalingRule.QK_NORM
                )
                col_scale = None
                if rule is ScalingRule.QK_NORM:
                    assert cos is not None
                    g = math.sqrt(st.d_k) if config.gain is None else config.gain
                    logits = g * cos
                elif rule is ScalingRule.SOFTCAP:
                    t = np.tanh(raw * (c / config.cap))
                    logits = config.cap * t
                    col_scale = c * (1.0 - t * t)  # ∂s/∂S_raw = c·sech²(c·S_raw/cap)
                else:
                    logits = raw * c if c != 1.0 else raw
                moments.add(logits)
                p = softmax(logits)
                h, pm, jf = row_summary(p)
                entropy.add(h)
                pmax.add(pm)
                saturated += int(np.count_nonzero(pm > SATURATION_THRESHOLD))
                block = slice(start, start + rows)
                jac[block] = jf
                if rule is ScalingRule.QK_NORM:
                    jac_raw[block] = math.nan
                elif col_scale is not None:
                    jac_raw[block] = jacobian_fro_norm(p, col_scale)
                else:
                    jac_raw[block] = c * jac[block]
                start += rows
                rows_done += rows
                if on_progress is not None:
                    on_progress(rows_done, rows_total)
            j50, j10, j90 = _quantiles(jac)
            r50, r10, r90 = _quantiles(jac_raw)
            yield SweepPoint(
                param=config.param,
                value=float(value),
                rule=rule,
                logit_mean=moments.mean,
                logit_var=moments.var,
                logit_var_theory=_theory_var(config, st, rule, c),
                entropy_mean=entropy.mean,
                entropy_sem=entropy.sem,
                p_max_mean=pmax.mean,
                p_max_sem=pmax.sem,
                jac_fro_median=j50,
                jac_fro_q10=j10,
                jac_fro_q90=j90,
                jac_raw_median=r50,
                jac_raw_q10=r10,
                jac_raw_q90=r90,
                saturated_share=saturated / samples,
                samples=samples,
                index=index,
                total=total,
            )
            index += 1


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

