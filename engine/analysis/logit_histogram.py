"""The histogram view's numbers: a rule's logits binned as a density, next to a Gaussian.

The Gaussian is the variance law's N(0, Var_theory) for random q, k, and for a real head (which
follows no law) the Gaussian of the logits' own mean and variance, for comparison only.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from engine.analysis.experiment import RuleView

__all__ = ["BINS", "DENSITY_POINTS", "LogitHistogram", "logit_histogram"]

BINS = 60
#: Points of the Gaussian density curve.
DENSITY_POINTS = 400


@dataclasses.dataclass(frozen=True)
class LogitHistogram:
    """``density[b]`` over ``[edges[b], edges[b + 1])`` (empty when every logit is masked), and
    the Gaussian ``gauss_y`` at ``gauss_x`` (empty when its variance is not positive and
    finite) with its ``mean`` and ``variance``."""

    edges: np.ndarray
    density: np.ndarray
    gauss_x: np.ndarray
    gauss_y: np.ndarray
    mean: float
    variance: float


def logit_histogram(view: RuleView, real_head: bool) -> LogitHistogram:
    """Bin ``view``'s unmasked logits over their range, widened to ±4 standard deviations of
    the law's variance so that the predicted curve fits even when the sample is narrower."""
    logits = np.asarray(view.logits, dtype=float).ravel()
    logits = logits[np.isfinite(logits)]  # masked entries are -inf
    empirical, theory = float(view.logit_var_empirical), float(view.logit_var_theory)
    mean, variance = ((float(view.logit_mean_empirical), empirical) if real_head
                      else (0.0, theory))
    if not logits.size:
        empty = np.zeros(0)
        return LogitHistogram(np.zeros(1), empty, empty, empty, mean, variance)
    low, high = float(logits.min()), float(logits.max())
    if theory > 0 and math.isfinite(theory):
        sd = math.sqrt(theory)
        low, high = min(low, -4 * sd), max(high, 4 * sd)
    if high <= low:
        low, high = low - 0.5, high + 0.5
    density, edges = np.histogram(logits, bins=BINS, range=(low, high), density=True)
    if variance > 0 and math.isfinite(variance) and math.isfinite(mean):
        x = np.linspace(edges[0], edges[-1], DENSITY_POINTS)
        y = np.exp(-0.5 * (x - mean) ** 2 / variance) / math.sqrt(2 * math.pi * variance)
    else:
        x = y = np.zeros(0)
    return LogitHistogram(edges, density, x, y, mean, variance)
