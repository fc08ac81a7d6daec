"""The names of the precision lab's choices: number format, softmax form, scale order, rounding.

They are plain string enums (no numerics) so that configurations, the command line and the GUI
can name them; :mod:`engine.core.precision` does the arithmetic.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Precision", "Rounding", "ScaleOrder", "SoftmaxForm"]


class Precision(StrEnum):
    """The number format the logits and the softmax are computed in."""

    FLOAT64 = "float64"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    FLOAT8_E4M3 = "float8_e4m3"


class SoftmaxForm(StrEnum):
    """``stable``: the row maximum is subtracted before exp; ``naive``: exp of the logits."""

    STABLE = "stable"
    NAIVE = "naive"


class ScaleOrder(StrEnum):
    """Where the scale c enters: folded into q before QKᵀ, or applied to the logits after."""

    FOLD_Q = "fold_q"
    AFTER = "after"


class Rounding(StrEnum):
    """Which results are rounded to the format.

    ``all``: the logits, the exponentials, their row sum and the weights; ``logits``: only the
    logits (the softmax then runs in float64), which isolates the error the logits' rounding
    alone causes.
    """

    ALL = "all"
    LOGITS = "logits"
