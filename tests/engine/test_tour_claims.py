"""The guided tour's claims hold for the engine, and every text states the number it claims.

Engine-only: the tour files are parsed with the standard library, no Qt is imported.
"""

from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path

import pytest

from engine.config import AttentionConfig, ScalingRule
from engine.config.train import TrainConfig
from engine.tour.claims import (
    DTYPE_QUANTITIES,
    LENGTH_QUANTITIES,
    QUANTITIES,
    RULELESS_QUANTITIES,
    check_value,
    claim_numbers,
    describe_target,
    format_value,
    number_pattern,
    validate_claim,
)
from engine.tour.evaluate import evaluate_claim, evaluate_claims, evaluate_quantity
from engine.tour.prose import (
    check_formulas,
    formula_value,
    prose_numbers,
    setup_numbers,
    unchecked_numbers,
)
from engine.tour.steps import UI_REF, expand_ui_refs, step_config, validate_tour

TOUR_DIR = Path(__file__).resolve().parents[2] / "resources" / "tour"
#: The explorer's view keys (gui/views) and the Train tab's (gui/train).
EXPLORER_VIEWS = ("heatmap", "softmax", "histogram", "laws", "gradients", "temperature",
                  "correlation", "precision", "length")
TRAIN_VIEWS = ("train_curves", "train_probe", "train_lr_sweep")
LANGUAGES = ("en", "zh_CN")


def _load(name: str) -> dict:
    return json.loads((TOUR_DIR / name).read_text(encoding="utf-8"))


TOUR = _load("tour.json")
TEXTS = {lang: _load(f"tour.{lang}.json") for lang in LANGUAGES}
STEPS = TOUR["steps"]
STEP_IDS = [step["id"] for step in STEPS]


def _prose(lang: str, step_id: str) -> str:
    text = TEXTS[lang]["steps"][step_id]
    parts = [text["title"], text["look"], *text["body"], text["try"]]
    return expand_ui_refs("\n".join(parts))


def test_tour_structure():
    validate_tour(TOUR, EXPLORER_VIEWS)
    assert 8 <= len(STEPS) <= 16
    assert len(set(STEP_IDS)) == len(STEP_IDS)
    for step in STEPS:
        assert step["view"] in EXPLORER_VIEWS + TRAIN_VIEWS
    assert STEP_IDS[-1] == "answer"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_language_has_every_step_with_text(lang):
    texts = TEXTS[lang]
    assert texts["language"] == lang
    assert set(texts["steps"]) == set(STEP_IDS)
    for step_id in STEP_IDS:
        text = texts["steps"][step_id]
        for key in ("title", "look", "try"):
            assert isinstance(text[key], str) and text[key].strip(), (lang, step_id, key)
        assert text["body"] and all(p.strip() for p in text["body"]), (lang, step_id)
    quantities = {c["quantity"] for step in STEPS for c in step["claims"]}
    assert quantities <= set(texts["labels"]), quantities - set(texts["labels"])
    if lang.startswith("zh"):
        # Chinese texts are Chinese: most characters of every body are CJK ideographs or
        # full-width punctuation, not left-over English.
        for step_id in STEP_IDS:
            body = "".join(texts["steps"][step_id]["body"])
            assert re.search(r"[\u4e00-\u9fff]", body), step_id


@pytest.mark.parametrize("lang", LANGUAGES)
def test_ui_references_are_well_formed(lang):
    for step_id in STEP_IDS:
        text = TEXTS[lang]["steps"][step_id]
        for part in (text["title"], text["look"], *text["body"], text["try"]):
            # Every "{ui:" opens a complete reference; nothing else uses braces.
            assert part.count("{ui:") == len(UI_REF.findall(part)), (step_id, part)
            assert not re.search(r"[{}]", UI_REF.sub("", part)), (step_id, part)


def _written(prose: str) -> list[float]:
    return [value for number in prose_numbers(prose) for value in number.values]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("step", STEPS, ids=STEP_IDS)
def test_prose_states_the_claimed_numbers(step, lang):
    written = _written(_prose(lang, step["id"]))
    for claim in step["claims"]:
        for number in claim_numbers(claim):
            assert any(math.isclose(number, w, rel_tol=1e-9, abs_tol=1e-15) for w in written), (
                f"{lang} text of step {step['id']!r} does not state {number:g} "
                f"(claim {describe_target(claim)})"
            )


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("step", STEPS, ids=STEP_IDS)
def test_every_number_of_the_prose_is_checked(step, lang):
    # The other direction: a number the text states is a claim the engine evaluates, a value
    # of the step's set-up, a formula checked below, or one of the step's few "given" numbers
    # (years, published sizes, constants inside formulas).
    unchecked = unchecked_numbers(step, _prose(lang, step["id"]))
    assert not unchecked, (
        f"{lang} text of step {step['id']!r} states {unchecked} but no claim evaluates them "
        "(add a claim, or a formula / given entry if the app does not compute it)"
    )


@pytest.mark.parametrize("step", STEPS, ids=STEP_IDS)
def test_formulas_and_given_numbers_are_true_and_used(step):
    assert check_formulas(step) == []
    written = {w for lang in LANGUAGES for w in _written(_prose(lang, step["id"]))}
    extra = [*(f["value"] for f in step.get("formulas", [])), *step.get("given", [])]
    for number in extra:
        # No stale entry: each one is written in at least one language, and none repeats a
        # number that a claim or the set-up already checks.
        assert any(math.isclose(number, w, rel_tol=1e-9) for w in written), (step["id"], number)
    claimed = {x for claim in step["claims"] for x in claim_numbers(claim)}
    given = set(step.get("given", []))
    assert not given & (claimed | setup_numbers(step)), (step["id"], given & claimed)


def test_prose_numbers_read_numbers_as_written():
    def values(text):
        return [n.values for n in prose_numbers(text)]

    assert values("≈ 0.16 % of 600000 rows") == [(0.16, 0.0016), (600000.0,)]
    assert values("3.8·10⁻³, 2^20, 2²⁰, 10⁻⁴ and 1e-12") == [
        (pytest.approx(0.0038),), (1048576.0,), (1048576.0,), (pytest.approx(1e-4),),
        (pytest.approx(1e-12),)]
    # Digits of names are no numbers; Chinese around a number is fine.
    assert values("float16, e4m3, ViT-22B, W_Q, n^(−5s)") == []
    assert values("在 2000 行上，d_k = 64。") == [(2000.0,), (64.0,)]
    step = {"settings": {"d_k": 64}, "claims": [
        {"quantity": "logit_var", "rule": "none", "at": {"d_k": 256}, "approx": 256}],
        "formulas": [{"value": 8, "expr": "sqrt(64)"}], "given": [2022]}
    assert unchecked_numbers(step, "d_k = 64: 256, √64 = 8 (2022); 65") == ["65"]


def test_formula_values():
    assert formula_value("exp(4) / (exp(4) + 63)") == pytest.approx(0.4643, abs=1e-4)
    assert formula_value("2 ** 15 / 64 - sqrt(16) + log(e)") == 509
    for bad in ("__import__('os')", "open('x')", "[1]", "1 if 1 else 2", "x"):
        with pytest.raises(ValueError):
            formula_value(bad)
    assert check_formulas({"formulas": [{"value": 4.16, "expr": "log(64)"}]}) == []
    assert check_formulas({"formulas": [{"value": 4.15, "expr": "log(64)"}]})  # 4.1589
    assert check_formulas({"formulas": [{"value": 2.9, "expr": "sqrt(2 * log(64))"}]}) == []


@pytest.mark.parametrize("step", STEPS, ids=STEP_IDS)
def test_engine_confirms_every_claim(step):
    config = step_config(step["settings"])
    results = evaluate_claims(step["claims"], config)
    for result in results:
        assert result.passed, (
            f"step {step['id']!r}: {result.claim['quantity']} = {result.value!r}, "
            f"claimed {describe_target(result.claim)}"
        )


def test_train_claims_use_the_train_tab_settings():
    # The Train tab is filled with step["train_settings"]; its sweep must reproduce the claim.
    # A claim may change d_k only (the "repeat with d_k 256" run): d_model stays the tab's, so
    # the comparison is not also a change of model width.
    step = next(s for s in STEPS if s["id"] == "learning_rate")
    shown = TrainConfig.from_dict(step["train_settings"])
    assert shown.d_model == shown.d_k == 64
    for claim in step["claims"]:
        assert claim["quantity"] == "train_final_loss"
        assert claim["lr"] in step["lr_sweep"]["lrs"]
        # As evaluate.py builds it: the step's d_k, then the claim's overrides.
        claimed = TrainConfig(**{"d_k": step_config(step["settings"]).d_k,
                                 **claim.get("train", {})})
        assert ScalingRule(claim["rule"]) in shown.rules
        assert shown.replace(rules=claimed.rules, lr=claimed.lr, d_k=claimed.d_k) == claimed
        assert claimed.model_width == shown.model_width
    assert {c["train"].get("d_k", 64) for c in step["claims"]} == {64, 256}


def test_step_texts_match_their_settings():
    # The numbers of the set-up in the prose are the ones the settings use.
    by_id = {s["id"]: step_config(s["settings"]) for s in STEPS}
    assert by_id["what"].d_k == 64 and by_id["what"].n_tokens == 64
    heads = by_id["heads"]
    assert (heads.d_model, heads.heads, heads.d_k) == (768, 12, 64)
    assert math.isclose(heads.projection_std, 1 / math.sqrt(768), rel_tol=1e-3)
    init = by_id["init"]
    assert init.d_k == 64 and math.isclose(init.projection_std, 64**-0.25 / math.sqrt(512),
                                           rel_tol=2e-3)
    temperature = next(s for s in STEPS if s["id"] == "temperature")
    assert temperature["view_temperature"] == math.sqrt(by_id["temperature"].d_k)
    assert by_id["qk_norm"].init_std == 3.0 and by_id["softcap"].cap == 50.0
    # The backward step's "q/8", "64 times" and "8 times" are 1/√d_k, d_k and √d_k at d_k = 64;
    # its "one step on the queries" follows the gradients step it refines.
    backward = by_id["backward"]
    assert (backward.d_k, ScalingRule(backward.rule)) == (64, ScalingRule.SQRT)
    assert STEP_IDS.index("backward") == STEP_IDS.index("gradients") + 1
    # The lab steps: "20000 rows of n = 64 keys", "d_k = 64"; SSMax's s = 0.43 and YaRN's f = 4;
    # they follow the logit-bounding steps and come before training.
    half = by_id["half_precision"]
    assert (half.d_k, half.n_tokens, half.samples) == (64, 64, 20000)
    assert by_id["saturation"].samples == by_id["answer"].samples == 20000
    long = by_id["long_context"]
    assert (long.d_k, long.ssmax_s, long.yarn_factor) == (64, 0.43, 4.0)
    assert STEP_IDS.index("half_precision") == STEP_IDS.index("softcap") + 1
    assert STEP_IDS.index("long_context") == STEP_IDS.index("half_precision") + 1
    assert STEP_IDS.index("learning_rate") == STEP_IDS.index("long_context") + 1


# ----------------------------------------------------------------------- the claim machinery
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


def test_number_pattern_matches_stand_alone_numbers_only():
    pattern = number_pattern(64.0)
    assert pattern.search("variance ≈ 64.") and pattern.search("(64)")
    assert not pattern.search("0.64") and not pattern.search("640") and not pattern.search("6.4")
    assert number_pattern(0.001).search("below 0.001 and")
    assert not number_pattern(0.7).search("0.79")
    assert number_pattern(0.0156).search("≈ 0.0156 (= 1/64)")


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
            continue  # trained by test_engine_confirms_every_claim (learning_rate step)
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
        evaluate_claim(claim, AttentionConfig(init_std=2.0))
    with pytest.raises(ValueError, match="use_projection = false"):
        evaluate_claim(claim, AttentionConfig(use_projection=True))


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
