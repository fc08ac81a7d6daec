"""The Model tab's inputs survive: in session files (validated, one line naming a bad key) and
in the settings at the next start; nothing runs when they come back."""

from __future__ import annotations

import dataclasses
import json

import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from engine.config import AttentionConfig, ScalingRule
from gui.kit import model_input
from gui.kit.session import Session, SessionError, load_session, save_session
from gui.kit.session_model import MAX_TEXT_CHARS, ModelChoice
from gui.model.controls import RULE_PARAMETER, ModelControls
from gui.model.inputs import REMEMBERED_TEXT_CHARS, model_choice, show_choice
from tests.engine.test_models import FIXTURES

#: Every input away from its default (values the boxes show exactly: 3 decimals).
CHOSEN = dict(path=str(FIXTURES), text="Attention is all you need, they said.",
              max_tokens=64, memory_gib=0.75, alpha_low=0.25, alpha_high=4.0, alpha_points=9,
              scope="heads", layers="0,2-3", layer=1, heads="0,2", rule="softcap",
              parameter=20.0, precision="float16", softmax="naive", layer_alpha=4.0)


def _shown(controls: ModelControls) -> dict:
    """What the controls show, as the user reads them."""
    return {"path": controls.path.text(), "text": controls.text.toPlainText(),
            "max_tokens": controls.max_tokens.value(), "memory": controls.memory.text(),
            "alphas": (controls.alpha_low.value(), controls.alpha_high.value(),
                       controls.alpha_points.value()),
            "scope": controls.scope.currentText(), "layers": controls.layers.text(),
            "layer": controls.layer.value(), "heads": controls.heads.text(),
            "rule": controls.rule.currentText(), "parameter": controls.parameter.value(),
            "precision": controls.precision.currentText(),
            "softmax": controls.softmax.currentText(),
            "layer_alpha": controls.layer_alpha.value()}


def _set_chosen(controls: ModelControls) -> dict:
    show_choice(controls, ModelChoice(**CHOSEN))
    shown = _shown(controls)
    assert shown["rule"] != controls.rule.itemText(0)
    assert shown["scope"] != controls.scope.itemText(0)
    assert model_choice(controls) == ModelChoice(**CHOSEN)
    return shown


def _defaults() -> ModelChoice:
    controls = ModelControls()
    try:
        return model_choice(controls)
    finally:
        controls.deleteLater()


def _no_run(window) -> None:
    view = window.model_view
    assert not view.controller.is_busy() and view.controller.results().state == "idle"


def test_the_inputs_go_into_a_session_and_come_back(make_window, tmp_path):
    window = make_window()
    controls = window.model_view.controls
    shown = _set_chosen(controls)
    path = tmp_path / "with-model.json"
    assert window.files.save_session_to(path)
    assert json.loads(path.read_text(encoding="utf-8"))["model"] == CHOSEN
    show_choice(controls, _defaults())  # reset
    assert _shown(controls) != shown
    assert window.files.open_session(path)
    assert _shown(controls) == shown
    assert controls.message.text() == ""  # the model path exists
    _no_run(window)


def test_a_session_whose_model_has_moved_keeps_the_path_and_says_so(make_window, tmp_path):
    window = make_window()
    gone = str(tmp_path / "moved" / "SmolLM2.gguf")
    path = tmp_path / "moved.json"
    save_session(path, Session(AttentionConfig(), model=ModelChoice(**{**CHOSEN, "path": gone})))
    assert window.files.open_session(path)
    controls = window.model_view.controls
    assert controls.path.text() == gone
    assert controls.message.text() == f"{gone}: no such file or folder"
    assert not [w for w in QApplication.topLevelWidgets()
                if isinstance(w, QMessageBox) and w.isVisible()]
    _no_run(window)


def test_a_session_without_the_model_section_opens_and_leaves_the_tab(make_window, tmp_path):
    window = make_window()
    shown = _set_chosen(window.model_view.controls)
    path = tmp_path / "old.json"
    data = Session(AttentionConfig()).to_dict()
    assert "model" not in data  # as sessions written before the tab
    path.write_text(json.dumps(data), encoding="utf-8")
    assert window.files.open_session(path)
    assert _shown(window.model_view.controls) == shown


_BAD = [("max_tokens", 1), ("max_tokens", 9000), ("max_tokens", 2.5), ("max_tokens", True),
        ("memory_gib", 0.0), ("memory_gib", "1 GiB"), ("alpha_low", -1.0),
        ("alpha_high", 1e9), ("alpha_points", 500), ("scope", "everything"), ("layer", -1),
        ("rule", "sqrtt"), ("parameter", 0.0), ("precision", "float64"), ("softmax", None),
        ("layer_alpha", -0.5), ("path", 5), ("text", "x" * (MAX_TEXT_CHARS + 1)),
        ("heads", ["0"])]


@pytest.mark.parametrize(("key", "value"), _BAD, ids=[f"{k}={str(v)[:12]}" for k, v in _BAD])
def test_a_bad_model_value_is_one_line_naming_the_key(tmp_path, key, value):
    data = Session(AttentionConfig(), model=ModelChoice(**CHOSEN)).to_dict()
    data["model"][key] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(SessionError) as raised:
        load_session(path)
    message = str(raised.value)
    assert "\n" not in message and len(message) <= 300
    assert message.startswith(f"bad.json: model.{key} "), message


@pytest.mark.parametrize(("rule", "value"), [("yarn", 0.5), ("ssmax", 1e-7)])
def test_the_rule_parameter_is_checked_against_the_rules_own_range(rule, value):
    with pytest.raises(ValueError, match=r"model\.parameter"):
        ModelChoice.from_dict({**CHOSEN, "rule": rule, "parameter": value})
    assert ModelChoice.from_dict({**CHOSEN, "rule": "yarn", "parameter": 2.0}).rule == "yarn"


def test_a_missing_key_or_a_foreign_section_is_named():
    for data, words in (({k: v for k, v in CHOSEN.items() if k != "scope"}, "model.scope is "
                         "missing"), ([1], "'model' must be an object")):
        with pytest.raises(ValueError, match=words):
            ModelChoice.from_dict(data)


def test_a_corrupt_model_section_changes_nothing_in_the_window(shared_window, tmp_path):
    controls = shared_window.model_view.controls
    before = _shown(controls)
    data = Session(AttentionConfig(), model=ModelChoice(**CHOSEN)).to_dict()
    data["model"]["alpha_points"] = 1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert not shared_window.files.open_session(path)
    boxes = [w for w in QApplication.topLevelWidgets()
             if isinstance(w, QMessageBox) and w.isVisible()]
    assert boxes and "model.alpha_points must be in [2, 41], got 1" in boxes[-1].text()
    for box in boxes:
        box.close()
    assert _shown(controls) == before


def test_the_inputs_come_back_at_the_next_start(make_window):
    first = make_window(restore=True, config=None)
    shown = _set_chosen(first.model_view.controls)
    first.close()
    assert json.loads(first.settings.get("model_tab/inputs")) == CHOSEN
    second = make_window(restore=True, config=None)
    assert _shown(second.model_view.controls) == shown
    _no_run(second)


def test_a_damaged_remembered_value_leaves_the_defaults(make_window):
    first = make_window(restore=True, config=None)
    first.close()
    defaults = _defaults()
    for damaged in ("{not json", json.dumps({**CHOSEN, "max_tokens": 1}), "[1, 2]"):
        first.settings.set("model_tab/inputs", damaged)
        first.settings.sync()
        window = make_window(restore=True, config=None)
        assert model_choice(window.model_view.controls) == defaults


def test_a_long_text_is_not_remembered(make_window):
    first = make_window(restore=True, config=None)
    controls = first.model_view.controls
    show_choice(controls, ModelChoice(**{**CHOSEN, "text": "word " * REMEMBERED_TEXT_CHARS}))
    first.close()
    second = make_window(restore=True, config=None)
    shown = second.model_view.controls
    assert shown.text.toPlainText() == model_input.DEFAULT_TEXT
    assert shown.layers.text() == CHOSEN["layers"]


def test_the_session_and_the_controls_agree_on_limits_and_parameters():
    assert MAX_TEXT_CHARS == model_input.MAX_TEXT_CHARS
    # The session checks the parameter box against the rule's first declared parameter.
    for kind, (field, _symbol, _default) in RULE_PARAMETER.items():
        assert ScalingRule(kind).spec.parameters[0][0] == field
        assert len(ScalingRule(kind).spec.parameters) == 1
    assert dataclasses.asdict(ModelChoice.from_dict(CHOSEN)) == CHOSEN
