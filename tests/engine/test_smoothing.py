"""The trailing mean of a training curve against a direct loop over the windows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.training.smoothing import trailing_mean


def _direct(values: list[float], window: int) -> list[float]:
    out = []
    for t in range(len(values)):
        kept = [v for v in values[max(0, t - window + 1): t + 1] if math.isfinite(v)]
        out.append(math.fsum(kept) / len(kept) if kept else math.nan)
    return out


@given(st.lists(st.one_of(st.floats(1e-8, 1e4), st.just(math.nan), st.just(math.inf)),
                max_size=80),
       st.integers(1, 30))
def test_equals_the_mean_of_each_window(values, window):
    np.testing.assert_allclose(trailing_mean(values, window), _direct(values, window),
                               rtol=1e-12, atol=0, equal_nan=True)


def test_a_spike_before_the_window_does_not_swamp_small_losses():
    # A running total would lose 1e-7 next to 1e20; the sum of each window alone keeps it.
    curve = np.concatenate([[1e20], np.full(200, 1e-7)])
    np.testing.assert_allclose(trailing_mean(curve, 50)[60:], 1e-7, rtol=1e-12)


def test_window_one_is_the_curve_itself_and_bad_input_is_refused():
    curve = np.array([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(trailing_mean(curve, 1), curve)
    assert trailing_mean([], 5).shape == (0,)
    for window in (0, -3, 2.5):
        with pytest.raises(ValueError, match="window"):
            trailing_mean(curve, window)
    with pytest.raises(ValueError, match="1-D"):
        trailing_mean(np.ones((2, 2)), 2)
