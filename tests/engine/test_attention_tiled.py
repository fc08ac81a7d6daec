"""Tests of the tiled attention kernel: output without weights, its memory, and its threads.

The output-only path must equal the weights path up to rounding for every tiling (row tiles of
one entry, several entries per tile), must never allocate an n×n array, and must give the same
result on one thread and on several.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import ScalingRule
from engine.core import parallel, tiled
from engine.core.attention import (
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from engine.core.memory import MemoryBudgetError
from engine.core.plan import causal_mask, make_plan
from engine.core.scaling import Rule


@pytest.fixture
def rng():
    return np.random.default_rng(12)


@pytest.fixture
def small_tiles(monkeypatch):
    # 64 float64 entries per tile: an 11-key row fits 5 times, so rows and entries are cut.
    monkeypatch.setattr(tiled, "TILE_BYTES", 64 * 8)


def problem(rng, batch=(2, 3), n_q=13, n_k=11, d=5, d_v=4, dtype=np.float64):
    return (
        rng.standard_normal((*batch, n_q, d)).astype(dtype),
        rng.standard_normal((*batch, n_k, d)).astype(dtype),
        rng.standard_normal((*batch, n_k, d_v)).astype(dtype),
    )


@pytest.mark.parametrize("rule", [rule.value for rule in ScalingRule])
@pytest.mark.parametrize("mask", [None, "causal", "padding", "per_head"])
def test_every_rule_and_mask_matches_the_weights_path_with_small_tiles(
    rng, small_tiles, rule, mask
):
    q, k, v = problem(rng)
    if mask == "padding":
        mask = np.arange(11) < 7
    elif mask == "per_head":
        mask = rng.random((3, 13, 11)) < 0.6  # broadcast over the batch axis
    kw = {"rule": rule, "mask": mask, "temperature": 0.7}
    full = scaled_dot_product_attention(q, k, v, **kw)
    fast = scaled_dot_product_attention(q, k, v, need_weights=False, **kw)
    np.testing.assert_allclose(fast.output, full.output, rtol=1e-12, atol=1e-13)
    # The backward pass runs through the same tiles: its gradients do not depend on them.
    g = rng.standard_normal(full.output.shape)
    small = scaled_dot_product_attention_backward(q, k, v, g, **kw)
    tiled.TILE_BYTES = 1 << 17
    large = scaled_dot_product_attention_backward(q, k, v, g, **kw)
    for a, b in zip(small, large, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_broadcast_operands_and_float32(rng, small_tiles):
    q = rng.standard_normal((2, 3, 9, 4)).astype(np.float32)
    k = rng.standard_normal((1, 3, 12, 4)).astype(np.float32)
    v = rng.standard_normal((12, 6)).astype(np.float32)
    full = scaled_dot_product_attention(q, k, v, mask="causal")
    fast = scaled_dot_product_attention(q, k, v, mask="causal", need_weights=False)
    assert fast.output.dtype == np.float32 and fast.output.shape == (2, 3, 9, 6)
    np.testing.assert_allclose(fast.output, full.output, rtol=2e-6, atol=2e-6)
    assert not fast.output.flags.writeable


def test_fully_masked_rows_give_zero_output(rng, small_tiles):
    q, k, v = problem(rng, batch=(2,), n_q=6, n_k=4)
    fast = scaled_dot_product_attention(q, k, v, mask="causal", need_weights=False)
    # n_q > n_k: the first two queries see no key.
    assert np.all(fast.output[:, :2] == 0.0)
    full = scaled_dot_product_attention(q, k, v, mask="causal")
    np.testing.assert_allclose(fast.output, full.output, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("shape", [(8, 256, 64), (1, 2048, 64)])
def test_later_calls_reuse_the_tile_buffers(shape, threads):
    # A fresh tile buffer per call may come from mmap and fault on every page (see
    # engine.core.tiled); after a first call, the next allocates only what it returns and the
    # scaled queries: the output and q·c, each the size of q. One thread: with two, which
    # threads take tiles (and so buffers) in the first call depends on timing.
    threads(1)
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    first = scaled_dot_product_attention(q, k, v, need_weights=False)
    tracemalloc.start()
    try:
        again = scaled_dot_product_attention(q, k, v, need_weights=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(again.output, first.output)
    assert peak < 2.5 * q.nbytes, f"peak {peak} bytes, q has {q.nbytes}"


def test_large_logits_are_shifted_and_overflow_is_refused(rng):
    q, k, v = problem(rng, batch=(1,), n_q=70, n_k=70)
    q *= 30.0  # row maxima far outside exp's no-shift window
    full = scaled_dot_product_attention(q.astype(np.float32), k, v, rule="none")
    fast = scaled_dot_product_attention(q.astype(np.float32), k, v, rule="none",
                                        need_weights=False)
    np.testing.assert_allclose(fast.output, full.output, rtol=1e-5, atol=1e-5)
    huge = np.full((1, 2, 4), 1e20, dtype=np.float32)
    with pytest.raises(ValueError, match="overflowed float32"):
        scaled_dot_product_attention(huge, huge, huge, rule="none", need_weights=False)


@pytest.mark.parametrize("large_rows", [slice(0, 3), slice(8, 13)])
@pytest.mark.parametrize("rule", ["none", "softcap"])
def test_tiles_whose_exp_needs_the_shift_write_their_logits_again(
    rng, small_tiles, large_rows, rule
):
    # Without weights, exp overwrites a tile's logits before the row sums can prove that no
    # shift was due; a tile whose rows leave exp's window (the first tiles, or only later
    # ones) must write its logits again and match the weights path, forward and backward.
    q, k, v = problem(rng, batch=(2,))
    q[:, large_rows] *= 400.0  # row maxima far beyond the no-shift window's 300 (float64)
    kw = {"rule": rule, "cap": 500.0} if rule == "softcap" else {"rule": rule}
    full = scaled_dot_product_attention(q, k, v, **kw)
    fast = scaled_dot_product_attention(q, k, v, need_weights=False, **kw)
    assert full.weights[:, large_rows].max(-1).min() > 0.99  # those rows really are one-hot
    np.testing.assert_allclose(fast.output, full.output, rtol=1e-12, atol=1e-13)
    g = rng.standard_normal(full.output.shape)
    recomputed = scaled_dot_product_attention_backward(q, k, v, g, **kw)
    given = scaled_dot_product_attention_backward(q, k, v, g, output=full.output, **kw)
    for a, b in zip(recomputed, given, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_no_weights_never_allocates_an_n_by_n_array():
    n, d = 4096, 16
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((1, n, d)).astype(np.float32) for _ in range(3))
    n_by_n = n * n * 4
    for mask in (None, "causal"):
        tracemalloc.start()
        try:
            res = scaled_dot_product_attention(q, k, v, mask=mask, need_weights=False)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert res.output.shape == (1, n, d)
        assert peak < n_by_n / 16, f"peak {peak} bytes, n×n is {n_by_n}"
    # The weights path needs the n×n matrices, which this budget refuses; the tiles fit.
    with pytest.raises(MemoryBudgetError):
        scaled_dot_product_attention(q, k, v, memory_budget_bytes=n_by_n)
    scaled_dot_product_attention(q, k, v, need_weights=False, memory_budget_bytes=n_by_n // 16)


@pytest.mark.parametrize("mask", ["causal", "random"])
def test_threads_give_the_serial_result(rng, monkeypatch, threads, mask):
    # Large enough for the engine to split it over threads; tiles of 32 rows either way.
    monkeypatch.setattr(tiled, "TILE_BYTES", 64 << 10)
    q, k, v = problem(rng, batch=(2,), n_q=256, n_k=256, d=128, d_v=128)
    g = rng.standard_normal(q.shape)
    kw = {"mask": "causal" if mask == "causal" else rng.random((256, 256)) < 0.5}
    for rule in ("softcap", "qk_norm", "log_n"):
        runs = []
        for count in (1, 2):
            threads(count)
            runs.append((scaled_dot_product_attention(q, k, v, rule=rule, **kw),
                         scaled_dot_product_attention(q, k, v, rule=rule, need_weights=False,
                                                      **kw),
                         scaled_dot_product_attention_backward(q, k, v, g, rule=rule, **kw)))
        assert parallel.parallel_pays(2 * q.size // 128 * 256 * (128 + 128))
        (full, fast, grads), (split_full, split_fast, split_grads) = runs
        np.testing.assert_array_equal(split_full.weights, full.weights)
        np.testing.assert_array_equal(split_full.output, full.output)
        np.testing.assert_array_equal(split_fast.output, fast.output)
        for a, b in zip(split_grads, grads, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("rule", ["sqrt", "softcap", "qk_norm", "ssmax"])
def test_backward_given_the_output_equals_the_recomputing_backward(rng, small_tiles, rule):
    q, k, v = problem(rng)
    g = rng.standard_normal((2, 3, 13, 4))
    kw = {"rule": rule, "mask": "causal"}
    out = scaled_dot_product_attention(q, k, v, need_weights=False, **kw).output
    given = scaled_dot_product_attention_backward(q, k, v, g, output=out, **kw)
    recomputed = scaled_dot_product_attention_backward(q, k, v, g, **kw)
    for a, b in zip(given, recomputed, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)
    with pytest.raises(ValueError, match=r"output must have the output's shape \(2, 3, 13, 4\)"):
        scaled_dot_product_attention_backward(q, k, v, g, output=out[..., :2], **kw)


@pytest.mark.parametrize(("n_q", "n_k"), [(13, 11), (11, 13), (12, 12)])
def test_causal_tiles_compute_only_the_keys_their_rows_see(rng, small_tiles, monkeypatch, n_q,
                                                           n_k):
    """Row tiles under a causal mask skip the keys after their last row's; the logits, weights
    and output still equal a dense softmax, with −∞ and 0 in the skipped columns."""
    q, k, v = problem(rng, n_q=n_q, n_k=n_k)
    widths = []
    real_write = tiled.write_logits

    def record(qs, ks, cap, out, *args):
        widths.append(out.shape[-1])
        return real_write(qs, ks, cap, out, *args)

    monkeypatch.setattr(tiled, "write_logits", record)
    res = scaled_dot_product_attention(q, k, v, mask="causal")
    assert min(widths) < n_k  # some tile really left keys out

    allowed = causal_mask(n_q, n_k)
    dense = np.where(allowed, q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1]), -np.inf)
    row_max = np.max(dense, axis=-1, keepdims=True)
    exps = np.exp(dense - np.where(np.isfinite(row_max), row_max, 0.0))
    sums = exps.sum(axis=-1, keepdims=True)
    weights = np.divide(exps, sums, out=np.zeros_like(exps), where=sums > 0)
    assert np.array_equal(np.isneginf(res.logits), np.broadcast_to(~allowed, res.logits.shape))
    np.testing.assert_allclose(res.logits[..., allowed], dense[..., allowed], rtol=1e-13)
    np.testing.assert_allclose(res.weights, weights, rtol=1e-12, atol=1e-15)
    assert np.all(res.weights[..., ~allowed] == 0.0)
    np.testing.assert_allclose(res.output, weights @ v, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("rule", [rule.value for rule in ScalingRule])
@pytest.mark.parametrize("mask", [None, "causal", "padding"])
@pytest.mark.parametrize("tiles", ["small", "default"])
def test_backward_given_the_weights_equals_the_recomputing_backward(rng, monkeypatch, rule, mask,
                                                                    tiles):
    """The forward's (read-only) weights replace the backward's logits and exponentials; the
    gradients do not change, with or without the output, in row tiles and whole entries."""
    if tiles == "small":
        monkeypatch.setattr(tiled, "TILE_BYTES", 64 * 8)
    q, k, v = problem(rng)
    if mask == "padding":
        mask = np.arange(11) < 7
    kw = {"rule": rule, "mask": mask, "temperature": 0.7}
    res = scaled_dot_product_attention(q, k, v, **kw)
    assert not res.weights.flags.writeable
    g = rng.standard_normal(res.output.shape)
    recomputed = scaled_dot_product_attention_backward(q, k, v, g, **kw)
    for output in (None, res.output):
        given = scaled_dot_product_attention_backward(q, k, v, g, weights=res.weights,
                                                      output=output, **kw)
        for a, b in zip(given, recomputed, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


def test_backward_given_weights_uses_them_and_checks_their_shape(rng):
    q, k, v = problem(rng)
    g = rng.standard_normal((2, 3, 13, 4))
    uniform = np.full((2, 3, 13, 11), 1 / 11)
    # Uniform weights give dV = Σ_rows G / n_k for every key: the weights were used.
    _, _, grad_v = scaled_dot_product_attention_backward(q, k, v, g, weights=uniform)
    np.testing.assert_allclose(grad_v, np.broadcast_to(g.sum(axis=-2, keepdims=True) / 11,
                                                       grad_v.shape), rtol=1e-12)
    with pytest.raises(ValueError, match=r"weights must have the logits' shape \(2, 3, 13, 11\)"):
        scaled_dot_product_attention_backward(q, k, v, g, weights=uniform[..., :5])


@settings(max_examples=300, deadline=None)
@given(entries=st.integers(1, 40), n_q=st.integers(1, 700), n_k=st.integers(1, 3000),
       d=st.sampled_from([1, 64]), float32=st.booleans(), count=st.integers(1, 4),
       tile_bytes=st.sampled_from([64 * 8, 1 << 14, tiled.TILE_BYTES]))
def test_tiles_cover_every_row_once_and_give_every_thread_work(
    entries, n_q, n_k, d, float32, count, tile_bytes
):
    dtype = np.float32 if float32 else np.float64
    # q and k broadcast over the entries: the plan's batch without its memory.
    q, k = np.zeros((1, n_q, d), dtype), np.zeros((1, n_k, d), dtype)
    v = np.zeros((entries, n_k, 1), dtype)
    old_threads, old_bytes = parallel.get_num_threads(), tiled.TILE_BYTES
    parallel.set_num_threads(count)
    tiled.TILE_BYTES = tile_bytes
    try:
        problem_ = tiled.prepare(make_plan(q, k, v, rule=Rule("sqrt"), mask=None,
                                           check_finite=False))
        parallel_ = parallel.parallel_pays(2 * entries * n_q * n_k * (d + 1))
    finally:
        parallel.set_num_threads(old_threads)
        tiled.TILE_BYTES = old_bytes
    tiles, elements = problem_.tiles, problem_.tile_elements
    itemsize = np.dtype(dtype).itemsize
    covered = np.zeros((entries, n_q), dtype=int)
    for b0, b1, r0, r1 in tiles:
        assert (r0, r1) == (0, n_q) or b1 == b0 + 1  # whole entries, or rows of one entry
        covered[b0:b1, r0:r1] += 1
        assert (b1 - b0) * (r1 - r0) * n_k <= elements  # the scratch buffers hold every tile
    assert (covered == 1).all()
    # A tile holds at most tile_bytes of logits, unless one row alone is larger.
    assert elements * itemsize <= max(tile_bytes, n_k * itemsize)
    if parallel_:
        # Every thread has a tile, even when the whole problem fits into one.
        assert len(tiles) >= min(count, entries * n_q)
    elif entries * n_q * n_k * itemsize <= tile_bytes:
        assert len(tiles) == 1  # a serial problem that fits pays for one tile only
