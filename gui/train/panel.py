"""The Train tab's controls: task, rules, model size, optimiser, sweep settings, buttons."""

from __future__ import annotations

import re

from PySide6.QtCore import QSignalBlocker, Signal, Slot
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.config import RULES, ScalingRule
from engine.config.rules import RULE_DEFAULTS
from engine.config.train import TrainConfig
from engine.training.lr_sweep import check_lrs
from gui.kit import style
from gui.kit.forms import FieldForm
from gui.kit.i18n import Retranslating, translate
from gui.kit.wrapping_tabs import FlowLayout
from gui.train.progress import RunProgress
from gui.train.state import TrainState

__all__ = ["TRAIN_RULES", "TrainPanel", "parse_lrs"]

#: Rules offered for training: every rule ``main.py train --rules`` accepts (the Train tab has no
#: rule parameter controls: they take their declared defaults).
TRAIN_RULES: tuple[ScalingRule, ...] = tuple(ScalingRule)


def rule_tip(rule: ScalingRule) -> str:
    """What ``rule`` does as the Train tab trains it (its box's tooltip), in the current
    language, with its parameters' declared defaults."""
    spec = RULES[rule]
    defaults = [f"{RULE_DEFAULTS[field]:g}" for field, _symbol in spec.parameters
                if RULE_DEFAULTS[field] is not None]
    return translate(spec.tip.context, spec.tip.text).format(*defaults)


def parse_lrs(text: str) -> tuple[float, ...]:
    """Parse a comma- or space-separated list of learning rates (sorted, validated).

    Raises
    ------
    ValueError
        With a message naming the offending item (the engine's for a value out of range or
        repeated).
    """
    parts = [p for p in re.split(r"[,\s;]+", text.strip()) if p]
    if not parts:
        raise ValueError(translate("TrainPanel", "the learning-rate list is empty"))
    values = []
    for part in parts:
        try:
            values.append(float(part))
        except ValueError:
            raise ValueError(
                translate("TrainPanel", "learning rates: {0!r} is not a number").format(part)
            ) from None
    return check_lrs(values)


class TrainPanel(Retranslating, QWidget):
    """Controls of the Train tab.

    :meth:`config` builds a validated :class:`~engine.config.train.TrainConfig`; invalid
    combinations are reported in :attr:`error_label` (the engine's own message) and the
    Start buttons refuse to start. The buttons are public so that the tab (and tests) connect
    them; :meth:`set_state` enables the ones that make sense in a controller state.
    """

    inputChanged = Signal()  # any control changed (validation is re-run)

    def __init__(self, config: TrainConfig | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        config = config or TrainConfig(d_model=64)
        # Texts (items, tooltips, row labels, buttons) are set by retranslate_ui.
        self.rule_boxes: dict[ScalingRule, QCheckBox] = {}
        rules_box = QWidget()
        # The rule boxes wrap: three to a row leave the panel too wide to share a 1024-pixel
        # window with the curves and the tour.
        rules_flow = FlowLayout(rules_box, spacing=6, hint_columns=3)
        rules_flow.setContentsMargins(0, 0, 0, 0)
        policy = rules_box.sizePolicy()
        policy.setHeightForWidth(True)
        rules_box.setSizePolicy(policy)
        for rule in TRAIN_RULES:
            box = QCheckBox()
            box.setStyleSheet(
                f"QCheckBox {{ color: {style.RULE_COLORS[rule]}; font-weight: bold; }}"
            )
            box.setChecked(rule in config.rules)
            self.rule_boxes[rule] = box
            rules_flow.addWidget(box)
        self.seeds = QSpinBox()
        self.seeds.setRange(1, 20)
        self.seeds.setValue(3)
        self.seeds.setKeyboardTracking(False)
        self.lrs = QLineEdit("0.001, 0.003, 0.01, 0.03")

        self.start_button = QPushButton()
        self.start_button.setShortcut(QKeySequence("Ctrl+T"))
        self.sweep_button = QPushButton()
        self.sweep_button.setShortcut(QKeySequence("Ctrl+L"))
        self.pause_button = QPushButton()
        self.pause_button.setShortcut(QKeySequence("Ctrl+P"))
        self.resume_button = QPushButton()
        self.resume_button.setShortcut(QKeySequence("Ctrl+Shift+P"))
        self.stop_button = QPushButton()
        self.stop_button.setShortcut(QKeySequence("Ctrl+Shift+T"))
        self.reset_button = QPushButton()
        self.reset_button.setShortcut(QKeySequence("Ctrl+Shift+X"))
        self.inspect_button = QPushButton()
        self.inspect_button.setObjectName("inspectTrainedButton")
        self.inspect_button.setShortcut(QKeySequence("Ctrl+Shift+I"))
        self._trained = False  # the current run has trained parameters to inspect
        self.progress = RunProgress()
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("QLabel { color: #b00020; }")
        self.error_label.setVisible(False)
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)

        # The field rows are generated from TRAIN_FIELDS, into the group box each declares.
        self._model_box = QGroupBox()
        self._training_box = QGroupBox()
        self._sweep_box = QGroupBox()
        self._form = FieldForm(
            TrainConfig,
            {"model": QFormLayout(self._model_box), "training": QFormLayout(self._training_box)},
            custom={"rules": rules_box}, parent=self)
        for name, widget in self._form.widgets.items():
            setattr(self, name, widget)  # panel.d_k, panel.lr, ...
        self._form.set_values(config)
        for combo in self._form.widgets.values():
            if isinstance(combo, QComboBox):
                # Long item texts widen the popup, not the panel.
                combo.setSizeAdjustPolicy(
                    QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
                combo.setMinimumContentsLength(14)
        # Row labels: QLabel objects kept by name so that retranslate_ui can re-word them.
        self._row_labels: dict[str, QLabel] = dict(self._form.labels)
        sweep_form = QFormLayout(self._sweep_box)
        for name, field in (("lrs", self.lrs), ("seeds", self.seeds)):
            label = QLabel()
            sweep_form.addRow(label, field)
            self._row_labels[name] = label
        buttons = QGridLayout()
        buttons.addWidget(self.start_button, 0, 0)
        buttons.addWidget(self.sweep_button, 0, 1)
        buttons.addWidget(self.reset_button, 0, 2)
        buttons.addWidget(self.pause_button, 1, 0)
        buttons.addWidget(self.resume_button, 1, 1)
        buttons.addWidget(self.stop_button, 1, 2)
        buttons.addWidget(self.inspect_button, 2, 0, 1, 3)
        # Buttons, progress and messages first: they stay visible without scrolling at 1280×800.
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status_label)
        layout.addWidget(self.error_label)
        layout.addWidget(self._model_box)
        layout.addWidget(self._training_box)
        layout.addWidget(self._sweep_box)
        layout.addStretch(1)

        self._form.changed.connect(self._on_input_changed)
        self.seeds.valueChanged.connect(self._on_input_changed)
        self.lrs.textChanged.connect(self._on_input_changed)
        for box in self.rule_boxes.values():
            box.toggled.connect(self._on_input_changed)
        self._state = TrainState.IDLE
        self.retranslate_ui()
        self.set_state(TrainState.IDLE)

    # --------------------------------------------------------------------------- translation
    def retranslate_ui(self) -> None:
        """Set every fixed text (items, row labels, buttons, tooltips) in the current language
        and re-word the progress bar and the validation message."""
        self._form.retranslate()
        for rule, box in self.rule_boxes.items():
            box.setText(style.rule_name(rule))
            box.setToolTip(rule_tip(rule))
        self.seeds.setToolTip(translate(
            "TrainPanel", "Learning-rate sweep: seeds 0…N−1 per learning rate (mean and spread)."))
        self.lrs.setToolTip(
            translate("TrainPanel", "Learning-rate sweep: comma-separated learning rates."))
        buttons = (
            (self.start_button, translate("TrainPanel", "Start"),
             translate("TrainPanel", "Train the checked rules side by side (Ctrl+T).")),
            (self.sweep_button, translate("TrainPanel", "Run lr sweep"), translate(
                "TrainPanel", "Train every rule at every listed learning rate and seed; plot "
                "the final held-out loss (Ctrl+L).")),
            (self.pause_button, translate("TrainPanel", "Pause"),
             translate("TrainPanel", "Hold the run between two steps (Ctrl+P).")),
            (self.resume_button, translate("TrainPanel", "Resume"),
             translate("TrainPanel", "Continue a paused run (Ctrl+Shift+P).")),
            (self.stop_button, translate("TrainPanel", "Stop"),
             translate("TrainPanel", "End the run now; the curves so far stay (Ctrl+Shift+T).")),
            (self.reset_button, translate("TrainPanel", "Reset"),
             translate("TrainPanel", "Stop and clear all curves and the sweep (Ctrl+Shift+X).")),
            (self.inspect_button, translate("TrainPanel", "Inspect trained model"), translate(
                "TrainPanel", "Write every rule's trained q and k on the held-out set to a tensor "
                "file (layer i = rule i) and inspect its heads. Available once a run has trained "
                "and nothing runs (Ctrl+Shift+I).")),
        )
        for button, text, tip in buttons:
            shortcut = button.shortcut()
            button.setText(text)  # QAbstractButton.setText replaces the shortcut by a mnemonic
            button.setShortcut(shortcut)
            button.setToolTip(tip)
        self._model_box.setTitle(translate("TrainPanel", "Task and model"))
        self._training_box.setTitle(translate("TrainPanel", "Training"))
        self._sweep_box.setTitle(translate("TrainPanel", "Learning-rate sweep"))
        self._row_labels["lrs"].setText(translate("TrainPanel", "Learning rates"))
        self._row_labels["seeds"].setText(translate("TrainPanel", "Seeds"))
        self.progress.retranslate_ui()
        self._validate()  # the validation message is worded in the current language

    # --------------------------------------------------------------------------------- values
    def config(self) -> TrainConfig:
        """The configuration the controls describe.

        Raises
        ------
        ValueError
            For an invalid combination (the engine's message).
        """
        rules = tuple(rule for rule in TRAIN_RULES if self.rule_boxes[rule].isChecked())
        return TrainConfig(rules=rules, **self._form.values())

    def sweep_settings(self) -> tuple[tuple[float, ...], int]:
        """``(learning rates, number of seeds)`` of the sweep (ValueError if invalid)."""
        return parse_lrs(self.lrs.text()), self.seeds.value()

    def set_config(self, config: TrainConfig) -> None:
        """Show ``config`` in the controls (without emitting a change per widget)."""
        blockers = [QSignalBlocker(box) for box in self.rule_boxes.values()]
        for rule, box in self.rule_boxes.items():
            box.setChecked(rule in config.rules)
        del blockers
        self._form.set_values(config)
        self._on_input_changed()

    def set_sweep_settings(self, lrs: tuple[float, ...], seeds: int) -> None:
        """Show the sweep's learning rates and seed count."""
        self.lrs.setText(", ".join(f"{lr:g}" for lr in lrs))
        self.seeds.setValue(seeds)

    def error_text(self) -> str:
        """The inline error message ("" when the input is valid)."""
        return self.error_label.text() if self.error_label.isVisibleTo(self) else ""

    def show_error(self, message: str) -> None:
        """Show ``message`` inline (an empty message hides the label)."""
        self.error_label.setText(message)
        self.error_label.setVisible(bool(message))

    def set_state(self, state: TrainState) -> None:
        """Enable the buttons that make sense in controller state ``state``."""
        self._state = state
        idle = state == TrainState.IDLE
        self.start_button.setEnabled(idle)
        self.sweep_button.setEnabled(idle)
        self.pause_button.setEnabled(state == TrainState.RUNNING)
        self.resume_button.setEnabled(state == TrainState.PAUSED)
        self.stop_button.setEnabled(state in (TrainState.RUNNING, TrainState.PAUSED))
        self.reset_button.setEnabled(state not in (TrainState.STOPPING, TrainState.EXPORTING))
        self.inspect_button.setEnabled(idle and self._trained)
        self.progress.set_state(state)

    def set_trained(self, trained: bool) -> None:
        """Say whether the current run has trained parameters (enables Inspect when idle)."""
        self._trained = bool(trained)
        self.inspect_button.setEnabled(self._state == TrainState.IDLE and self._trained)

    # --------------------------------------------------------------------------------- slots
    @Slot()
    def _on_input_changed(self) -> None:
        self._validate()
        self.inputChanged.emit()

    def _validate(self) -> None:
        self._form.update_states()  # e.g. the copy offset only for the copy-back task
        message = ""
        try:
            self.config()
            self.sweep_settings()
        except ValueError as exc:
            message = str(exc)
        self.show_error(message)

