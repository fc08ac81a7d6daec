"""Exact, fast scaled dot-product attention (forward and analytic backward) in pure numpy.

For queries ``q`` (..., n_q, d_k), keys ``k`` (..., n_k, d_k) and values ``v`` (..., n_k, d_v)::

    logits  = mask(scaling_rule(q, k))      # (..., n_q, n_k), masked entries = -inf
    weights = softmax(logits, axis=-1)      # rows sum to 1, fully masked rows are all 0
    output  = weights @ v                   # (..., n_q, d_v)

Leading (batch, head) dimensions broadcast like :func:`numpy.matmul`. ``float32`` inputs stay
``float32``; every other real input is computed in ``float64``. Why the code is shaped as it is
(row tiles, BLAS products, no normalised n×n matrix in the backward pass): docs/numerics.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import ScalingRule
from engine.core import passes, tiled
from engine.core.checks import as_real_array
from engine.core.checks import check_finite as check_finite_array
from engine.core.memory import check_memory
from engine.core.plan import Plan, make_plan
from engine.core.scaling import Rule, normalise_backward

__all__ = [
    "AttentionResult",
    "attention_logits",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
]


@dataclass(frozen=True, slots=True)
class AttentionResult:
    """Result of :func:`scaled_dot_product_attention` (arrays are read-only).

    Attributes
    ----------
    output
        (..., n_q, d_v) attention output ``weights @ v``.
    weights
        (..., n_q, n_k) softmax weights; rows sum to 1, fully masked rows are 0. None when the
        call asked for ``need_weights=False``. The weights and the logits share one block of
        memory, which lives as long as either does.
    logits
        (..., n_q, n_k) logits after scaling/capping and masking (masked = −∞), before softmax.
        None when the call asked for ``need_weights=False``.
    """

    output: np.ndarray
    weights: np.ndarray | None
    logits: np.ndarray | None

    def __post_init__(self) -> None:
        # setflags(False), not setflags(write=False): the method parses keywords the slow way,
        # which a tiny call (three arrays) notices.
        self.output.setflags(False)
        if self.weights is not None:
            self.weights.setflags(False)
        if self.logits is not None:
            self.logits.setflags(False)


def _mask_bytes(plan: Plan) -> int:
    return 0 if plan.mask_off is None else plan.mask_off.size


def attention_logits(
    q: Any,
    k: Any,
    *,
    rule: Rule | ScalingRule | str = "sqrt",
    mask: Any = None,
    memory_budget_bytes: int | None = None,
    check_finite: bool = True,
    **rule_parameters: float | None,
) -> np.ndarray:
    """Return the (..., n_q, n_k) logits after scaling/capping and masking (masked = −∞).

    Same conventions and validation as :func:`scaled_dot_product_attention`.
    """
    plan = make_plan(q, k, None, rule=Rule.from_keywords(rule, **rule_parameters), mask=mask,
                     check_finite=check_finite)
    check_memory(
        plan.n_scores * plan.dtype.itemsize + _mask_bytes(plan),
        lambda: f"attention logits of shape {plan.score_shape} ({plan.dtype})",
        memory_budget_bytes,
    )
    problem = tiled.prepare(plan)
    logits = np.empty((problem.batch_size, plan.n_q, plan.n_k), dtype=plan.dtype)
    # The kernel leaves overflow warnings to its caller: overflowing logits are ±inf here.
    with np.errstate(over="ignore", invalid="ignore"):
        for tile in problem.tiles:
            b0, b1, r0, r1 = tile
            tiled.write_tile_logits(problem, tile, logits[b0:b1, r0:r1])
    return logits.reshape(plan.score_shape)


def scaled_dot_product_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    rule: Rule | ScalingRule | str = "sqrt",
    mask: Any = None,
    memory_budget_bytes: int | None = None,
    need_weights: bool = True,
    check_finite: bool = True,
    **rule_parameters: float | None,
) -> AttentionResult:
    """Scaled dot-product attention ``softmax(mask(scale(q, k))) @ v``.

    Parameters
    ----------
    q, k, v
        (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v), all finite; leading dimensions broadcast.
    rule
        A :class:`~engine.core.scaling.Rule` (it carries its parameters), or a
        :class:`~engine.config.ScalingRule` or its string.
    mask
        ``None``/``"none"``, ``"causal"`` (:func:`~engine.core.plan.causal_mask`) or a boolean array
        broadcastable to (..., n_q, n_k), True = attend; a row with no key gets zero output.
    memory_budget_bytes
        Budget for the n×n matrices (tile buffers without weights); ``None``: the global budget.
    need_weights
        ``False`` returns the output only, computed in row tiles without any n×n array.
    check_finite
        Check q, k, v for NaN/±∞ (as :func:`scipy.linalg.solve`); ``False`` saves that pass,
        and non-finite inputs then give NaN instead of a message.
    **rule_parameters
        Beside a rule name: its parameters by name (the fields of
        :class:`~engine.config.RuleParameters`, e.g. ``temperature=2.0``); ``None``: the default.

    Returns
    -------
    AttentionResult
        ``output`` (..., n_q, d_v), ``weights`` and ``logits`` (..., n_q, n_k), read-only.

    Raises
    ------
    ValueError
        For invalid shapes, dtypes, non-finite inputs, rules or parameters, or a q·k overflow.
    MemoryBudgetError
        If the n×n matrices would exceed the memory budget.
    """
    plan = make_plan(q, k, v, rule=Rule.from_keywords(rule, **rule_parameters), mask=mask,
                     check_finite=check_finite)
    assert plan.v is not None
    output_shape = (*plan.batch, plan.n_q, plan.v.shape[-1])
    if not need_weights:
        problem = tiled.prepare(plan)
        check_memory(
            tiled.scratch_bytes(problem, 1) + _mask_bytes(plan),
            lambda: f"attention tiles of {problem.tile_elements} entries ({plan.dtype})",
            memory_budget_bytes,
        )
        output = np.empty((problem.batch_size, *output_shape[-2:]), dtype=plan.dtype)
        passes.forward(problem, output)
        if len(plan.batch) != 1:  # back to the leading dimensions
            output = output.reshape(output_shape)
        return AttentionResult(output=output, weights=None, logits=None)
    check_memory(
        2 * plan.n_scores * plan.dtype.itemsize + _mask_bytes(plan),
        lambda: (
            f"attention logits and weights of shape {plan.score_shape} ({plan.dtype}, "
            "2 matrices)"
        ),
        memory_budget_bytes,
    )
    problem = tiled.prepare(plan)
    flat_scores = (problem.batch_size, plan.n_q, plan.n_k)
    # One allocation for both n×n results, which glibc reuses (docs/numerics.md, "Attention").
    both = np.empty((2, *flat_scores), dtype=plan.dtype)
    logits, weights = both[0], both[1]  # indexing: unpacking the array costs twice as much
    output = np.empty((problem.batch_size, *output_shape[-2:]), dtype=plan.dtype)
    passes.forward(problem, output, logits=logits, weights=weights)
    if len(plan.batch) != 1:  # back to the leading dimensions
        output = output.reshape(output_shape)
        weights = weights.reshape(plan.score_shape)
        logits = logits.reshape(plan.score_shape)
    return AttentionResult(output=output, weights=weights, logits=logits)


def _sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` over the axes that broadcasting added or expanded, giving ``shape``."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    pairs = enumerate(zip(grad.shape, shape, strict=True))
    axes = tuple(i for i, (g, s) in pairs if s == 1 and g != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad


def _check_shape(name: str, arr: np.ndarray, shape: tuple[int, ...], whose: str,
                 last: str) -> None:
    if arr.shape != shape:
        raise ValueError(f"{name} must have the {whose} shape {shape} (..., {last}), "
                         f"got {arr.shape}")


def scaled_dot_product_attention_backward(
    q: Any,
    k: Any,
    v: Any,
    grad_output: Any,
    *,
    rule: Rule | ScalingRule | str = "sqrt",
    mask: Any = None,
    memory_budget_bytes: int | None = None,
    output: Any = None,
    weights: Any = None,
    check_finite: bool = True,
    **rule_parameters: float | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytic gradients of ``sum(output * grad_output)`` with respect to q, k and v.

    Takes the arguments of :func:`scaled_dot_product_attention` and ``grad_output`` of the output's
    shape. Each gradient has its input's shape (summed over broadcast dimensions); masked entries
    get zero gradient; QK-norm and soft-cap include the derivatives of their transforms.

    Parameters
    ----------
    output, weights
        Optional: that forward call's output and weights, which save recomputing them (``softcap``
        ignores ``weights``); values of another call give wrong gradients.
    check_finite
        As in :func:`scaled_dot_product_attention`; it covers ``grad_output`` too.

    Returns
    -------
    tuple of numpy.ndarray
        ``(grad_q, grad_k, grad_v)`` in the computation dtype.
    """
    g_arr = as_real_array("grad_output", grad_output)
    plan = make_plan(q, k, v, rule=Rule.from_keywords(rule, **rule_parameters), mask=mask,
                     extra=(g_arr,), check_finite=check_finite)
    assert plan.v is not None
    d_v = plan.v.shape[-1]
    out_shape = (*plan.batch, plan.n_q, d_v)
    _check_shape("grad_output", g_arr, out_shape, "output's", "n_q, d_v")
    g = np.asarray(g_arr, dtype=plan.dtype)
    if check_finite:
        check_finite_array("grad_output", g)
    if output is not None:
        output = np.asarray(output, dtype=plan.dtype)
        _check_shape("output", output, out_shape, "output's", "n_q, d_v")
    softcap = plan.rule is ScalingRule.SOFTCAP
    if weights is not None and not softcap:
        weights = np.asarray(weights, dtype=plan.dtype)
        _check_shape("weights", weights, plan.score_shape, "logits'", "n_q, n_k")
    else:
        weights = None
    n_mats = 3 if softcap else 2
    # The tiles need far less; the budget keeps the guard of the untiled pass.
    check_memory(
        n_mats * plan.n_scores * plan.dtype.itemsize + _mask_bytes(plan),
        lambda: (
            f"attention backward buffers of shape {plan.score_shape} ({plan.dtype}, "
            f"{n_mats} matrices)"
        ),
        memory_budget_bytes,
    )
    problem = tiled.prepare(plan)
    ops = problem.ops
    size = problem.batch_size
    grad_qs = np.empty((size, plan.n_q, plan.d_k), dtype=plan.dtype)
    flat_output = None if output is None else output.reshape(size, plan.n_q, d_v)
    flat_weights = None if weights is None else weights.reshape(size, plan.n_q, plan.n_k)
    grad_ks, grad_v = passes.backward(
        problem, g.reshape(size, plan.n_q, d_v), grad_qs, output=flat_output,
        weights=flat_weights,
    )
    # Back to the leading dimensions; broadcast ones are summed below.
    grad_qs = grad_qs.reshape(*plan.batch, plan.n_q, plan.d_k)
    grad_ks = grad_ks.reshape(*plan.batch, plan.n_k, plan.d_k)
    grad_v = grad_v.reshape(*plan.batch, plan.n_k, d_v)

    dt = plan.dtype.type
    if plan.rule is ScalingRule.QK_NORM:
        assert ops.q_hat is not None and ops.q_norm is not None and ops.k_norm is not None
        # logits = g·q̂·k̂ᵀ: ∂/∂q̂ = g·(∂/∂qs), ∂/∂k̂ = ∂/∂ks; sum over broadcast dims first,
        # because the normalisation acts on each input row.
        grad_qs *= dt(plan.gain)
        grad_q = normalise_backward(
            ops.q_hat, ops.q_norm, _sum_to_shape(grad_qs, plan.q.shape)
        )
        grad_k = normalise_backward(ops.ks, ops.k_norm, _sum_to_shape(grad_ks, plan.k.shape))
    else:
        # qs = c'·q with c' = c (or c/cap for softcap, whose block gradient lacks the factor cap).
        # Per-row c (log_n / ssmax under a mask) is constant in q and k: the same product.
        if isinstance(plan.scale, np.ndarray):
            grad_qs *= plan.scale.astype(plan.dtype)
        else:
            grad_qs *= dt(plan.scale)
        grad_q = _sum_to_shape(grad_qs, plan.q.shape)
        if plan.rule is ScalingRule.SOFTCAP:
            grad_ks *= dt(plan.cap)
        grad_k = _sum_to_shape(grad_ks, plan.k.shape)
    grad_v = _sum_to_shape(grad_v, plan.v.shape)
    return (
        np.ascontiguousarray(grad_q, dtype=plan.dtype),
        np.ascontiguousarray(grad_k, dtype=plan.dtype),
        np.ascontiguousarray(grad_v, dtype=plan.dtype),
    )
