"""Tests of the attention's argument checks (messages that name the value) and its memory guard.

Every invalid input is refused with a ValueError saying what was expected; n×n matrices beyond
the memory budget are refused with a MemoryBudgetError before anything is allocated.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.config import DEFAULT_MEMORY_BUDGET_BYTES
from engine.core.attention import (
    attention_logits,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)
from engine.core.memory import MemoryBudgetError, check_memory, get_memory_budget, set_memory_budget

B, NQ, NK, D, DV = 2, 3, 4, 5, 6


def qkv(rng, dtype=np.float64, shape_q=(B, NQ, D), shape_k=(B, NK, D), shape_v=(B, NK, DV)):
    return tuple(rng.standard_normal(s).astype(dtype) for s in (shape_q, shape_k, shape_v))


# ------------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------------


def call(q=None, k=None, v=None, **kw):
    rng = np.random.default_rng(0)
    dq, dk, dv = qkv(rng)
    return scaled_dot_product_attention(
        dq if q is None else q, dk if k is None else k, dv if v is None else v, **kw
    )


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"q": np.ones(5)}, r"q must have at least 2 dimensions"),
        ({"k": np.ones(5)}, r"k must have at least 2 dimensions"),
        ({"v": np.ones(4)}, r"v must have at least 2 dimensions"),
        ({"k": np.ones((B, NK, D + 1))}, r"d_k mismatch.*q has d_k = 5.*k has d_k = 6"),
        ({"v": np.ones((B, NK + 1, DV))}, r"n_k mismatch.*k has n_k = 4.*v has 5"),
        ({"k": np.ones((3, NK, D))}, r"leading \(batch, head\) dimensions .* do not broadcast"),
        ({"q": np.ones((B, 0, D))}, r"n_q .* must be >= 1"),
        ({"q": np.full((B, NQ, D), np.nan)}, r"^q contains NaN or infinite"),
        ({"k": np.full((B, NK, D), np.inf)}, r"^k contains NaN or infinite"),
        ({"v": np.full((B, NK, DV), -np.inf)}, r"^v contains NaN or infinite"),
        ({"q": np.ones((B, NQ, D), dtype=complex)}, r"q must be a real numeric array"),
        ({"rule": "cubic"}, r"rule must be one of none, sqrt, linear, temperature, qk_norm"),
        ({"rule": "temperature"}, r"temperature is required"),
        ({"rule": "temperature", "temperature": 0.0}, r"temperature must be a positive"),
        ({"rule": "temperature", "temperature": -2.0}, r"temperature must be a positive"),
        ({"rule": "temperature", "temperature": math.inf}, r"temperature must be a positive"),
        ({"rule": "qk_norm", "gain": 0.0}, r"gain must be a positive"),
        ({"rule": "qk_norm", "gain": math.nan}, r"gain must be a positive"),
        ({"rule": "softcap", "cap": -1.0}, r"cap must be a positive"),
        ({"rule": "softcap", "cap": "big"}, r"cap must be a positive"),
        ({"mask": "upper"}, r"mask must be None, 'none', 'causal' or a boolean array"),
        ({"mask": np.ones((NQ, NK))}, r"mask must be a boolean array .* got dtype float64"),
        ({"mask": np.ones((NQ, NK + 1), dtype=bool)}, r"mask shape \(3, 5\) must broadcast"),
        ({"mask": np.ones((4, NQ, NK), dtype=bool)}, r"mask shape .* without enlarging"),
        ({"mask": np.ones(NK + 1, dtype=bool)}, r"mask shape \(5,\) must broadcast"),
        ({"memory_budget_bytes": 0}, r"memory_budget_bytes must be a positive integer"),
    ],
)
def test_validation_messages(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        call(**kwargs)


def test_backward_validation():
    rng = np.random.default_rng(0)
    q, k, v = qkv(rng)
    with pytest.raises(ValueError, match=r"grad_output must have the output's shape \(2, 3, 6\)"):
        scaled_dot_product_attention_backward(q, k, v, np.ones((B, NQ, DV + 1)))
    g = np.ones((B, NQ, DV))
    g[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="grad_output contains NaN"):
        scaled_dot_product_attention_backward(q, k, v, g)
    with pytest.raises(ValueError, match="d_k mismatch"):
        scaled_dot_product_attention_backward(q, k[..., :2], v, np.ones((B, NQ, DV)))


def test_overflowing_float32_logits_raise():
    q = np.full((1, 2, 4), 1e20, dtype=np.float32)
    with pytest.raises(ValueError, match="overflowed float32"):
        scaled_dot_product_attention(q, q, q, rule="none")


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("mask", [None, "causal"])
def test_check_finite_false_gives_the_same_results_on_finite_inputs(need_weights, mask):
    q, k, v = qkv(np.random.default_rng(3), np.float32)
    checked = scaled_dot_product_attention(q, k, v, mask=mask, need_weights=need_weights)
    trusted = scaled_dot_product_attention(
        q, k, v, mask=mask, need_weights=need_weights, check_finite=False
    )
    np.testing.assert_array_equal(trusted.output, checked.output)
    if need_weights:
        np.testing.assert_array_equal(trusted.weights, checked.weights)
        np.testing.assert_array_equal(trusted.logits, checked.logits)
    g = np.ones_like(checked.output)
    for a, b in zip(
        scaled_dot_product_attention_backward(q, k, v, g, mask=mask, check_finite=False),
        scaled_dot_product_attention_backward(q, k, v, g, mask=mask),
        strict=True,
    ):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        attention_logits(q, k, mask=mask, check_finite=False), attention_logits(q, k, mask=mask)
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_one_bad_entry_of_a_large_input_is_found(dtype, layout, bad):
    # Large inputs are checked by summing them (a transposed view by another sum): one
    # non-finite entry must decide, and a finite input whose sum overflows must pass.
    rng = np.random.default_rng(6)
    q, k, v = qkv(rng, dtype, (4, 64, 32), (4, 64, 32), (4, 64, 32))
    if layout == "transposed":
        k = np.ascontiguousarray(k.swapaxes(-1, -2)).swapaxes(-1, -2)
        assert not k.flags.c_contiguous
    huge = np.full_like(v, np.finfo(dtype).max / 4)  # finite; its sum is +inf
    output = scaled_dot_product_attention(q, k, huge, need_weights=False).output
    np.testing.assert_allclose(output, huge, rtol=1e-5)
    k[3, 17, 5] = bad
    with pytest.raises(ValueError, match=r"^k contains NaN or infinite"):
        scaled_dot_product_attention(q, k, v, need_weights=False)


def test_check_finite_false_skips_only_the_input_check():
    """Without the check a NaN in v reaches the output; a NaN in q still fails in the softmax."""
    q, k, v = qkv(np.random.default_rng(4))
    v[0, 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^v contains NaN"):
        scaled_dot_product_attention(q, k, v)
    out = scaled_dot_product_attention(q, k, v, check_finite=False).output
    assert np.isnan(out[0, :, 2]).all() and np.isfinite(out[1]).all()
    q[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="logits contain NaN"):
        scaled_dot_product_attention(q, k, np.ones_like(v), check_finite=False)
    q, k, v = qkv(np.random.default_rng(5))
    g = np.ones((B, NQ, DV))
    g[0, 0, 0] = np.inf
    with pytest.raises(ValueError, match=r"^grad_output contains NaN"):
        scaled_dot_product_attention_backward(q, k, v, g)
    with np.errstate(invalid="ignore"):  # inf − inf inside: numpy's warning, not the engine's
        grad_v = scaled_dot_product_attention_backward(q, k, v, g, check_finite=False)[2]
    assert not np.isfinite(grad_v[0]).all() and np.isfinite(grad_v[1]).all()


# ------------------------------------------------------------------------------------------
# Memory guard
# ------------------------------------------------------------------------------------------


def test_memory_guard_message_and_budget():
    q = np.zeros((4, 1000, 8), dtype=np.float32)
    # logits + weights: 2 · 4 · 1000 · 1000 · 4 bytes = 32 MB
    with pytest.raises(MemoryBudgetError) as info:
        scaled_dot_product_attention(q, q, q, memory_budget_bytes=10 << 20)
    msg = str(info.value)
    assert "30.52 MiB" in msg and "10.00 MiB" in msg and "(4, 1000, 1000)" in msg
    assert isinstance(info.value, ValueError)
    res = scaled_dot_product_attention(q, q, q, memory_budget_bytes=40 << 20)
    assert res.weights.shape == (4, 1000, 1000)
    with pytest.raises(MemoryBudgetError, match="backward"):
        scaled_dot_product_attention_backward(
            q, q, q, np.zeros_like(q), memory_budget_bytes=20 << 20
        )
    with pytest.raises(MemoryBudgetError):
        attention_logits(q, q, memory_budget_bytes=1 << 20)


def test_memory_guard_refuses_before_allocating():
    # 64 heads of 8192² float64 would be 64 GiB; the guard must fire instantly, not MemoryError.
    q = np.broadcast_to(np.zeros((1, 8192, 1)), (64, 8192, 1))
    with pytest.raises(MemoryBudgetError, match=r"64.00 GiB .* budget of 1.00 GiB"):
        scaled_dot_product_attention(q, q, q)


def test_module_budget_setting():
    assert get_memory_budget() == DEFAULT_MEMORY_BUDGET_BYTES
    q = np.zeros((1, 100, 2))
    try:
        set_memory_budget(1000)
        assert get_memory_budget() == 1000
        with pytest.raises(MemoryBudgetError, match="budget of 1000 B"):
            scaled_dot_product_attention(q, q, q)
        scaled_dot_product_attention(q, q, q, memory_budget_bytes=1 << 20)  # argument wins
        for bad in (0, -5, 1.5, True, "1"):
            with pytest.raises(ValueError, match="nbytes must be a positive integer"):
                set_memory_budget(bad)
    finally:
        set_memory_budget(DEFAULT_MEMORY_BUDGET_BYTES)


def test_check_memory():
    check_memory(100, "thing", budget=100)
    with pytest.raises(MemoryBudgetError, match=r"thing would need 2.00 KiB \(2,048 bytes\)"):
        check_memory(2048, "thing", budget=1024)
