"""Closed forms of attention scaling: the numbers every view and test compares measurements against.

All functions are plain floats in, float out (vectorised where that is natural). Symbols: n keys
per query, d_k head dimension, σ component std of q and k, c the logit scale, ρ the q–k
correlation (k = ρq + √(1−ρ²)ξ), g the QK-norm gain.
"""

from __future__ import annotations

import math

import numpy as np

from engine.config import AttentionConfig, ScalingRule
from engine.config.base import Interval, check_int, check_number
from engine.core.checks import check_dim
from engine.core.scaling import Rule

__all__ = [
    "EULER_GAMMA",
    "correlated_dot_mean",
    "correlated_dot_second_moment",
    "correlated_dot_variance",
    "correlated_rms",
    "dot_product_variance",
    "entropy_small_s",
    "freezing_threshold",
    "gaussian_max_refined",
    "gaussian_max_upper",
    "projected_component_variance",
    "projected_dot_product_variance",
    "projected_offdiag_variance",
    "qk_norm_p_max_bound",
    "scaled_logit_variance",
    "softcap_logit_variance_gaussian",
    "softcap_p_max_bound",
    "uniform_jacobian_fro_norm",
    "uniform_jacobian_spectral_norm",
    "zhai_extremal_logits",
    "zhai_min_entropy",
    "zhai_min_entropy_rows",
]

#: The sequence lengths of the bounds that need two tokens or more.
_AT_LEAST_TWO = Interval(2, None)
#: The q-k correlations ρ: the explorer's declared range.
_RHO = AttentionConfig.FIELDS["rho"].interval
#: The Euler–Mascheroni constant γ.
EULER_GAMMA = 0.5772156649015329


def dot_product_variance(d_k: int, sigma_q: float = 1.0, sigma_k: float = 1.0) -> float:
    """Variance of ``q·k`` for iid zero-mean components: ``d_k σ_q² σ_k²`` (and mean 0).

    Parameters
    ----------
    d_k
        Dimension of q and k.
    sigma_q, sigma_k
        Component standard deviations of q and k (independent of each other).
    """
    return check_dim("d_k", d_k) * float(sigma_q) ** 2 * float(sigma_k) ** 2


def projected_component_variance(d_model: int, s: float) -> float:
    """Variance of one component of ``q = x W_Q`` with x ~ N(0, I_{d_model}), W ~ N(0, s²).

    Equals ``d_model·s²`` (exact on average over W; for a fixed W it is ``‖W_{:,j}‖²``).
    """
    return check_dim("d_model", d_model) * float(s) ** 2


def projected_dot_product_variance(d_k: int, d_model: int, s: float) -> float:
    """Variance of ``q_i·k_j`` through projections: ``d_k (d_model s²)²``.

    Exact on average over ``W_Q, W_K`` for two independent tokens ``x_i, x_j`` (it is
    ``E‖W_Q W_Kᵀ‖_F² = d_model² d_k s⁴``). Multi-head: with ``d_k = d_model/h`` and
    ``s = 1/√d_model`` the per-head unscaled variance is ``d_model/h``.
    """
    return check_dim("d_k", d_k) * projected_component_variance(d_model, s) ** 2


def projected_offdiag_variance(d_k: int, d_model: int, s: float, rho: float = 0.0) -> float:
    """Variance of ``q_i·k_j`` (i ≠ j) through projections when ``k = ρq + √(1−ρ²) x W_K``.

    Averaged over ``x`` and the weights: ``d_model d_k s⁴ (d_model + ρ²(d_k + 1))``. The ρ part
    comes from ``E‖W_Q W_Qᵀ‖_F² = d_model d_k s⁴ (d_model + d_k + 1)`` (a shared ``W_Q`` makes
    ``q_i·q_j`` slightly wider than ``q_i·k_j``). Reduces to
    :func:`projected_dot_product_variance` at ρ = 0.
    """
    d_k = check_dim("d_k", d_k)
    d_model = check_dim("d_model", d_model)
    rho = check_number("rho", rho, _RHO)
    return d_model * d_k * float(s) ** 4 * (d_model + rho**2 * (d_k + 1))


def correlated_dot_mean(d_k: int, rho: float, sigma: float = 1.0) -> float:
    """``E[q·k] = ρ d_k σ²`` for ``k = ρq + √(1−ρ²)ξ`` with q, ξ iid N(0, σ²)."""
    return check_number("rho", rho, _RHO) * check_dim("d_k", d_k) * float(sigma) ** 2


def correlated_dot_second_moment(d_k: int, rho: float, sigma: float = 1.0) -> float:
    """``E[(q·k)²] = (ρ² d_k² + d_k (1 + ρ²)) σ⁴`` for the correlated construction.

    Derivation: ``q·k = ρ‖q‖² + √(1−ρ²)‖q‖ z`` with ``‖q‖²/σ² ~ χ²_{d_k}`` and z ~ N(0, σ²),
    so ``E = ρ² E‖q‖⁴ + (1−ρ²) E‖q‖² σ² = ρ²(d² + 2d)σ⁴ + (1−ρ²) d σ⁴``.
    """
    d = check_dim("d_k", d_k)
    rho = check_number("rho", rho, _RHO)
    return (rho**2 * d * d + d * (1.0 + rho**2)) * float(sigma) ** 4


def correlated_dot_variance(d_k: int, rho: float, sigma: float = 1.0) -> float:
    """``Var(q·k) = d_k (1 + ρ²) σ⁴`` for the correlated construction."""
    return correlated_dot_second_moment(d_k, rho, sigma) - correlated_dot_mean(d_k, rho, sigma) ** 2


def correlated_rms(d_k: int, rho: float, scale: float = 1.0) -> float:
    """RMS of ``c·q·k`` for unit-variance correlated q, k: ``c √(ρ²d² + d(1+ρ²))``.

    With ``c = 1/√d`` this is ``√(ρ²d + 1 + ρ²)``, growing like √d once ρ ≠ 0; with
    ``c = 1/d`` it is ``√(ρ² + (1+ρ²)/d) → |ρ|``: the μP rule normalises correlated q, k.
    """
    return float(scale) * math.sqrt(correlated_dot_second_moment(d_k, rho))


def scaled_logit_variance(
    rule: ScalingRule | str,
    d_k: int,
    *,
    sigma: float = 1.0,
    rho: float = 0.0,
    n: int | None = None,
    **rule_parameters: float | None,
) -> float:
    """Variance of the logits ``c·q·k`` under a scaling rule, for iid N(0, σ²) components.

    ``c²·d σ⁴(1+ρ²)`` with the rule's c (n keys per row); ``qk_norm`` → ``g²/d`` (exact for
    ρ = 0, NaN otherwise); ``softcap`` → NaN (see :func:`softcap_logit_variance_gaussian`).

    Parameters
    ----------
    rule, d_k
        The scaling rule and the head dimension.
    sigma
        Component standard deviation of q and k.
    rho
        Correlation of every key with the query (``k = ρq + √(1−ρ²)ξ``); 0 for independent tokens.
    n, **rule_parameters
        Keys per row (``log_n``, ``ssmax``) and the rule's parameters by name (``gain=None``:
        √d_k, unit variance).
    """
    d = check_dim("d_k", d_k)
    rho = check_number("rho", rho, _RHO)
    scaling = Rule.from_keywords(rule, **rule_parameters)
    return scaling.logit_variance(d, correlated_dot_variance(d, rho, sigma),
                                  scaling.scale(d, n), isotropic=rho == 0.0)


def softcap_logit_variance_gaussian(sigma: float, cap: float, order: int = 80) -> float:
    """Approximate variance of ``cap·tanh(x/cap)`` for ``x ~ N(0, σ²)``.

    APPROXIMATE when used for attention logits: it assumes the pre-cap logit ``q·k/√d_k`` is
    Gaussian (true as d_k → ∞ by the central limit theorem; at small d_k the product-normal
    tails are heavier). The Gaussian integral itself is evaluated by Gauss–Hermite quadrature
    of the given order. For ``σ ≪ cap`` it tends to σ²; for ``σ ≫ cap`` to cap².
    """
    sigma = float(sigma)
    cap = float(cap)
    if sigma < 0 or cap <= 0:
        raise ValueError(f"need sigma >= 0 and cap > 0, got sigma={sigma}, cap={cap}")
    x, w = np.polynomial.hermite_e.hermegauss(order)
    values = cap * np.tanh(sigma * x / cap)
    return float(np.sum(w * values**2) / math.sqrt(2.0 * math.pi))


def gaussian_max_upper(n: int, s: float = 1.0) -> float:
    """Leading-order ``E[max of n iid N(0, s²)] ≈ s√(2 ln n)`` (an upper bound for every n)."""
    n = check_dim("n", n)
    return float(s) * math.sqrt(2.0 * math.log(n))


def gaussian_max_refined(n: int, s: float = 1.0) -> float:
    """Refined ``E[max] ≈ s[√(2ln n) − (ln ln n + ln 4π − 2γ)/(2√(2ln n))]`` (n ≥ 2).

    The extreme-value (Gumbel) approximation with location and scale of the normal maximum;
    accurate to a few percent already at n = 64.
    """
    n = check_int("n", n, _AT_LEAST_TWO, integral_floats=False)
    a = math.sqrt(2.0 * math.log(n))
    shift = math.log(math.log(n)) + math.log(4 * math.pi) - 2 * EULER_GAMMA
    return float(s) * (a - shift / (2 * a))


def entropy_small_s(n: int, s: float) -> float:
    """Mean softmax entropy for logits N(0, s²) at small s: ``ln n − s²(n−1)/(2n)``.

    Second-order expansion: ``H ≈ ln n − mean((z − z̄)²)/2`` and ``E mean((z − z̄)²) =
    s²(n−1)/n``; the usual ``ln n − s²/2`` is its large-n form.
    """
    n = check_dim("n", n)
    return math.log(n) - float(s) ** 2 * (n - 1) / (2 * n)


def freezing_threshold(n: int) -> float:
    """Logit std ``√(2 ln n)`` beyond which the softmax entropy collapses ("freezes")."""
    return math.sqrt(2.0 * math.log(check_dim("n", n)))


def zhai_min_entropy(n: int, sigma: float) -> float:
    """Minimum entropy of ``softmax(z)`` over ``‖z‖₂ ≤ σ`` with n entries (Zhai et al. 2023).

    ``log(1+(n−1)β) + σ√(n(n−1))·β/(1+(n−1)β)`` with ``β = exp(−σ√(n/(n−1)))``; attained by
    :func:`zhai_extremal_logits` (one entry high, the others equal, zero mean).
    """
    n = check_int("n", n, _AT_LEAST_TWO, integral_floats=False)
    sigma = float(sigma)
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    beta = math.exp(-sigma * math.sqrt(n / (n - 1)))
    denom = 1.0 + (n - 1) * beta
    return math.log(denom) + sigma * math.sqrt(n * (n - 1)) * beta / denom


def zhai_min_entropy_rows(n: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """:func:`zhai_min_entropy` for many rows at once: ``n[i]`` entries of norm ``sigma[i]``.

    A row of one entry has entropy 0. Used per query row of a real head, with ``n[i]`` its
    visible keys and ``sigma[i]`` the norm of its centred logits (a softmax ignores the mean).
    """
    n = np.asarray(n, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    if np.any(n < 1) or np.any(sigma < 0):
        raise ValueError("every n must be >= 1 and every sigma >= 0")
    out = np.zeros(np.broadcast(n, sigma).shape)
    many = np.broadcast_to(n > 1, out.shape)
    m = np.broadcast_to(n, out.shape)[many]
    s = np.broadcast_to(sigma, out.shape)[many]
    beta = np.exp(-s * np.sqrt(m / (m - 1.0)))
    denom = 1.0 + (m - 1.0) * beta
    out[many] = np.log1p((m - 1.0) * beta) + s * np.sqrt(m * (m - 1.0)) * beta / denom
    return out


def zhai_extremal_logits(n: int, sigma: float) -> np.ndarray:
    """The logit vector of norm σ attaining :func:`zhai_min_entropy`.

    ``z_0 = σ√((n−1)/n)``, ``z_j = −σ/√(n(n−1))`` for j ≥ 1 (zero mean, gap ``σ√(n/(n−1))``).
    """
    n = check_int("n", n, _AT_LEAST_TWO, integral_floats=False)
    z = np.full(n, -float(sigma) / math.sqrt(n * (n - 1)))
    z[0] = float(sigma) * math.sqrt((n - 1) / n)
    return z


def qk_norm_p_max_bound(n: int, gain: float) -> float:
    """Largest attainable p_max under QK-norm: ``e^{2g}/(e^{2g}+n−1)`` (logits in [−g, g])."""
    n = check_dim("n", n)
    g = float(gain)
    # Written as 1/(1 + (n−1)e^{−2g}) to avoid overflow of e^{2g}.
    return 1.0 / (1.0 + (n - 1) * math.exp(-2.0 * g))


def softcap_p_max_bound(n: int, cap: float) -> float:
    """Largest attainable p_max under soft-capping: logits in (−cap, cap), so the QK-norm bound
    with g = cap."""
    return qk_norm_p_max_bound(n, cap)


def uniform_jacobian_fro_norm(n: int) -> float:
    """``‖J‖_F = √(n−1)/n`` for the uniform distribution over n entries."""
    n = check_dim("n", n)
    return math.sqrt(n - 1) / n


def uniform_jacobian_spectral_norm(n: int) -> float:
    """``‖J‖₂ = 1/n`` for the uniform distribution over n ≥ 2 entries (0 for n = 1)."""
    n = check_dim("n", n)
    return 0.0 if n == 1 else 1.0 / n
