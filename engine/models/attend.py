"""One layer's attention inside a model's forward pass, with or without an intervention.

softmax(c·q·kᵀ [soft-capped], masked) v, as transformers' eager attention computes it (the
logits q·kᵀ first, then times c), with the engine's own softmax
(:func:`engine.core.softmax.softmax_rows`). An intervention (:class:`LayerChange`, resolved from an
:class:`~engine.models.intervention.Intervention` for one layer) changes the chosen query
heads only: α multiplies their c before the soft-cap (as ``query *= α`` would), an explorer
rule replaces the model's c and soft-cap (:func:`engine.core.scaling.rule_operands`), and
their softmax may be rounded to a low-precision format.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core.parallel import run_tiles
from engine.core.scaling import Rule, rule_operands, write_logits
from engine.core.softmax import softmax_rows
from engine.core.stats import SATURATION_THRESHOLD, row_entropy

__all__ = ["LayerChange", "LayerStats", "attend", "visible_keys"]


@dataclass(frozen=True)
class LayerChange:
    """What an intervention does to one layer's attention.

    ``heads``: the query heads it changes (None: all); ``alpha`` multiplies their logits'
    scale; ``rule`` (None: the model's own c and soft-cap) replaces it; ``dtype`` (None: no
    rounding) is the format their softmax is rounded to, ``stable`` whether its row maximum
    is subtracted first.
    """

    heads: tuple[int, ...] | None = None
    alpha: float = 1.0
    rule: Rule | None = None
    dtype: np.dtype | None = None
    stable: bool = True


@dataclass(frozen=True)
class LayerStats:
    """Mean attention-row entropy (nats) of one layer and its share of saturated rows."""

    entropy: float
    saturated: float


def visible_keys(m: int, nk: int, offset: int, causal: bool,
                 window: int | None) -> np.ndarray | None:
    """(m, nk) bool: which of ``nk`` keys (positions 0 … nk − 1) each of ``m`` queries at
    positions ``offset`` … ``offset`` + m − 1 sees (None: all); a window w lets query p see
    keys p − w + 1 … p, as :func:`engine.core.plan.layer_mask`."""
    if not causal or (window is None and offset >= nk - 1):  # every row sees every key
        return None
    position = np.arange(offset, offset + m)[:, None]
    keys = np.arange(nk)[None, :]
    seen = keys <= position
    if window is not None:
        seen &= keys > position - window
    return None if seen.all() else seen


def _round(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``x`` rounded to ``dtype`` (nearest even), back in float32 (inf or NaN beyond its
    range), as :func:`engine.core.precision.round_to` does for its formats."""
    return x.astype(dtype).astype(np.float32)


def _rounded_softmax(z: np.ndarray, seen: np.ndarray | None, dtype: np.dtype,
                     stable: bool) -> np.ndarray:
    """The softmax of the logits ``z`` with every step rounded to ``dtype``, as
    :mod:`engine.core.precision`'s ``rounding="all"``: the logits, (stable: the shifted
    logits,) the exponentials, their row sum and the weights. Masked keys get weight 0 (a
    float8 e4m3 has no −∞: the mask is applied again after each rounding)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t = _round(z, dtype)
        if seen is not None:
            t[:, ~seen] = -np.inf
        if stable:
            t = _round(t - t.max(axis=-1, keepdims=True), dtype)
            if seen is not None:
                t[:, ~seen] = -np.inf
        e = _round(np.exp(t), dtype)
        s = _round(e.sum(axis=-1, keepdims=True), dtype)
        return _round(e / s, dtype)


def _softmax(z: np.ndarray) -> np.ndarray:
    """The engine's softmax over the last axis (:func:`engine.core.softmax.softmax_rows`:
    exp(z − row maximum) / row sum, as transformers' eager attention computes it, and as
    the capture always did, bit for bit); logits with NaN or +∞ (a NaN that an earlier
    rounded layer let through) give NaN weights, which the loss then shows."""
    try:
        return softmax_rows(z, normal_only=True)
    except ValueError:
        return np.full_like(z, np.nan)


def _rule_logits(q: np.ndarray, k: np.ndarray, rule: Rule, alpha: float,
                 seen: np.ndarray | None) -> np.ndarray:
    """The explorer rule's logits of q (h, m, d) and k (h, nk, d), times α."""
    d_k, m, nk = q.shape[-1], q.shape[1], k.shape[1]
    kind = rule.kind
    if kind.length_dependent:
        # n is the number of keys each row sees (i + 1 under a causal mask, at most the window)
        keys = np.full(m, nk) if seen is None else seen.sum(axis=-1)
        scale: float | np.ndarray = rule.row_scales(d_k, keys)[:, None]
    else:
        scale = rule.scale(d_k)
    operands = rule_operands(kind, q, k, scale=scale, gain=rule.gain_at(d_k), cap=rule.cap)
    qs = operands.qs if alpha == 1.0 else operands.qs * np.float32(alpha)
    out = np.empty((q.shape[0], m, nk), dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        write_logits(qs.astype(np.float32, copy=False), operands.ks.astype(np.float32,
                                                                          copy=False),
                     operands.cap, out)
    return out


def _grouped(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a (heads, m, ·) @ b (kv heads, ·, ·), query head h taking b[h // group]: a group's
    query heads stacked into one product, without a copy of b per query head."""
    heads, kv = a.shape[0], b.shape[0]
    if heads == kv:
        return a @ b
    m = a.shape[1]
    return (a.reshape(kv, heads // kv * m, a.shape[2]) @ b).reshape(heads, m, b.shape[2])


def _model_logits(q: np.ndarray, k: np.ndarray, scale: float | np.ndarray,
                  cap: float | None) -> np.ndarray:
    z = _grouped(q, k.transpose(0, 2, 1))
    z *= scale if isinstance(scale, np.ndarray) else np.float32(scale)
    if cap is not None:
        z /= np.float32(cap)
        np.tanh(z, out=z)
        z *= np.float32(cap)
    return z


#: Stands in for a zero weight inside the logarithm: its log times the weight 0 is 0.
_TINY = np.float32(np.finfo(np.float32).smallest_subnormal)


def _row_entropies(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(entropy, p_max) of every float32 weight row, in float64, without a float64 copy of
    the rows (a layer's rows are heads·m·nk weights, the copy cost more than the softmax).

    Σ p·ln p is taken in float32 and summed in float64; then, as
    :func:`engine.core.stats.row_entropy` does, the largest weight's term uses
    log1p(−Σ others), Σ others taken as the float64 row sum less p_max. The two agree to
    about 1e-7 nats per row (absolute: a near-one-hot row's tiny entropy, which row_entropy
    keeps to full relative precision, is here within ~1e-16 of it).
    :func:`engine.core.rowstats.logit_row_stats` works from logits: it would take every
    exponential again, and the Jacobian norm besides, where the weights exist already.
    """
    logs = np.maximum(rows, _TINY)  # NaN stays NaN
    np.log(logs, out=logs)
    logs *= rows
    total = logs.sum(axis=-1, dtype=np.float64)
    p_max = rows.max(axis=-1).astype(np.float64)
    others = rows.sum(axis=-1, dtype=np.float64) - p_max
    with np.errstate(divide="ignore", invalid="ignore"):
        swap = np.log1p(-np.minimum(others, 1.0)) - np.log(p_max)
    total += np.where(p_max > 0, p_max * swap, 0.0)
    return np.maximum(-total, 0.0), p_max


def _block_sums(p: np.ndarray) -> tuple[float, int, int]:
    """The entropy sum, saturated rows and rows of a block of weights ``p``."""
    with np.errstate(invalid="ignore"):
        rows = p.reshape(-1, p.shape[-1])
        if rows.dtype == np.float32:
            entropy, p_max = _row_entropies(rows)
            if np.isnan(entropy).any():  # NaN weights: the plain definitions
                rows = rows.astype(np.float64)
                entropy, p_max = row_entropy(rows), rows.max(axis=-1)
        else:
            entropy, p_max = row_entropy(rows), rows.max(axis=-1)
        return (float(entropy.sum()), int(np.count_nonzero(p_max > SATURATION_THRESHOLD)),
                len(rows))


def _layer_stats(sums: list[tuple[float, int, int]]) -> LayerStats:
    """A layer's mean entropy and saturated share from its blocks' :func:`_block_sums`
    (added in row order, so that the bits do not depend on which thread ran which block)."""
    entropy, saturated, rows = 0.0, 0, 0
    for block in sums:
        entropy += block[0]
        saturated += block[1]
        rows += block[2]
    return LayerStats(entropy / rows, saturated / rows)


#: A causal layer's query rows are taken in blocks of at least this many (at most
#: ``_MOST_BLOCKS`` blocks): a block reads only the keys its rows may see, so the logits,
#: softmax and weighted sum skip most of the masked half of the square.
_LEAST_BLOCK_ROWS = 64
_MOST_BLOCKS = 8

#: The least normal float32. No weight below it reaches the weighted sum, whose products with
#: subnormal weights ran 8× slower (a sweep's α = 8 points): the softmax gives none
#: (``normal_only``) and a rounded softmax's are flushed to 0. The output moves by at most
#: keys·2⁻¹²⁶·max|v|, below the float32 spacing of the residual stream it is projected into
#: for any |v| under ~1e30.
_LEAST_NORMAL = np.float32(np.finfo(np.float32).tiny)


def _blocks(m: int, nk: int, offset: int, causal: bool,
            window: int | None) -> list[tuple[int, int, int, int]]:
    """(a, b, lo, hi): query rows a … b − 1 see no key outside lo … hi − 1."""
    if not causal or m < 2 * _LEAST_BLOCK_ROWS:
        return [(0, m, 0, nk)]
    size = max(_LEAST_BLOCK_ROWS, -(-m // _MOST_BLOCKS))
    return [(a, min(m, a + size),
             0 if window is None else max(0, offset + a - window + 1),
             min(nk, offset + min(m, a + size)))
            for a in range(0, m, size)]


def _weights(q: np.ndarray, k: np.ndarray, seen: np.ndarray | None, scale: float,
             cap: float | None, change: LayerChange | None) -> np.ndarray:
    """The attention weights of queries ``q`` over keys ``k`` (``seen``: which they see)."""
    if change is None:
        return _softmax(_masked(_model_logits(q, k, scale, cap), seen))
    heads = q.shape[0]
    chosen = np.arange(heads) if change.heads is None else np.asarray(change.heads)
    if change.rule is None and change.dtype is None:
        # α alone: one pass, each head's own c (α·c on the chosen ones)
        per_head = np.full((heads, 1, 1), scale, dtype=np.float64)
        per_head[chosen] *= change.alpha
        return _softmax(_masked(_model_logits(q, k, per_head.astype(np.float32), cap), seen))
    others = np.setdiff1d(np.arange(heads), chosen)
    # The model's logits only where used: the heads left alone, and chosen heads that keep
    # them (α = 1 under a rounded softmax); a rule on every head needs none.
    own = change.rule is None and change.alpha == 1.0
    z = _masked(_model_logits(q, k, scale, cap), seen) if len(others) or own else None
    p = np.empty((heads, q.shape[1], k.shape[1]), dtype=np.result_type(q, k))
    if len(others):
        p[others] = _softmax(z[others])
    k_chosen = k[chosen // (heads // len(k))]  # the kv head each chosen query head reads
    if own:
        zc = z[chosen]
    elif change.rule is not None:
        zc = _masked(_rule_logits(q[chosen], k_chosen, change.rule, change.alpha, seen), seen)
    else:
        zc = _masked(_model_logits(q[chosen], k_chosen, scale * change.alpha, cap), seen)
    if change.dtype is None:
        p[chosen] = _softmax(zc)
    else:
        rounded = _rounded_softmax(zc, seen, change.dtype, change.stable)
        with np.errstate(invalid="ignore"):
            np.copyto(rounded, 0, where=rounded < _LEAST_NORMAL)
        p[chosen] = rounded
    return p


def _masked(z: np.ndarray, seen: np.ndarray | None) -> np.ndarray:
    """``z`` with −∞ (weight 0) at the keys a query may not see (in place, broadcast)."""
    if seen is not None:
        np.copyto(z, -np.inf, where=~seen)
    return z


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, cap: float | None,
           causal: bool, window: int | None = None, *, offset: int = 0,
           change: LayerChange | None = None,
           stats: list[LayerStats] | None = None) -> np.ndarray:
    """softmax(c·q·kᵀ [soft-capped], masked) v; returns (m, heads·d).

    ``q`` (heads, m, d) holds the queries at positions ``offset`` … ``offset`` + m − 1, ``k``
    and ``v`` (heads or kv heads, nk, d) the keys and values of positions 0 … nk − 1 (a KV
    cache's, when ``offset`` > 0); with fewer kv heads, query head h reads kv head
    h // (heads / kv heads), as grouped-query attention does. ``change`` alters the chosen
    heads (see :class:`LayerChange`); ``stats`` (a list) receives the layer's
    :class:`LayerStats`.
    """
    heads, m, nk = q.shape[0], q.shape[1], k.shape[1]
    blocks = _blocks(m, nk, offset, causal, window)
    out = np.empty((m, heads, v.shape[-1]), dtype=np.result_type(q, k, v))
    sums: list[tuple[float, int, int]] = [(0.0, 0, 0)] * len(blocks)

    def one(_state: None, j: int) -> None:
        a, b, lo, hi = blocks[j]
        seen = visible_keys(b - a, hi - lo, offset + a - lo, causal, window)
        p = _weights(q[:, a:b], k[:, lo:hi], seen, scale, cap, change)
        if stats is not None:
            sums[j] = _block_sums(p)
        out[a:b] = _grouped(p, v[:, lo:hi]).transpose(1, 0, 2)

    # Row blocks on the engine's threads, the costliest (latest rows, most keys) first so
    # that they end together; each block's sums are added in row order, as one thread would.
    work = sum((b - a) * (hi - lo) for a, b, lo, hi in blocks) * heads * (
        q.shape[-1] + v.shape[-1])
    run_tiles(one, sorted(range(len(blocks)), key=lambda j: -(blocks[j][1] - blocks[j][0])
                          * (blocks[j][3] - blocks[j][2])), work, lambda: None)
    if stats is not None:
        stats.append(_layer_stats(sums))
    return out.reshape(m, -1)
