"""The parameter panel and the Train panel are generated from the field declarations: every
declared row is there with its label, tooltip and range, and a new declaration is a new row."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QSpinBox,
    QWidget,
)

from engine.config import AttentionConfig, TrainConfig
from engine.config.base import QT_TRANSLATE_NOOP, FieldSpec, Gui, JsonConfig, validate_fields
from gui.explorer.panel import ParameterPanel
from gui.kit.field_widgets import LinkedSlider, LogSpinBox, OptionalLogSpinBox
from gui.kit.forms import FieldForm, translated
from gui.train.panel import TrainPanel


def _row_label(panel: QWidget, widget: QWidget) -> str | None:
    for form in panel.findChildren(QFormLayout):
        label = form.labelForField(widget)
        if isinstance(label, QLabel):
            return label.text()
    return None


def _shown_range(widget: QWidget) -> tuple[float, float]:
    spin = widget.spin if isinstance(widget, LinkedSlider) else widget
    return spin.minimum(), spin.maximum()  # type: ignore[attr-defined]


def _check_declared_rows(panel: QWidget, cls: type[JsonConfig]) -> int:
    checked = 0
    for name, field in cls.bound().items():
        gui = field.spec.gui
        if gui is None:
            assert not hasattr(panel, name) or name in ("rules",), name
            continue
        widget = getattr(panel, name)
        text = translated(gui.label)
        if isinstance(widget, QCheckBox):
            assert widget.text() == text, name
        else:
            assert _row_label(panel, widget) == text, name
        if gui.tooltip is not None:
            assert widget.toolTip() == translated(gui.tooltip), name
        low, high = field.gui_range if gui.widget in ("slider", "spin", "log_spin") else (0, 0)
        if gui.widget == "slider" and name != "query_row":  # query_row follows n (below)
            assert isinstance(widget, LinkedSlider), name
            assert _shown_range(widget) == (low, high), name
        elif gui.widget == "spin":
            assert isinstance(widget, QSpinBox), name
            assert _shown_range(widget) == (low - (1 if field.optional else 0), high), name
        elif gui.widget == "log_spin":
            assert isinstance(widget, LogSpinBox), name
            if field.optional:
                assert isinstance(widget, OptionalLogSpinBox), name
                assert _shown_range(widget) == (0.0, high), name  # 0 shows the word
            else:
                assert _shown_range(widget) == (low, high), name
        elif gui.widget == "combo":
            assert isinstance(widget, QComboBox), name
            assert [widget.itemData(i) for i in range(widget.count())] == [
                m.value for m in field.kind]  # type: ignore[attr-defined]
            if gui.choices:
                assert [widget.itemText(i) for i in range(widget.count())] == [
                    translated(gui.choices[m]) for m in field.kind]  # type: ignore[attr-defined]
        if gui.default_text is not None and gui.widget == "slider":
            box = getattr(panel, name + "_default")
            assert box.text() == translated(gui.default_text)
        elif gui.default_text is not None:
            assert widget.specialValueText() == translated(gui.default_text), name
        checked += 1
    return checked


def test_every_declared_explorer_field_has_its_row(qtbot):
    panel = ParameterPanel(AttentionConfig(n_tokens=40))
    qtbot.addWidget(panel)
    assert _check_declared_rows(panel, AttentionConfig) == len(AttentionConfig.FIELDS)
    assert _shown_range(panel.query_row) == (0, 39)
    # The d_k row spans the engine's range; n_tokens is narrowed to what fits the budget.
    assert _shown_range(panel.d_k) == (1, 8192) and _shown_range(panel.n_tokens) == (1, 2048)
    assert list(panel.controls())[:5] == ["n_tokens", "d_k", "heads", "d_model", "link_heads"]


def test_every_declared_train_field_has_its_row(qtbot):
    panel = TrainPanel()
    qtbot.addWidget(panel)
    declared = [name for name, spec in TrainConfig.FIELDS.items() if spec.gui is not None]
    assert _check_declared_rows(panel, TrainConfig) == len(declared)
    assert _shown_range(panel.d_k) == (1, 1024)
    assert _row_label(panel, panel.rule_boxes[next(iter(panel.rule_boxes))].parentWidget()) \
        == "Rules"


@pytest.mark.parametrize("config", [
    AttentionConfig(rule="qk_norm", gain=2.5, mask="causal", n_tokens=100, query_row=99,
                    use_projection=True, projection_std=0.05, seed=123, samples=700),
    AttentionConfig(rule="softcap", cap=7.0, d_model=96, heads=3, link_heads=True),
])
def test_explorer_panel_shows_and_reads_back_a_config(qtbot, config):
    panel = ParameterPanel()
    qtbot.addWidget(panel)
    panel.set_config(config)
    with qtbot.waitSignal(panel.configChanged) as blocker:
        panel.seed.setValue(config.seed + 1)
    assert blocker.args[0] == config.replace(seed=config.seed + 1)


def test_train_panel_shows_and_reads_back_a_config(qtbot):
    config = TrainConfig(task="copy_back", rules=("sqrt", "qk_norm"), d_k=24, d_model=None,
                         heads=2, n=12, vocab=20, offset=5, batch=16, steps=33,
                         optimizer="sgd", lr=0.03, seed=9, init_std=0.2, clip_norm=None,
                         eval_size=70)
    panel = TrainPanel()
    qtbot.addWidget(panel)
    panel.set_config(config)
    assert panel.config() == config
    assert panel.offset.isEnabled() and panel.d_model.text() == "auto (d_k × heads)"
    panel.task.setCurrentIndex(panel.task.findData("retrieval"))
    assert not panel.offset.isEnabled()  # the copy offset only for copy-back (declared)


@dataclasses.dataclass(frozen=True, slots=True)
class _Demo(JsonConfig):
    kind: ClassVar[str] = "demo"
    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "on": FieldSpec(gui=Gui(QT_TRANSLATE_NOOP("Demo", "switch"), widget="check")),
        "width": FieldSpec(1, 100, gui=Gui("w", QT_TRANSLATE_NOOP("Demo", "how wide"), high=50,
                                           enabled_when=("on", True))),
        "gain": FieldSpec(0.01, 100.0, gui=Gui("g", widget="slider", log=True,
                                               default_text=QT_TRANSLATE_NOOP("Demo", "auto"))),
        "rate": FieldSpec(1e-4, 1.0, gui=Gui("r", widget="log_spin")),
    }

    on: bool = False
    width: int = 3
    gain: float | None = None
    rate: float = 0.1

    def __post_init__(self) -> None:
        validate_fields(self)


def test_a_new_declared_field_becomes_a_row_without_panel_code(qtbot):
    host = QWidget()
    qtbot.addWidget(host)
    layout = QFormLayout(host)
    form = FieldForm(_Demo, {"": layout})
    assert list(form.widgets) == ["on", "width", "gain_default", "gain", "rate"]
    assert layout.rowCount() == 5 and form.widgets["width"].toolTip() == "how wide"
    form.set_values(_Demo(width=7, gain=None))
    assert _Demo(**form.values()) == _Demo(width=7)
    assert not form.widgets["width"].isEnabled() and not form.widgets["gain"].isEnabled()
    with qtbot.waitSignal(form.changed):
        form.widgets["on"].setChecked(True)
    form.widgets["gain_default"].setChecked(False)
    form.widgets["gain"].set_value(2.0)
    form.update_states()
    assert form.widgets["width"].isEnabled() and form.values()["gain"] == 2.0
    assert _shown_range(form.widgets["width"]) == (1, 50)
