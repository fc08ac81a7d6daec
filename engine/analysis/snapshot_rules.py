"""How the explorer snapshot turns raw scores q·k into each rule's logits, and their moments.

Private to :mod:`engine.analysis.experiment`, which evaluates every rule on one draw of q, k.
"""

from __future__ import annotations

import numpy as np

from engine.config import AttentionConfig, MaskKind, ScalingRule
from engine.core import theory
from engine.core.scaling import NORM_EPS, Rule

__all__ = ["logits_from_raw", "rule_scale", "selected_moments", "theory_variance"]


def rule_scale(config: AttentionConfig, rule: ScalingRule) -> float | np.ndarray:
    """c of ``rule``: a float, or an (n, 1) array of per-row c for a length rule under a mask."""
    n, scaling = config.n_tokens, Rule.of(rule, config)
    if rule.length_dependent and config.mask is MaskKind.CAUSAL and n > 1:
        return scaling.row_scales(config.d_k, np.arange(1, n + 1))[:, None]
    return scaling.scale(config.d_k, n)


def theory_variance(config: AttentionConfig, rule: ScalingRule, c: float | np.ndarray) -> float:
    """Closed-form variance of an off-diagonal logit (independent tokens i ≠ j).

    With per-row c (a length rule under a causal mask) the pooled entries c_i·raw_ij, j < i,
    have mean 0 and variance Var(raw)·mean(c_i²) weighted by each row's i entries.
    """
    if isinstance(c, np.ndarray):
        c_row = c[:, 0]
        weight = np.arange(c_row.size, dtype=np.float64)  # row i has i entries j < i
        c2 = float(np.sum(weight * c_row * c_row) / np.sum(weight))
        return c2 * theory_variance(config, ScalingRule.NONE, 1.0)
    d, rho = config.d_k, config.rho
    if config.use_projection:
        raw = theory.projected_offdiag_variance(d, config.d_model, config.projection_std, rho)
    else:
        # k_j = ρ q_j + √(1−ρ²) ξ_j is independent of q_i for i ≠ j, with component var σ².
        raw = theory.dot_product_variance(d, config.init_std, config.init_std)
    # q_i and k_j (i ≠ j) are independent and rotation invariant without projections, and
    # with projections when ρ = 0 (averaged over W): QK-norm's closed form holds there.
    isotropic = not (config.use_projection and rho != 0.0)
    return Rule.of(rule, config).logit_variance(d, raw, c, isotropic=isotropic)


def selected_moments(x: np.ndarray, select: np.ndarray, count: int) -> tuple[float, float]:
    """(mean, variance) of the entries of ``x`` (..., n, n) where the (n, n) ``select`` is True.

    Two passes (mean, then squared deviations) with ``where=`` reductions: the same values as
    ``np.mean``/``np.var`` of ``x[..., select]`` up to rounding, without building the
    boolean-indexed copy.
    """
    mean = float(np.sum(x, where=select)) / count
    dev = x - mean
    dev *= dev
    return mean, float(np.sum(dev, where=select)) / count


def logits_from_raw(
    config: AttentionConfig, rule: ScalingRule, c: float | np.ndarray, q: np.ndarray,
    k: np.ndarray, raw: np.ndarray,
) -> np.ndarray:
    """Unmasked logits of ``rule`` from the raw scores (a new array).

    QK-norm: ``g·S_raw/(‖q_i‖‖k_j‖)`` with ``g = √d_k`` by default; soft-cap:
    ``cap·tanh(c·S_raw/cap)``; every other rule ``c·S_raw`` (c per row for a length rule
    under a causal mask). Same values as
    :func:`engine.core.attention.attention_logits` up to rounding.
    """
    if rule is ScalingRule.QK_NORM:
        g = Rule.of(rule, config).gain_at(config.d_k)
        q_norm = np.maximum(np.sqrt(np.einsum("...nd,...nd->...n", q, q)), NORM_EPS)
        k_norm = np.maximum(np.sqrt(np.einsum("...nd,...nd->...n", k, k)), NORM_EPS)
        logits = raw * (g / q_norm)[..., :, None]
        logits *= (1.0 / k_norm)[..., None, :]
        return logits
    if rule is ScalingRule.SOFTCAP:
        logits = raw * (c / config.cap)
        np.tanh(logits, out=logits)
        logits *= config.cap
        return logits
    return raw * c
