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

Numerics: logits and every accumulation are float64; the softmax exponentials of rows that
span less than 80 are float32 (:mod:`engine.analysis.sweep_acc`). The rules at one value see
the same rows (common random numbers), and a sweep is deterministic for a given config.
"""

from __future__ import annotations

import csv
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, fields
from typing import IO, TypeVar

import numpy as np

from engine.analysis.sweep_acc import NONLINEAR_RULES, ChunkRaw, RuleAccumulator
from engine.analysis.sweep_precision import PrecisionStat
from engine.analysis.sweep_rows import (
    BYTES_PER_LOGIT,
    Setting,
    chunk_rows,
    draw_rows,
    point_rows,
    setting_for,
)
from engine.config import ScalingRule, SweepConfig, SweepParam
from engine.core.memory import check_memory
from engine.core.parallel import finish, shared_executor
from engine.core.rowstats import RowStatsWorkspace

__all__ = [
    "SWEEP_CSV_COLUMNS",
    "PrecisionStat",
    "SweepPoint",
    "csv_cell",
    "iter_sweep",
    "run_sweep",
    "sweep_csv_row",
    "write_sweep_csv",
]

#: Bytes kept per sample for the quantiles (two float64 norms).
_BYTES_PER_SAMPLE = 16


@dataclass(frozen=True, slots=True)
class SweepPoint:
    """Summary of ``samples`` query rows at one (value, rule).

    Attributes
    ----------
    param, value, rule
        The swept quantity, its value and the scaling rule.
    logit_mean, logit_var, logit_var_theory
        Pooled moments of the scaled logits; the variance's closed form (NaN where none exists).
    entropy_mean, entropy_sem, p_max_mean, p_max_sem
        Mean row entropy (nats) and largest weight, with standard errors.
    jac_fro_median, jac_fro_q10, jac_fro_q90
        Median and 10 %/90 % quantiles of ``‖J‖_F = ‖∂p/∂s‖_F`` (s the logits).
    jac_raw_median, jac_raw_q10, jac_raw_q90
        The same for ``‖∂p/∂S_raw‖_F`` (S_raw = q·k unscaled); NaN for QK-norm.
    saturated_share
        Fraction of rows with ``p_max > SATURATION_THRESHOLD`` (0.99).
    samples, index, total
        Number of rows; position of the point in the sweep (0-based) and number of points.
    overflow_share, weight_err_mean
        Share of overflowing rows and mean error against float64 (:mod:`engine.core.precision`).
    logit_absmax_mean
        Mean over rows of ``max_j |z_j|`` (the scaled logits in float64).
    precision
        ``precision_grid`` results for rules none / sqrt (:class:`PrecisionStat`), else empty.
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

_T = TypeVar("_T")

assert set(SWEEP_CSV_COLUMNS) <= {f.name for f in fields(SweepPoint)}


def iter_sweep(
    config: SweepConfig,
    cancel: threading.Event | None = None,
    *,
    on_progress: Callable[[int, int], None] | None = None,
    threads: int = 1,
) -> Iterator[SweepPoint]:
    """Run the sweep lazily, yielding one :class:`SweepPoint` per (value, rule).

    Points come value by value, rules in ``config.rules`` order, computed in chunks of at most
    2¹⁶ logits; a cancelled sweep just returns, dropping the unfinished point.

    Parameters
    ----------
    config
        The sweep (:class:`~engine.config.SweepConfig`).
    cancel
        Optional event, checked before every chunk.
    on_progress
        Optional ``(rows_done, rows_total)`` callback after every chunk, in this thread.
    threads
        Threads to work on (1: the calling thread only); the points are the same for any count.

    Raises
    ------
    MemoryBudgetError
        If keeping ``samples`` Jacobian norms per point exceeds the memory budget.
    ValueError
        If ``threads`` is below 1.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    check_memory(
        _BYTES_PER_SAMPLE * config.samples,
        f"per-point Jacobian-norm samples ({config.samples} rows)",
        config.memory_budget_bytes,
    )
    n_max = max(setting_for(config, v).n for v in config.values)
    check_memory(
        # Each further thread holds its own two float64 scratch arrays.
        (BYTES_PER_LOGIT + 16 * (threads - 1)) * n_max,
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
    need_raw_stats = any(rule not in NONLINEAR_RULES for rule in rules)
    # One draw per chunk serves every rule (common random numbers): each point is the one a
    # loop over rules, drawing the same chunks again, would give. With several threads the
    # rules of a chunk run side by side while the next chunk is drawn; every accumulator still
    # sees its chunks in order, so the points do not depend on the thread count.
    pool = shared_executor(threads) if threads > 1 else None
    inflight: list[Future[object]] = []  # tasks submitted and not yet waited for
    # Scratch for the chunks' shared statistics, reused while shapes repeat: two sets, since
    # the next chunk is prepared while the rules still read the current one. And one workspace
    # per thread for the rules' row statistics.
    work: list[tuple[np.ndarray, np.ndarray]] = []
    local = threading.local()

    def prepare(st: Setting, v_index: int, c_index: int, rows: int) -> ChunkRaw:
        raw, cos = draw_rows(config, st, v_index, c_index, rows, need_cos)
        scratch = work[c_index % 2]
        chunk = ChunkRaw(raw, cos, scratch if scratch[0].shape == raw.shape else None)
        if need_raw_stats:
            chunk.prepare()
        return chunk

    def add(acc: RuleAccumulator, chunk: ChunkRaw, block: slice) -> None:
        workspace = getattr(local, "workspace", None)
        if workspace is None:
            workspace = local.workspace = RowStatsWorkspace()
        acc.add(chunk, block, workspace)

    def submit(fn: Callable[..., _T], *args: object) -> Future[_T]:
        if pool is not None:
            future = pool.submit(fn, *args)
            inflight.append(future)
            return future
        done: Future[_T] = Future()
        done.set_result(fn(*args))
        return done

    try:
        for v_index, value in enumerate(config.values):
            st = setting_for(config, value)
            samples = point_rows(config, st.n)
            rows_per_chunk = min(chunk_rows(config, st.n), samples)
            n_chunks = -(-samples // rows_per_chunk)
            if not work or work[0][0].shape != (rows_per_chunk, st.n):
                work[:] = [(np.empty((rows_per_chunk, st.n)), np.empty((rows_per_chunk, st.n)))
                           for _ in range(2)]
            accs = [RuleAccumulator(config, st, rule, samples) for rule in rules]
            next_chunk = submit(prepare, st, v_index, 0, rows_per_chunk)
            for c_index in range(n_chunks):
                start = c_index * rows_per_chunk
                rows = min(rows_per_chunk, samples - start)
                chunk = next_chunk.result()
                if cancel is not None and cancel.is_set():
                    return
                if c_index + 1 < n_chunks:
                    following = min(rows_per_chunk, samples - start - rows)
                    next_chunk = submit(prepare, st, v_index, c_index + 1, following)
                block = slice(start, start + rows)
                for task in [submit(add, acc, chunk, block) for acc in accs]:
                    task.result()
                inflight[:] = [next_chunk] if c_index + 1 < n_chunks else []
                rows_done += rows * len(accs)
                if on_progress is not None:
                    on_progress(rows_done, rows_total)
            for acc in accs:
                # The value's points are all computed; a cancel still stops before the next
                # yield.
                if cancel is not None and cancel.is_set():
                    return
                yield SweepPoint(param=config.param, value=float(value), index=index,
                                 total=total, **acc.summary(samples))
                index += 1
    finally:
        finish(inflight)


def run_sweep(config: SweepConfig) -> list[SweepPoint]:
    """Run the whole sweep and return its points (see :func:`iter_sweep`)."""
    return list(iter_sweep(config))


def csv_cell(value: object) -> str:
    """One CSV cell as every CSV of the project writes it: enums by value, floats as their
    shortest round-trip text (``nan``, ``inf`` included), anything else as ``str``."""
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
    cells = [csv_cell(getattr(point, name)) for name in SWEEP_CSV_COLUMNS]
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

