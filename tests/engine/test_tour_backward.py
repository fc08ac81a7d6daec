"""The tour's backward-pass and share quantities against independent computations.

Engine-only (no Qt): numpy float64 references written out here, not the engine's code paths.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.sampling import draw_qk
from engine.config import AttentionConfig, ScalingRule
from engine.tour import backward
from engine.tour.claims import validate_claim
from engine.tour.evaluate import evaluate_quantity

CONFIG = AttentionConfig(n_tokens=32, d_k=64, samples=4000)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_backward_formula_matches_finite_differences():
    # ∂L/∂Q = c·(J·g)·K, with L = Σ O∘dO: the engine's gradient equals the formula, and the
    # formula equals central differences of the forward pass written out here.
    for rule in (ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR):
        assert backward.backward_formula_error(CONFIG, rule) < 1e-12
    c = 1 / 8
    q, k = draw_qk(CONFIG)
    q, k = q[0], k[0]
    rng = np.random.default_rng(CONFIG.seed)
    v, up = rng.standard_normal(q.shape), rng.standard_normal(q.shape)
    p = _softmax(c * q @ k.T)
    g = up @ v.T
    formula = c * ((p * (g - np.sum(p * g, axis=-1, keepdims=True))) @ k)

    def loss(qq: np.ndarray) -> float:
        return float(np.sum((_softmax(c * qq @ k.T) @ v) * up))

    h = 1e-6
    for i, j in [(0, 0), (5, 17), (31, 63)]:
        plus, minus = q.copy(), q.copy()
        plus[i, j] += h
        minus[i, j] -= h
        fd = (loss(plus) - loss(minus)) / (2 * h)
        assert math.isclose(fd, formula[i, j], rel_tol=1e-6, abs_tol=1e-8)


@pytest.mark.parametrize(("rule", "c"), [(ScalingRule.SQRT, 1 / 8), (ScalingRule.LINEAR, 1 / 64)])
def test_logit_step_ratio_is_one_over_c_for_adam_and_one_over_c2_for_sgd(rule, c):
    assert math.isclose(backward.logit_step_ratio(CONFIG, rule, "sgd"), 1 / c**2, rel_tol=1e-9)
    # Adam's first step is lr·g/(|g| + ε): the gradient's scale cancels up to ε.
    assert math.isclose(backward.logit_step_ratio(CONFIG, rule, "adam"), 1 / c, rel_tol=1e-3)


def test_train_grad_ratios_show_value_and_output_weights_are_not_starved():
    ratios = {p: backward.train_grad_ratio(CONFIG, ScalingRule.SQRT, p)
              for p in backward.TRAIN_GRAD_PARAMS}
    # No J on the W_V and W_O paths: their unscaled gradients are larger, not vanishing.
    assert ratios["w_v"] > 1.5 and ratios["w_o"] > 1.5
    assert ratios["w_q"] > 1 and ratios["w_k"] > 1
    assert backward.train_grad_ratio(CONFIG, ScalingRule.NONE, "w_v") == 1.0
    with pytest.raises(ValueError, match="param must be one of"):
        backward.train_grad_ratio(CONFIG, ScalingRule.SQRT, "w_u")


def test_backward_quantities_refuse_rules_without_a_scalar_scale():
    with pytest.raises(ValueError, match="logits c·q·k"):
        backward.logit_step_ratio(CONFIG, ScalingRule.SOFTCAP, "adam")
    with pytest.raises(ValueError, match="logits c·q·k"):
        validate_claim({"quantity": "train_grad_ratio_w_v", "rule": "qk_norm", "approx": 1})


def test_p_max_share_against_a_reference_draw():
    # Logits drawn directly as N(0, s²), s = 2.9, n = 64: the share of rows with p_max above a
    # threshold, against an independent numpy draw of many more rows.
    config = AttentionConfig(n_tokens=64, d_k=64, samples=20_000)
    claim = {"quantity": "sweep_p_max_share", "rule": "none", "logit_std": 2.9,
             "threshold": 0.5, "greater_than": 0}
    share = evaluate_quantity(claim, config)
    rng = np.random.default_rng(12345)
    ref = np.mean(_softmax(2.9 * rng.standard_normal((200_000, 64))).max(axis=1) > 0.5)
    assert abs(share - ref) < 4 * math.sqrt(ref * (1 - ref) / 20_000)
    mean = evaluate_quantity({"quantity": "sweep_p_max_mean", "rule": "none", "logit_std": 2.9,
                              "greater_than": 0}, config)
    assert 0.4 < mean < 0.5


def test_matched_gap_is_c_rho_d_k():
    config = AttentionConfig(n_tokens=64, d_k=64, heads=8, d_model=512, rho=-0.5)
    for rule, c in (("none", 1.0), ("sqrt", 1 / 8), ("linear", 1 / 64)):
        gap = evaluate_quantity({"quantity": "matched_gap_mean", "rule": rule,
                                 "less_than": 0}, config)
        assert math.isclose(gap, c * -0.5 * 64, rel_tol=0.05)


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({"quantity": "sweep_p_max_share", "approx": 0.5}, "needs a 'threshold'"),
        ({"quantity": "sweep_p_max_share", "threshold": 1.0, "approx": 0.5}, "needs a 'threshold'"),
        ({"quantity": "logit_var", "threshold": 0.5, "approx": 1}, "only goes with"),
        ({"quantity": "logit_var", "logit_std": 2.0, "approx": 1}, "only goes with the sweep"),
        ({"quantity": "sweep_p_max_mean", "logit_std": 0, "approx": 1}, "must be > 0"),
    ],
)
def test_validate_rejects_misplaced_threshold_and_logit_std(claim, message):
    with pytest.raises(ValueError, match=message):
        validate_claim(claim)
