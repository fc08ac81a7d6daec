"""One live attention experiment: random q, k under a config, every requested scaling rule.

:func:`run_experiment` is what the GUI's main views show: the raw scores ``QKᵀ``, and for each
rule the logits, the attention weights and per-row statistics, with the empirical logit
variance next to its closed form. :func:`temperature_comparison` and :func:`correlation_rms`
feed the temperature-equivalence and correlation (μP) views.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from engine import theory
from engine.attention import attention_logits, causal_mask, check_memory, scale_factor, softmax
from engine.config import AttentionConfig, MaskKind, ScalingRule
from engine.stats import row_summary

__all__ = [
    "AttentionSnapshot",
    "RuleView",
    "correlation_rms",
    "draw_qk",
    "run_experiment",
    "temperature_comparison",
]


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr = np.ascontiguousarray(arr)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, slots=True)
class RuleView:
    """Everything one scaling rule does to the snapshot's q, k (arrays are read-only).

    Attributes
    ----------
    rule
        The scaling rule.
    scale
        The scalar c multiplying ``q·k`` (1 for QK-norm, whose gain acts on unit vectors; for
        soft-cap the c applied before the cap).
    logits
        ``(heads, n, n)`` logits after scaling/capping; masked entries are ``-inf``.
    weights
        ``(heads, n, n)`` softmax rows (masked entries 0).
    entropy, p_max, jac_fro
        ``(heads, n)`` per query row: entropy (nats), largest weight, ``‖∂p/∂s‖_F``.
    logit_var_empirical
        Variance of the logits over unmasked off-diagonal entries (i ≠ j, independent tokens),
        pooled over heads; all entries when n = 1.
    logit_var_theory
        Closed form of the same quantity, NaN where none exists (soft-cap; QK-norm with
        projections and ρ ≠ 0).
    """

    rule: ScalingRule
    scale: float
    logits: np.ndarray
    weights: np.ndarray
    entropy: np.ndarray
    p_max: np.ndarray
    jac_fro: np.ndarray
    logit_var_empirical: float
    logit_var_theory: float

    def __post_init__(self) -> None:
        for name in ("logits", "weights", "entropy", "p_max", "jac_fro"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))


@dataclass(frozen=True, slots=True)
class AttentionSnapshot:
    """Result of :func:`run_experiment` (arrays read-only, ``rules`` a read-only mapping).

    Attributes
    ----------
    config
        The configuration that produced it.
    q, k
        ``(heads, n, d_k)`` queries and keys (before any normalisation).
    raw_scores
        ``(heads, n, n)`` unscaled, unmasked ``q·k``.
    rules
        ``ScalingRule -> RuleView``; always contains ``none`` and ``config.rule``.
    """

    config: AttentionConfig
    q: np.ndarray
    k: np.ndarray
    raw_scores: np.ndarray
    rules: Mapping[ScalingRule, RuleView]

    def __post_init__(self) -> None:
        for name in ("q", "k", "raw_scores"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))
        object.__setattr__(self, "rules", MappingProxyType(dict(self.rules)))


def draw_qk(config: AttentionConfig) -> tuple[np.ndarray, np.ndarray]:
    """Draw the ``(heads, n, d_k)`` queries and keys of ``config`` (float64, deterministic).

    Without projections q and ξ are iid N(0, σ²) with σ = ``config.init_std``. With
    ``use_projection``, x ~ N(0, I_{d_model}) per token (shared by all heads) and
    ``q = x W_Q``, ``ξ = x W_K`` with per-head ``W ~ N(0, s²)`` of shape (d_model, d_k).
    Then ``k = ρ q + √(1−ρ²) ξ`` (token-wise: key i is correlated with query i only).
    Normals are drawn in float32 (twice as fast; they are samples, not results) and
    promoted to float64.
    """
    rng = np.random.default_rng(config.seed)
    h, n, d = config.heads, config.n_tokens, config.d_k
    if config.use_projection:
        dm, s = config.d_model, config.projection_std
        x = rng.standard_normal((n, dm), dtype=np.float32).astype(np.float64)
        w_q = rng.standard_normal((h, dm, d), dtype=np.float32).astype(np.float64) * s
        w_k = rng.standard_normal((h, dm, d), dtype=np.float32).astype(np.float64) * s
        q = x @ w_q
        xi = x @ w_k
    else:
        sigma = config.init_std
        q = rng.standard_normal((h, n, d), dtype=np.float32).astype(np.float64) * sigma
        xi = rng.standard_normal((h, n, d), dtype=np.float32).astype(np.float64) * sigma
    rho = config.rho
    if rho == 0.0:
        return q, xi
    return q, rho * q + math.sqrt(1.0 - rho * rho) * xi


def _rule_list(config: AttentionConfig, rules: Iterable[ScalingRule | str] | None) -> list:
    out = [ScalingRule.NONE, config.rule]
    for rule in rules or ():
        try:
            out.append(ScalingRule(rule))
        except ValueError:
            allowed = ", ".join(r.value for r in ScalingRule)
            raise ValueError(f"rules must be among {allowed}; got {rule!r}") from None
    return list(dict.fromkeys(out))


def _theory_variance(config: AttentionConfig, rule: ScalingRule, c: float) -> float:
    """Closed-form variance of an off-diagonal logit (independent tokens i ≠ j)."""
    d, rho = config.d_k, config.rho
    if rule is ScalingRule.SOFTCAP:
        return math.nan
    if rule is ScalingRule.QK_NORM:
        g = math.sqrt(d) if config.gain is None else config.gain
        # q_i and k_j (i ≠ j) are independent and rotation invariant without projections,
        # and with projections when ρ = 0 (averaged over W); then Var(q̂·k̂) = 1/d exactly.
        if config.use_projection and rho != 0.0:
            return math.nan
        return g * g / d
    if config.use_projection:
        raw = theory.projected_offdiag_variance(d, config.d_model, config.projection_std, rho)
    else:
        # k_j = ρ q_j + √(1−ρ²) ξ_j is independent of q_i for i ≠ j, with component var σ².
        raw = theory.dot_product_variance(d, config.init_std, config.init_std)
    return c * c * raw


def run_experiment(
    config: AttentionConfig, rules: Iterable[ScalingRule | str] | None = None
) -> AttentionSnapshot:
    """Draw q, k from ``config`` and evaluate every scaling rule on them.

    Parameters
    ----------
    config
        The experiment; its ``rule`` is always evaluated, and so is ``none``.
    rules
        Further rules to evaluate (duplicates are ignored).

    Returns
    -------
    AttentionSnapshot

    Raises
    ------
    MemoryBudgetError
        If the ``(heads, n, n)`` matrices would exceed the memory budget.
    """
    rule_list = _rule_list(config, rules)
    h, n, d = config.heads, config.n_tokens, config.d_k
    check_memory(
        8 * h * n * n * (2 + 2 * len(rule_list)) + 8 * 2 * h * n * d,
        f"attention snapshot: {len(rule_list)} rules × {h} heads × {n}×{n}",
    )
    q, k = draw_qk(config)
    raw = np.matmul(q, k.swapaxes(-1, -2))
    attend = causal_mask(n, n) if config.mask is MaskKind.CAUSAL else None
    # Statistics of the logit variance use independent token pairs i ≠ j (see RuleView).
    select = ~np.eye(n, dtype=bool) if n > 1 else np.ones((n, n), dtype=bool)
    if attend is not None:
        select &= attend
    select = np.broadcast_to(select, raw.shape)

    views: dict[ScalingRule, RuleView] = {}
    for rule in rule_list:
        temperature = config.temperature if rule is ScalingRule.TEMPERATURE else None
        c = scale_factor(rule, d, temperature=temperature)
        if rule is ScalingRule.QK_NORM:
            logits = attention_logits(q, k, rule=rule, gain=config.gain)
        elif rule is ScalingRule.SOFTCAP:
            logits = config.cap * np.tanh(raw * (c / config.cap))
        else:
            logits = raw * c
        if attend is not None:
            logits = np.where(attend, logits, -np.inf)
        weights = softmax(logits, mask=attend)
        entropy, pmax, jac_fro = row_summary(weights)
        views[rule] = RuleView(
            rule=rule,
            scale=c,
            logits=logits,
            weights=weights,
            entropy=entropy,
            p_max=pmax,
            jac_fro=jac_fro,
            logit_var_empirical=float(np.var(logits[select])),
            logit_var_theory=_theory_variance(config, rule, c),
        )
    return AttentionSnapshot(config=config, q=q, k=k, raw_scores=raw, rules=views)


def temperature_comparison(
    config: AttentionConfig, temperature: float, *, head: int = 0
) -> tuple[np.ndarray, np.ndarray, float]:
    """Compare ``softmax(z/T)`` with the 1/√d_k rule on one query row.

    ``z`` is the unscaled logit row ``q·k_j`` of ``config.query_row`` in ``head`` (with the
    config's mask). Both rows use the same arithmetic (``z·(1/T)`` and ``z·(1/√d_k)``), so at
    ``T = math.sqrt(d_k)`` they are bit-identical and the difference is exactly 0.

    Returns
    -------
    (p_temperature, p_sqrt, max_abs_diff)
        Two length-n probability rows and ``max |p_T − p_sqrt|``.
    """
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < config.heads:
        raise ValueError(f"head must be in [0, {config.heads - 1}], got {head!r}")
    q, k = draw_qk(config)
    row = config.query_row
    z = k[head] @ q[head, row]
    attend = None
    if config.mask is MaskKind.CAUSAL:
        attend = np.arange(config.n_tokens) <= row
    c_t = scale_factor(ScalingRule.TEMPERATURE, config.d_k, temperature=temperature)
    c_s = scale_factor(ScalingRule.SQRT, config.d_k)
    p_t = softmax(z * c_t, mask=attend)
    p_s = softmax(z * c_s, mask=attend)
    return p_t, p_s, float(np.max(np.abs(p_t - p_s)))


def correlation_rms(
    d_k_values: Iterable[int], rho: float, samples: int, seed: int = 0
) -> dict[str, Any]:
    """Empirical and closed-form RMS of the scaled logit ``c·q·k`` for correlated q, k.

    q ~ N(0, I_d) and ``k = ρq + √(1−ρ²)ξ``. Sampled exactly through
    ``q·k = ρ‖q‖² + √(1−ρ²)‖q‖z`` with ``‖q‖² ~ χ²_d`` and z ~ N(0, 1) independent (valid
    only for this iid Gaussian construction), so large d costs nothing extra.

    Parameters
    ----------
    d_k_values
        Head dimensions (integers >= 1).
    rho
        Correlation in [-1, 1].
    samples
        Number of (q, k) pairs per d_k.
    seed
        Seed; every d_k gets its own stream spawned from it.

    Returns
    -------
    dict
        ``d_k`` (int array), ``rms_none``, ``rms_sqrt``, ``rms_linear`` (empirical),
        ``theory_none``, ``theory_sqrt``, ``theory_linear`` (``c√(ρ²d² + d(1+ρ²))``),
        ``rel_sem`` (relative standard error of the empirical RMS, same for every c), ``mean``
        (empirical ``E[q·k]``, theory ``ρd``).
    """
    dims = [int(d) for d in d_k_values]
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"d_k_values must be integers >= 1, got {dims!r}")
    if not -1.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [-1, 1], got {rho}")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 2:
        raise ValueError(f"samples must be an integer >= 2, got {samples!r}")
    streams = np.random.SeedSequence(seed).spawn(len(dims))
    out: dict[str, list[float]] = {
        key: []
        for key in ("rms_none", "rms_sqrt", "rms_linear", "theory_none", "theory_sqrt",
                    "theory_linear", "rel_sem", "mean")
    }
    chunk = 1 << 20
    for d, ss in zip(dims, streams, strict=True):
        rng = np.random.default_rng(ss)
        total = 0.0
        total_sq = 0.0
        total_4 = 0.0
        done = 0
        while done < samples:
            m = min(chunk, samples - done)
            r2 = rng.chisquare(d, m)
            z = rng.standard_normal(m)
            x = rho * r2 + math.sqrt(1.0 - rho * rho) * np.sqrt(r2) * z
            x2 = x * x
            total += float(x.sum())
            total_sq += float(x2.sum())
            total_4 += float((x2 * x2).sum())
            done += m
        mean_sq = total_sq / samples
        var_sq = max(total_4 / samples - mean_sq**2, 0.0) * samples / (samples - 1)
        rms = math.sqrt(mean_sq)
        out["rel_sem"].append(math.sqrt(var_sq / samples) / (2.0 * mean_sq))
        out["mean"].append(total / samples)
        for name, c in (("none", 1.0), ("sqrt", 1.0 / math.sqrt(d)), ("linear", 1.0 / d)):
            out[f"rms_{name}"].append(c * rms)
            out[f"theory_{name}"].append(theory.correlated_rms(d, rho, c))
    result: dict[str, Any] = {key: np.asarray(v) for key, v in out.items()}
    result["d_k"] = np.asarray(dims)
    return result
