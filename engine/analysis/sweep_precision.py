"""The precision columns of a sweep point: overflow share and weight error in a low format.

A sweep draws its logits directly in float64 (see :mod:`engine.analysis.sweep_rows`), so the
low-precision weights are those of :func:`~engine.core.precision.precision_from_logits`: the
scaled float64 logits rounded once to the format (the scale-after order with an exact QKᵀ),
then the softmax rounded as the sweep's ``rounding`` says. ``overflow_share`` is the share of
rows whose exponentials, their sum or their weights are not finite; ``weight_err_mean`` the mean
over the other rows of ``max_j |p_j − p_ref_j|`` against the float64 stable softmax (NaN when
every row overflows). Float64 with the stable softmax *is* the reference: 0 and 0, not computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.config import Precision, Rounding, SoftmaxForm
from engine.core.precision import precision_from_logits

__all__ = [
    "GRID_FORMS", "GRID_LOGITS", "GRID_MIN_ROWS", "GRID_PRECISIONS", "PrecisionStat",
    "PrecisionTally", "grid_combos", "grid_rows",
]

#: The formats of the explorer's precision grid.
GRID_PRECISIONS: tuple[Precision, ...] = (
    Precision.FLOAT16, Precision.BFLOAT16, Precision.FLOAT8_E4M3,
)
#: Softmax form and rounding per format: with only the logits rounded the softmax runs in
#: float64, where both forms agree for any logit the low formats can hold (|z| < 709 except
#: bfloat16's), so the naive form is left out there.
GRID_FORMS: tuple[tuple[SoftmaxForm, Rounding], ...] = (
    (SoftmaxForm.STABLE, Rounding.ALL),
    (SoftmaxForm.NAIVE, Rounding.ALL),
    (SoftmaxForm.STABLE, Rounding.LOGITS),
)
#: Logits per point of the grid (its first rows, at least ``GRID_MIN_ROWS``): the mean error's
#: Monte Carlo error stays a few percent while the grid adds about half to the explorer's sweep.
GRID_LOGITS = 1 << 15
#: Fewest rows per point of the grid (at large n).
GRID_MIN_ROWS = 64


def grid_rows(n: int) -> int:
    """Rows per point of the grid at n keys: ``max(GRID_MIN_ROWS, GRID_LOGITS // n)``."""
    return max(GRID_MIN_ROWS, GRID_LOGITS // n)


@dataclass(frozen=True, slots=True)
class PrecisionStat:
    """Overflow share and mean weight error of one sweep point in one setting.

    ``rows`` is the number of rows of the point in this setting and ``error_rows`` how many of
    them the error is averaged over (those that did not overflow).
    """

    precision: Precision
    softmax: SoftmaxForm
    rounding: Rounding
    overflow_share: float
    weight_err_mean: float
    rows: int = 0
    error_rows: int = 0


def grid_combos() -> tuple[tuple[Precision, SoftmaxForm, Rounding], ...]:
    """Every (format, softmax form, rounding) of the explorer's grid, in a fixed order."""
    return tuple((p, s, r) for p in GRID_PRECISIONS for s, r in GRID_FORMS)


class PrecisionTally:
    """Accumulates one setting's overflow count and error sum over the chunks of a point."""

    __slots__ = ("err_rows", "err_sum", "overflow", "precision", "rounding", "rows", "softmax")

    def __init__(self, precision: Precision, softmax: SoftmaxForm, rounding: Rounding) -> None:
        self.precision = precision
        self.softmax = softmax
        self.rounding = rounding
        self.rows = 0
        self.overflow = 0
        self.err_rows = 0
        self.err_sum = 0.0

    @property
    def is_reference(self) -> bool:
        """Float64 with the stable softmax: the reference itself (no work)."""
        return self.precision is Precision.FLOAT64 and self.softmax is SoftmaxForm.STABLE

    def add(self, logits: np.ndarray, reference: np.ndarray | None) -> None:
        """Add a chunk of float64 scaled logits (rows, n) and their float64 stable softmax."""
        rows = logits.shape[0]
        self.rows += rows
        if self.is_reference:
            self.err_rows += rows
            return
        result = precision_from_logits(
            logits, self.precision, softmax=self.softmax, rounding=self.rounding,
            reference=reference,
        )
        over = result.overflow
        self.overflow += int(np.count_nonzero(over))
        ok = result.error[~over]
        self.err_rows += ok.size
        self.err_sum += float(ok.sum())

    def stat(self) -> PrecisionStat:
        """The point's :class:`PrecisionStat`."""
        share = self.overflow / self.rows if self.rows else math.nan
        err = self.err_sum / self.err_rows if self.err_rows else math.nan
        return PrecisionStat(self.precision, self.softmax, self.rounding, share, err,
                             rows=self.rows, error_rows=self.err_rows)
