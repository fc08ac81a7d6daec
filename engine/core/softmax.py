"""The numerically stable softmax, and the row exponentials the attention passes share.

The softmax subtracts the row maximum before ``exp``, except when every row maximum lies in a
window where ``exp`` cannot overflow (then the shift is skipped: one pass fewer over an n×n
matrix). Fully masked rows have maximum −∞; their shift is replaced by 0 so that no
``-inf - -inf`` is ever evaluated, and their weights come out 0, never NaN.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from engine.core.checks import as_bool_mask, as_real_array, float_dtype

__all__ = [
    "NO_SHIFT_WINDOW",
    "exp_rows",
    "exp_rows_by_maxima",
    "exp_shifted_rows",
    "log_softmax",
    "row_reciprocal",
    "row_sums",
    "softmax",
    "softmax_rows",
    "try_exp_unshifted",
]


# Below this many entries einsum's own set-up costs more than the sum saves.
_EINSUM_MIN_SIZE = 4096


def row_sums(x: np.ndarray) -> np.ndarray:
    """The sums over the last axis, keeping it (length 1).

    float32 rows of a tile are summed with ``einsum``, faster than ``numpy.add.reduce`` (whose
    pairwise sum runs row by row); its error grows faster with the row length, still far below
    float32's other errors in attention. float64, the dtype chosen for accuracy, keeps the
    pairwise sum.
    """
    if x.dtype == np.float32 and x.size >= _EINSUM_MIN_SIZE:
        return np.einsum("...j->...", x)[..., None]
    return np.add.reduce(x, axis=-1, keepdims=True)


def row_reciprocal(s: np.ndarray) -> np.ndarray:
    """1/s in place, and 0 where s == 0 (fully masked rows: every other row holds exp(m) > 0)."""
    if s.size and s.min() > 0:
        return np.reciprocal(s, out=s)
    inv = np.zeros_like(s)
    np.divide(1.0, s, out=inv, where=s > 0)
    return inv


# Row maxima inside these windows need no shift before exp: exp(logits) cannot overflow, the
# row sum stays far from the dtype's limits, and the entries that underflow to 0 are the same
# (or weigh less than exp(-60) relative to the row maximum) as with the shift. Skipping the
# shift saves one of the five elementwise passes over the n×n matrix.
NO_SHIFT_WINDOW = {np.dtype(np.float32): (-20.0, 30.0), np.dtype(np.float64): (-300.0, 300.0)}
# exp of the window's ends: a row sum S within [n·e^lo, e^hi] proves the row needs no shift.
_SUM_BOUNDS = {dtype: (math.exp(lo), math.exp(hi)) for dtype, (lo, hi) in NO_SHIFT_WINDOW.items()}


def exp_rows(logits: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Write exp(logits − shift) into ``out`` (may be ``logits``); return 1/rowsum (keepdims).

    The shift is the row maximum, or 0 when every row maximum lies in the no-shift window; the
    softmax is ``out * inv`` either way. Fully masked rows (all −∞) give zeros and inv = 0.

    When ``out`` is a separate buffer, exp is tried first without finding the row maxima
    (:func:`try_exp_unshifted`); when that proof fails, or ``out`` is ``logits``, the maxima
    decide (:func:`exp_rows_by_maxima`).

    Call inside ``numpy.errstate(over="ignore", invalid="ignore")``: that first exp may
    overflow, which the row sums then detect.
    """
    if out is not logits:
        inv = try_exp_unshifted(logits, out)
        if inv is not None:
            return inv
    return exp_rows_by_maxima(logits, out)


def try_exp_unshifted(logits: np.ndarray, out: np.ndarray) -> np.ndarray | None:
    """Write exp(logits) into ``out`` (may be ``logits``); return 1/rowsum if no shift was due.

    exp(m) <= S <= n·exp(m) for a row sum S, so S in [n·e^lo, e^hi] proves that every row
    maximum m lies in the no-shift window: the pass over the matrix that finds the maxima is
    saved. Otherwise (NaN or +∞ included) ``out`` holds nothing useful and None is returned;
    if ``out`` is ``logits``, the logits are lost and must be written again. Call inside
    ``numpy.errstate(over="ignore", invalid="ignore")``.
    """
    np.exp(logits, out=out)
    s = row_sums(out)
    # NaN fails both comparisons, and so does a row sum of 0 (a fully masked row). A few
    # rows are cheaper to check in Python than with two reductions; but Python's max()
    # and min() skip a NaN that is not the first item, and their sum does not.
    if s.size <= 64:
        sums = s.ravel().tolist()
        top, bottom = (math.nan if math.isnan(sum(sums)) else max(sums)), min(sums)
    else:
        top, bottom = float(s.max()), float(s.min())
    low_sum, high_sum = _SUM_BOUNDS[logits.dtype]
    if top <= high_sum and bottom >= logits.shape[-1] * low_sum:
        # reciprocal, not divide(1.0, s): the same quotient without the Python scalar's
        # conversion, half the cost of the call on a tile of a few rows.
        return np.reciprocal(s, out=s)
    return None


def exp_rows_by_maxima(logits: np.ndarray, out: np.ndarray) -> np.ndarray:
    """:func:`exp_rows` with the row maxima found first (``out`` may be ``logits``).

    Raises ValueError for NaN or +∞ logits (see :func:`_row_maxima`).
    """
    lo, hi = NO_SHIFT_WINDOW[logits.dtype]
    m, low, high = _row_maxima(logits)
    # A fully masked row (max −∞) needs no shift either: exp gives its zeros.
    if high <= hi and (low >= lo or ((m >= lo) | np.isneginf(m)).all()):
        np.exp(logits, out=out)
        return row_reciprocal(row_sums(out))
    return row_reciprocal(row_sums(_exp_minus(logits, m, out)))


def exp_shifted_rows(logits: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Write exp(logits − row maximum) into ``out``; return 1/rowsum (keepdims).

    Unlike :func:`exp_rows` the shift is always the row maximum, so the largest exponential of
    every row is exactly 1 and the row sum is at least 1: statistics of the softmax (entropy,
    largest weight) use these exact values. A constant row of n gives the sum n exactly. Fully
    masked rows (all −∞) give zeros and inv = 0. ``logits`` is left unchanged.
    """
    return row_reciprocal(row_sums(_exp_minus(logits, _row_maxima(logits)[0], out)))


def softmax_rows(logits: np.ndarray, *, normal_only: bool = False) -> np.ndarray:
    """exp(z − row maximum) / row sum over the last axis of float ``logits``, a new array.

    The textbook form, for the weights shown from a file's logits and the float64 reference of
    the precision errors: unlike :func:`softmax` the shift is always the row maximum and each
    weight is one quotient (one rounding), not a product with the reciprocal. Fully masked
    rows (all −∞) give zeros. Raises ValueError for NaN or +∞ logits.

    ``normal_only``: a weight that would be below n·tiny (n the row's length, tiny the least
    normal number of the dtype) is 0, so that no weight, exponential or quotient is subnormal
    (the processor's exp and products of subnormal numbers run 10-20× slower: a model's
    saturated rows). The row sums move by less than n²·tiny, far below one unit of their last
    place (they are at least 1).
    """
    floor = None
    if normal_only:
        floor = math.log(np.finfo(logits.dtype).tiny * max(logits.shape[-1], 1))
    e = _exp_minus(logits, _row_maxima(logits)[0], np.empty_like(logits), floor)
    sums = np.add.reduce(e, axis=-1, keepdims=True)
    if sums.size and sums.min() > 0:  # no fully masked row: a plain quotient, twice as fast
        return np.divide(e, sums, out=e)
    return np.divide(e, sums, out=e, where=sums > 0)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """z − m − ln Σ exp(z − m) over the last axis (m the row maximum), a new array.

    NaN logits give NaN, not an error: the trainer reports a diverged loss itself.
    """
    shifted = logits - logits.max(axis=-1, keepdims=True)
    shifted -= np.log(np.add.reduce(np.exp(shifted), axis=-1, keepdims=True))
    return shifted


def _row_maxima(logits: np.ndarray) -> tuple[np.ndarray, float, float]:
    """The row maxima (keepdims) and their least and largest; raise for NaN or +inf."""
    m = logits.max(axis=-1, keepdims=True)
    low, high = float(m.min()), float(m.max())
    if math.isnan(low) or math.isnan(high) or high == math.inf:
        raise ValueError(
            f"logits contain NaN or +inf (q·k overflowed {logits.dtype}, or the data is "
            "not finite); scale q and k down or use float64"
        )
    return m, low, high


def _exp_minus(logits: np.ndarray, m: np.ndarray, out: np.ndarray,
               floor: float | None = None) -> np.ndarray:
    """exp(logits − m) into ``out``, returned; ``m`` (the row maxima) is overwritten;
    differences below ``floor`` give 0."""
    # Fully masked rows: shift by 0 so that -inf - (-inf) is never evaluated.
    m[np.isneginf(m)] = 0.0
    np.subtract(logits, m, out=out)
    if floor is not None:
        np.copyto(out, -np.inf, where=out < floor)
    return np.exp(out, out=out)


def softmax(x: Any, axis: int = -1, mask: Any = None) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Parameters
    ----------
    x
        Real array; ``float32`` is preserved, others are computed in ``float64``; −∞ gets weight 0.
    axis
        Axis along which the weights sum to 1.
    mask
        Optional boolean array broadcastable to ``x.shape``; False = weight 0.

    Returns
    -------
    numpy.ndarray
        Weights of ``x``'s shape; fully masked (or all −∞) rows are all zero, never NaN.

    Raises
    ------
    ValueError
        If ``x`` contains NaN or +∞, or ``mask`` is not a compatible boolean array.
    """
    arr = as_real_array("x", x)
    w = np.array(arr, dtype=float_dtype(arr), copy=True)
    if w.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise ValueError(f"axis must be an integer, got {axis!r}")
    if not -w.ndim <= axis < w.ndim:
        raise ValueError(f"axis must be in [{-w.ndim}, {w.ndim - 1}], got {axis}")
    if mask is not None:
        np.copyto(w, -np.inf, where=~as_bool_mask(mask, w.shape, "(True = keep)"))
    if w.size == 0:
        return w
    moved = np.moveaxis(w, axis, -1)
    with np.errstate(over="ignore", invalid="ignore"):
        moved *= exp_rows(moved, moved)
    return w
