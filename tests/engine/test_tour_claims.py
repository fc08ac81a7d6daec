"""The guided tour's claims hold for the engine, and every text states the number it claims
(the machinery that checks them: test_tour_machinery.py).

Engine-only: the tour files are parsed with the standard library, no Qt is imported.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from engine.config import ScalingRule
from engine.config.train import TrainConfig
from engine.tour.claims import (
    claim_numbers,
    describe_target,
    format_claim_value,
)
from engine.tour.steps import UI_REF, expand_ui_refs, step_config, validate_tour
from tests.engine.tour_prose import (
    check_formulas,
    formula_value,
    prose_numbers,
    setup_numbers,
    unchecked_numbers,
)
from tests.engine.tour_results import step_results

TOUR_DIR = Path(__file__).resolve().parents[2] / "resources" / "tour"
#: The explorer's view keys (gui/views) and the Train tab's (gui/train).
EXPLORER_VIEWS = ("heatmap", "softmax", "histogram", "laws", "gradients", "temperature",
                  "correlation", "precision", "length")
TRAIN_VIEWS = ("train_curves", "train_probe", "train_lr_sweep")
#: The tabs a step may bring forward besides the views (a fallback view stands in for them).
TAB_VIEWS = ("model",)
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
        assert step["view"] in EXPLORER_VIEWS + TRAIN_VIEWS + TAB_VIEWS
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


def reads_true(value_text: str, target_text: str) -> bool:
    """Whether the number ``value_text`` satisfies ``target_text`` as a reader takes them:
    every part of the target ("≈ 64 ± 10 %", "≈ 64 (|Δ|/64 ≤ 1e-09)", "≈ 0.19 ± 0.01",
    "≈ 0", "> 0.9999", "< 50") read off the printed text alone."""
    value = float(value_text)
    slack = 1e-12 * max(abs(value), 1.0)  # the reader's decimal arithmetic, not binary
    for part in target_text.split(", "):
        if m := re.fullmatch(r"≈ (\S+) ± (\S+) %", part):
            ok = abs(value - float(m[1])) <= float(m[2]) / 100 * abs(float(m[1])) + slack
        elif m := re.fullmatch(r"≈ (\S+) \(\|Δ\|/(\S+) ≤ (\S+)\)", part):
            ok = abs(value - float(m[1])) / float(m[2]) <= float(m[3]) + slack
        elif m := re.fullmatch(r"≈ (\S+) ± (\S+)", part):
            ok = abs(value - float(m[1])) <= float(m[2]) + slack
        elif m := re.fullmatch(r"≈ (\S+)", part):
            ok = value == float(m[1])
        elif m := re.fullmatch(r"([<>]) (\S+)", part):
            ok = value > float(m[2]) if m[1] == ">" else value < float(m[2])
        else:
            raise AssertionError(f"unreadable claim {part!r}")
        if not ok:
            return False
    return True


@pytest.mark.parametrize("step", STEPS, ids=STEP_IDS)
def test_engine_confirms_every_claim(step):
    for result in step_results(step["id"]):
        assert result.passed, (
            f"step {step['id']!r}: {result.claim['quantity']} = {result.value!r}, "
            f"claimed {describe_target(result.claim)}"
        )
        # As the tour prints it: the value, then "(claim …)", and the one reads true of the
        # other (not "1 ✓ (claim > 1)" for 0.99995 against > 0.9999).
        shown = format_claim_value(result.claim, result.value)
        target = describe_target(result.claim)
        assert reads_true(shown, target), (step["id"], shown, target)


def test_claims_print_as_stated():
    near_one = {"quantity": "ssmax_toy_ssmax", "n": 1048576, "greater_than": 0.9999}
    assert (format_claim_value(near_one, 0.999953), describe_target(near_one)) == (
        "0.99995", "> 0.9999")
    assert format_claim_value(near_one, 0.99990001) == "0.99990001"
    tiny = {"quantity": "logit_step_ratio_sgd", "approx": 64, "rel_tol": 1e-9}
    assert describe_target(tiny) == "≈ 64 (|Δ|/64 ≤ 1e-09)"
    assert not reads_true("1", "> 1") and reads_true("0.99995", "> 0.9999")


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
