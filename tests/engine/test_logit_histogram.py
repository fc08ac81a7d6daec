"""The histogram view's numbers: the logits' density and the Gaussian drawn next to it."""

from __future__ import annotations

import math

import numpy as np

from engine.analysis.experiment import run_experiment
from engine.analysis.logit_histogram import BINS, DENSITY_POINTS, logit_histogram
from engine.config import AttentionConfig, MaskKind, ScalingRule

CONFIG = AttentionConfig(n_tokens=64, d_k=32, d_model=32, seed=4)


def test_the_density_integrates_to_one_over_unmasked_logits_and_the_law_fits_inside():
    snapshot = run_experiment(CONFIG.replace(mask=MaskKind.CAUSAL))
    view = snapshot.rules[ScalingRule.SQRT]
    histogram = logit_histogram(view, real_head=False)
    widths = np.diff(histogram.edges)
    assert histogram.density.size == BINS
    assert math.isclose(float(np.sum(histogram.density * widths)), 1.0, rel_tol=1e-12)
    unmasked = view.logits[np.isfinite(view.logits)]
    # Counts recovered from the density are the unmasked pairs (n(n+1)/2 under the causal mask).
    counts = histogram.density * widths * unmasked.size
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    assert unmasked.size == 64 * 65 // 2
    sd = math.sqrt(view.logit_var_theory)
    assert histogram.edges[0] <= min(-4 * sd, unmasked.min())
    assert histogram.edges[-1] >= max(4 * sd, unmasked.max())
    # The law's N(0, Var_theory), sampled across the whole range.
    assert (histogram.mean, histogram.variance) == (0.0, view.logit_var_theory)
    assert histogram.gauss_x.size == DENSITY_POINTS
    peak = float(np.max(histogram.gauss_y))
    assert math.isclose(peak, 1 / math.sqrt(2 * math.pi * view.logit_var_theory), rel_tol=1e-3)


def test_a_real_head_is_compared_with_the_gaussian_of_its_own_moments():
    view = run_experiment(CONFIG).rules[ScalingRule.NONE]
    histogram = logit_histogram(view, real_head=True)
    assert histogram.mean == view.logit_mean_empirical
    assert histogram.variance == view.logit_var_empirical


def test_a_rule_without_a_law_shows_its_histogram_and_no_curve():
    view = run_experiment(CONFIG.replace(rule=ScalingRule.SOFTCAP)).rules[ScalingRule.SOFTCAP]
    assert math.isnan(view.logit_var_theory)
    histogram = logit_histogram(view, real_head=False)
    assert histogram.density.size == BINS and histogram.gauss_x.size == 0
