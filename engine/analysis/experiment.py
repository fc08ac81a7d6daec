"""One live attention experiment: random q, k under a config, every requested scaling rule.

:func:`run_experiment` is what the GUI's main views show: the raw scores ``QKᵀ``, and for each
rule the logits, the attention weights and per-row statistics, with the empirical logit
variance next to its closed form. :func:`temperature_comparison` feeds the
temperature-equivalence view.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from engine.analysis.head_gradients import GradientSummary, gradient_summary
from engine.analysis.sampling import draw_scores
from engine.analysis.snapshot_rules import (
    logits_from_raw,
    rule_scale,
    selected_moments,
    theory_variance,
)
from engine.config import RULES, AttentionConfig, MaskKind, ScalingRule
from engine.config.rules import parse_rule
from engine.core.checks import readonly
from engine.core.memory import check_memory
from engine.core.parallel import run_tasks
from engine.core.plan import causal_mask
from engine.core.rowstats import logit_row_stats
from engine.core.scaling import scale_factor
from engine.core.softmax import softmax

__all__ = [
    "AttentionSnapshot",
    "HeadQK",
    "RuleView",
    "check_snapshot_memory",
    "raw_scores",
    "run_experiment",
    "temperature_comparison",
]


@dataclass(frozen=True, slots=True)
class RuleView:
    """Everything one scaling rule does to the snapshot's q, k (arrays are read-only).

    Attributes
    ----------
    rule, scale
        The scaling rule and its c (1 for QK-norm; for soft-cap the c before the cap).
    logits
        ``(heads, n, n)`` scaled (capped) logits, masked entries ``-inf``.
    stored_weights
        Their ``(heads, n, n)`` softmax rows, or ``None`` when the snapshot left them to be
        computed on first use (read them through :attr:`weights` or :meth:`row_weights`).
    entropy, p_max, jac_fro
        ``(heads, n)`` per query row: entropy (nats), largest weight, ``‖∂p/∂s‖_F``.
    logit_var_empirical, logit_mean_empirical
        Variance and mean of the logits over unmasked entries i ≠ j pooled over heads (all entries
        when n = 1 or for a real head, whose tokens are not independent draws).
    logit_var_theory
        Closed form of the variance; NaN where none exists (soft-cap, QK-norm with projections
        and ρ ≠ 0, a real head).
    row_scale
        ``(n,)`` per-row c of ``log_n`` / ``ssmax`` under a causal mask, else ``None``.
    stored_rows
        Query row → its ``(heads, n)`` weights, stored when ``stored_weights`` is not (the
        row a view shows, computed with the snapshot instead of on the caller's thread).
    """

    rule: ScalingRule
    scale: float
    logits: np.ndarray
    stored_weights: np.ndarray | None
    entropy: np.ndarray
    p_max: np.ndarray
    jac_fro: np.ndarray
    logit_var_empirical: float
    logit_var_theory: float
    logit_mean_empirical: float = math.nan
    row_scale: np.ndarray | None = None
    stored_rows: Mapping[int, np.ndarray] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("logits", "entropy", "p_max", "jac_fro"):
            object.__setattr__(self, name, readonly(getattr(self, name)))
        for name in ("stored_weights", "row_scale"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, readonly(getattr(self, name)))
        object.__setattr__(self, "stored_rows", MappingProxyType(
            {row: readonly(w) for row, w in self.stored_rows.items()}))

    @property
    def weights(self) -> np.ndarray:
        """``(heads, n, n)`` softmax rows of :attr:`logits` (computed once if not stored)."""
        if self.stored_weights is None:
            object.__setattr__(self, "stored_weights", readonly(_softmax_rows(self.logits)))
        return self.stored_weights

    def row_weights(self, head: int, row: int) -> np.ndarray:
        """The softmax row of query ``row`` in ``head``: the same numbers as ``weights[head,
        row]``, without computing the whole matrix when it is not stored."""
        if self.stored_weights is not None:
            return self.stored_weights[head, row]
        if row in self.stored_rows:
            return self.stored_rows[row][head]
        return readonly(_softmax_rows(self.logits[head, row:row + 1])[0])


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, by the row statistics' pass (bit for bit what
    :func:`run_experiment` stores)."""
    n = logits.shape[-1]
    weights = np.empty_like(logits)
    logit_row_stats(logits.reshape(-1, n), weights_out=weights.reshape(-1, n))
    return weights


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
    real_head
        The real head (``engine.analysis.real_head.RealHead``) whose q and k these are, or
        ``None`` for q, k drawn from ``config``.
    gradients
        For a real head, ``ScalingRule -> GradientSummary`` (its Jacobian numbers per rule);
        ``None`` for random q, k (the d_k sweep summarises those).
    """

    config: AttentionConfig
    q: np.ndarray
    k: np.ndarray
    raw_scores: np.ndarray
    rules: Mapping[ScalingRule, RuleView]
    real_head: Any = None
    gradients: Mapping[ScalingRule, GradientSummary] | None = None

    def __post_init__(self) -> None:
        for name in ("q", "k", "raw_scores"):
            object.__setattr__(self, name, readonly(getattr(self, name)))
        object.__setattr__(self, "rules", MappingProxyType(dict(self.rules)))
        if self.gradients is not None:
            object.__setattr__(self, "gradients", MappingProxyType(dict(self.gradients)))


class HeadQK(Protocol):
    """What :func:`run_experiment` reads of a real head: its (n, d_k) q and k."""

    @property
    def q(self) -> np.ndarray: ...

    @property
    def k(self) -> np.ndarray: ...



def raw_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Return the unscaled scores ``q·kᵀ`` of ``(..., n, d)`` queries and keys (one GEMM per head).

    Float64, for the 1e-12 accuracy the statistics rely on; :func:`run_experiment` and
    :func:`temperature_comparison` share it, so their numbers agree bit for bit.
    """
    return np.matmul(q, np.swapaxes(k, -1, -2))


def _parse_rules(rules: Iterable[ScalingRule | str] | None) -> list[ScalingRule]:
    return [parse_rule(rule, "rules") for rule in rules or ()]


def _rule_list(config: AttentionConfig, rules: Iterable[ScalingRule | str] | None) -> list:
    return list(dict.fromkeys([ScalingRule.NONE, config.rule, *_parse_rules(rules)]))


def check_snapshot_memory(config: AttentionConfig,
                          rules: Iterable[ScalingRule | str] = ()) -> None:
    """Raise :class:`~engine.core.memory.MemoryBudgetError` if :func:`run_experiment` with
    ``config`` and ``rules`` would; cheap (no array is allocated), for checking a control."""
    rule_list = _rule_list(config, rules)
    h, n, d = config.heads, config.n_tokens, config.d_k
    check_memory(
        8 * h * n * n * (2 + 2 * len(rule_list)) + 8 * 2 * h * n * d,
        f"attention snapshot: {len(rule_list)} rules × {h} heads × {n}×{n}",
    )


def run_experiment(
    config: AttentionConfig, rules: Iterable[ScalingRule | str] | None = None, *,
    real_head: HeadQK | None = None, threads: int = 1,
    stored_weights: Iterable[ScalingRule | str] | None = None, memory_checked: bool = False,
) -> AttentionSnapshot:
    """Draw q, k from ``config`` (or take a real head's) and evaluate every scaling rule on them.

    Parameters
    ----------
    config
        The experiment; its ``rule`` is always evaluated, and so is ``none``.
    rules
        Further rules to evaluate (duplicates are ignored).
    real_head
        A real head whose (n, d_k) q and k replace the random draw; ``config`` must match it
        (:func:`~engine.analysis.real_head.explorer_config_for`). The snapshot then carries the
        head and its ``gradients``.
    threads
        Threads the rules are evaluated on (the snapshot is the same for any count).
    stored_weights
        The rules whose full weight matrices are computed now (``None``: all); of the others
        only ``config.query_row`` is (``RuleView.stored_rows``), the rest when first read
        (the same numbers). Spares a pass over ``(heads, n, n)`` per rule a view shows one
        row of.
    memory_checked
        The caller checked the request's memory at its door (:func:`check_snapshot_memory`
        with every rule; the explorer's controller does): it is not checked again.

    Returns
    -------
    AttentionSnapshot

    Raises
    ------
    MemoryBudgetError
        If the ``(heads, n, n)`` matrices would exceed the memory budget.
    ValueError
        If ``real_head`` does not match ``config``'s geometry.
    """
    if not memory_checked:
        check_snapshot_memory(config, rules)
    rule_list = _rule_list(config, rules)
    h, n, d = config.heads, config.n_tokens, config.d_k
    # Every rule's logits derive from the raw scores: no further matmul.
    if real_head is None:
        q, k, raw = draw_scores(config)
    else:
        q, k = _real_qk(config, real_head)
        raw = raw_scores(q, k)
    blocked = ~causal_mask(n, n) if config.mask is MaskKind.CAUSAL else None
    # Statistics of the logit variance use independent token pairs i ≠ j (see RuleView).
    # A real head's tokens are not independent draws: every unmasked entry counts.
    select = (~np.eye(n, dtype=bool) if n > 1 and real_head is None
              else np.ones((n, n), dtype=bool))
    if blocked is not None:
        select &= ~blocked
    count = h * int(np.count_nonzero(select))

    def theory_var(rule: ScalingRule, c: float | np.ndarray) -> float:
        # Real q, k follow no law: no closed form to compare with.
        return math.nan if real_head is not None else theory_variance(config, rule, c)

    # Plan first (cheap): which rules need their own arrays, and which are twins.
    plans: list[tuple[ScalingRule, float | np.ndarray, float, bool]] = []
    own: dict[ScalingRule, ScalingRule] = {}  # rule -> the rule whose arrays it shares
    first_of_scale: dict[float, ScalingRule] = {}
    for rule in rule_list:
        c_all = rule_scale(config, rule)
        # A per-row c (length rules under a causal mask) is reported as the c of the last row,
        # which sees all n keys; its moments come from the logits themselves.
        per_row = isinstance(c_all, np.ndarray)
        c = float(c_all[-1, 0]) if per_row else c_all
        linear_in_raw = RULES[rule].multiplicative and not per_row
        own[rule] = first_of_scale.setdefault(c, rule) if linear_in_raw else rule
        plans.append((rule, c_all, c, linear_in_raw))
    wanted = rule_list if stored_weights is None else _parse_rules(stored_weights)
    store = {own[rule] for rule in rule_list if rule in wanted}
    raw_moments = (selected_moments(raw, select, count)
                   if any(linear for *_, linear in plans) else (math.nan, math.nan))

    def evaluate(rule: ScalingRule, c_all: float | np.ndarray, c: float,
                 linear_in_raw: bool) -> RuleView:
        logits = logits_from_raw(config, rule, c_all, q, k, raw)
        if linear_in_raw:
            mean_empirical, var_empirical = c * raw_moments[0], c * c * raw_moments[1]
        else:
            mean_empirical, var_empirical = selected_moments(logits, select, count)
        if blocked is not None:
            np.copyto(logits, -np.inf, where=blocked)
        weights = np.empty_like(logits) if rule in store else None
        stats = logit_row_stats(logits.reshape(-1, n),
                                weights_out=None if weights is None else weights.reshape(-1, n))
        rows = {}
        if weights is None:
            rows[config.query_row] = _softmax_rows(logits[:, config.query_row, :])
        return RuleView(
            rule=rule, scale=c, logits=logits, stored_weights=weights, stored_rows=rows,
            entropy=stats.entropy.reshape(h, n), p_max=stats.p_max.reshape(h, n),
            jac_fro=stats.jac_fro.reshape(h, n),
            logit_var_empirical=var_empirical, logit_var_theory=theory_var(rule, c_all),
            logit_mean_empirical=mean_empirical,
            row_scale=c_all[:, 0] if isinstance(c_all, np.ndarray) else None,
        )

    # The distinct rules are independent elementwise work on (heads, n, n) arrays, during
    # which numpy releases the interpreter lock: they run side by side on the available cores.
    distinct = [plan for plan in plans if own[plan[0]] is plan[0]]
    computed = dict(zip([plan[0] for plan in distinct],
                        run_tasks(evaluate, distinct, threads), strict=True))
    views: dict[ScalingRule, RuleView] = {}
    for rule, _, c, _ in plans:
        twin = computed[own[rule]]
        # Rules that are c·raw with the same c (e.g. T = √d_k and 1/√d_k) share every array.
        views[rule] = twin if own[rule] is rule else dataclasses.replace(
            twin, rule=rule, logit_var_theory=theory_var(rule, c))
    gradients = None if real_head is None else gradient_summary(views, raw, d, config.cap)
    return AttentionSnapshot(config=config, q=q, k=k, raw_scores=raw, rules=views,
                             real_head=real_head, gradients=gradients)


def _real_qk(config: AttentionConfig, head: HeadQK) -> tuple[np.ndarray, np.ndarray]:
    """The real head's q and k as one head, (1, n, d_k), checked against ``config``."""
    q, k = np.asarray(head.q, dtype=np.float64), np.asarray(head.k, dtype=np.float64)
    want = (config.n_tokens, config.d_k)
    if config.heads != 1 or q.shape != want or k.shape != want:
        raise ValueError(
            f"the real head's q {q.shape} and k {k.shape} do not fit the configuration "
            f"(heads = {config.heads}, n = {config.n_tokens}, d_k = {config.d_k}); build it "
            "with explorer_config_for")
    return q[None], k[None]


def temperature_comparison(
    config: AttentionConfig,
    temperature: float,
    *,
    head: int = 0,
    snapshot: AttentionSnapshot | None = None,
    real_head: HeadQK | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Compare ``softmax(z/T)`` with the 1/√d_k rule on one query row.

    ``z`` is the unscaled logit row of ``config.query_row`` in ``head``; both rows use the same
    arithmetic, so at ``T = math.sqrt(d_k)`` the difference is exactly 0.

    Parameters
    ----------
    config, temperature, head
        The experiment, T > 0, and the head whose row is compared.
    snapshot
        :func:`run_experiment` result for ``config``, whose raw scores are re-used.
    real_head
        A real head to compare on instead of drawing q, k (``snapshot`` must be of it).

    Returns
    -------
    (p_temperature, p_sqrt, max_abs_diff)
        Two length-n probability rows and ``max |p_T − p_sqrt|``.
    """
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < config.heads:
        raise ValueError(f"head must be in [0, {config.heads - 1}], got {head!r}")
    row = config.query_row
    if snapshot is not None:
        if snapshot.config != config:
            raise ValueError("snapshot was computed for another configuration than config")
        if snapshot.real_head is not real_head:
            raise ValueError("snapshot was computed for other q, k than real_head")
        z = snapshot.raw_scores[head, row]
    else:
        # The raw scores as run_experiment computes them (not a matrix-vector product, whose
        # rounding differs), so both paths give the same bits.
        if real_head is None:
            z = draw_scores(config)[2][head, row]
        else:
            q, k = _real_qk(config, real_head)
            z = raw_scores(q[head], k[head])[row]
    attend = None
    if config.mask is MaskKind.CAUSAL:
        attend = np.arange(config.n_tokens) <= row
    c_t = scale_factor(ScalingRule.TEMPERATURE, config.d_k, temperature=temperature)
    c_s = scale_factor(ScalingRule.SQRT, config.d_k)
    p_t = softmax(z * c_t, mask=attend)
    p_s = softmax(z * c_s, mask=attend)
    return p_t, p_s, float(np.max(np.abs(p_t - p_s)))
