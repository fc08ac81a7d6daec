"""Row statistics of attention distributions and of the softmax Jacobian.

Every function works on the last axis (one probability row ``p`` of a softmax) and accepts
any number of leading axes. Rows are assumed to be probability vectors (non-negative, summing
to one up to rounding), as produced by a softmax; a fully masked row of zeros is allowed and
gives entropy 0, p_max 0 and a zero Jacobian.

Near-one-hot rows are the interesting regime of this project (unscaled logits saturate the
softmax), so the Jacobian norm and the entropy are evaluated without subtracting nearly equal
numbers: the complement ``1 − p_max`` is taken as the sum of the *other* entries, which are
stored with full relative precision even when ``p_max`` rounds to 1.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "SATURATION_THRESHOLD",
    "effective_support",
    "jacobian_fro_norm",
    "jacobian_spectral_norm",
    "logit_moments",
    "p_max",
    "row_entropy",
    "row_summary",
    "saturated_share",
    "softmax_jacobian",
]

#: Largest number of Jacobian entries ``jacobian_spectral_norm`` builds at once (float64).
_SPECTRAL_MAX_ENTRIES = 1 << 25


def _as_rows(p: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(p, dtype=np.float64)
    if arr.ndim == 0:
        raise ValueError("p must have at least one axis (the probability row)")
    if arr.shape[-1] == 0:
        raise ValueError("p must have at least one entry per row")
    return arr


def _split_max(
    p: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return ``(others, p_m, c_m)``: p with its argmax zeroed, p_max and ``1 − p_max``.

    ``p_m`` and ``c_m`` keep a trailing axis of length 1. ``c_m`` is the sum of the other
    entries: exact for a probability vector, and it keeps its relative precision when p_max
    rounds to 1. Every other complement ``1 − p_i`` is ≥ 1/2 (``p_i ≤ 1/2``), so plain
    subtraction is exact enough there.
    """
    m = np.argmax(p, axis=-1)[..., None]
    p_m = np.take_along_axis(p, m, axis=-1)
    others = p.copy()
    np.put_along_axis(others, m, 0.0, axis=-1)
    c_m = others.sum(axis=-1, keepdims=True)
    return others, p_m, c_m


def _entropy(
    others: NDArray[np.float64], p_m: NDArray[np.float64], c_m: NDArray[np.float64]
) -> NDArray[np.float64]:
    logs = np.log(others, out=np.zeros_like(others), where=others > 0)
    logs *= others
    # log p_max = log1p(-(1 - p_max)) is accurate when p_max is close to 1; all terms >= 0.
    head = np.zeros_like(p_m)
    np.multiply(p_m, np.log1p(-np.minimum(c_m, 1.0)), out=head, where=p_m > 0)
    return np.maximum(-(logs.sum(axis=-1) + head[..., 0]), 0.0)


def _fro(
    others: NDArray[np.float64],
    p_m: NDArray[np.float64],
    c_m: NDArray[np.float64],
    d: NDArray[np.float64] | None = None,
    d_m: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """Stable ‖J·diag(d)‖_F from :func:`_split_max` output (derivation in jacobian_fro_norm)."""
    a = others.max(axis=-1, keepdims=True)  # second-largest entry (0 for one-hot / n = 1)
    safe_a = np.where(a > 0, a, 1.0)
    a2 = a * a
    u2 = others / safe_a  # p_j / a for j != m, in [0, 1]; 0 at the argmax
    u2 *= u2
    big_r = u2.sum(axis=-1, keepdims=True)  # Σ_{i≠m} p_i² / a²
    # Terms j != m: d_j² (p_j/a)² (c_j² + r_j) with c_j = 1 − p_j and
    # r_j = Σ_{i≠j} p_i² = p_m² + a²(R − u_j²); they vanish at j = m because u_m = 0.
    t = 1.0 - others
    t *= t
    t += p_m * p_m + a2 * big_r
    t -= a2 * u2
    t *= u2
    if d is not None:
        t *= d * d
    total = t.sum(axis=-1, keepdims=True)
    # Term j = m: d_m² p_m² (c_m² + r_m), divided by a².
    head = p_m * p_m * ((c_m / safe_a) ** 2 + big_r)
    if d_m is not None:
        head *= d_m * d_m
    total += head
    norm = a * np.sqrt(total)
    return np.where(a > 0, norm, 0.0)[..., 0]


#: A softmax row counts as saturated when its largest weight exceeds this (sweeps, the
#: explorer, head diagnostics).
SATURATION_THRESHOLD = 0.99


def row_entropy(p: ArrayLike) -> NDArray[np.float64]:
    """Shannon entropy ``H = −Σ p log p`` (nats) of every row, with ``0·log 0 = 0``.

    Zeros contribute nothing and emit no warning. The largest entry's term uses
    ``log1p(−(1 − p_max))`` with the complement summed from the other entries, so a
    near-one-hot row keeps full relative precision (all terms are non-negative).
    """
    return _entropy(*_split_max(_as_rows(p)))


def row_summary(
    p: ArrayLike,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Return ``(entropy, p_max, jac_fro)`` of every row in one pass over shared work.

    Same values as :func:`row_entropy`, :func:`p_max` and :func:`jacobian_fro_norm`; used by
    sweeps and experiments where all three are needed.
    """
    others, p_m, c_m = _split_max(_as_rows(p))
    return _entropy(others, p_m, c_m), p_m[..., 0].copy(), _fro(others, p_m, c_m)


def p_max(p: ArrayLike) -> NDArray[np.float64]:
    """Largest probability of every row, shape ``(...)``."""
    return _as_rows(p).max(axis=-1)


def effective_support(p: ArrayLike) -> NDArray[np.float64]:
    """Effective number of attended keys ``exp(H)``: n for a uniform row, 1 for one-hot."""
    return np.exp(row_entropy(p))


def saturated_share(p: ArrayLike, threshold: float = SATURATION_THRESHOLD) -> float:
    """Fraction of rows whose largest probability exceeds ``threshold``, in ``(0, 1)``."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    pm = p_max(p)
    return float(np.mean(pm > threshold)) if pm.size else float("nan")


def softmax_jacobian(p: ArrayLike) -> NDArray[np.float64]:
    """Jacobian ``J = ∂p/∂s = diag(p) − p pᵀ`` of the softmax for every row, (..., n, n).

    Symmetric positive semi-definite with ``J·1 = 0`` for rows summing to one. The diagonal
    ``p_i(1 − p_i)`` uses the cancellation-free complement.
    """
    arr = _as_rows(p)
    c = 1.0 - arr
    np.put_along_axis(c, np.argmax(arr, axis=-1)[..., None], _split_max(arr)[2], axis=-1)
    jac = -arr[..., :, None] * arr[..., None, :]
    diag = np.einsum("...ii->...i", jac)  # writable view of the diagonal
    diag[...] = arr * c
    return jac


def jacobian_fro_norm(p: ArrayLike, col_scale: ArrayLike | None = None) -> NDArray[np.float64]:
    """Frobenius norm ``‖J‖_F`` of the softmax Jacobian of every row, without cancellation.

    The textbook expansion loses all digits once a row saturates; the stable form and its proof
    are in docs/numerics.md, "The Frobenius norm of the softmax Jacobian".

    ``col_scale``: optional factors ``d_j`` broadcastable to ``p``, giving ``‖J·diag(d)‖_F``
    (e.g. the soft-cap chain rule).
    """
    arr = _as_rows(p)
    others, p_m, c_m = _split_max(arr)
    if col_scale is None:
        return _fro(others, p_m, c_m)
    d = np.broadcast_to(np.asarray(col_scale, dtype=np.float64), arr.shape)
    d_m = np.take_along_axis(d, np.argmax(arr, axis=-1)[..., None], axis=-1)
    return _fro(others, p_m, c_m, d, d_m)


def jacobian_spectral_norm(p: ArrayLike) -> NDArray[np.float64]:
    """Spectral norm ``‖J‖₂ = λ_max(J)`` of the softmax Jacobian of every row.

    J is symmetric positive semi-definite: batched ``eigvalsh`` of the explicit Jacobians,
    O(n³) time and 8·n² bytes per row, for inspecting a few rows (sweeps use
    :func:`jacobian_fro_norm`). Near-one-hot rows keep their relative accuracy, since J's
    diagonal uses cancellation-free complements.

    Raises
    ------
    ValueError
        If more than 2²⁵ Jacobian entries would be built at once.
    """
    arr = _as_rows(p)
    n = arr.shape[-1]
    rows = int(np.prod(arr.shape[:-1], dtype=np.int64))
    if rows * n * n > _SPECTRAL_MAX_ENTRIES:
        raise ValueError(
            f"jacobian_spectral_norm would build {rows} Jacobians of size {n}×{n} "
            f"({rows * n * n} entries > {_SPECTRAL_MAX_ENTRIES}); pass fewer rows"
        )
    eig = np.linalg.eigvalsh(softmax_jacobian(arr))
    return np.maximum(eig[..., -1], 0.0)


def logit_moments(logits: ArrayLike, mask: ArrayLike | None = None) -> tuple[float, float]:
    """Mean and (population) variance of the logits, pooled over all unmasked entries.

    Parameters
    ----------
    logits
        Any shape. Entries equal to ``-inf`` (how masked logits are stored) are excluded.
    mask
        Optional boolean array broadcastable to ``logits``; ``True`` = attend (included).

    Returns
    -------
    (mean, var)
        Floats computed in float64 with a two-pass formula; ``(nan, nan)`` if nothing is left.

    Raises
    ------
    ValueError
        If an included entry is NaN or ``+inf``.
    """
    arr = np.asarray(logits, dtype=np.float64)
    keep = ~np.isneginf(arr)
    if mask is not None:
        keep &= np.broadcast_to(np.asarray(mask, dtype=bool), arr.shape)
    values = arr[keep]
    if values.size == 0:
        return float("nan"), float("nan")
    if not np.all(np.isfinite(values)):
        raise ValueError("logits must be finite (or -inf where masked)")
    mean = float(values.mean())
    var = float(np.mean((values - mean) ** 2))
    return mean, var

