"""Attention weights in low precision: overflow counts and the error against float64.

Formats: float64, float32, float16, bfloat16 and float8 e4m3 (``ml_dtypes``). Each operation
computes in a work type (float64 for float64, float32 otherwise) and rounds its result to the
format, as eager float16 / bfloat16 code does; ``rounding="logits"`` rounds only the logits.
Overflowing rows are reported, never raised. The rounding model step by step:
docs/numerics.md, "Low-precision attention".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from engine.config.precision import Precision, Rounding, ScaleOrder, SoftmaxForm
from engine.core.softmax import softmax_rows

__all__ = [
    "PrecisionResult",
    "largest_value",
    "numpy_dtype",
    "precision_attention",
    "precision_from_logits",
    "reference_weights",
    "round_to",
]

@functools.cache
def _dtypes() -> dict[Precision, np.dtype]:
    # ml_dtypes is imported on first use: its import takes about a second, which every
    # ``main.py`` command would otherwise pay before doing anything.
    import ml_dtypes

    return {
        Precision.FLOAT64: np.dtype(np.float64),
        Precision.FLOAT32: np.dtype(np.float32),
        Precision.FLOAT16: np.dtype(np.float16),
        Precision.BFLOAT16: np.dtype(ml_dtypes.bfloat16),
        Precision.FLOAT8_E4M3: np.dtype(ml_dtypes.float8_e4m3fn),
    }


def numpy_dtype(precision: Precision | str) -> np.dtype:
    """The numpy dtype of ``precision`` (ml_dtypes for bfloat16 and float8 e4m3)."""
    return _dtypes()[Precision(precision)]


def largest_value(precision: Precision | str) -> float:
    """The largest finite value of ``precision`` (``ml_dtypes.finfo(...).max``)."""
    import ml_dtypes

    return float(ml_dtypes.finfo(numpy_dtype(precision)).max)


def _work(precision: Precision) -> np.dtype:
    return np.dtype(np.float64 if precision is Precision.FLOAT64 else np.float32)


def round_to(x: np.ndarray, precision: Precision | str) -> np.ndarray:
    """Round ``x`` to ``precision`` (nearest even) and return it in the work type.

    The work type is float64 for float64 and float32 otherwise; every value of the result is
    exactly representable in ``precision`` (or inf / NaN where ``x`` is out of its range).
    """
    p = Precision(precision)
    work = _work(p)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(x).astype(numpy_dtype(p)).astype(work)


def reference_weights(logits: np.ndarray) -> np.ndarray:
    """The float64 max-subtracted softmax over the last axis (the error's reference)."""
    return softmax_rows(np.asarray(logits, dtype=np.float64))


@dataclass(frozen=True, slots=True)
class PrecisionResult:
    """Low-precision attention weights and how far they are from float64.

    Attributes
    ----------
    logits
        The logits as rounded to the format, float64 (…, n); inf / NaN where out of range.
    weights
        The weights, float64 (…, n), as computed (inf / NaN in overflowing rows).
    overflow
        Bool (…,): the row's exponentials, their sum or its weights are not all finite.
    logit_overflow
        Bool (…,): some logit of the row is not finite (beyond the format's range).
    error
        Float64 (…,): ``max_j |p_j − p_ref_j|``; NaN in overflowing rows.
    """

    logits: np.ndarray
    weights: np.ndarray
    overflow: np.ndarray
    logit_overflow: np.ndarray
    error: np.ndarray

    @property
    def overflow_share(self) -> float:
        """Share of rows that overflow (NaN for no rows)."""
        return float(self.overflow.mean()) if self.overflow.size else math.nan

    @property
    def weight_err_mean(self) -> float:
        """Mean of the per-row error over the rows that do not overflow (NaN if none)."""
        ok = ~self.overflow
        return float(self.error[ok].mean()) if ok.any() else math.nan


def _softmax_rounded(
    z: np.ndarray, precision: Precision, softmax: SoftmaxForm, rounding: Rounding
) -> tuple[np.ndarray, np.ndarray]:
    """Weights and per-row overflow of the rounded logits ``z`` (see the module docstring)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if rounding is Rounding.LOGITS:
            z = z.astype(np.float64)
            t = z - z.max(axis=-1, keepdims=True) if softmax is SoftmaxForm.STABLE else z
            e = np.exp(t)
            s = e.sum(axis=-1, keepdims=True)
            p = e / s
        else:
            if softmax is SoftmaxForm.STABLE:
                t = round_to(z - z.max(axis=-1, keepdims=True), precision)
            else:
                t = z
            e = round_to(np.exp(t), precision)
            s = round_to(e.sum(axis=-1, keepdims=True), precision)
            p = round_to(e / s, precision)
        overflow = ~(np.isfinite(e).all(axis=-1) & np.isfinite(s[..., 0])
                     & np.isfinite(p).all(axis=-1))
    return p.astype(np.float64), overflow


def _result(
    z: np.ndarray, reference: np.ndarray, precision: Precision, softmax: SoftmaxForm,
    rounding: Rounding,
) -> PrecisionResult:
    p, overflow = _softmax_rounded(z, precision, softmax, rounding)
    with np.errstate(invalid="ignore"):
        error = np.abs(p - reference).max(axis=-1)
    error[overflow] = math.nan
    return PrecisionResult(
        logits=z.astype(np.float64),
        weights=p,
        overflow=overflow,
        logit_overflow=~np.isfinite(z).all(axis=-1),
        error=error,
    )


def precision_attention(
    q: np.ndarray,
    k: np.ndarray,
    scale: float,
    precision: Precision | str = Precision.FLOAT64,
    *,
    order: ScaleOrder | str = ScaleOrder.FOLD_Q,
    softmax: SoftmaxForm | str = SoftmaxForm.STABLE,
    rounding: Rounding | str = Rounding.ALL,
) -> PrecisionResult:
    """Attention weights of ``q`` (…, n_q, d_k) and ``k`` (…, n, d_k) computed in ``precision``.

    Parameters
    ----------
    q, k
        Queries and keys (float64 values; leading batch axes broadcast).
    scale
        The logit scale c (e.g. 1/√d_k; 1 for no scaling).
    precision
        The format.
    order
        ``fold_q``: c multiplies q before QKᵀ; ``after``: c multiplies the logits.
    softmax
        ``stable`` (max-subtracted) or ``naive``.
    rounding
        ``all`` (logits and softmax in the format) or ``logits`` (softmax in float64).

    Returns
    -------
    PrecisionResult
        Weights, per-row overflow flags and errors against the float64 stable softmax.
    """
    p = Precision(precision)
    work = _work(p)
    q64 = np.asarray(q, dtype=np.float64)
    k64 = np.asarray(k, dtype=np.float64)
    reference = reference_weights(float(scale) * (q64 @ np.swapaxes(k64, -1, -2)))
    c = work.type(scale)
    qd = round_to(q64, p)
    kt = np.swapaxes(round_to(k64, p), -1, -2)
    with np.errstate(over="ignore", invalid="ignore"):
        if ScaleOrder(order) is ScaleOrder.FOLD_Q:
            z = round_to(round_to(qd * c, p) @ kt, p)
        else:
            z = round_to(round_to(qd @ kt, p) * c, p)
    return _result(z, reference, p, SoftmaxForm(softmax), Rounding(rounding))


def precision_from_logits(
    logits: np.ndarray,
    precision: Precision | str = Precision.FLOAT64,
    *,
    softmax: SoftmaxForm | str = SoftmaxForm.STABLE,
    rounding: Rounding | str = Rounding.ALL,
    reference: np.ndarray | None = None,
) -> PrecisionResult:
    """The weights of given float64 (scaled) logits rounded once to ``precision``.

    This is the scale-after order with an exact QKᵀ: the logits are known in float64 (as in the
    sweeps, which draw them directly) and are rounded to the format once; the softmax is then
    rounded as in :func:`precision_attention`. ``reference`` (the float64 stable softmax of
    ``logits``) may be passed when already computed.
    """
    p = Precision(precision)
    z64 = np.asarray(logits, dtype=np.float64)
    ref = reference_weights(z64) if reference is None else reference
    return _result(round_to(z64, p), ref, p, SoftmaxForm(softmax), Rounding(rounding))
