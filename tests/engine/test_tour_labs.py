"""The tour's precision and length quantities against independent computations.

Engine-only (no Qt). The references are written out here with numpy float16 and ml_dtypes
casts, numpy softmaxes and the closed forms, not through the engine's precision or length code.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from engine.analysis.length import LENGTH_VALUES, length_sweep_config
from engine.analysis.sweep import run_sweep
from engine.analysis.sweep_rows import chunk_rows, draw_rows, setting_for
from engine.config import AttentionConfig, ScalingRule, SweepConfig, SweepParam
from engine.tour.evaluate import evaluate_claims, evaluate_quantity
from engine.tour.steps import step_config
from tests.engine.tour_results import step_results, tour_step

CONFIG = AttentionConfig(n_tokens=64, d_k=64, samples=2000, rule="sqrt")


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _value(quantity: str, config: AttentionConfig = CONFIG, **claim) -> float:
    return evaluate_quantity({"quantity": quantity, "greater_than": -1, **claim}, config)


def _sweep_logits(config: AttentionConfig, c: float) -> np.ndarray:
    """The scaled float64 logits of the d_k sweep's rows at the config's d_k and n (same draws)."""
    sweep = SweepConfig(param=SweepParam.D_K, values=(config.d_k,), rules=(ScalingRule.NONE,),
                        n_tokens=config.n_tokens, samples=config.samples, seed=config.seed)
    st = setting_for(sweep, config.d_k)
    per_chunk = chunk_rows(sweep, st.n)
    chunks, done = [], 0
    for index in range(-(-sweep.samples // per_chunk)):
        rows = min(per_chunk, sweep.samples - done)
        chunks.append(draw_rows(sweep, st, 0, index, rows, False)[0] * c)
        done += rows
    return np.concatenate(chunks)


def _fp16_naive_overflow(z: np.ndarray) -> np.ndarray:
    """Rows whose naive float16 softmax has a non-finite exponential, sum or weight."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(z.astype(np.float16))
        s = e.astype(np.float32).sum(axis=-1).astype(np.float16)
        p = (e.astype(np.float32) / s[:, None].astype(np.float32)).astype(np.float16)
    return ~(np.isfinite(e).all(axis=-1) & np.isfinite(s) & np.isfinite(p).all(axis=-1))


def test_fp16_naive_overflow_share_matches_a_direct_float16_softmax():
    # The sweep's own rows, pushed through numpy's float16 exp: the same overflowing rows.
    for rule, c in (("none", 1.0), ("sqrt", 1 / 8)):
        mine = float(np.mean(_fp16_naive_overflow(_sweep_logits(CONFIG, c))))
        engine = _value("sweep_overflow_share", rule=rule, dtype="float16", softmax="naive")
        assert abs(mine - engine) <= 1 / CONFIG.samples, (rule, mine, engine)
    assert _value("sweep_overflow_share", rule="sqrt", dtype="float16", softmax="naive") == 0
    # Fresh q, k of our own (not the sweep's stream): unscaled d_k = 64 logits overflow the naive
    # fp16 softmax in almost every row (a row max ≈ 20 > ln 65504 ≈ 11.1), scaled ones never.
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1000, 1, 64))
    k = rng.standard_normal((1000, 64, 64))
    z = (q @ k.transpose(0, 2, 1))[:, 0, :]
    assert abs(np.mean(_fp16_naive_overflow(z)) - 0.996) < 0.01
    assert not _fp16_naive_overflow(z / 8).any()


def test_stable_softmax_removes_the_overflow_not_the_rounding():
    engine_share = _value("sweep_overflow_share", rule="none", dtype="float16")
    engine_err = _value("sweep_weight_err_mean", rule="none", dtype="float16")
    z = _sweep_logits(CONFIG, 1.0)
    z16 = z.astype(np.float16)
    with np.errstate(over="ignore"):
        t = (z16.astype(np.float32) - z16.astype(np.float32).max(axis=-1, keepdims=True))
        e = np.exp(t.astype(np.float16))
    assert np.isfinite(e).all() and engine_share == 0
    # A float16 weight near 1 is off by up to half a unit in the last place (2^-11 ≈ 4.9e-4).
    assert 1e-4 < engine_err < 2e-3


def test_bf16_logit_rounding_error_matches_ml_dtypes():
    # Only the logits rounded to bfloat16 (ml_dtypes), softmax in float64: the engine's mean
    # per-row max|Δp| over the same rows, to rounding.
    for rule, c, expected in (("none", 1.0, 3.8e-3), ("sqrt", 1 / 8, 4.0e-4)):
        z = _sweep_logits(CONFIG, c)
        zb = z.astype(ml_dtypes.bfloat16).astype(np.float64)
        mine = float(np.mean(np.abs(_softmax(zb) - _softmax(z)).max(axis=-1)))
        engine = _value("sweep_weight_err_mean", rule=rule, dtype="bfloat16", rounding="logits")
        assert math.isclose(mine, engine, rel_tol=1e-9), (rule, mine, engine)
        assert math.isclose(engine, expected, rel_tol=0.1)  # ~3 standard errors at 2000 rows


def test_largest_values_and_the_naive_exp_limit():
    assert _value("dtype_largest", dtype="float16") == float(np.finfo(np.float16).max) == 65504
    assert _value("dtype_largest", dtype="float8_e4m3") == 448 == float(
        ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
    limit = _value("dtype_exp_limit", dtype="float16")
    with np.errstate(over="ignore"):
        assert np.isfinite(np.exp(np.float16(11.08))) and np.isinf(np.exp(np.float16(11.1)))
    assert 11.08 < limit < 11.1


def test_max_logit_grows_like_sqrt_dk_without_scaling():
    unscaled = [_value("sweep_max_logit_mean", rule="none", at={"d_k": d}) for d in (64, 256)]
    scaled = [_value("sweep_max_logit_mean", rule="sqrt", at={"d_k": d}) for d in (64, 256)]
    assert math.isclose(unscaled[1] / unscaled[0], 2, rel_tol=0.03)  # √(256/64)
    assert math.isclose(scaled[1], scaled[0], rel_tol=0.03)
    # Independent: the mean row max of 64 N(0, 64) logits is 8 × E[max of 64 N(0, 1)] ≈ 8 × 2.41.
    rng = np.random.default_rng(3)
    expected = 8 * float(np.mean(np.abs(rng.standard_normal((20000, 64))).max(axis=-1)))
    assert math.isclose(unscaled[0], expected, rel_tol=0.02)


@pytest.mark.parametrize("rule", [ScalingRule.SQRT, ScalingRule.LOG_N, ScalingRule.SSMAX,
                                  ScalingRule.YARN])
def test_length_quantities_are_the_length_views_points(rule):
    # The view sweeps every length rule at once; the claim sweeps one: the same rows.
    points = run_sweep(length_sweep_config(CONFIG, values=LENGTH_VALUES[:7]))
    for point in (p for p in points if p.rule is rule and p.value in (64, 1024)):
        n = int(point.value)
        assert _value("length_entropy_mean", rule=rule.value, n=n) == point.entropy_mean
        assert _value("length_p_max_mean", rule=rule.value, n=n) == point.p_max_mean
        assert _value("length_entropy_ratio", rule=rule.value, n=n) == point.entropy_mean / \
            math.log(n)


def test_length_entropy_against_direct_gaussian_rows():
    # 1/√d_k rows at n keys are n iid N(0, 1) logits; ln n/√d_k multiplies them by ln n.
    rng = np.random.default_rng(11)
    n = 1024
    z = rng.standard_normal((2000, n))
    for rule, c, tol in (("sqrt", 1.0, 0.02), ("log_n", math.log(n), 0.1)):
        p = _softmax(c * z)
        entropy = float(np.mean(-np.sum(p * np.log(np.where(p > 0, p, 1)), axis=-1)))
        assert abs(_value("length_entropy_mean", rule=rule, n=n) - entropy) < tol, rule
    assert _value("length_p_max_mean", rule="sqrt", n=65536) < 1e-3
    assert _value("length_p_max_mean", rule="log_n", n=65536) > 0.5


def test_ssmax_toy_against_explicit_softmaxes():
    for n in (64, 1024, 1 << 20):
        z = np.full(n, -2.0)
        z[0] = 3.0
        soft = _softmax(z)[0]
        ssmax = _softmax(0.43 * math.log(n) * z)[0]
        assert math.isclose(_value("ssmax_toy_softmax", n=n), soft, rel_tol=1e-9)
        assert math.isclose(_value("ssmax_toy_ssmax", n=n), ssmax, rel_tol=1e-9)
    # The config's s is used: with s = 0.1 < 1/5 SSMax fades too.
    assert _value("ssmax_toy_ssmax", CONFIG.replace(ssmax_s=0.1), n=1 << 20) < 0.01


def test_yarn_factor_follows_the_config():
    assert math.isclose(_value("yarn_logit_factor"), (0.1 * math.log(4) + 1) ** 2)
    assert math.isclose(_value("yarn_logit_factor", at={"yarn_factor": 16}),
                        (0.1 * math.log(16) + 1) ** 2)


def test_lab_quantities_refuse_configs_the_sweeps_cannot_draw():
    with pytest.raises(ValueError, match="one of the length view's n"):
        _value("length_p_max_mean", n=1000)
    with pytest.raises(ValueError, match="init_std = 1"):
        _value("length_p_max_mean", CONFIG.replace(init_std=2.0), n=64)
    with pytest.raises(ValueError, match="use_projection = false"):
        _value("sweep_overflow_share", CONFIG.replace(use_projection=True), dtype="float16")


# The same claim under the wrong physics: unscaled for 1/√d_k and back, 1/√d_k for the length
# rules, bfloat16 for float16 (and back), SSMax's toy for the softmax's (and back), no extension.
_SWAP_RULE = {"none": "sqrt", "sqrt": "none", "log_n": "sqrt", "ssmax": "sqrt", "yarn": "sqrt"}
_SWAP_DTYPE = {"float16": "bfloat16", "bfloat16": "float16", "float8_e4m3": "float16"}
_SWAP_TOY = {"ssmax_toy_softmax": "ssmax_toy_ssmax", "ssmax_toy_ssmax": "ssmax_toy_softmax"}


def _wrong(claim: dict) -> dict:
    wrong = dict(claim)
    if "rule" in claim:
        wrong["rule"] = _SWAP_RULE[claim["rule"]]
    elif "dtype" in claim:
        wrong["dtype"] = _SWAP_DTYPE[claim["dtype"]]
    elif claim["quantity"] in _SWAP_TOY:
        wrong["quantity"] = _SWAP_TOY[claim["quantity"]]
    else:
        wrong["at"] = {"yarn_factor": 1.0}
    return wrong


@pytest.mark.parametrize("step_id", ["half_precision", "long_context"])
def test_the_lab_steps_claims_fail_under_the_wrong_physics(step_id):
    step = tour_step(step_id)
    config = step_config(step["settings"])
    assert all(r.passed for r in step_results(step_id))
    wrong = evaluate_claims([_wrong(c) for c in step["claims"]], config)
    still = [r.claim for r in wrong if r.passed]
    # Only the stable softmax's "no overflow" holds whatever the scale: that is its point.
    assert still == [c for c in map(_wrong, step["claims"])
                     if c["quantity"] == "sweep_overflow_share" and c.get("softmax") == "stable"]
