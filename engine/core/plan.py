"""Validated inputs of one attention call (the plan), and the masks.

:func:`make_plan` checks shapes, dtypes and finiteness once, with messages that name the
offending value, applies the :class:`~engine.core.scaling.Rule` (checked when it was made) and
returns a :class:`Plan` that the forward and backward passes share.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import MaskKind, ScalingRule
from engine.core.checks import as_bool_mask, check_all_finite, check_array, check_dim, float_dtype
from engine.core.scaling import Rule

__all__ = ["Plan", "causal_mask", "layer_mask", "make_plan"]


def causal_mask(n_q: int, n_k: int) -> np.ndarray:
    """Boolean (n_q, n_k) causal mask, True = attend.

    Query i may attend to key j when ``j <= i + (n_k - n_q)``: queries are aligned with the
    *last* n_q keys (the usual convention when a prefix of cached keys precedes the queries).
    With ``n_q == n_k`` this is the lower triangle including the diagonal. When ``n_q > n_k``
    the first ``n_q - n_k`` queries see no key; their weights and outputs are zero.
    """
    n_q = check_dim("n_q", n_q)
    n_k = check_dim("n_k", n_k)
    return np.tri(n_q, n_k, k=n_k - n_q, dtype=bool)


def layer_mask(n: int, causal: bool, window: int | None = None) -> str | np.ndarray | None:
    """The ``mask`` argument of :func:`make_plan` for a model layer of n tokens.

    None without a mask, ``"causal"`` for a causal one, and for a causal sliding window of w
    keys the boolean (n, n) array (True = attend) of transformers' mask: query i sees keys
    i − w + 1 … i. A window of n or more keys is the causal mask itself.
    """
    if not causal:
        return None
    if window is None or window >= n:
        return "causal"
    return np.tri(n, dtype=bool) & ~np.tri(n, k=-window, dtype=bool)


# Small causal tiles are cached (building one costs more than using it); large ones are not,
# so that the cache holds at most 64 × 4 KiB.
_CACHED_MASK_ENTRIES = 1 << 12


@functools.lru_cache(maxsize=64)
def _causal_rows(rows: int, n_k: int, offset: int) -> np.ndarray:
    """Read-only (rows, n_k) mask, True where key j > row i + offset (forbidden)."""
    mask = ~np.tri(rows, n_k, k=offset, dtype=bool)
    mask.flags.writeable = False
    return mask


@dataclass(slots=True)
class Plan:
    """The checked inputs of one attention call, cast to the computation dtype.

    Read-only by convention, like the call's other internal records (``TiledProblem``,
    ``RuleOperands``), but not frozen: a frozen dataclass sets each field through
    ``object.__setattr__``, which makes building the three a noticeable share of a tiny call.
    """

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray | None
    dtype: np.dtype
    batch: tuple[int, ...]
    n_q: int
    n_k: int
    d_k: int
    rule: ScalingRule
    # c for scalar rules (for softcap: 1/√d_k before the cap); for log_n / ssmax under a mask,
    # per-row c as a float64 (..., n_q, 1) array (each row's own n = keys it sees)
    scale: float | np.ndarray
    gain: float  # QK-norm gain
    cap: float  # soft-cap value
    # True where attention is NOT allowed (broadcastable); None without a mask and for the
    # causal mask, which is never materialised as an n×n array: see causal_offset.
    mask_off: np.ndarray | None
    # Causal mask only: query i may attend key j iff j <= i + causal_offset (= n_k − n_q).
    causal_offset: int | None
    score_shape: tuple[int, ...]  # (..., n_q, n_k): the shape of the logits and weights
    n_scores: int  # entries of the logits

    @property
    def masked(self) -> bool:
        """Whether any (query, key) pair is forbidden (some row may be fully masked)."""
        return self.mask_off is not None or self.causal_offset is not None

    def mask_rows(self, rows: slice, keys: slice = slice(None)) -> np.ndarray | None:
        """Forbidden entries (True = masked) of query rows ``rows`` and keys ``keys``; None = none.

        Broadcastable to the block. A causal mask is built for this block only, so no n×n mask
        is ever allocated.
        """
        if self.causal_offset is not None:
            start, stop, _ = rows.indices(self.n_q)
            first, last, _ = keys.indices(self.n_k)
            rows_n, cols = stop - start, last - first
            # Key j is forbidden to row i when j > i + offset; relative to the block's corner
            # that is j' > i' + (start + offset − first).
            diagonal = start + self.causal_offset - first
            if rows_n * cols <= _CACHED_MASK_ENTRIES:
                return _causal_rows(rows_n, cols, diagonal)
            return ~np.tri(rows_n, cols, k=diagonal, dtype=bool)
        if self.mask_off is None:
            return None
        if self.mask_off.shape[-2] == 1:
            return self.mask_off[..., keys]
        return self.mask_off[..., rows, keys]


def make_plan(
    q: Any,
    k: Any,
    v: Any,
    *,
    rule: Rule,
    mask: Any,
    extra: tuple[np.ndarray, ...] = (),
    check_finite: bool = True,
) -> Plan:
    """Check the arguments of an attention call and return its :class:`Plan`.

    ``v`` may be None (logits only). ``extra`` arrays (e.g. the output gradient) take part in
    the choice of the computation dtype. ``check_finite=False`` skips the test that q, k and
    v hold no NaN or ±∞ (for callers whose inputs are finite by construction).
    """
    q = check_array("q", q, "(..., n_q, d_k)")
    k = check_array("k", k, "(..., n_k, d_k)")
    arrays = (q, k)
    if v is not None:
        v = check_array("v", v, "(..., n_k, d_v)")
        arrays = (q, k, v)
    n_q, d_k = q.shape[-2:]
    n_k = k.shape[-2]
    if k.shape[-1] != d_k:
        raise ValueError(
            f"d_k mismatch: q has d_k = {d_k} (last axis) but k has d_k = {k.shape[-1]}; "
            "they must be equal"
        )
    if v is not None and v.shape[-2] != n_k:
        raise ValueError(
            f"n_k mismatch: k has n_k = {n_k} keys (axis -2) but v has {v.shape[-2]}; "
            "they must be equal"
        )
    if n_q < 1 or n_k < 1 or d_k < 1:
        for name, size in (("n_q (q.shape[-2])", n_q), ("n_k (k.shape[-2])", n_k),
                           ("d_k", d_k)):
            if size < 1:
                raise ValueError(f"{name} must be >= 1, got {size}")
    batch = q.shape[:-2]
    if k.shape[:-2] != batch or (v is not None and v.shape[:-2] != batch):
        try:
            batch = np.broadcast_shapes(*(a.shape[:-2] for a in arrays))
        except ValueError:
            shapes = ", ".join(f"{n}{a.shape}" for n, a in zip("qkv", arrays, strict=False))
            raise ValueError(
                f"leading (batch, head) dimensions of q, k, v do not broadcast: {shapes}"
            ) from None

    dtype = float_dtype(*arrays, *extra)
    score_shape = (*batch, n_q, n_k)
    mask_off, causal_offset = (None, None) if mask is None else _mask_off(mask, score_shape)
    scale: float | np.ndarray
    length_dependent = rule.kind.length_dependent
    if length_dependent and causal_offset is not None:
        # Each row is a softmax over the keys it sees: its own n (row i sees i + 1 + offset).
        keys = np.clip(np.arange(1 + causal_offset, n_q + 1 + causal_offset), 0, n_k)
        scale = rule.row_scales(d_k, keys[:, None])
    elif length_dependent and mask_off is not None:
        scale = rule.row_scales(d_k, np.count_nonzero(~mask_off, axis=-1, keepdims=True))
    else:
        scale = rule.scale(d_k, n_k)

    q = np.asarray(q, dtype=dtype)
    k = np.asarray(k, dtype=dtype)
    if v is not None:
        v = np.asarray(v, dtype=dtype)
    if check_finite:
        if v is None:
            check_all_finite(("q", "k"), (q, k))
        else:
            check_all_finite(("q", "k", "v"), (q, k, v))
    return Plan(
        q=q,
        k=k,
        v=v,
        dtype=dtype,
        batch=batch,
        n_q=n_q,
        n_k=n_k,
        d_k=d_k,
        rule=rule.kind,
        scale=scale,
        gain=rule.gain_at(d_k),
        cap=rule.cap,
        mask_off=mask_off,
        causal_offset=causal_offset,
        score_shape=score_shape,
        n_scores=math.prod(score_shape),
    )


def _mask_off(mask: Any, score_shape: tuple[int, ...]) -> tuple[np.ndarray | None, int | None]:
    """Return (forbidden entries or None, the causal offset n_k − n_q or None)."""
    if mask is None:
        return None, None
    n_q, n_k = score_shape[-2:]
    if isinstance(mask, str):
        try:
            kind = MaskKind(mask)
        except ValueError:
            raise ValueError(
                f"mask must be None, 'none', 'causal' or a boolean array; got {mask!r}"
            ) from None
        if kind is MaskKind.NONE:
            return None, None
        # j > i + (n_k - n_q) is forbidden; see causal_mask. A single query sees every key.
        if n_q == 1:
            return None, None
        return None, n_k - n_q
    arr = as_bool_mask(mask, score_shape, "(True = attend) or 'causal'")
    if arr.all():
        return None, None
    # A (n_k,) key-padding mask becomes (1, n_k) so that axis -2 always exists.
    return ~np.atleast_2d(arr), None
