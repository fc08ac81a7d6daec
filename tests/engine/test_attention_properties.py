"""Property-based tests of engine.core.attention (Hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import ScalingRule
from engine.core import tiled
from engine.core.attention import (
    attention_logits,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from engine.core.softmax import softmax

RULES = [rule.value for rule in ScalingRule]
SETTINGS = settings(max_examples=60, deadline=None)
MODERATE_LOG10_SCALE = st.floats(-3.0, 2.0)


@st.composite
def problems(draw, log10_scale=MODERATE_LOG10_SCALE):
    """Random q, k, v, a mask (maybe with fully masked rows), a rule and its parameters."""
    batch = draw(st.integers(1, 2))
    n_q = draw(st.integers(1, 5))
    n_k = draw(st.integers(1, 6))
    d = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = 10.0 ** draw(log10_scale)
    q = rng.standard_normal((batch, n_q, d)) * scale
    k = rng.standard_normal((batch, n_k, d)) * scale
    v = rng.standard_normal((batch, n_k, 3))
    mask_kind = draw(st.sampled_from(["none", "causal", "random"]))
    if mask_kind == "random":
        mask = rng.random((batch, n_q, n_k)) < draw(st.floats(0.0, 1.0))
    else:
        mask = None if mask_kind == "none" else "causal"
    rule = draw(st.sampled_from(RULES))
    kw = {
        "rule": rule,
        "mask": mask,
        "temperature": draw(st.floats(0.05, 20.0)),
        "gain": draw(st.floats(0.1, 30.0)),
        "cap": draw(st.floats(0.5, 100.0)),
    }
    return q, k, v, kw


def allowed(kw, shape):
    """Boolean array of allowed (query, key) pairs for the problem's mask."""
    n_q, n_k = shape[-2:]
    mask = kw["mask"]
    if mask is None:
        return np.ones(shape, dtype=bool)
    if isinstance(mask, str):
        mask = np.tri(n_q, n_k, k=n_k - n_q, dtype=bool)
    return np.broadcast_to(mask, shape)


@SETTINGS
@given(problems())
def test_rows_sum_to_one_or_zero(problem):
    q, k, v, kw = problem
    res = scaled_dot_product_attention(q, k, v, **kw)
    ok = allowed(kw, res.weights.shape)
    sums = res.weights.sum(-1)
    expected = ok.any(-1).astype(float)
    np.testing.assert_allclose(sums, expected, rtol=1e-12, atol=1e-12)
    assert np.all(res.weights >= 0.0)
    assert np.all(res.weights[~ok] == 0.0)
    assert np.all(np.isneginf(res.logits[~ok]))
    assert np.all(np.isfinite(res.logits[ok]))


@SETTINGS
@given(problems(), st.booleans(), st.sampled_from([1 << 6, 1 << 8, 1 << 17]))
def test_output_without_weights_equals_weights_path(problem, float32, tile_bytes):
    # Every rule × mask × dtype; tiny tiles cut rows (and entries) into several tiles.
    q, k, v, kw = problem
    if float32:
        q, k, v = (a.astype(np.float32) for a in (q, k, v))
    full = scaled_dot_product_attention(q, k, v, **kw)
    old = tiled.TILE_BYTES
    tiled.TILE_BYTES = tile_bytes
    try:
        fast = scaled_dot_product_attention(q, k, v, need_weights=False, **kw)
    finally:
        tiled.TILE_BYTES = old
    assert fast.weights is None and fast.logits is None
    assert fast.output.dtype == full.output.dtype and fast.output.shape == full.output.shape
    tol = 2e-6 if float32 else 1e-12
    np.testing.assert_allclose(fast.output, full.output, rtol=tol, atol=tol)


@SETTINGS
@given(problems(log10_scale=st.floats(10.0, 15.0)))
def test_huge_logits_float64_no_nan_or_inf(problem):
    # entries up to ~1e15 give |q·k| up to ~1e30
    q, k, v, kw = problem
    res = scaled_dot_product_attention(q, k, v, **kw)
    assert np.all(np.isfinite(res.weights))
    assert np.all(np.isfinite(res.output))
    ok = allowed(kw, res.weights.shape)
    np.testing.assert_allclose(res.weights.sum(-1), ok.any(-1).astype(float), rtol=1e-12)
    grads = scaled_dot_product_attention_backward(q, k, v, np.ones(res.output.shape), **kw)
    assert all(np.all(np.isfinite(g)) for g in grads)


@SETTINGS
@given(problems(log10_scale=st.floats(-2.0, 1.0)), st.floats(-5.0, 5.0))
def test_key_shift_invariance(problem, shift_scale):
    q, k, v, kw = problem
    if not ScalingRule(kw["rule"]).spec.multiplicative:  # a shift of k shifts each row of c·q·k
        kw = {**kw, "rule": "sqrt"}
    rng = np.random.default_rng(int(abs(shift_scale) * 1000))
    shift = rng.standard_normal(k.shape[-1]) * shift_scale
    a = scaled_dot_product_attention(q, k, v, **kw)
    b = scaled_dot_product_attention(q, k + shift, v, **kw)
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-7, atol=1e-9)


@SETTINGS
@given(problems(log10_scale=st.floats(-2.0, 1.0)), st.floats(0.05, 20.0))
def test_q_times_c_k_over_c_keeps_logits(problem, c):
    q, k, _, kw = problem
    a = attention_logits(q, k, **kw)
    b = attention_logits(q * c, k / c, **kw)
    finite = np.isfinite(a)
    np.testing.assert_array_equal(finite, np.isfinite(b))
    np.testing.assert_allclose(a[finite], b[finite], rtol=1e-9, atol=1e-9)


@SETTINGS
@given(
    st.lists(st.floats(-1e30, 1e30, allow_nan=False), min_size=1, max_size=12),
    st.booleans(),
)
def test_softmax_is_a_distribution(values, float32):
    x = np.array(values, dtype=np.float32 if float32 else np.float64)
    p = softmax(x)
    assert p.dtype == x.dtype
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    np.testing.assert_allclose(p.sum(), 1.0, rtol=1e-5 if float32 else 1e-12)
    assert p[np.argmax(x)] == p.max()
