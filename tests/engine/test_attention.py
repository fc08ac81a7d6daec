"""Tests of engine.core.attention: forward against a naive reference, analytic gradients against
finite differences, invariances (validation and the memory guard: test_attention_guards.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.config import ScalingRule
from engine.core.attention import (
    AttentionResult,
    attention_logits,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from engine.core.plan import causal_mask

RULES = [rule.value for rule in ScalingRule]
B, NQ, NK, D, DV = 2, 3, 4, 5, 6


def rule_kwargs(rule: str) -> dict:
    # Non-default parameters so that each one is exercised; a small cap makes tanh non-linear.
    return {
        "temperature": 1.7 if rule == "temperature" else None,
        "gain": 2.3 if rule == "qk_norm" else None,
        "cap": 1.3 if rule == "softcap" else None,
        "ssmax_s": 0.7 if rule == "ssmax" else None,
        "yarn_factor": 16.0 if rule == "yarn" else None,
        # A floor L of 2 keys, so that c changes within the 4 keys.
        "llama4_beta": 0.5 if rule == "llama4" else None,
        "llama4_floor": 2.0 if rule == "llama4" else None,
    }


def random_mask(rng: np.random.Generator) -> np.ndarray:
    mask = rng.random((B, NQ, NK)) > 0.4
    mask[0, 1, :] = False  # one fully masked row
    mask[1, 2, :] = True
    return mask


def make_mask(kind: str, rng: np.random.Generator):
    return {"none": None, "causal": "causal", "random": random_mask(rng)}[kind]


def naive_attention(q, k, v, rule, mask=None, temperature=None, gain=None, cap=None,
                    ssmax_s=None, yarn_factor=None, llama4_beta=None, llama4_floor=None):
    """Loop-level reference in float64, written independently of the engine."""
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    d = q.shape[-1]
    n_q, n_k = q.shape[-2], k.shape[-2]
    if isinstance(mask, str) and mask == "causal":
        mask = np.array([[j <= i + n_k - n_q for j in range(n_k)] for i in range(n_q)])
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    qb = np.broadcast_to(q, (*batch, n_q, d))
    kb = np.broadcast_to(k, (*batch, n_k, d))
    vb = np.broadcast_to(v, (*batch, n_k, v.shape[-1]))
    mb = None if mask is None else np.broadcast_to(mask, (*batch, n_q, n_k))
    logits = np.zeros((*batch, n_q, n_k))
    weights = np.zeros_like(logits)
    out = np.zeros((*batch, n_q, v.shape[-1]))
    for idx in np.ndindex(*batch):
        for i in range(n_q):
            for j in range(n_k):
                qi, kj = qb[idx][i], kb[idx][j]
                # The length rules' n: the keys row i sees (all n_k without a mask).
                n_row = n_k if mb is None else int(mb[idx][i].sum())
                if rule == "none":
                    s = qi @ kj
                elif rule == "log_n":
                    s = math.log(max(n_row, 1)) * (qi @ kj) / math.sqrt(d)
                elif rule == "ssmax":
                    s_ = 0.43 if ssmax_s is None else ssmax_s
                    s = s_ * math.log(max(n_row, 1)) * (qi @ kj) / math.sqrt(d)
                elif rule == "yarn":
                    f = 4.0 if yarn_factor is None else yarn_factor
                    s = (0.1 * math.log(f) + 1) ** 2 * (qi @ kj) / math.sqrt(d)
                elif rule == "llama4":  # transformers' attn_temperature_tuning, at i + 1 keys
                    beta = 0.1 if llama4_beta is None else llama4_beta
                    floor = 8192.0 if llama4_floor is None else llama4_floor
                    tune = 1 + beta * math.log(1 + math.floor(n_row / floor))
                    s = tune * (qi @ kj) / math.sqrt(d)
                elif rule == "sqrt":
                    s = qi @ kj / math.sqrt(d)
                elif rule == "linear":
                    s = qi @ kj / d
                elif rule == "temperature":
                    s = qi @ kj / temperature
                elif rule == "qk_norm":
                    g = math.sqrt(d) if gain is None else gain
                    s = g * (qi / np.linalg.norm(qi)) @ (kj / np.linalg.norm(kj))
                else:
                    c = 50.0 if cap is None else cap
                    s = c * math.tanh(qi @ kj / math.sqrt(d) / c)
                if mb is not None and not mb[idx][i, j]:
                    s = -np.inf
                logits[idx][i, j] = s
            row = logits[idx][i]
            if np.isneginf(row).all():
                continue
            e = np.exp(row - row.max())
            weights[idx][i] = e / e.sum()
            out[idx][i] = weights[idx][i] @ vb[idx]
    return out, weights, logits


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def qkv(rng, dtype=np.float64, shape_q=(B, NQ, D), shape_k=(B, NK, D), shape_v=(B, NK, DV)):
    return tuple(rng.standard_normal(s).astype(dtype) for s in (shape_q, shape_k, shape_v))


# ------------------------------------------------------------------------------------------
# Forward
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "random"])
@pytest.mark.parametrize("rule", RULES)
def test_forward_matches_naive_reference(rule, mask_kind, dtype, rng):
    q, k, v = qkv(rng, dtype)
    mask = make_mask(mask_kind, rng)
    kw = rule_kwargs(rule)
    res = scaled_dot_product_attention(q, k, v, rule=rule, mask=mask, **kw)
    ref_out, ref_w, ref_logits = naive_attention(q, k, v, rule, mask=mask, **kw)
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == np.float64 else {"rtol": 2e-5, "atol": 2e-6}
    for got, ref in ((res.output, ref_out), (res.weights, ref_w), (res.logits, ref_logits)):
        assert got.dtype == dtype
        np.testing.assert_allclose(got, ref, **tol)
    np.testing.assert_array_equal(np.isneginf(res.logits), np.isneginf(ref_logits))


def test_forward_broadcasts_leading_dims(rng):
    q = rng.standard_normal((2, 1, 3, 5))
    k = rng.standard_normal((1, 4, 6, 5))
    v = rng.standard_normal((6, 7))
    res = scaled_dot_product_attention(q, k, v, rule="sqrt", mask="causal")
    assert res.output.shape == (2, 4, 3, 7)
    assert res.weights.shape == (2, 4, 3, 6)
    ref_out, ref_w, _ = naive_attention(q, k, v, "sqrt", mask="causal")
    np.testing.assert_allclose(res.output, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.weights, ref_w, rtol=1e-12, atol=1e-12)


def test_mask_broadcasts_over_heads(rng):
    q, k, v = qkv(rng)
    mask = rng.random((NQ, NK)) > 0.3
    mask[:, 0] = True
    res = scaled_dot_product_attention(q, k, v, mask=mask)
    ref_out, _, _ = naive_attention(q, k, v, "sqrt", mask=mask)
    np.testing.assert_allclose(res.output, ref_out, rtol=1e-12, atol=1e-12)


def test_key_padding_mask(rng):
    q, k, v = qkv(rng)
    keys = np.array([True, False, True, False])
    res = scaled_dot_product_attention(q, k, v, mask=keys)
    ref_out, ref_w, _ = naive_attention(q, k, v, "sqrt", mask=keys)
    np.testing.assert_allclose(res.weights, ref_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.output, ref_out, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal((B, NQ, DV))
    grad_k = scaled_dot_product_attention_backward(q, k, v, g, mask=keys)[1]
    assert np.all(grad_k[:, ~keys] == 0.0)


def test_dtypes(rng):
    q, k, v = qkv(rng, np.float32)
    res = scaled_dot_product_attention(q, k, v)
    assert res.output.dtype == res.weights.dtype == res.logits.dtype == np.float32
    grads = scaled_dot_product_attention_backward(q, k, v, np.ones((B, NQ, DV), np.float32))
    assert all(g.dtype == np.float32 for g in grads)
    ints = [rng.integers(-3, 4, size=s) for s in ((B, NQ, D), (B, NK, D), (B, NK, DV))]
    res = scaled_dot_product_attention(*ints)
    assert res.output.dtype == np.float64
    mixed = scaled_dot_product_attention(q, k, v.astype(np.float64))
    assert mixed.output.dtype == np.float64


def test_result_is_read_only(rng):
    res = scaled_dot_product_attention(*qkv(rng))
    assert isinstance(res, AttentionResult)
    for arr in (res.output, res.weights, res.logits):
        with pytest.raises(ValueError, match="read-only"):
            arr[..., 0, 0] = 1.0


def test_rule_accepts_enum_and_string(rng):
    q, k, v = qkv(rng)
    a = scaled_dot_product_attention(q, k, v, rule=ScalingRule.LINEAR)
    b = scaled_dot_product_attention(q, k, v, rule="linear")
    np.testing.assert_array_equal(a.output, b.output)


def test_attention_logits_equals_forward_logits(rng):
    q, k, _ = qkv(rng)
    for rule in RULES:
        kw = rule_kwargs(rule)
        logits = attention_logits(q, k, rule=rule, mask="causal", **kw)
        res = scaled_dot_product_attention(q, k, k, rule=rule, mask="causal", **kw)
        np.testing.assert_array_equal(logits, res.logits)


def test_fully_masked_rows_give_zeros(rng):
    q, k, v = qkv(rng)
    mask = np.ones((B, NQ, NK), dtype=bool)
    mask[1, 0] = False
    res = scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(res.weights[1, 0] == 0.0)
    assert np.all(res.output[1, 0] == 0.0)
    assert np.all(np.isneginf(res.logits[1, 0]))
    np.testing.assert_allclose(res.weights[0].sum(-1), 1.0, rtol=1e-12)
    grads = scaled_dot_product_attention_backward(
        q, k, v, rng.standard_normal((B, NQ, DV)), mask=mask
    )
    assert np.all(grads[0][1, 0] == 0.0)  # no gradient flows into a query that sees nothing
    nothing = scaled_dot_product_attention(q, k, v, mask=np.zeros((NQ, NK), dtype=bool))
    assert np.all(nothing.output == 0.0) and np.all(nothing.weights == 0.0)


def test_causal_mask_definition():
    np.testing.assert_array_equal(causal_mask(3, 3), np.tril(np.ones((3, 3), dtype=bool)))
    # queries aligned with the last keys
    np.testing.assert_array_equal(
        causal_mask(2, 4), np.array([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=bool)
    )
    # more queries than keys: the first queries see nothing
    np.testing.assert_array_equal(
        causal_mask(3, 2), np.array([[0, 0], [1, 0], [1, 1]], dtype=bool)
    )
    with pytest.raises(ValueError, match="n_q"):
        causal_mask(0, 3)


def test_causal_string_equals_explicit_mask(rng):
    q = rng.standard_normal((2, 3, 5))
    k = rng.standard_normal((2, 6, 5))
    a = scaled_dot_product_attention(q, k, k, mask="causal")
    b = scaled_dot_product_attention(q, k, k, mask=causal_mask(3, 6))
    np.testing.assert_array_equal(a.weights, b.weights)
    assert np.all(a.weights[:, 0, 4:] == 0.0) and np.all(a.weights[:, 0, :4] > 0.0)


def test_huge_logits_float64_stay_finite(rng):
    # |q·k| ~ 1e30: the softmax must shift by the row maximum (and not overflow).
    q = rng.standard_normal((2, 4, 8)) * 1e15
    k = rng.standard_normal((2, 5, 8)) * 1e15
    v = rng.standard_normal((2, 5, 3))
    for rule in ("none", "sqrt", "linear", "softcap", "qk_norm"):
        res = scaled_dot_product_attention(q, k, v, rule=rule, mask="causal")
        assert np.abs(res.logits[np.isfinite(res.logits)]).max() > 0
        assert np.all(np.isfinite(res.weights)) and np.all(np.isfinite(res.output))
        np.testing.assert_allclose(res.weights.sum(-1), 1.0, rtol=1e-12)
        grads = scaled_dot_product_attention_backward(q, k, v, np.ones((2, 4, 3)), rule=rule)
        assert all(np.all(np.isfinite(g)) for g in grads)
    res = scaled_dot_product_attention(q, k, v, rule="none")
    assert np.abs(res.logits).max() > 1e29
    # one-hot rows: the weight sits on the largest logit
    np.testing.assert_array_equal(res.weights.argmax(-1), res.logits.argmax(-1))


# ------------------------------------------------------------------------------------------
# Backward
# ------------------------------------------------------------------------------------------


def numeric_grads(q, k, v, g, kw, h=1e-6):
    def loss(*arrs):
        return float(np.sum(scaled_dot_product_attention(*arrs, **kw).output * g))

    grads = []
    arrays = [q, k, v]
    for which, x in enumerate(arrays):
        num = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus = [a.copy() for a in arrays]
            minus = [a.copy() for a in arrays]
            plus[which][idx] += h
            minus[which][idx] -= h
            num[idx] = (loss(*plus) - loss(*minus)) / (2 * h)
        grads.append(num)
    return grads


@pytest.mark.parametrize("mask_kind", ["none", "causal", "random"])
@pytest.mark.parametrize("rule", RULES)
def test_backward_matches_finite_differences(rule, mask_kind, rng):
    q, k, v = qkv(rng)
    g = rng.standard_normal((B, NQ, DV))
    kw = {"rule": rule, "mask": make_mask(mask_kind, rng), **rule_kwargs(rule)}
    analytic = scaled_dot_product_attention_backward(q, k, v, g, **kw)
    numeric = numeric_grads(q, k, v, g, kw)
    for name, a, n in zip("qkv", analytic, numeric, strict=True):
        assert a.shape == n.shape, name
        err = np.abs(a - n).max() / np.abs(n).max()
        assert err < 1e-6, f"grad_{name} relative error {err:.2e} for {rule}/{mask_kind}"


@pytest.mark.parametrize("rule", ["sqrt", "qk_norm", "softcap", "ssmax"])
def test_backward_sums_over_broadcast_dims(rule, rng):
    q = rng.standard_normal((2, 1, 3, 4))
    k = rng.standard_normal((1, 2, 5, 4))
    v = rng.standard_normal((5, 3))
    g = rng.standard_normal((2, 2, 3, 3))
    kw = {"rule": rule, "mask": "causal", **rule_kwargs(rule)}
    analytic = scaled_dot_product_attention_backward(q, k, v, g, **kw)
    numeric = numeric_grads(q, k, v, g, kw)
    for a, n, x in zip(analytic, numeric, (q, k, v), strict=True):
        assert a.shape == x.shape
        assert np.abs(a - n).max() / np.abs(n).max() < 1e-6


def test_backward_qk_norm_zero_vector_is_finite(rng):
    q, k, v = qkv(rng)
    q[0, 1] = 0.0
    res = scaled_dot_product_attention(q, k, v, rule="qk_norm")
    assert np.all(np.isfinite(res.output))
    grads = scaled_dot_product_attention_backward(q, k, v, np.ones((B, NQ, DV)), rule="qk_norm")
    assert all(np.all(np.isfinite(x)) for x in grads)


def test_backward_qk_norm_clamped_norm_matches_finite_differences(rng):
    # ‖q‖ < 1e-12 is clamped: q̂ = q / 1e-12 is linear there, so a step of 1e-17 moves the
    # logits by ~1e-5 and finite differences stay accurate.
    q, k, v = qkv(rng)
    q[0, 1] = rng.standard_normal(D) * 1e-14
    g = rng.standard_normal((B, NQ, DV))
    kw = {"rule": "qk_norm", "gain": 2.3}
    grad_q = scaled_dot_product_attention_backward(q, k, v, g, **kw)[0]
    numeric = numeric_grads(q, k, v, g, kw, h=1e-17)[0]
    np.testing.assert_allclose(grad_q[0, 1], numeric[0, 1], rtol=1e-4)
    assert np.abs(grad_q[0, 1]).max() > 1e6  # slope 1/eps: the clamp is really exercised


def test_temperature_sqrt_d_equals_sqrt_rule_exactly(rng):
    q, k, v = qkv(rng)
    g = rng.standard_normal((B, NQ, DV))
    t = math.sqrt(D)
    a = scaled_dot_product_attention(q, k, v, rule="temperature", temperature=t, mask="causal")
    b = scaled_dot_product_attention(q, k, v, rule="sqrt", mask="causal")
    for x, y in ((a.output, b.output), (a.weights, b.weights), (a.logits, b.logits)):
        np.testing.assert_array_equal(x, y)
    ga = scaled_dot_product_attention_backward(q, k, v, g, rule="temperature", temperature=t)
    gb = scaled_dot_product_attention_backward(q, k, v, g, rule="sqrt")
    for x, y in zip(ga, gb, strict=True):
        np.testing.assert_array_equal(x, y)


# ------------------------------------------------------------------------------------------
# Invariances
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["none", "sqrt", "linear", "temperature"])
def test_adding_a_vector_to_all_keys_keeps_weights(rule, rng):
    q, k, v = qkv(rng)
    shift = rng.standard_normal(D) * 3.0
    kw = {"rule": rule, **rule_kwargs(rule)}
    a = scaled_dot_product_attention(q, k, v, **kw)
    b = scaled_dot_product_attention(q, k + shift, v, **kw)
    np.testing.assert_allclose(a.weights, b.weights, rtol=1e-10, atol=1e-14)
    # ...while the logits themselves do change (the shift is per query row)
    assert not np.allclose(a.logits, b.logits)
