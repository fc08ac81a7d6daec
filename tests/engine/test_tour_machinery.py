"""engine.tour's claim machinery: targets, validation and evaluation."""

from __future__ import annotations

import math
import threading

import pytest

from engine.config import AttentionConfig, ScalingRule
from engine.tour.claims import (
    DTYPE_QUANTITIES,
    LENGTH_QUANTITIES,
    QUANTITIES,
    RULELESS_QUANTITIES,
    check_value,
    claim_numbers,
    describe_target,
    format_value,
    validate_claim,
)
from engine.tour.evaluate import evaluate_claims, evaluate_quantity
from engine.tour.steps import expand_ui_refs, validate_tour

EXPLORER_VIEWS = ("heatmap", "softmax")


def test_check_value_and_targets():
    approx = {"quantity": "logit_var", "approx": 64, "rel_tol": 0.1}
    assert check_value(approx, 60.3) and not check_value(approx, 57.0)
    assert not check_value(approx, math.nan)
    bounds = {"quantity": "p_max_mean", "greater_than": 0.7, "less_than": 0.9}
    assert check_value(bounds, 0.8) and not check_value(bounds, 0.7)
    assert not check_value(bounds, 0.95)
    exact = {"quantity": "temperature_max_diff", "approx": 0, "abs_tol": 0}
    assert check_value(exact, 0.0) and not check_value(exact, 1e-17)
    assert claim_numbers(bounds) == (0.7, 0.9)
    assert describe_target(approx) == "≈ 64 ± 10 %"
    assert describe_target({"quantity": "logit_var", "approx": 0, "abs_tol": 0.5}) == "≈ 0 ± 0.5"
    assert describe_target(bounds) == "> 0.7, < 0.9"


def test_format_value():
    assert format_value(63.94) == "63.9"
    assert format_value(0.000346) == "0.000346"
    assert format_value(0.0) == "0"
    assert format_value(5184.2) == "5184"
    assert format_value(3.2e-9) == "3.20e-09"
    assert format_value(math.nan) == "nan"


@pytest.mark.parametrize(
    ("claim", "message"),
    [
        ({"quantity": "nope", "approx": 1}, "quantity must be one of"),
        ({"quantity": "logit_var"}, "either 'approx'"),
        ({"quantity": "logit_var", "approx": 1, "less_than": 2}, "either 'approx'"),
        ({"quantity": "logit_var", "greater_than": 1, "rel_tol": 0.1}, "only go with 'approx'"),
        ({"quantity": "logit_var", "approx": 1, "rule": "cube"}, "rule must be one of"),
        ({"quantity": "logit_var", "approx": "1"}, "finite number"),
        ({"quantity": "logit_var", "approx": 1, "colour": "red"}, "unknown claim field"),
        ({"quantity": "train_final_loss", "less_than": 1}, "needs 'lr'"),
        ({"quantity": "logit_var", "approx": 1, "lr": 0.1}, "only go with the train"),
        ({"quantity": "correlation_rms", "rule": "qk_norm", "approx": 1}, "none, sqrt and linear"),
        ({"quantity": "sweep_overflow_share", "approx": 0}, "needs a 'dtype'"),
        ({"quantity": "sweep_overflow_share", "dtype": "float12", "approx": 0},
         "dtype must be one of"),
        ({"quantity": "sweep_overflow_share", "dtype": "float16", "softmax": "lazy",
          "approx": 0}, "softmax must be one of"),
        ({"quantity": "sweep_weight_err_mean", "dtype": "float16", "rounding": "some",
          "approx": 0}, "rounding must be one of"),
        ({"quantity": "sweep_p_max_mean", "dtype": "float16", "approx": 0}, "'dtype' only goes"),
        ({"quantity": "dtype_largest", "dtype": "float16", "softmax": "naive", "approx": 0},
         "'softmax' only goes"),
        ({"quantity": "dtype_largest", "dtype": "float16", "rule": "none", "approx": 0},
         "leave out 'rule'"),
        ({"quantity": "length_p_max_mean", "approx": 0}, "integer 'n'"),
        ({"quantity": "length_p_max_mean", "n": 1, "approx": 0}, "integer 'n'"),
        ({"quantity": "ssmax_toy_ssmax", "n": 64.0, "approx": 0}, "integer 'n'"),
        ({"quantity": "length_p_max_mean", "n": 2**23, "approx": 0}, "integer 'n'"),
        ({"quantity": "logit_var", "n": 64, "approx": 0}, "'n' only goes"),
        ({"quantity": "length_entropy_mean", "n": 1000, "approx": 0}, "length view's n"),
    ],
)
def test_validate_claim_rejects_bad_claims(claim, message):
    with pytest.raises(ValueError, match=message):
        validate_claim(claim)


def test_every_quantity_is_computable():
    # Each quantity once, on small settings, against an independent statement of the law.
    config = AttentionConfig(n_tokens=32, d_k=16, d_model=16, samples=500)
    values = {}
    for quantity in QUANTITIES:
        if quantity == "train_final_loss":
            continue  # trained by test_tour_claims.py (the learning_rate step)
        rule = "linear" if quantity == "correlation_rms" else "none"
        claim = {"quantity": quantity, "rule": rule, "greater_than": -1}
        if quantity in RULELESS_QUANTITIES:
            del claim["rule"]
        if quantity == "sweep_p_max_share":
            claim["threshold"] = 0.99
        if quantity in DTYPE_QUANTITIES:
            claim["dtype"] = "float16"
        if quantity in LENGTH_QUANTITIES:
            claim["n"] = 256
        values[quantity] = evaluate_quantity(claim, config)
    assert values["logit_var_theory"] == 16.0
    assert math.isclose(values["logit_var"], 16.0, rel_tol=0.15)
    assert math.isclose(values["sweep_logit_var"], 16.0, rel_tol=0.1)
    assert 0 < values["p_max_mean"] <= 1 and 0 < values["sweep_p_max_mean"] <= 1
    assert values["sweep_jac_fro_median"] == values["sweep_jac_raw_median"]  # c = 1
    # config.temperature = 8 ≠ √16: the rows differ, forward and backward.
    assert values["temperature_max_diff"] > 0 and values["temperature_grad_max_diff"] > 0
    assert math.isclose(values["correlation_rms"], 1 / 4, rel_tol=0.1)  # ρ = 0: 1/√d_k
    # The same rows as the sweep: at 0.99 the share is the sweep's saturated share, exactly.
    assert values["sweep_p_max_share"] == values["sweep_saturated_share"]
    assert abs(values["matched_gap_mean"]) < 1.5  # ρ = 0: no matched key (std of a row ≈ 4/√32)
    # Unscaled against unscaled: the same step and the same gradients.
    for quantity in ("logit_step_ratio_adam", "logit_step_ratio_sgd", "train_grad_ratio_w_q",
                     "train_grad_ratio_w_v", "train_grad_ratio_w_o"):
        assert values[quantity] == 1.0, quantity
    assert values["backward_formula_err"] < 1e-12
    # Unscaled d_k = 16 logits (std 4, max ≈ 2.4σ) stay far below 65504 and ln 65504 ≈ 11.1:
    # no overflow with the stable softmax, but a rounding error.
    assert values["sweep_overflow_share"] == 0 and 0 < values["sweep_weight_err_mean"] < 0.01
    assert 6 < values["sweep_max_logit_mean"] < 14
    assert values["dtype_largest"] == 65504 and values["dtype_exp_limit"] == math.log(65504)
    # Unscaled logits of std 4 at n = 256: a peaked row, entropy well below ln 256.
    assert 0 < values["length_entropy_mean"] < math.log(256) and 0 < values["length_p_max_mean"] < 1
    assert math.isclose(values["length_entropy_ratio"],
                        values["length_entropy_mean"] / math.log(256))
    assert values["ssmax_toy_softmax"] < values["ssmax_toy_ssmax"] < 1
    assert math.isclose(values["yarn_logit_factor"], (0.1 * math.log(4) + 1) ** 2)


def test_sweep_quantities_refuse_configs_the_sweep_cannot_draw():
    claim = {"quantity": "sweep_p_max_mean", "rule": "none", "greater_than": 0}
    with pytest.raises(ValueError, match="init_std = 1"):
        evaluate_claims([claim], AttentionConfig(init_std=2.0))
    with pytest.raises(ValueError, match="use_projection = false"):
        evaluate_claims([claim], AttentionConfig(use_projection=True))


def test_claim_overrides_apply_to_that_claim_only():
    config = AttentionConfig(n_tokens=16, d_k=16, d_model=16)
    claims = [{"quantity": "logit_var_theory", "rule": "none", "approx": 16},
              {"quantity": "logit_var_theory", "rule": "none", "at": {"d_k": 64}, "approx": 64}]
    assert [r.value for r in evaluate_claims(claims, config)] == [16.0, 64.0]


def test_cancelled_evaluation_gives_nan():
    cancel = threading.Event()
    cancel.set()
    results = evaluate_claims([{"quantity": "logit_var", "approx": 1}], AttentionConfig(),
                              cancel=cancel)
    assert math.isnan(results[0].value) and not results[0].passed


def test_expand_ui_refs():
    text = "Open {ui:SoftmaxView|Softmax of one row} and set {ui:ParameterPanel|heads h}."
    assert expand_ui_refs(text) == "Open Softmax of one row and set heads h."
    assert expand_ui_refs(text, lambda ctx, s: f"<{ctx}>") == "Open <SoftmaxView> and set " \
        "<ParameterPanel>."


def test_validate_tour_rejects_bad_tours():
    with pytest.raises(ValueError, match="non-empty 'steps'"):
        validate_tour({"steps": []})
    step = {"id": "a", "view": "heatmap", "settings": {}, "claims": [
        {"quantity": "logit_var", "approx": 1}]}
    validate_tour({"steps": [step]}, EXPLORER_VIEWS)
    with pytest.raises(ValueError, match="duplicate step id"):
        validate_tour({"steps": [step, step]})
    with pytest.raises(ValueError, match="view"):
        validate_tour({"steps": [{**step, "view": "nowhere"}]}, EXPLORER_VIEWS)
    with pytest.raises(ValueError, match="d_k"):
        validate_tour({"steps": [{**step, "settings": {"d_k": 0}}]})
    with pytest.raises(ValueError, match="claims"):
        validate_tour({"steps": [{**step, "claims": []}]})
    with pytest.raises(ValueError, match="'given' must be a list of numbers"):
        validate_tour({"steps": [{**step, "given": ["1"]}]})
    with pytest.raises(ValueError, match="'formulas' must be a list"):
        validate_tour({"steps": [{**step, "formulas": [{"value": 1}]}]})


@pytest.mark.parametrize(("rule", "field", "values"), [
    (ScalingRule.SSMAX, "ssmax_s", (0.43, 2.0)),
    (ScalingRule.YARN, "yarn_factor", (1.0, 4.0)),
])
def test_sweep_claims_use_the_steps_rule_parameter(rule, field, values):
    from engine.analysis.sweep import run_sweep
    from engine.config import SweepConfig

    found = []
    for value in values:
        config = AttentionConfig(n_tokens=64, d_k=64, samples=300, seed=3, rule=rule,
                                 **{field: value})
        claim = {"quantity": "sweep_entropy_mean", "rule": rule.value, "greater_than": 0.0}
        found.append(evaluate_quantity(claim, config))
        # The same point from a sweep written out by hand with that parameter.
        (point,) = run_sweep(SweepConfig(values=(64,), rules=(rule,), n_tokens=64,
                                         samples=300, seed=3, max_logits=300 * 64,
                                         **{field: value}))
        assert found[-1] == pytest.approx(float(point.entropy_mean), rel=1e-12)
    assert found[0] != pytest.approx(found[1], rel=1e-3)
