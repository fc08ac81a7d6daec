"""The tiny attention model with a hand-written backward pass.

Architecture (one attention layer, no residual, no MLP)::

    X  = Σ_c Embed[ids[..., c]] + Pos                  (B, T, d_model)
    Q = X[target positions] W_Q; K, V = X W_K, X W_V, split into h heads
    O  = attention(Q, K, V; rule, mask)                (engine.core.attention; see _SCALAR_RULES)
    Y  = concat_h(O) W_O                               (B·P, d_model)
    Z  = Y W_U + b_U                                   (B·P, vocab)
    loss = mean cross-entropy(Z, targets)

The parameters are a :class:`~engine.training.params.ParamSet` (one flat buffer with named
views). Queries are computed only at the target positions (the only rows whose output is
scored). X is never formed: it is onehot·[Embed; Pos], so K and V are rows of the small table
[Embed; Pos]·W_KV, and every gradient of the embedding side is a product with that table's
number of rows (see :func:`loss_and_grad`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import MaskKind, rules_where
from engine.core.attention import (
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from engine.core.scaling import Rule
from engine.core.softmax import log_softmax
from engine.training.params import ParamSet
from engine.training.tasks import Batch, Task

__all__ = [
    "EvalResult",
    "PreparedBatch",
    "evaluate",
    "loss_and_grad",
    "prepare_batch",
    "project_qk",
]


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """A batch turned into model inputs once and shared by every rule.

    ``ids`` holds the flat token ids of each channel (the forward gathers rows of a small
    table by them). ``onehot`` is the (B·T, input_vocab + T) matrix whose row r counts the
    token ids of row r and then marks its position, so that X = onehot @ [Embed; Pos]
    (:attr:`~engine.training.params.ParamSet.inputs`) and every gradient of the embedding side
    is a BLAS call on it (``np.add.at`` is an order of magnitude slower).
    """

    ids: tuple[np.ndarray, ...]  # channels × (B·T,) int64
    onehot: np.ndarray  # (B·T, input_vocab + T)
    targets: np.ndarray  # (B·P,) int64
    positions: np.ndarray  # (P,) int64
    batch: int
    mask: np.ndarray | None  # (P, T) True = attend, for the target query rows; None = all


def prepare_batch(batch: Batch, task: Task, dtype: Any) -> PreparedBatch:
    """Encode ``batch`` for :func:`loss_and_grad` and :func:`evaluate`."""
    b, t, c = batch.ids.shape
    vocab = task.input_vocab
    onehot = np.zeros((b * t, vocab + t), dtype=dtype)
    rows = np.arange(b * t)
    for ch in range(c):
        # Channels use disjoint id ranges at a position, so no row index repeats in one call.
        onehot[rows, batch.ids[:, :, ch].ravel()] += 1
    onehot.reshape(b, t, vocab + t)[:, :, vocab:] = np.eye(t, dtype=dtype)
    positions = np.asarray(task.target_positions, dtype=np.int64)
    mask = None
    if task.mask is MaskKind.CAUSAL:
        # The causal mask of the full sequence, restricted to the query rows that are scored.
        mask = np.arange(t)[None, :] <= positions[:, None]
    return PreparedBatch(
        ids=tuple(np.ascontiguousarray(batch.ids[:, :, ch].ravel()) for ch in range(c)),
        onehot=onehot,
        targets=np.ascontiguousarray(batch.targets.reshape(-1)),
        positions=positions,
        batch=b,
        mask=mask,
    )


@dataclass(slots=True)
class _Cache:
    onehot_t: np.ndarray  # (B·P, input_vocab + T) rows of PreparedBatch.onehot at the targets
    xt: np.ndarray  # (B·P, d_model) inputs at the target (query) positions
    q: np.ndarray  # (B, h, P, d_k)
    k: np.ndarray  # (B, h, T, d_k)
    v: np.ndarray
    out: np.ndarray  # attention output (B, h, P, d_k)
    oc: np.ndarray  # (B·P, h·d_k) concatenated head outputs
    y: np.ndarray  # (B·P, d_model)
    z: np.ndarray  # (B·P, n_classes)
    weights: np.ndarray  # (B, h, P, T) attention weights
    logits: np.ndarray


# Rules whose logits are c·q·k with one c (the declaration's "scalar" trait): their training
# step uses the factored backward below, which reduces the key and value gradients onto the
# rows of the small input table without forming the (B, h, T, d_k) gradients. The others
# (QK-norm and soft-cap, non-linear in q, k; c per row) use engine.core.attention's backward;
# the forward is engine.core.attention's for every rule.
_SCALAR_RULES = frozenset(rules_where("scalar"))


def _factored_backward(
    cache: _Cache, g: np.ndarray, c: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradient of Σ out∘g w.r.t. q, and the factors of the key and value gradients.

    Uses rowsum(dP∘P) = rowsum(G∘O) (G the output gradient, O the output). The key and value
    gradients are sums of outer products per example, dK = c·dᵀ q and dV = Pᵀ G with
    d = (G Vᵀ − δ)∘P (P the weights); they are returned as those factors, stacked keys first
    like the columns of W_KV, so that the caller can reduce them over the batch without ever
    forming the (B, h, T, d_k) gradients (see :func:`_input_side_grads`).

    Returns
    -------
    grad_q
        (B, h, P, d_k).
    weights, rows
        (B, 2h, P, T) and (B, 2h, P, d_k): the gradient of key (or value) t of head j is
        Σ_p weights[:, j, p, t] · rows[:, j, p].
    """
    w, f = cache.weights, cache.q.dtype.type(c)
    b, h, p, t = w.shape
    weights = np.empty((b, 2, h, p, t), dtype=w.dtype)
    rows = np.empty((b, 2, h, p, cache.q.shape[-1]), dtype=w.dtype)
    rows[:, 1] = g  # the value gradient's rows
    delta = np.sum(g * cache.out, axis=-1, keepdims=True)
    d = weights[:, 0]
    np.matmul(g, cache.v.swapaxes(-1, -2), out=d)
    d -= delta
    d *= w
    grad_q = np.matmul(d, cache.k)
    grad_q *= f
    np.multiply(cache.q, f, out=rows[:, 0])
    weights[:, 1] = w
    return grad_q, weights.reshape(b, 2 * h, p, t), rows.reshape(b, 2 * h, p, -1)


def project_qk(params: ParamSet, pb: PreparedBatch) -> tuple[np.ndarray, np.ndarray]:
    """The (B, h, T, d_k) queries and keys the weights compute at *every* position of ``pb``,
    before any scaling rule (training computes queries at the target positions only), e.g. to
    write a tensor file of the trained heads."""
    dims = params.dims
    b, t, h, dk = pb.batch, dims.seq_len, dims.heads, dims.d_k
    x = pb.onehot @ params.inputs  # (B·T, d_model)
    q = (x @ params["w_q"]).reshape(b, t, h, dk).transpose(0, 2, 1, 3)
    k = (x @ params["w_kv"][:, : dims.hd]).reshape(b, t, h, dk).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(q), np.ascontiguousarray(k)


def _forward(params: ParamSet, rule: Rule, pb: PreparedBatch) -> _Cache:
    # Queries only at the scored target positions: (P, T) logits, pb.mask restricted to them.
    # K and V are gathered from [Embed; Pos]·W_KV (see the module docstring): X is never formed.
    dims = params.dims
    b, t, p, h, dk = pb.batch, dims.seq_len, pb.positions.size, dims.heads, dims.d_k
    inputs = params.inputs
    table = inputs @ params["w_kv"]  # (input_vocab + T, 2·h·d_k)
    kv = np.take(table, pb.ids[0], axis=0)
    for ids in pb.ids[1:]:
        kv += np.take(table, ids, axis=0)
    kv.reshape(b, t, 2 * dims.hd)[...] += table[dims.input_vocab:]
    onehot_t = pb.onehot.reshape(b, t, -1)[:, pb.positions].reshape(b * p, -1)
    xt = onehot_t @ inputs
    q = (xt @ params["w_q"]).reshape(b, p, h, dk).transpose(0, 2, 1, 3)
    kv5 = kv.reshape(b, t, 2, h, dk)
    k = kv5[:, :, 0].transpose(0, 2, 1, 3)
    v = kv5[:, :, 1].transpose(0, 2, 1, 3)
    # The parameters are finite (the session stops a run whose parameters are not), so the
    # attention's input check could only find an overflow of these products; the softmax's
    # own check and the loss find that too, and the check cost as much as the attention.
    att = scaled_dot_product_attention(q, k, v, mask=pb.mask, check_finite=False,
                                       rule=rule)
    out = att.output
    # (B, h, P, d_k) -> (B, P, h, d_k) -> (B·P, h·d_k)
    oc = out.transpose(0, 2, 1, 3).reshape(b * p, dims.hd)
    y = oc @ params["w_o"]
    z = y @ params["w_u"]
    z += params["b_u"]
    return _Cache(onehot_t, xt, q, k, v, out, oc, y, z, att.weights, att.logits)


def _input_side_grads(
    params: ParamSet, grads: ParamSet, cache: _Cache, s: np.ndarray, dq: np.ndarray
) -> None:
    """Write the gradients of W_KV, W_Q, Embed and Pos.

    ``s`` is onehotᵀ·dKV, (input_vocab + T, 2·h·d_k): the K/V gradient summed per input row
    of [Embed; Pos]; ``dq`` the query gradient, (B·P, h·d_k). With X = onehot·[Embed; Pos]
    every gradient here is a product of small matrices.
    """
    w_kv, w_q = params["w_kv"], params["w_q"]
    np.matmul(params.inputs.T, s, out=grads["w_kv"])
    np.matmul(cache.xt.T, dq, out=grads["w_q"])
    g_inputs = grads.inputs
    np.matmul(s, w_kv.T, out=g_inputs)
    g_inputs += cache.onehot_t.T @ (dq @ w_q.T)


def _forward_loss(params: ParamSet, rule: Rule, pb: PreparedBatch
                  ) -> tuple[_Cache, np.ndarray, float]:
    """The forward pass, its class log-probabilities and their mean cross-entropy."""
    cache = _forward(params, rule, pb)
    logp = log_softmax(cache.z)
    return cache, logp, float(-np.mean(logp[np.arange(logp.shape[0]), pb.targets],
                                       dtype=np.float64))


def loss_and_grad(
    params: ParamSet, grads: ParamSet, rule: Rule, pb: PreparedBatch, *, fused: bool = True
) -> float:
    """Return the mean cross-entropy and write its gradient into ``grads`` (overwritten).

    ``fused=False`` uses engine.core.attention's backward for every rule, not only for
    QK-norm and soft-cap.
    """
    dims = params.dims
    b, t, p, h, dk, hd = pb.batch, dims.seq_len, pb.positions.size, dims.heads, dims.d_k, dims.hd
    cache, logp, value = _forward_loss(params, rule, pb)
    # dZ = (softmax − onehot) / N, reusing the log-softmax buffer.
    dz = np.exp(logp, out=logp)
    dz[np.arange(dz.shape[0]), pb.targets] -= 1
    dz *= dz.dtype.type(1.0 / dz.shape[0])
    np.matmul(cache.y.T, dz, out=grads["w_u"])
    np.sum(dz, axis=0, out=grads["b_u"])
    dy = dz @ params["w_u"].T
    np.matmul(cache.oc.T, dy, out=grads["w_o"])
    d_out = (dy @ params["w_o"].T).reshape(b, p, h, dk).transpose(0, 2, 1, 3)
    if fused and rule.kind in _SCALAR_RULES:
        gq, kv_weights, kv_rows = _factored_backward(cache, d_out, rule.scale(dk))
        # s = onehotᵀ·dKV without forming dKV: first each example's key weights per input row
        # (B, 2h, P, R), then one product per head over the batch's B·P query rows.
        r = pb.onehot.shape[1]
        per_row = np.matmul(kv_weights, pb.onehot.reshape(b, 1, t, r))
        per_row = per_row.transpose(1, 3, 0, 2).reshape(2 * h, r, b * p)
        s = np.matmul(per_row, kv_rows.transpose(1, 0, 2, 3).reshape(2 * h, b * p, dk))
        s = s.transpose(1, 0, 2).reshape(r, 2 * hd)
    else:
        # The forward's output and weights spare the backward its recomputation.
        gq, gk, gv = scaled_dot_product_attention_backward(
            cache.q, cache.k, cache.v, d_out, mask=pb.mask, output=cache.out,
            weights=cache.weights, check_finite=False, rule=rule
        )
        dkv = np.empty((b, t, 2, h, dk), dtype=gq.dtype)
        dkv[:, :, 0] = gk.transpose(0, 2, 1, 3)
        dkv[:, :, 1] = gv.transpose(0, 2, 1, 3)
        s = pb.onehot.T @ dkv.reshape(b * t, 2 * hd)
    dq = gq.transpose(0, 2, 1, 3).reshape(b * p, hd)
    _input_side_grads(params, grads, cache, s, dq)
    return value


@dataclass(frozen=True, slots=True)
class EvalResult:
    """Held-out metrics of one model (arrays are read-only).

    Attributes
    ----------
    loss
        Mean cross-entropy over all target positions.
    accuracy
        Share of target positions whose arg-max class is correct.
    entropy
        (heads,) mean attention entropy (nats) of the target query rows.
    max_abs_logit
        Largest |attention logit| over the target query rows (masked entries excluded).
    weights
        (heads, P, T) attention map of example 0 (the probe): one row per target position.
    """

    loss: float
    accuracy: float
    entropy: np.ndarray
    max_abs_logit: float
    weights: np.ndarray

    def __post_init__(self) -> None:
        self.entropy.flags.writeable = False
        self.weights.flags.writeable = False


def evaluate(params: ParamSet, rule: Rule, pb: PreparedBatch) -> EvalResult:
    """Forward ``pb`` and return loss, accuracy and attention statistics."""
    cache, _, value = _forward_loss(params, rule, pb)
    accuracy = float(np.mean(np.argmax(cache.z, axis=1) == pb.targets))
    p = cache.weights  # (B, h, P, T)
    plogp = np.zeros(p.shape, dtype=np.float64)
    np.multiply(p, np.log(p, where=p > 0, out=np.zeros(p.shape)), out=plogp, where=p > 0)
    entropy = -plogp.sum(axis=-1).mean(axis=(0, 2))
    lg = cache.logits
    finite = np.isfinite(lg)
    max_abs = float(np.max(np.abs(lg), where=finite, initial=0.0))
    weights = np.array(cache.weights[0], dtype=np.float64)
    return EvalResult(value, accuracy, entropy, max_abs, weights)

