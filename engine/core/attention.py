"""Exact, fast scaled dot-product attention (forward and analytic backward) in pure numpy.

The forward pass computes, for queries ``q`` (..., n_q, d_k), keys ``k`` (..., n_k, d_k) and
values ``v`` (..., n_k, d_v)::

    logits  = mask(scaling_rule(q, k))      # (..., n_q, n_k), masked entries = -inf
    weights = softmax(logits, axis=-1)      # rows sum to 1, fully masked rows are all 0
    output  = weights @ v                   # (..., n_q, d_v)

Leading (batch, head) dimensions broadcast like :func:`numpy.matmul`. ``float32`` inputs stay
``float32``; every other real input is computed in ``float64``. The scaling rules are those of
:mod:`engine.core.scaling`.

Implementation notes (why the code looks the way it does):

* The n×n matrices are written with ``out=`` buffers and updated in place; matrix products go
  through :func:`numpy.matmul` (BLAS). ``einsum`` is avoided in hot paths (no BLAS, 5–7× slower).
* The backward pass never normalises the n×n exponentials: 1/rowsum is applied to n×d matrices
  instead, and rowsum(dP∘P) is computed as rowsum(G∘O) (G the output gradient, O the output).
* Before allocating, the bytes of the n×n matrices are checked against the memory budget
  (:func:`engine.core.memory.check_memory`).
* Large problems split their query rows over threads (:mod:`engine.core.parallel`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import ScalingRule
from engine.core.checks import as_real_array, check_finite
from engine.core.memory import check_memory
from engine.core.parallel import run_row_blocks
from engine.core.plan import Plan, make_plan
from engine.core.scaling import RuleOperands, normalise_backward, rule_operands, write_logits
from engine.core.softmax import exp_rows

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
        (..., n_q, n_k) softmax weights; rows sum to 1, fully masked rows are 0.
    logits
        (..., n_q, n_k) logits after scaling/capping and masking (masked = −∞), before softmax.
    """

    output: np.ndarray
    weights: np.ndarray
    logits: np.ndarray

    def __post_init__(self) -> None:
        for arr in (self.output, self.weights, self.logits):
            arr.flags.writeable = False


# --------------------------------------------------------------------------------------------
# Forward
# --------------------------------------------------------------------------------------------


def _operands(plan: Plan) -> RuleOperands:
    return rule_operands(plan.rule, plan.q, plan.k, scale=plan.scale, gain=plan.gain, cap=plan.cap)


def _rows(arr: np.ndarray, sl: slice) -> np.ndarray:
    """Query rows ``sl`` of an array whose axis -2 is n_q or a broadcast 1."""
    return arr if arr.shape[-2] == 1 else arr[..., sl, :]


def _logits_rows(
    plan: Plan, ops: RuleOperands, sl: slice, out: np.ndarray, keep_tanh: bool = False
) -> np.ndarray | None:
    """Write the masked logits of rows ``sl`` into ``out``.

    With ``keep_tanh`` (softcap only) the unmasked tanh values are returned in a new buffer,
    for the backward pass.
    """
    tanh = write_logits(ops, sl, out, keep_tanh)
    if plan.mask_off is not None:
        np.copyto(out, -np.inf, where=_rows(plan.mask_off, sl))
    return tanh


def _forward_bytes(plan: Plan) -> int:
    # logits + weights, plus the inverted mask.
    mask_bytes = 0 if plan.mask_off is None else plan.mask_off.size
    return 2 * plan.n_scores * plan.dtype.itemsize + mask_bytes


def _work(plan: Plan) -> int:
    d_v = 0 if plan.v is None else plan.v.shape[-1]
    return plan.n_scores * (plan.d_k + d_v)


def attention_logits(
    q: Any,
    k: Any,
    *,
    rule: ScalingRule | str = "sqrt",
    temperature: float | None = None,
    gain: float | None = None,
    cap: float | None = None,
    mask: Any = None,
    ssmax_s: float | None = None,
    yarn_factor: float | None = None,
    memory_budget_bytes: int | None = None,
) -> np.ndarray:
    """Return the (..., n_q, n_k) logits after scaling/capping and masking (masked = −∞).

    Same conventions and validation as :func:`scaled_dot_product_attention`.
    """
    plan = make_plan(
        q, k, None, rule=rule, mask=mask, temperature=temperature, gain=gain, cap=cap,
        ssmax_s=ssmax_s, yarn_factor=yarn_factor,
    )
    mask_bytes = 0 if plan.mask_off is None else plan.mask_off.size
    check_memory(
        plan.n_scores * plan.dtype.itemsize + mask_bytes,
        f"attention logits of shape {plan.score_shape} ({plan.dtype})",
        memory_budget_bytes,
    )
    ops = _operands(plan)
    logits = np.empty(plan.score_shape, dtype=plan.dtype)
    _logits_rows(plan, ops, slice(None), logits)
    return logits


def scaled_dot_product_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    rule: ScalingRule | str = "sqrt",
    mask: Any = None,
    temperature: float | None = None,
    gain: float | None = None,
    cap: float | None = None,
    ssmax_s: float | None = None,
    yarn_factor: float | None = None,
    memory_budget_bytes: int | None = None,
) -> AttentionResult:
    """Scaled dot-product attention ``softmax(mask(scale(q, k))) @ v``.

    Parameters
    ----------
    q, k, v
        Arrays of shape (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v); leading dimensions
        broadcast. All entries must be finite. ``float32`` is preserved, other real dtypes are
        computed in ``float64``.
    rule
        A :class:`~engine.config.ScalingRule` or its string: ``none``, ``sqrt``, ``linear``,
        ``temperature``, ``qk_norm``, ``softcap``, ``log_n``, ``ssmax``, ``yarn``
        (see :mod:`engine.core.scaling`; for ``log_n`` and ``ssmax`` n is the number of keys
        each row sees, so under a causal mask row i uses n = its visible keys).
    mask
        ``None``/``"none"``, ``"causal"`` (query i attends key j iff ``j <= i + n_k - n_q``, see
        :func:`~engine.core.plan.causal_mask`) or a boolean array broadcastable to
        (..., n_q, n_k) without enlarging it, True = attend (an (n_k,) array is a key-padding
        mask). Rows with no allowed key get zero weights and zero output.
    temperature
        T > 0 for the ``temperature`` rule (required there).
    gain
        QK-norm gain g > 0; ``None`` means √d_k.
    cap
        Soft-cap value > 0; ``None`` means 50.
    ssmax_s
        Scalable-Softmax's s > 0; ``None`` means 0.43.
    yarn_factor
        YaRN's context-extension factor f ≥ 1; ``None`` means 4.
    memory_budget_bytes
        Budget for the n×n matrices; ``None`` means
        :func:`~engine.core.memory.get_memory_budget`.

    Returns
    -------
    AttentionResult
        ``output`` (..., n_q, d_v), ``weights`` and ``logits`` (..., n_q, n_k), read-only.

    Raises
    ------
    ValueError
        For invalid shapes, dtypes, non-finite inputs, rules or parameters, or if q·k
        overflows the dtype.
    MemoryBudgetError
        If the n×n matrices would exceed the memory budget.
    """
    plan = make_plan(
        q, k, v, rule=rule, mask=mask, temperature=temperature, gain=gain, cap=cap,
        ssmax_s=ssmax_s, yarn_factor=yarn_factor,
    )
    assert plan.v is not None
    check_memory(
        _forward_bytes(plan),
        f"attention logits and weights of shape {plan.score_shape} ({plan.dtype}, 2 matrices)",
        memory_budget_bytes,
    )
    ops = _operands(plan)
    logits = np.empty(plan.score_shape, dtype=plan.dtype)
    weights = np.empty_like(logits)
    output = np.empty((*plan.batch, plan.n_q, plan.v.shape[-1]), dtype=plan.dtype)

    def block(sl: slice) -> None:
        lg = logits[..., sl, :]
        w = weights[..., sl, :]
        _logits_rows(plan, ops, sl, lg)
        w *= exp_rows(lg, w)
        np.matmul(w, plan.v, out=output[..., sl, :])

    run_row_blocks(block, plan.n_q, _work(plan))
    return AttentionResult(output=output, weights=weights, logits=logits)


# --------------------------------------------------------------------------------------------
# Backward
# --------------------------------------------------------------------------------------------


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


def scaled_dot_product_attention_backward(
    q: Any,
    k: Any,
    v: Any,
    grad_output: Any,
    *,
    rule: ScalingRule | str = "sqrt",
    mask: Any = None,
    temperature: float | None = None,
    gain: float | None = None,
    cap: float | None = None,
    ssmax_s: float | None = None,
    yarn_factor: float | None = None,
    memory_budget_bytes: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytic gradients of ``sum(output * grad_output)`` with respect to q, k and v.

    Parameters are those of :func:`scaled_dot_product_attention`, plus ``grad_output`` with
    exactly the output's shape (..., n_q, d_v). The forward pass is recomputed internally.
    Gradients are summed over broadcast leading dimensions, so each has the shape of its input.
    Masked entries receive zero gradient; the QK-norm rule includes the Jacobian of the
    normalisation and the soft-cap rule the tanh derivative.

    Returns
    -------
    tuple of numpy.ndarray
        ``(grad_q, grad_k, grad_v)`` in the computation dtype.
    """
    g_arr = as_real_array("grad_output", grad_output)
    plan = make_plan(
        q,
        k,
        v,
        rule=rule,
        mask=mask,
        temperature=temperature,
        gain=gain,
        cap=cap,
        ssmax_s=ssmax_s,
        yarn_factor=yarn_factor,
        extra=(g_arr,),
    )
    assert plan.v is not None
    d_v = plan.v.shape[-1]
    out_shape = (*plan.batch, plan.n_q, d_v)
    if g_arr.shape != out_shape:
        raise ValueError(
            f"grad_output must have the output's shape {out_shape} (..., n_q, d_v), "
            f"got {g_arr.shape}"
        )
    g = np.asarray(g_arr, dtype=plan.dtype)
    check_finite("grad_output", g)
    softcap = plan.rule is ScalingRule.SOFTCAP
    n_mats = 3 if softcap else 2
    mask_bytes = 0 if plan.mask_off is None else plan.mask_off.size
    check_memory(
        n_mats * plan.n_scores * plan.dtype.itemsize + mask_bytes,
        f"attention backward buffers of shape {plan.score_shape} ({plan.dtype}, "
        f"{n_mats} matrices)",
        memory_budget_bytes,
    )
    ops = _operands(plan)
    v_t = plan.v.swapaxes(-1, -2)
    grad_qs = np.empty((*plan.batch, plan.n_q, plan.d_k), dtype=plan.dtype)

    def block(sl: slice) -> tuple[np.ndarray, np.ndarray]:
        # E: unnormalised exponentials of these rows; inv: 1/rowsum (0 for fully masked rows).
        rows = sl.stop - sl.start
        e = np.empty((*plan.batch, rows, plan.n_k), dtype=plan.dtype)
        tanh = _logits_rows(plan, ops, sl, e, keep_tanh=True)
        inv = exp_rows(e, e)
        # With G' = G·inv (per row) every normalisation happens on n×d matrices:
        # O = (E V)·inv, dV = Eᵀ G', dL = E∘(G' Vᵀ − δ'), δ' = rowsum(G'∘O) = inv·rowsum(G∘O).
        g_s = g[..., sl, :] * inv
        out = np.matmul(e, plan.v)
        out *= inv
        grad_v = np.matmul(e.swapaxes(-1, -2), g_s)
        delta = np.sum(g_s * out, axis=-1, keepdims=True)
        d = np.matmul(g_s, v_t)
        d -= delta
        d *= e
        del e
        if tanh is not None:
            # ∂ cap·tanh(z) / ∂z = cap·(1 − tanh²); the factor cap is applied to n×d results.
            np.square(tanh, out=tanh)
            np.subtract(plan.dtype.type(1.0), tanh, out=tanh)
            d *= tanh
        np.matmul(d, ops.ks, out=grad_qs[..., sl, :])
        grad_ks = np.matmul(d.swapaxes(-1, -2), ops.qs[..., sl, :])
        return grad_ks, grad_v

    def add(
        a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        np.add(a[0], b[0], out=a[0])
        np.add(a[1], b[1], out=a[1])
        return a

    parts = run_row_blocks(block, plan.n_q, 2 * _work(plan), combine=add)
    grad_ks = parts[0][0]
    grad_v = parts[0][1]
    for gk, gv in parts[1:]:
        grad_ks += gk
        grad_v += gv

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
