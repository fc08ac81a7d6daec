"""Entropy, p_max and ‖J‖_F of softmax rows computed straight from their logits, in few passes.

Long-context sweeps evaluate billions of logits, too many for
:func:`engine.core.stats.row_summary`'s passes over the weights. The values equal it to
rounding; the formulas (cancellation-free, underflow-safe) are derived in docs/numerics.md,
"Row statistics from logits". :class:`RowStatsWorkspace` keeps its scratch arrays between
calls, so a sweep's chunks of equal shape allocate nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "FLOAT32_EXP_RANGE",
    "RowStats",
    "RowStatsWorkspace",
    "ShiftedRows",
    "logit_row_stats",
    "shift_rows",
]

#: float32 exponentials are used only for rows whose scaled logits lie within this distance
#: of the row maximum: e^-80 ≈ 1.8e-35 is still a normal float32 (flushing starts at e^-87.3).
FLOAT32_EXP_RANGE = 80.0

#: exp of anything below this is exactly 0 in float64; clipping −∞ (masked keys) to it keeps
#: ``e·(x − max)`` at 0 instead of ``0·∞ = NaN``.
_EXP_FLOOR = -1.0e4


@dataclass(frozen=True, slots=True)
class RowStats:
    """Statistics of softmax rows, each of shape ``(rows,)``.

    Attributes
    ----------
    entropy
        Shannon entropy in nats.
    p_max
        Largest weight.
    jac_fro
        Frobenius norm of the softmax Jacobian ``∂p/∂x = diag(p) − ppᵀ``.
    """

    entropy: NDArray[np.float64]
    p_max: NDArray[np.float64]
    jac_fro: NDArray[np.float64]


class RowStatsWorkspace:
    """Scratch arrays reused by :func:`logit_row_stats` for rows of the same shape.

    Not thread-safe: give each thread its own workspace.
    """

    def __init__(self) -> None:
        self._arrays: dict[tuple[tuple[int, int], np.dtype], tuple[np.ndarray, ...]] = {}

    def arrays(self, shape: tuple[int, int], dtype: type = np.float64) -> tuple[np.ndarray, ...]:
        """Three arrays of ``shape`` and ``dtype`` (contents undefined)."""
        key = (shape, np.dtype(dtype))
        if key not in self._arrays:
            if len(self._arrays) >= 2:  # one float32 and one float64 set of the current shape
                self._arrays.clear()
            self._arrays[key] = tuple(np.empty(shape, dtype) for _ in range(3))
        return self._arrays[key]


@dataclass(frozen=True, slots=True)
class ShiftedRows:
    """Rows minus their maximum (``≤ 0``, exactly 0 at the argmax), shared by several scales.

    For a positive c, ``c·x − max(c·x) = c·(x − max x)`` and the argmax is the same, so rules
    that scale the same raw scores share this one pass (see :func:`shift_rows`).
    """

    values: NDArray[np.float64]
    top: NDArray[np.intp]


def shift_rows(logits: NDArray[np.floating], out: NDArray[np.float64] | None = None) -> ShiftedRows:
    """Subtract every row's maximum; ``-inf`` (masked keys) stays ``-inf``.

    Parameters
    ----------
    logits
        ``(rows, n)`` real array with a finite maximum in every row.
    out
        Optional float64 array of the same shape for the result.

    Raises
    ------
    ValueError
        If the shape is not ``(rows, n)`` or a row's maximum is not finite (NaN, +inf, or a
        fully masked row).
    """
    x = np.asarray(logits)
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"logits must be (rows, n) with n ≥ 1, got shape {x.shape}")
    top = np.argmax(x, axis=1)
    peak = x[np.arange(x.shape[0]), top].astype(np.float64)
    if not np.isfinite(peak).all():
        raise ValueError("every row needs a finite maximum (no NaN, no +inf, not fully masked)")
    values = np.subtract(x, peak[:, None], out=out, dtype=np.float64)
    return ShiftedRows(values=values, top=top)


def _row_dot(a: np.ndarray, b: np.ndarray, scratch: np.ndarray) -> NDArray[np.float64]:
    """Σ_j a_ij·b_ij per row, accumulated in float64 (float32 inputs: products in float32)."""
    if a.dtype == np.float64:
        return np.einsum("ij,ij->i", a, b)
    np.multiply(a, b, out=scratch)
    return scratch.sum(axis=1, dtype=np.float64)


def logit_row_stats(
    logits: NDArray[np.floating] | ShiftedRows,
    workspace: RowStatsWorkspace | None = None,
    *,
    scale: float = 1.0,
    weights_out: NDArray[np.float64] | None = None,
    float32_exp: bool = False,
) -> RowStats:
    """Entropy, p_max and ‖J‖_F of ``softmax(scale·logits)`` for every row.

    Parameters
    ----------
    logits
        ``(rows, n)`` float32 or float64 (computed in float64), or its :func:`shift_rows`; masked
        keys may be ``-inf``, every row needs a finite maximum.
    workspace
        Scratch arrays to reuse between calls (a new one if omitted).
    scale
        A positive factor applied first (a rule's c), so that rules can share raw scores.
    weights_out
        Optional ``(rows, n)`` float64 array that receives the softmax weights.
    float32_exp
        Exponentials and products in float32 (sums in float64) where every scaled logit lies
        within :data:`FLOAT32_EXP_RANGE` of its row maximum: faster, relative error below ~5e-6.

    Raises
    ------
    ValueError
        For a shape other than ``(rows, n)``, a bad ``scale``, or a row without finite maximum.
    """
    if not (np.isfinite(scale) and scale > 0.0):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    rows_in = logits if isinstance(logits, ShiftedRows) else shift_rows(logits)
    rows, n = rows_in.values.shape
    workspace = workspace or RowStatsWorkspace()
    t = None
    if float32_exp and weights_out is None:
        t, e, scratch = workspace.arrays((rows, n), np.float32)
        np.multiply(rows_in.values, scale, out=t)
        if t.min() < -FLOAT32_EXP_RANGE:
            t = None
    if t is None:
        t, e, scratch = workspace.arrays((rows, n))
        np.multiply(rows_in.values, scale, out=t)
    np.maximum(t, _EXP_FLOOR, out=t)
    np.exp(t, out=e)
    row_index, top = np.arange(rows), rows_in.top
    e[row_index, top] = 0.0  # e now holds the other keys only
    others = e.sum(axis=1, dtype=np.float64)
    z = 1.0 + others
    p_top = 1.0 / z
    entropy = np.log1p(others) - _row_dot(e, t, scratch) / z
    if weights_out is not None:
        np.multiply(e, p_top[:, None], out=weights_out)
        weights_out[row_index, top] = p_top
    second = e.max(axis=1).astype(np.float64)
    has_second = second > 0.0
    safe_second = np.where(has_second, second, 1.0)
    u = np.divide(e, safe_second[:, None].astype(e.dtype), out=t)  # t is no longer needed
    u2 = _row_dot(u, u, scratch)
    u3 = _row_dot(np.multiply(u, u, out=e), u, scratch)  # nor is e
    u1 = others / safe_second
    z2 = z * z
    bracket = (u1 * u1 + 2.0 * u2) / z2 + u2 + second * second * u2 * u2 / z2
    bracket -= 2.0 * second * u3 / z
    jac_fro = np.where(has_second, second / z * np.sqrt(np.maximum(bracket, 0.0)), 0.0)
    return RowStats(entropy=np.maximum(entropy, 0.0), p_max=p_top, jac_fro=jac_fro)
