"""The Rule value: one object per scaling rule that every layer passes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine import Rule, attention_logits, scaled_dot_product_attention
from engine.config import AttentionConfig, ScalingRule, SweepConfig
from engine.core import theory
from engine.core.attention import scaled_dot_product_attention_backward
from engine.core.scaling import scale_factor


def _qkv(seed: int = 0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((2, 12, 16)) for _ in range(3))


@pytest.mark.parametrize("kind", list(ScalingRule))
@pytest.mark.parametrize("mask", [None, "causal"])
def test_a_rule_gives_the_attention_of_its_keywords(kind, mask):
    q, k, v = _qkv()
    rule = Rule(kind, temperature=3.0, gain=2.0, cap=1.5, ssmax_s=0.7, yarn_factor=9.0)
    keywords = {"temperature": 3.0, "gain": 2.0, "cap": 1.5, "ssmax_s": 0.7, "yarn_factor": 9.0}
    by_rule = scaled_dot_product_attention(q, k, v, rule=rule, mask=mask)
    by_keywords = scaled_dot_product_attention(q, k, v, rule=kind, mask=mask, **keywords)
    np.testing.assert_array_equal(by_rule.output, by_keywords.output)
    np.testing.assert_array_equal(attention_logits(q, k, rule=rule, mask=mask),
                                  attention_logits(q, k, rule=kind, mask=mask, **keywords))
    grads = scaled_dot_product_attention_backward(q, k, v, v, rule=rule, mask=mask)
    expected = scaled_dot_product_attention_backward(q, k, v, v, rule=kind, mask=mask,
                                                     **keywords)
    for got, want in zip(grads, expected, strict=True):
        np.testing.assert_array_equal(got, want)


def test_without_a_temperature_the_temperature_rule_is_sqrt():
    q, k, v = _qkv(1)
    np.testing.assert_array_equal(
        scaled_dot_product_attention(q, k, v, rule=Rule("temperature")).output,
        scaled_dot_product_attention(q, k, v, rule="sqrt").output)
    assert Rule("temperature").scale(64) == 0.125
    assert Rule("qk_norm").gain_at(64) == 8.0
    assert Rule("qk_norm", gain=3.0).gain_at(64) == 3.0


def test_the_keyword_form_still_asks_for_a_temperature():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="temperature is required"):
        scaled_dot_product_attention(q, k, v, rule="temperature")
    with pytest.raises(ValueError, match="temperature is required"):
        Rule.from_keywords("temperature", temperature=None)


def test_parameters_beside_a_rule_are_refused_by_name():
    q, k, v = _qkv()
    with pytest.raises(ValueError, match="cap, yarn_factor given beside a Rule"):
        scaled_dot_product_attention(q, k, v, rule=Rule("softcap"), cap=2.0, yarn_factor=2.0)
    with pytest.raises(TypeError, match=r"unknown rule parameter\(s\) temprature; the "
                       "rule parameters are temperature, gain"):
        scaled_dot_product_attention(q, k, v, rule="temperature", temprature=2.0)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("temperature", 0.0, "temperature"), ("gain", -1.0, "gain"), ("cap", math.nan, "cap"),
    ("ssmax_s", 0.0, "ssmax_s"), ("yarn_factor", 0.5, "yarn_factor must be >= 1"),
])
def test_a_rule_refuses_a_bad_parameter(field, value, message):
    with pytest.raises(ValueError, match=message):
        Rule("sqrt", **{field: value})
    with pytest.raises(ValueError, match="rule must be one of"):
        Rule("sqrtt")


def test_a_rule_takes_the_parameters_of_a_config():
    config = AttentionConfig(temperature=2.0, gain=5.0, cap=7.0, ssmax_s=0.9, yarn_factor=16.0)
    rule = Rule.of("ssmax", config)
    assert (rule.kind, rule.temperature, rule.gain, rule.cap, rule.ssmax_s, rule.yarn_factor) == (
        ScalingRule.SSMAX, 2.0, 5.0, 7.0, 0.9, 16.0)
    # A sweep's T = None stays None: √d_k at each swept d_k.
    sweep = Rule.of("temperature", SweepConfig(values=(4.0, 16.0)))
    assert [sweep.scale(d) for d in (4, 16)] == [0.5, 0.25]
    assert rule.replace(kind="yarn", cap=3.0) == Rule(
        "yarn", temperature=2.0, gain=5.0, cap=3.0, ssmax_s=0.9, yarn_factor=16.0)


@pytest.mark.parametrize("kind", list(ScalingRule))
def test_the_theory_variance_is_c_squared_times_the_raw_one(kind):
    rule = Rule(kind, temperature=4.0, gain=2.0)
    measured = theory.scaled_logit_variance(kind, 64, temperature=4.0, gain=2.0, n=100)
    if kind is ScalingRule.SOFTCAP:
        assert math.isnan(measured)
    elif kind is ScalingRule.QK_NORM:
        assert measured == 4.0 / 64
        assert math.isnan(rule.logit_variance(64, 64.0, 1.0, isotropic=False))
    else:
        assert measured == pytest.approx(rule.scale(64, 100) ** 2 * 64, rel=1e-15)


def test_scale_factor_values():
    assert scale_factor("none", 64) == 1.0
    assert scale_factor("sqrt", 64) == 0.125
    assert scale_factor("linear", 64) == 1 / 64
    assert scale_factor("temperature", 64, temperature=4.0) == 0.25
    assert scale_factor("qk_norm", 64) == 1.0
    assert scale_factor("softcap", 64) == 0.125
    assert scale_factor("log_n", 64, n=100) == pytest.approx(math.log(100) / 8, rel=1e-15)
    assert scale_factor("ssmax", 64, n=100, ssmax_s=0.43) == pytest.approx(
        0.43 * math.log(100) / 8, rel=1e-15)
    assert scale_factor("yarn", 64, yarn_factor=16.0) == pytest.approx(
        (0.1 * math.log(16) + 1) ** 2 / 8, rel=1e-15)
    assert scale_factor("yarn", 64, yarn_factor=1.0) == 0.125
    with pytest.raises(ValueError, match=r"n \(keys per row\) is required"):
        scale_factor("log_n", 64)
    with pytest.raises(ValueError, match="yarn_factor must be >= 1"):
        scale_factor("yarn", 64, yarn_factor=0.5)
    with pytest.raises(ValueError, match="temperature is required"):
        scale_factor("temperature", 64)
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        scale_factor("sqrt", 0)
