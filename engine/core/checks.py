"""Argument checks shared by the attention modules: each raises ``ValueError`` naming the value.

The messages are part of the engine's interface (the GUI and the CLI show them), so every check
says what it expected and what it got.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.config.base import POSITIVE_INT, check_int

__all__ = [
    "as_bool_mask",
    "as_real_array",
    "check_all_finite",
    "check_array",
    "check_dim",
    "check_finite",
    "float_dtype",
    "readonly",
]


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` (made C-contiguous, a copy only when it is not) marked read-only, for results
    handed out that callers must not change in place."""
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a


def check_dim(name: str, value: Any) -> int:
    """Return ``value`` as an int; raise unless it is an integer >= 1 (bool and floats are
    refused): :func:`engine.config.base.check_int`, the one integer check."""
    if type(value) is int and value >= 1:  # the usual case, without a call
        return value
    return check_int(name, value, POSITIVE_INT, integral_floats=False)


def float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The computation dtype: float32 when every input fits in it, float64 otherwise."""
    dtype = arrays[0].dtype
    for arr in arrays:
        # Built-in dtypes are singletons: ``is`` decides the usual case without a comparison.
        if arr.dtype is not dtype or dtype.kind != "f":
            dtype = np.result_type(*arrays)
            break
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return _FLOAT32
    return _FLOAT64


_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)


def as_real_array(name: str, x: Any) -> np.ndarray:
    """``numpy.asarray(x)``; raise unless its dtype is boolean, integer or real floating."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    return arr


def as_bool_mask(mask: Any, shape: tuple[int, ...], expected: str) -> np.ndarray:
    """``mask`` as a boolean array that broadcasts to ``shape`` without enlarging it; raise
    otherwise (``expected`` says what a mask may be, e.g. ``"(True = keep)"``)."""
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise ValueError(f"mask must be a boolean array {expected}; got dtype {arr.dtype}")
    try:
        ok = np.broadcast_shapes(arr.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"mask shape {arr.shape} must broadcast to the shape {shape} without "
                         "enlarging it")
    return arr


def check_array(name: str, x: Any, shape_doc: str) -> np.ndarray:
    """A real array with at least two dimensions (``shape_doc`` names them in the message)."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        as_real_array(name, arr)  # raises, with its message
    if arr.ndim < 2:
        raise ValueError(
            f"{name} must have at least 2 dimensions {shape_doc}, got shape {arr.shape}"
        )
    return arr


def check_finite(name: str, arr: np.ndarray) -> None:
    """Raise if a floating-point array holds NaN or ±∞ (see :func:`check_all_finite`)."""
    check_all_finite((name,), (arr,))


# Inputs up to this many entries in all are checked together with a boolean temporary, larger
# ones with a sum per array.
_SMALL_INPUTS = 1 << 14


def check_all_finite(names: tuple[str, ...], arrays: tuple[np.ndarray, ...]) -> None:
    """Raise for the first floating-point array (named by ``names``) that holds NaN or ±∞.

    Small inputs are checked together, with ``isfinite``. For large ones, the sum of the
    entries is finite only if every entry is (NaN and ±∞ propagate, ∞ − ∞ is NaN), so one
    reduction per array, without a boolean temporary, decides the usual case; only a sum that
    overflowed is checked entry by entry.
    """
    size = 0
    for arr in arrays:
        size += arr.size
    if size <= _SMALL_INPUTS:
        # One isfinite over all of them: a ufunc reduction per array costs more than that,
        # which tiny attention calls notice (benchmarks/bench_engine.py). Only a failure looks
        # at them one by one.
        joint = np.concatenate(arrays, axis=None) if len(arrays) > 1 else arrays[0]
        if np.count_nonzero(np.isfinite(joint)) == joint.size:
            return
    for name, arr in zip(names, arrays, strict=True):
        with np.errstate(over="ignore", invalid="ignore"):
            finite = math.isfinite(_sum_all(arr)) or bool(np.isfinite(arr).all())
        if not finite:
            raise ValueError(f"{name} contains NaN or infinite values; all entries must be finite")


def _sum_all(arr: np.ndarray) -> float:
    """The sum of every entry; its accuracy does not matter, only whether it is finite."""
    if arr.flags.c_contiguous:
        # einsum's sum is faster than numpy.add.reduce's pairwise sum, which runs row by row.
        return float(np.einsum("i->", arr.reshape(-1)))
    return float(np.add.reduce(arr, axis=None))
