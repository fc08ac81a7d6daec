"""The softmax Jacobian numbers of one real head, per scaling rule.

A d_k sweep point summarises the Jacobian norms of random rows; :func:`gradient_summary` gives
the same quantities for the query rows of a real head's snapshot, so that the gradient view can
place the head next to the sweep.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.config import ScalingRule
from engine.core.moments import median_band
from engine.core.stats import SATURATION_THRESHOLD, jacobian_fro_norm

__all__ = ["GradientSummary", "gradient_summary"]


@dataclasses.dataclass(frozen=True, slots=True)
class GradientSummary:
    """The softmax Jacobian numbers of one rule on a real head (over its query rows).

    The quantities of a d_k sweep point, for the head's own q and k: ``jac_fro_*`` are the
    median, 10 % and 90 % quantiles of ``‖∂p/∂s‖_F`` over query rows; ``jac_raw_*`` those of
    ``‖∂p/∂S_raw‖_F`` with respect to the raw ``q·k`` (``c·‖J‖_F``; soft-cap with its chain
    rule; NaN for QK-norm, whose logits are not a function of q·k alone); ``saturated_share``
    is the share of rows with p_max > :data:`~engine.core.stats.SATURATION_THRESHOLD`.
    """

    rule: ScalingRule
    d_k: int
    jac_fro_median: float
    jac_fro_q10: float
    jac_fro_q90: float
    jac_raw_median: float
    jac_raw_q10: float
    jac_raw_q90: float
    saturated_share: float
    rows: int


def gradient_summary(
    rules: Mapping[ScalingRule, Any], raw_scores: np.ndarray, d_k: int, cap: float
) -> Mapping[ScalingRule, GradientSummary]:
    """Per rule, the Jacobian quantiles and the saturated share over every query row.

    Parameters
    ----------
    rules
        ``ScalingRule -> RuleView`` of a snapshot (its per-row ``jac_fro``, ``p_max``, the
        ``weights`` and the ``scale`` c).
    raw_scores
        The snapshot's unscaled ``q·k``.
    d_k, cap
        The key dimension and the soft-cap of the snapshot's configuration.

    Returns
    -------
    Mapping
        ``ScalingRule -> GradientSummary``. Soft-cap's raw-score norm uses its weights and the
        chain rule ``∂s/∂S_raw = c·sech²(c·S_raw/cap)``; masked keys have weight 0 and add
        nothing.
    """
    out: dict[ScalingRule, GradientSummary] = {}
    for rule, view in rules.items():
        jac = np.asarray(view.jac_fro, dtype=np.float64).ravel()
        if rule is ScalingRule.QK_NORM:
            raw = np.full_like(jac, math.nan)
        elif rule is ScalingRule.SOFTCAP:
            t = np.tanh(raw_scores * (view.scale / cap))
            raw = jacobian_fro_norm(view.weights, view.scale * (1.0 - t * t)).ravel()
        elif getattr(view, "row_scale", None) is not None:
            # log_n / ssmax under a causal mask: row i's own c (jac_fro is (heads, n)).
            raw = (np.asarray(view.jac_fro, dtype=np.float64) * view.row_scale).ravel()
        else:
            raw = view.scale * jac
        j50, j10, j90 = median_band(jac)
        r50, r10, r90 = median_band(raw)
        pmax = np.asarray(view.p_max, dtype=np.float64)
        share = float(np.mean(pmax > SATURATION_THRESHOLD)) if pmax.size else 0.0
        out[ScalingRule(rule)] = GradientSummary(ScalingRule(rule), int(d_k), j50, j10, j90,
                                                 r50, r10, r90, share, int(jac.size))
    return out
