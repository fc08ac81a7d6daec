"""Row statistics straight from logits (engine.core.rowstats) against the weights-based ones."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.moments import RunningMoments, block_moments
from engine.core.rowstats import RowStatsWorkspace, logit_row_stats, shift_rows
from engine.core.softmax import softmax
from engine.core.stats import row_summary


def _reference(logits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    weights = softmax(logits)
    return (*row_summary(weights), weights)


def _assert_matches(logits: np.ndarray, scale: float = 1.0) -> None:
    entropy, p_max, jac, weights = _reference(logits * scale)
    got_weights = np.empty_like(weights)
    got = logit_row_stats(logits, scale=scale, weights_out=got_weights)
    # The weights path may lose ~1e-11 relative on rows whose other weights are ~1e-250
    # (its softmax skips the shift there), more once they near the subnormal range: values
    # below 1e-250 are compared absolutely here and exactly in the 600-digit test.
    np.testing.assert_allclose(got.entropy, entropy, rtol=1e-10, atol=1e-250)
    np.testing.assert_allclose(got.p_max, p_max, rtol=1e-13)
    np.testing.assert_allclose(got.jac_fro, jac, rtol=1e-10, atol=1e-250)
    np.testing.assert_allclose(got_weights, weights, rtol=1e-10, atol=1e-250)


@pytest.mark.parametrize("spread", [1e-3, 0.1, 1.0, 8.0, 30.0, 300.0, 3000.0])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000])
def test_the_statistics_equal_those_of_the_softmax_weights(spread, n):
    logits = np.random.default_rng(n).standard_normal((50, n)) * spread
    _assert_matches(logits)
    _assert_matches(logits, scale=0.125)


def test_masked_keys_count_as_absent():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((64, 64)) * 4.0
    logits[np.triu_indices(64, 1)] = -np.inf  # causal: row i sees keys 0..i
    _assert_matches(logits)
    got = logit_row_stats(logits)
    assert got.entropy[0] == 0.0 and got.p_max[0] == 1.0 and got.jac_fro[0] == 0.0
    # A row that sees only its first two keys is the softmax of those two.
    pair = logit_row_stats(logits[1:2, :2])
    assert pair.entropy[0] == pytest.approx(got.entropy[1], rel=1e-15)


def test_ties_and_uniform_rows():
    got = logit_row_stats(np.array([[3.0, 3.0, -1.0], [0.5, 0.5, 0.5]]))
    assert got.p_max[1] == pytest.approx(1 / 3, rel=1e-15)
    assert got.entropy[1] == pytest.approx(np.log(3), rel=1e-15)
    # J = diag(p) − ppᵀ of a uniform row of n: ‖J‖_F² = (n − 1)/n² exactly.
    assert got.jac_fro[1] == pytest.approx(np.sqrt(2 / 9), rel=1e-15)
    _assert_matches(np.array([[3.0, 3.0, -1.0]]))


def test_a_near_one_hot_row_keeps_its_relative_precision():
    # p = (1 − ε, ε) with ε = e^{−50}: ‖J‖_F = √2·p(1 − p) and H ≈ ε(51) to full precision.
    logits = np.array([[50.0, 0.0]])
    got = logit_row_stats(logits)
    eps = Fraction(1) / (1 + Fraction(np.exp(50.0)))
    expected_fro = float(Fraction(2) ** 1 * eps * eps * (1 - eps) * (1 - eps)) ** 0.5
    assert got.jac_fro[0] == pytest.approx(expected_fro, rel=1e-13)
    assert 1.0 - got.p_max[0] == 0.0  # rounds to one, yet:
    assert got.entropy[0] == pytest.approx(float(eps) * 51.0, rel=1e-12)


def test_extreme_rows_agree_with_600_digit_arithmetic():
    logits = np.random.default_rng(2).standard_normal((2, 2)) * 295.0  # gaps of ~100 and ~590
    got = logit_row_stats(logits)
    with localcontext() as ctx:
        ctx.prec = 600
        for i, row in enumerate(logits):
            values = [Decimal(float(v)) for v in row]
            top = max(values)
            exps = [(v - top).exp() for v in values]
            weights = [e / sum(exps) for e in exps]
            entropy = -sum(p * p.ln() for p in weights)
            fro = sum(p * p * ((1 - p) ** 2 + sum(o * o for o in weights if o is not p))
                      for p in weights).sqrt()
            assert got.entropy[i] == pytest.approx(float(entropy), rel=1e-13)
            assert got.jac_fro[i] == pytest.approx(float(fro), rel=1e-13)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.integers(1, 6),
    n=st.integers(1, 40),
    spread=st.floats(1e-6, 500.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_equal_to_the_weights_path(rows, n, spread, seed):
    logits = np.random.default_rng(seed).standard_normal((rows, n)) * spread
    _assert_matches(logits)


def test_a_shared_shift_and_a_reused_workspace_change_nothing():
    rng = np.random.default_rng(3)
    raw = rng.standard_normal((8, 300)) * 5.0
    shifted = shift_rows(raw)
    workspace = RowStatsWorkspace()
    for scale in (1.0, 0.3, 7.0):
        shared = logit_row_stats(shifted, workspace, scale=scale)
        alone = logit_row_stats(raw * scale)
        for name in ("entropy", "p_max", "jac_fro"):
            np.testing.assert_allclose(getattr(shared, name), getattr(alone, name), rtol=1e-13)
    assert np.array_equal(shifted.values, raw - raw.max(axis=1, keepdims=True))


@pytest.mark.parametrize("bad, message", [
    (np.zeros(3), "rows, n"),
    (np.zeros((2, 0)), "rows, n"),
    (np.array([[np.nan, 1.0]]), "finite maximum"),
    (np.array([[np.inf, 1.0]]), "finite maximum"),
    (np.array([[-np.inf, -np.inf]]), "finite maximum"),
])
def test_bad_rows_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        logit_row_stats(bad)


@pytest.mark.parametrize("scale", [0.0, -1.0, np.inf, np.nan])
def test_a_scale_must_be_positive(scale):
    with pytest.raises(ValueError, match="scale"):
        logit_row_stats(np.zeros((1, 2)), scale=scale)


def test_running_moments_merge_blocks_like_one_pass():
    values = np.random.default_rng(4).standard_normal(1001) * 3.0 + 1e6
    moments = RunningMoments()
    for block in np.array_split(values, 7):
        moments.add(block)
    assert moments.count == values.size
    assert moments.mean == pytest.approx(values.mean(), rel=1e-15)
    assert moments.var == pytest.approx(values.var(), rel=1e-10)
    assert moments.sem == pytest.approx(values.std(ddof=1) / np.sqrt(values.size), rel=1e-10)
    assert block_moments(np.full(5, np.log(7.0))) == (5, np.log(7.0), 0.0)
    empty = RunningMoments()
    assert np.isnan(empty.var) and np.isnan(empty.sem)


def test_float32_exponentials_stay_within_their_stated_error():
    rng = np.random.default_rng(5)
    narrow = rng.standard_normal((32, 2000)) * 3.0  # spans ~25 < 80: float32 path
    exact = logit_row_stats(narrow)
    fast = logit_row_stats(narrow, float32_exp=True)
    for name in ("entropy", "p_max", "jac_fro"):
        np.testing.assert_allclose(getattr(fast, name), getattr(exact, name), rtol=5e-6)
    assert not np.array_equal(fast.entropy, exact.entropy)  # it did take the float32 path
    # Wider rows would flush weights below e^-87 to zero in float32: they stay float64.
    wide = rng.standard_normal((8, 64)) * 60.0
    exact, fast = logit_row_stats(wide), logit_row_stats(wide, float32_exp=True)
    for name in ("entropy", "p_max", "jac_fro"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(exact, name))
    assert exact.jac_fro.min() > 0.0


def test_median_band_is_numpys_quantiles_and_nan_when_nothing_is_known():
    from engine.core.moments import median_band

    values = np.random.default_rng(6).standard_normal(999)
    assert median_band(values) == tuple(
        float(q) for q in np.quantile(values, [0.5, 0.1, 0.9]))
    assert all(np.isnan(median_band(np.zeros(0))))
    assert all(np.isnan(median_band(np.full(3, np.nan))))
