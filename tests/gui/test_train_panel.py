"""The Train panel: the engine's validation messages, and the controls the CLI has too."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QValidator

from engine.config.train import TRAIN_FIELDS, TrainConfig
from gui.kit.field_widgets import LogSpinBox
from gui.train.panel import TrainPanel
from gui.train.state import TrainState
from tests.gui.train_runs import SMALL


@pytest.fixture
def tab(make_train_tab):
    return make_train_tab(SMALL)


def test_invalid_combination_shows_the_engine_message_and_does_not_start(tab):
    tab.panel.n.setValue(40)  # retrieval needs vocab (16) >= n
    assert "vocab (16) must be >= n (40)" in tab.panel.error_text()
    tab.panel.start_button.click()
    assert tab.controller.state() == TrainState.IDLE
    assert tab.controller.results().snapshot is None
    tab.panel.n.setValue(8)
    assert tab.panel.error_text() == ""
    for box in tab.panel.rule_boxes.values():
        box.setChecked(False)
    assert "rules must name at least one" in tab.panel.error_text()
    box.setChecked(True)
    for text, message in (("0.01, abc", "'abc' is not a number"),
                          ("0.01, 0.01", "learning rates must not repeat a value"),
                          ("0.01 5000", "learning rates must be in [1e-08, 100], got 5000")):
        tab.panel.lrs.setText(text)
        assert not tab.start_lr_sweep()
        assert message in tab.panel.error_text()
        assert tab.controller.job() is None


def test_init_std_clip_norm_and_eval_size_reach_the_trainer(tab, qtbot):
    """The CLI's --init-std, --clip-norm and --eval-size (and the divergence factor), as
    Train-panel controls with the engine's limits and defaults; what is set is what the
    trainer runs."""
    fresh = TrainPanel()
    qtbot.addWidget(fresh)
    assert fresh.eval_size.value() == TrainConfig().eval_size
    panel = tab.panel
    panel.set_config(SMALL.replace(steps=10))
    # Defaults shown as the engine's: None = auto / off, eval size as configured.
    assert panel.init_std.text() == "auto (1/√d_model)" and panel.init_std.optional_value() is None
    assert panel.clip_norm.text() == "off" and panel.clip_norm.optional_value() is None
    assert panel.config().init_std is None and panel.config().clip_norm is None
    assert panel.eval_size.minimum() == TRAIN_FIELDS["eval_size"].low
    assert panel.eval_size.maximum() == TRAIN_FIELDS["eval_size"].high
    assert panel.init_std.maximum() == TRAIN_FIELDS["init_std"].high
    assert panel.clip_norm.maximum() == TRAIN_FIELDS["clip_norm"].high
    for box in (panel.init_std, panel.clip_norm, panel.eval_size):
        assert box.toolTip()
    # Stepping up from the word gives a value, stepping down past the engine's minimum the
    # word again; a value below the engine's minimum is not accepted as typed.
    panel.clip_norm.stepBy(1)
    assert panel.clip_norm.optional_value() == 1.0
    panel.clip_norm.stepBy(-1)
    assert panel.clip_norm.optional_value() == pytest.approx(0.5)
    assert panel.init_std.validate("1e-9", 0)[0] != QValidator.State.Acceptable
    assert panel.init_std.validate("0.05", 0)[0] == QValidator.State.Acceptable
    assert panel.init_std.validate("auto (1/√d_model)", 0)[0] == QValidator.State.Acceptable

    panel.init_std.setValue(0.05)
    panel.clip_norm.setValue(0.5)
    panel.eval_size.setValue(40)
    panel.divergence_factor.setValue(50.0)  # a row generated from its declaration alone
    assert panel.error_text() == ""
    assert tab.start_training() and tab.wait_until_idle(30_000)
    assert tab.controller.last_error() == ""
    ran = tab.controller.results().snapshot.config
    assert (ran.init_std, ran.clip_norm, ran.eval_size) == (0.05, 0.5, 40)
    assert ran.divergence_factor == 50.0
    # set_config shows a configuration's values (tour steps, sessions) and None as the word.
    panel.set_config(SMALL.replace(init_std=0.2, clip_norm=None, eval_size=128))
    assert panel.init_std.optional_value() == pytest.approx(0.2)
    assert panel.clip_norm.text() == "off"
    assert panel.config().eval_size == 128


def test_log_spin_box_steps_through_1_2_3_5(qtbot):
    box = LogSpinBox(1e-8, 100.0, 0.01)
    qtbot.addWidget(box)
    seen = []
    for _ in range(4):
        box.stepBy(1)
        seen.append(box.value())
    assert seen == pytest.approx([0.02, 0.03, 0.05, 0.1])
    box.setValue(0.01)
    box.stepBy(-1)
    assert box.value() == pytest.approx(0.005)
    assert box.textFromValue(0.003) == "0.003"
