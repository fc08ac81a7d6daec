"""A layer's attention statistics (entropy, saturated share) from its float32 weights, taken
without a float64 copy, against the plain definitions in engine.core.stats."""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.softmax import softmax_rows
from engine.core.stats import row_entropy, saturated_share
from engine.models.attend import _stats, visible_keys


def _causal_weights(scale: float, heads: int = 3, n: int = 64, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = (rng.standard_normal((heads, n, n)) * scale).astype(np.float32)
    seen = visible_keys(n, n, 0, True, None)
    z[:, ~seen] = -np.inf
    return softmax_rows(z)


@pytest.mark.parametrize("scale", [0.0, 0.1, 1.0, 5.0, 30.0, 300.0, 3000.0])
def test_layer_stats_agree_with_the_float64_definitions(scale: float) -> None:
    p = _causal_weights(scale)
    rows = p.reshape(-1, p.shape[-1]).astype(np.float64)
    got = _stats(p, None)
    assert abs(got.entropy - float(row_entropy(rows).mean())) <= 1e-6
    assert got.saturated == saturated_share(rows)


def test_saturated_rows_agree_in_absolute_terms() -> None:
    # near-one-hot rows (the largest weight 1 − 1e-4 … rounding to 1 in float32); masked keys
    # have weight 0. The layer mean is promised to 1e-6 nats, not to relative precision.
    p = np.zeros((3, 5, 8), dtype=np.float32)
    for head, rest in enumerate((1e-5, 1e-12, 1e-20)):
        p[head, :, 1:] = np.float32(rest)
        p[head, :, 0] = np.float32(1 - 7 * rest)
    p[1, :, 1:4] = 0.0
    got = _stats(p, None)
    want = float(row_entropy(p.reshape(-1, 8).astype(np.float64)).mean())
    assert want > 0 and abs(got.entropy - want) <= 1e-9
    assert got.saturated == 1.0


def test_threshold_is_compared_in_float64() -> None:
    # float32(0.99) is a hair above 0.99: such a row counts as saturated, as in float64
    top = np.float32(0.99)
    p = np.array([[[top, 1 - top], [0.5, 0.5]]], dtype=np.float32)
    assert _stats(p, None).saturated == saturated_share(p.astype(np.float64)) == 0.5


def test_nan_weights_take_the_plain_definitions() -> None:
    p = _causal_weights(1.0)
    p[0, 3] = np.nan
    rows = p.reshape(-1, p.shape[-1]).astype(np.float64)
    with np.errstate(invalid="ignore"):
        want_entropy, want_share = float(row_entropy(rows).mean()), saturated_share(rows)
    got = _stats(p, None)
    assert np.isnan(got.entropy) == np.isnan(want_entropy)
    assert got.saturated == want_share
