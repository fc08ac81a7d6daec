"""Summaries of streamed values: running moments merged block by block, and quantile bands.

Sweeps and head diagnostics see their rows chunk by chunk; these summaries do not depend on
the chunk sizes beyond rounding.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["RunningMoments", "block_moments", "median_band"]


def median_band(values: ArrayLike) -> tuple[float, float, float]:
    """Return ``(median, 10 % quantile, 90 % quantile)``, NaNs when empty or all NaN."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0 or np.isnan(arr).all():
        return math.nan, math.nan, math.nan
    q10, q50, q90 = np.quantile(arr, [0.1, 0.5, 0.9])
    return float(q50), float(q10), float(q90)


def block_moments(
    values: ArrayLike, work: NDArray[np.float64] | None = None
) -> tuple[int, float, float]:
    """Return ``(count, mean, m2)`` of all entries: m2 is the sum of squared deviations.

    The values are centred on their first entry before summing, so a constant block gives its
    value back exactly (e.g. the entropy ln n of uniform rows) and m2 suffers no
    sum-of-squares cancellation. ``work`` (float64, the shape of ``values``) receives the
    deviations instead of a new array.
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return 0, 0.0, 0.0
    shift = float(arr.flat[0])
    dev = np.subtract(arr, shift, out=work) if work is not None else arr - shift
    mean_dev = float(dev.mean())
    dev -= mean_dev
    flat = dev.reshape(-1)
    # einsum, not np.dot: a BLAS dot would wake (and contend for) the BLAS thread pool.
    return arr.size, shift + mean_dev, float(np.einsum("i,i->", flat, flat))


class RunningMoments:
    """Count, mean and sum of squared deviations of a stream, merged block by block.

    Blocks are summarised by :func:`block_moments` and merged with the pairwise update of
    Chan, Golub and LeVeque, so the result does not depend on the block sizes beyond rounding.
    """

    __slots__ = ("count", "m2", "mean")

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, values: ArrayLike, work: NDArray[np.float64] | None = None) -> None:
        """Add every entry of ``values`` (see :func:`block_moments` for ``work``)."""
        self.merge(*block_moments(values, work))

    def merge(self, count: int, mean: float, m2: float) -> None:
        """Add a block given by its ``(count, mean, m2)``."""
        if count == 0:
            return
        if self.count == 0:
            self.count, self.mean, self.m2 = count, mean, m2
            return
        total = self.count + count
        delta = mean - self.mean
        self.m2 += m2 + delta * delta * self.count * count / total
        self.mean += delta * count / total
        self.count = total

    @property
    def var(self) -> float:
        """Population variance (NaN when empty)."""
        return self.m2 / self.count if self.count else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation (NaN when empty)."""
        return math.sqrt(self.var)

    @property
    def sem(self) -> float:
        """Standard error of the mean (NaN below two values)."""
        if self.count < 2:
            return math.nan
        return math.sqrt(self.m2 / (self.count - 1) / self.count)
