"""The Model tab's inputs read from and shown in its controls, for sessions and the settings.

Nothing runs when inputs are shown (a model run is heavy; Run starts it). A model path that no
longer exists stays in the field, and the line under Run says so.
"""

from __future__ import annotations

import json
import os

from engine.config import ScalingRule
from gui.kit.i18n import translate
from gui.kit.model_input import DEFAULT_TEXT
from gui.kit.session_model import ModelChoice
from gui.model.controls import ModelControls

__all__ = ["REMEMBERED_TEXT_CHARS", "model_choice", "remembered_inputs", "restore_inputs",
           "show_choice"]

#: A longer text is not kept in the settings (the default sentence comes back instead), as the
#: capture dialog's is not: an INI file is no place for a pasted book.
REMEMBERED_TEXT_CHARS = 4000


def model_choice(controls: ModelControls) -> ModelChoice:
    """The inputs ``controls`` show."""
    rule = controls.rule.currentData()
    return ModelChoice(
        path=controls.path.text(), text=controls.text.toPlainText(),
        max_tokens=controls.max_tokens.value(), memory_gib=controls.memory.value(),
        alpha_low=controls.alpha_low.value(), alpha_high=controls.alpha_high.value(),
        alpha_points=controls.alpha_points.value(), scope=controls.scope.currentData(),
        layers=controls.layers.text(), layer=controls.layer.value(),
        heads=controls.heads.text(), rule=None if rule is None else ScalingRule(rule).value,
        parameter=controls.parameter.value(), precision=controls.precision.currentData(),
        softmax=controls.softmax.currentData(), layer_alpha=controls.layer_alpha.value())


def show_choice(controls: ModelControls, choice: ModelChoice) -> None:
    """Show ``choice`` in ``controls`` (a value beyond a box's range is clamped to it, as the
    memory limit beyond this machine's memory); a model path that does not exist is kept and
    named beside Run."""
    controls.path.setText(choice.path)
    controls.text.setPlainText(choice.text)
    controls.max_tokens.setValue(choice.max_tokens)
    controls.memory.setValue(choice.memory_gib)
    controls.alpha_low.setValue(choice.alpha_low)
    controls.alpha_high.setValue(choice.alpha_high)
    controls.alpha_points.setValue(choice.alpha_points)
    controls.scope.setCurrentIndex(controls.scope.findData(choice.scope))
    controls.layers.setText(choice.layers)
    controls.layer.setValue(choice.layer)
    controls.heads.setText(choice.heads)
    rule = None if choice.rule is None else ScalingRule(choice.rule)
    index = next(i for i in range(controls.rule.count()) if controls.rule.itemData(i) == rule)
    controls.rule.setCurrentIndex(index)  # before the parameter: a rule sets its default
    controls.parameter.setValue(choice.parameter)
    controls.precision.setCurrentIndex(controls.precision.findData(choice.precision))
    controls.softmax.setCurrentIndex(controls.softmax.findData(choice.softmax))
    controls.layer_alpha.setValue(choice.layer_alpha)
    path = choice.path.strip()
    controls.message.setText(
        translate("ModelView", "{0}: no such file or folder").format(path)
        if path and not os.path.exists(path) else "")


def remembered_inputs(controls: ModelControls) -> str:
    """The inputs as the settings keep them (JSON; a text over
    :data:`REMEMBERED_TEXT_CHARS` characters is not kept)."""
    data = model_choice(controls).to_dict()
    if len(data["text"]) > REMEMBERED_TEXT_CHARS:
        data["text"] = DEFAULT_TEXT
    return json.dumps(data, ensure_ascii=False)


def restore_inputs(controls: ModelControls, remembered: str) -> bool:
    """Show the inputs the settings kept (:func:`remembered_inputs`); a missing, old or
    damaged value leaves the defaults. True when inputs were shown."""
    if not remembered:
        return False
    try:
        choice = ModelChoice.from_dict(json.loads(remembered))
    except (ValueError, RecursionError):  # hand-edited or from another version: defaults
        return False
    show_choice(controls, choice)
    return True
