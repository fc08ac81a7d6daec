"""One sweep point's running statistics, fed chunk by chunk of drawn rows.

Every rule whose logits are ``c·S_raw`` with one c per point (all but QK-norm and soft-cap)
shares the chunk's raw scores: their pooled moments and row maxima of ``|S_raw|`` are computed
once per chunk (:class:`ChunkRaw`) and scaled by c, and the softmax statistics come from
:func:`engine.core.rowstats.logit_row_stats` with ``scale=c``, so no scaled copy of the logits
is made unless a precision tally needs one. Rows whose logits span less than 80 take their
exponentials in float32 (sums in float64; relative error below ~5e-6, far below the points'
standard errors), wider rows stay in float64 so that no tiny weight is flushed to zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.analysis.sweep_precision import PrecisionTally, grid_combos, grid_rows
from engine.analysis.sweep_rows import Setting
from engine.config import RULES, ScalingRule, SweepConfig
from engine.core import theory
from engine.core.moments import RunningMoments, block_moments, median_band
from engine.core.precision import reference_weights
from engine.core.rowstats import RowStatsWorkspace, ShiftedRows, logit_row_stats, shift_rows
from engine.core.scaling import Rule
from engine.core.stats import SATURATION_THRESHOLD, jacobian_fro_norm

__all__ = ["GRID_RULES", "NONLINEAR_RULES", "ChunkRaw", "RuleAccumulator"]

#: Rules the precision grid is computed for (the precision view's curves).
GRID_RULES = (ScalingRule.NONE, ScalingRule.SQRT)

#: Rules whose logits are not c·S_raw with one c per point (a per-row rule's rows all see the
#: point's n keys: one c).
NONLINEAR_RULES = tuple(rule for rule in ScalingRule if not RULES[rule].multiplicative)


class ChunkRaw:
    """A chunk of unscaled logits and what every c·S_raw rule derives from it, computed once."""

    def __init__(self, raw: np.ndarray, cos: np.ndarray | None,
                 work: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """``work``: optional float64 scratch arrays of ``raw``'s shape, reused by the caller."""
        self.raw, self.cos, self._work = raw, cos, work
        self._moments: tuple[int, float, float] | None = None
        self._absmax: np.ndarray | None = None
        self._shifted: ShiftedRows | None = None

    def prepare(self) -> None:
        """Compute the shared statistics now (before threads read them)."""
        self.moments()
        self.absmax()
        self.shifted()

    def shifted(self) -> ShiftedRows:
        """The raw scores minus their row maxima, shared by every c·S_raw rule."""
        if self._shifted is None:
            self._shifted = shift_rows(self.raw, None if self._work is None else self._work[1])
        return self._shifted

    def moments(self) -> tuple[int, float, float]:
        """``(count, mean, m2)`` of the raw scores (see :func:`engine.core.stats.block_moments`)."""
        if self._moments is None:
            self._moments = block_moments(self.raw, None if self._work is None else self._work[0])
        return self._moments

    def absmax(self) -> np.ndarray:
        """Largest ``|S_raw|`` of every row."""
        if self._absmax is None:
            self._absmax = np.maximum(self.raw.max(axis=1), -self.raw.min(axis=1))
        return self._absmax


def theory_var(st: Setting, rule: Rule, c: float) -> float:
    """Closed-form variance of the rule's logits at a point (NaN where none exists)."""
    raw = st.s * st.s if st.s is not None else theory.correlated_dot_variance(st.d_k, st.rho)
    return rule.logit_variance(st.d_k, raw, c, isotropic=st.rho == 0.0)


class RuleAccumulator:
    """One rule's running statistics at one swept value."""

    def __init__(self, config: SweepConfig, st: Setting, rule: ScalingRule, samples: int):
        self.config, self.st, self.rule = config, st, rule
        self.scaling = Rule.of(rule, config)
        # Sweep rows are unmasked: log_n and ssmax use all n keys.
        self.c = self.scaling.scale(st.d_k, st.n)
        self.moments, self.entropy, self.pmax = (RunningMoments() for _ in range(3))
        self.absmax = RunningMoments()
        self.saturated = 0
        self.jac = np.empty(samples)
        self.jac_raw = np.empty(samples)
        # The precision lab: the sweep's own format and softmax form, and (for the explorer's
        # Precision view) every format × form × rounding on the first rows of the point.
        self.main_tally = PrecisionTally(config.dtype, config.softmax, config.rounding)
        self.grid = [PrecisionTally(*combo) for combo in grid_combos()] if (
            config.precision_grid and rule in GRID_RULES) else []

    def _logits(self, chunk: ChunkRaw) -> tuple[np.ndarray, np.ndarray | None]:
        """The scaled logits of a nonlinear rule, and ∂s/∂S_raw for soft-cap."""
        config = self.config
        if self.rule is ScalingRule.QK_NORM:
            assert chunk.cos is not None
            return self.scaling.gain_at(self.st.d_k) * chunk.cos, None
        t = np.tanh(chunk.raw * (self.c / config.cap))
        return config.cap * t, self.c * (1.0 - t * t)  # ∂s/∂S_raw = c·sech²(c·S_raw/cap)

    def add(self, chunk: ChunkRaw, block: slice, workspace: RowStatsWorkspace) -> None:
        """Add a chunk of rows, which are rows ``block`` of the point.

        ``workspace`` holds the scratch arrays (one per thread: several accumulators may run at
        once on different threads).
        """
        c = self.c
        linear = self.rule not in NONLINEAR_RULES
        col_scale = None
        logits: np.ndarray | None = None
        if linear:
            count, mean, m2 = chunk.moments()
            self.moments.merge(count, c * mean, c * c * m2)
            self.absmax.add(c * chunk.absmax())
        else:
            logits, col_scale = self._logits(chunk)
            self.moments.add(logits)
            self.absmax.add(np.abs(logits).max(axis=1))
        if self.grid or not self.main_tally.is_reference:
            if logits is None:
                logits = chunk.raw * c
            self._add_precision(logits, block)
        else:
            self.main_tally.add(chunk.raw, None)  # float64 stable: the reference, rows only
        weights = np.empty(chunk.raw.shape) if col_scale is not None else None
        if linear:
            stats = logit_row_stats(chunk.shifted(), workspace, scale=c, float32_exp=True)
        else:
            assert logits is not None
            stats = logit_row_stats(logits, workspace, weights_out=weights,
                                    float32_exp=True)
        self.entropy.add(stats.entropy)
        self.pmax.add(stats.p_max)
        self.saturated += int(np.count_nonzero(stats.p_max > SATURATION_THRESHOLD))
        self.jac[block] = stats.jac_fro
        if self.rule is ScalingRule.QK_NORM:
            self.jac_raw[block] = math.nan
        elif col_scale is not None:
            self.jac_raw[block] = jacobian_fro_norm(weights, col_scale)
        else:
            self.jac_raw[block] = c * stats.jac_fro

    def _add_precision(self, logits: np.ndarray, block: slice) -> None:
        reference = None if self.main_tally.is_reference else reference_weights(logits)
        self.main_tally.add(logits, reference)
        grid_end = grid_rows(self.st.n) - block.start
        if self.grid and grid_end > 0:
            part = logits[:grid_end]
            ref_part = reference_weights(part) if reference is None else reference[:grid_end]
            for tally in self.grid:
                tally.add(part, ref_part)

    def summary(self, samples: int) -> dict[str, Any]:
        """The point's fields (everything but param, value, index and total)."""
        j50, j10, j90 = median_band(self.jac)
        r50, r10, r90 = median_band(self.jac_raw)
        main = self.main_tally.stat()
        return {
            "rule": self.rule,
            "logit_mean": self.moments.mean,
            "logit_var": self.moments.var,
            "logit_var_theory": theory_var(self.st, self.scaling, self.c),
            "entropy_mean": self.entropy.mean,
            "entropy_sem": self.entropy.sem,
            "p_max_mean": self.pmax.mean,
            "p_max_sem": self.pmax.sem,
            "jac_fro_median": j50,
            "jac_fro_q10": j10,
            "jac_fro_q90": j90,
            "jac_raw_median": r50,
            "jac_raw_q10": r10,
            "jac_raw_q90": r90,
            "saturated_share": self.saturated / samples,
            "samples": samples,
            "overflow_share": main.overflow_share,
            "weight_err_mean": main.weight_err_mean,
            "logit_absmax_mean": self.absmax.mean,
            "precision": tuple(tally.stat() for tally in self.grid),
        }
