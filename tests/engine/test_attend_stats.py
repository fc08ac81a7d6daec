"""A layer's attention statistics (entropy, saturated share) from its float32 weights, taken
without a float64 copy, against the plain definitions in engine.core.stats."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core.precision import numpy_dtype
from engine.core.scaling import Rule
from engine.core.softmax import softmax_rows
from engine.core.stats import row_entropy, saturated_share
from engine.models import attend as attend_module
from engine.models.attend import (
    LayerChange,
    LayerStats,
    _block_sums,
    _layer_stats,
    attend,
    visible_keys,
)


def _stats(p: np.ndarray, seen: np.ndarray | None = None) -> LayerStats:
    """One layer's statistics of weights ``p`` taken in one block."""
    return _layer_stats([_block_sums(p)])


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


@pytest.mark.parametrize(("m", "offset", "window", "change"), [
    (256, 0, None, None),
    (300, 0, 50, None),
    (200, 40, None, LayerChange(heads=(1,), alpha=8.0)),
    (130, 0, 7, LayerChange(alpha=0.25)),
    (256, 0, None, LayerChange(heads=(0, 2), dtype=np.dtype(np.float16), stable=True)),
])
def test_row_blocks_give_what_one_block_gives(monkeypatch: pytest.MonkeyPatch, m: int,
                                               offset: int, window: int | None,
                                               change: LayerChange | None) -> None:
    """A causal layer's queries taken in row blocks (each reading only the keys it may see)
    give the output and statistics of the whole square at once, to float32 round-off: a
    block's rows end sooner, so the softmax's float32 row sums add fewer zeros and may round
    differently in the last place."""
    rng = np.random.default_rng(m + offset)
    heads, d, nk = 3, 16, offset + m
    q = rng.standard_normal((heads, m, d), dtype=np.float32) * 2
    k = rng.standard_normal((heads, nk, d), dtype=np.float32) * 2
    v = rng.standard_normal((heads, nk, d), dtype=np.float32)
    blocked_stats: list[LayerStats] = []
    blocked = attend(q, k, v, 0.25, None, True, window, offset=offset, change=change,
                     stats=blocked_stats)
    assert len(attend_module._blocks(m, nk, offset, True, window)) > 1
    monkeypatch.setattr(attend_module, "_LEAST_BLOCK_ROWS", 10**6)
    whole_stats: list[LayerStats] = []
    whole = attend(q, k, v, 0.25, None, True, window, offset=offset, change=change,
                   stats=whole_stats)
    np.testing.assert_allclose(blocked, whole, rtol=0, atol=2e-6)
    assert blocked_stats[0].entropy == pytest.approx(whole_stats[0].entropy, rel=1e-7,
                                                     nan_ok=True)
    assert blocked_stats[0].saturated == whole_stats[0].saturated


def test_subnormal_weights_are_flushed_before_the_weighted_sum() -> None:
    """A weight below the least normal float32 is dropped from the weighted sum: the output
    moves by at most keys · 2⁻¹²⁶ · max|v| (here 2e-12 with |v| = 1e30; with a model's
    values, far below the float32 spacing of the residual stream it is added to)."""
    q = np.array([[[60.0], [0.0]]], dtype=np.float32)  # row 0: exp(-96) ≈ 2e-42, subnormal
    k = np.array([[[1.0], [-0.6]]], dtype=np.float32)
    v = np.array([[[0.0], [1e30]]], dtype=np.float32)
    out = attend(q, k, v, 1.0, None, False)
    exact = math.exp(-96.0) * 1e30
    assert out[0, 0] == 0.0
    assert abs(exact - out[0, 0]) <= 2 * 2.0**-126 * 1e30
    # bfloat16 has float32's exponents: a rounded softmax's subnormal weight (exp(-90)) too
    k[0, 1, 0] = -0.5
    bf16 = LayerChange(dtype=numpy_dtype("bfloat16"), stable=True)
    assert 0 < float(np.exp(np.float32(-90.0)).astype(bf16.dtype)) < np.finfo(np.float32).tiny
    rounded = attend(q, k, v, 1.0, None, False, change=bf16)
    assert rounded[0, 0] == 0.0
    assert rounded[1, 0] != 0.0


@pytest.mark.parametrize("change", [
    None,
    LayerChange(alpha=8.0),
    LayerChange(heads=(1, 4), alpha=0.5),
    LayerChange(heads=(4,), rule=Rule("ssmax", ssmax_s=0.4)),
    LayerChange(heads=(1, 3), dtype=np.dtype(np.float16), stable=False),
])
@pytest.mark.parametrize(("m", "offset"), [(1, 40), (150, 0)])
def test_grouped_keys_and_values_give_what_their_repeats_give(
        change: LayerChange | None, m: int, offset: int) -> None:
    """Keys and values of 2 kv heads serve 6 query heads (h reads kv head h // 3), as when
    each is repeated per query head: a KV cache holds them once (a new token's step reads a
    third of the bytes), to float32 round-off (a group's queries share one product)."""
    rng = np.random.default_rng(m)
    heads, kv, d, nk = 6, 2, 8, offset + m
    q = rng.standard_normal((heads, m, d), dtype=np.float32)
    k = rng.standard_normal((kv, nk, d), dtype=np.float32)
    v = rng.standard_normal((kv, nk, d), dtype=np.float32)
    grouped_stats: list[LayerStats] = []
    repeated_stats: list[LayerStats] = []
    grouped = attend(q, k, v, 0.35, None, True, offset=offset, change=change,
                     stats=grouped_stats)
    repeated = attend(q, np.repeat(k, 3, axis=0), np.repeat(v, 3, axis=0), 0.35, None, True,
                      offset=offset, change=change, stats=repeated_stats)
    np.testing.assert_allclose(grouped, repeated, rtol=0, atol=2e-6)
    assert grouped_stats[0].entropy == pytest.approx(repeated_stats[0].entropy, rel=1e-6)
    assert grouped_stats[0].saturated == repeated_stats[0].saturated
    # the pairing matters: kv heads in the other order give another output
    swapped = attend(q, k[::-1].copy(), v[::-1].copy(), 0.35, None, True, offset=offset,
                     change=change)
    assert np.abs(swapped - repeated).max() > 1e-2
