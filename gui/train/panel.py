"""The Train tab's controls: task, rules, model size, optimiser, sweep settings, buttons."""

from __future__ import annotations

import math
import re

from PySide6.QtCore import QSignalBlocker, Signal, Slot
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.config import ScalingRule
from engine.trainer_config import TRAIN_LIMITS, OptimizerKind, TaskKind, TrainConfig
from gui.i18n import translate
from gui.train.controller import TrainState
from gui.views import style

__all__ = ["TRAIN_RULES", "LogSpinBox", "TrainPanel", "parse_lrs"]

_CTX = "TrainPanel"

#: Rules offered for training (temperature T = √d_k would duplicate 1/√d_k).
TRAIN_RULES: tuple[ScalingRule, ...] = (
    ScalingRule.NONE,
    ScalingRule.SQRT,
    ScalingRule.LINEAR,
    ScalingRule.QK_NORM,
    ScalingRule.SOFTCAP,
)
#: Mantissas of the learning-rate spin box's steps (1, 2, 3, 5 per decade).
_LADDER = (1.0, 2.0, 3.0, 5.0)


class LogSpinBox(QDoubleSpinBox):
    """A spin box for positive values that steps through 1, 2, 3, 5 × 10^k and shows ``%g``."""

    def __init__(
        self, low: float, high: float, value: float, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setDecimals(10)
        self.setRange(low, high)
        self.setValue(value)
        self.setKeyboardTracking(False)

    def textFromValue(self, value: float) -> str:  # Qt override
        return f"{value:.4g}"

    def valueFromText(self, text: str) -> float:  # Qt override
        try:
            return float(text.strip())
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int) -> object:  # Qt override
        from PySide6.QtGui import QValidator

        stripped = text.strip()
        if re.fullmatch(r"[0-9]*\.?[0-9]*(e[-+]?[0-9]*)?", stripped, re.IGNORECASE):
            try:
                value = float(stripped)
            except ValueError:
                return QValidator.State.Intermediate, text, pos
            ok = self.minimum() <= value <= self.maximum()
            return (QValidator.State.Acceptable if ok else QValidator.State.Intermediate, text, pos)
        return QValidator.State.Invalid, text, pos

    def stepBy(self, steps: int) -> None:  # Qt override
        value = self.value()
        for _ in range(abs(steps)):
            value = self._next(value, up=steps > 0)
        self.setValue(min(max(value, self.minimum()), self.maximum()))

    @staticmethod
    def _next(value: float, up: bool) -> float:
        exponent = math.floor(math.log10(value))
        candidates = [m * 10.0**e for e in (exponent - 1, exponent, exponent + 1) for m in _LADDER]
        tol = value * 1e-9
        if up:
            return min(c for c in candidates if c > value + tol)
        return max(c for c in candidates if c < value - tol)


def parse_lrs(text: str) -> tuple[float, ...]:
    """Parse a comma- or space-separated list of learning rates (sorted, validated).

    Raises
    ------
    ValueError
        With a message naming the offending item.
    """
    parts = [p for p in re.split(r"[,\s;]+", text.strip()) if p]
    if not parts:
        raise ValueError(translate("TrainPanel", "the learning-rate list is empty"))
    low, high = TRAIN_LIMITS["lr"]
    values = []
    for part in parts:
        try:
            value = float(part)
        except ValueError:
            raise ValueError(
                translate("TrainPanel", "learning rates: {0!r} is not a number").format(part)
            ) from None
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(
                translate("TrainPanel", "learning rates must be in [{0:g}, {1:g}], got {2}").format(
                    low, high, part
                )
            )
        values.append(value)
    if len(set(values)) != len(values):
        raise ValueError(translate("TrainPanel", "learning rates must not repeat a value"))
    return tuple(sorted(values))


def _spin(low: int, high: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setToolTip(tip)
    box.setKeyboardTracking(False)
    return box


class TrainPanel(QWidget):
    """Controls of the Train tab.

    :meth:`config` builds a validated :class:`~engine.trainer_config.TrainConfig`; invalid
    combinations are reported in :attr:`error_label` (the engine's own message) and the
    Start buttons refuse to start. The buttons are public so that the tab (and tests) connect
    them; :meth:`set_state` enables the ones that make sense in a controller state.
    """

    inputChanged = Signal()  # any control changed (validation is re-run)

    def __init__(self, config: TrainConfig | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        config = config or TrainConfig(d_model=64)
        self.task = QComboBox()
        self.task.addItem(
            translate("TrainPanel", "retrieval (key → value lookup)"), TaskKind.RETRIEVAL.value
        )
        self.task.addItem(
            translate("TrainPanel", "copy back (token k places back)"), TaskKind.COPY_BACK.value
        )
        self.task.setToolTip(
            translate(
                "TrainPanel",
                "Retrieval: n key/value pairs and a query key; answer the paired value (needs "
                "a sharp attention on one of n keys). Copy back: output the token k places back "
                "(causal mask).",
            )
        )
        self.rule_boxes: dict[ScalingRule, QCheckBox] = {}
        tips = {
            ScalingRule.NONE: translate(
                "TrainPanel", "No scaling: logits q·k with variance ≈ d_k at init."
            ),
            ScalingRule.SQRT: translate(
                "TrainPanel", "Divide the logits by √d_k (the Transformer rule)."
            ),
            ScalingRule.LINEAR: translate("TrainPanel", "Divide the logits by d_k (μP)."),
            ScalingRule.QK_NORM: translate(
                "TrainPanel", "Normalise q and k to unit length, times a gain (default √d_k)."
            ),
            ScalingRule.SOFTCAP: translate(
                "TrainPanel", "1/√d_k, then cap·tanh(s/cap) with cap = 50."
            ),
        }
        rules_box = QWidget()
        grid = QGridLayout(rules_box)
        grid.setContentsMargins(0, 0, 0, 0)
        for index, rule in enumerate(TRAIN_RULES):
            box = QCheckBox(style.rule_name(rule))
            box.setToolTip(tips[rule])
            box.setStyleSheet(
                f"QCheckBox {{ color: {style.RULE_COLORS[rule]}; font-weight: bold; }}"
            )
            box.setChecked(rule in config.rules)
            self.rule_boxes[rule] = box
            grid.addWidget(box, index // 3, index % 3)
        self.d_k = _spin(
            1, 1024, config.d_k, translate("TrainPanel", "Head dimension d_k (width of q and k).")
        )
        self.d_model = _spin(
            0,
            1024,
            config.d_model or 0,
            translate("TrainPanel", "Model width d_model; 'auto' uses d_k × heads."),
        )
        self.d_model.setSpecialValueText(translate("TrainPanel", "auto (d_k × heads)"))
        self.heads = _spin(
            1, 16, config.heads, translate("TrainPanel", "Number of attention heads.")
        )
        self.n = _spin(
            2,
            256,
            config.n,
            translate(
                "TrainPanel", "Retrieval: number of key/value pairs; copy back: sequence length."
            ),
        )
        self.vocab = _spin(
            2,
            1024,
            config.vocab,
            translate(
                "TrainPanel",
                "Distinct symbols; chance loss is ln(vocab). Retrieval needs vocab ≥ n.",
            ),
        )
        self.offset = _spin(
            1,
            255,
            config.offset,
            translate("TrainPanel", "Copy back: distance k to the copied token (k < n)."),
        )
        self.batch = _spin(
            1, 1024, config.batch, translate("TrainPanel", "Training examples per step.")
        )
        self.steps = _spin(
            1, 100_000, config.steps, translate("TrainPanel", "Optimiser steps per run.")
        )
        self.lr = LogSpinBox(TRAIN_LIMITS["lr"][0], TRAIN_LIMITS["lr"][1], config.lr)
        self.lr.setToolTip(
            translate(
                "TrainPanel", "Learning rate of the training run (arrows step 1, 2, 3, 5 × 10^k)."
            )
        )
        self.optimizer = QComboBox()
        self.optimizer.addItem("Adam", OptimizerKind.ADAM.value)
        self.optimizer.addItem("SGD", OptimizerKind.SGD.value)
        self.optimizer.setCurrentIndex(0 if config.optimizer is OptimizerKind.ADAM else 1)
        self.optimizer.setToolTip(translate("TrainPanel", "Adam (β = 0.9, 0.999) or plain SGD."))
        self.seed = _spin(
            0,
            1_000_000,
            config.seed,
            translate(
                "TrainPanel", "Seed of the initial weights, the batches and the held-out set."
            ),
        )
        self.seeds = _spin(
            1,
            20,
            3,
            translate(
                "TrainPanel",
                "Learning-rate sweep: seeds 0…N−1 per learning rate (mean and spread).",
            ),
        )
        self.lrs = QLineEdit("0.001, 0.003, 0.01, 0.03")
        self.lrs.setToolTip(
            translate("TrainPanel", "Learning-rate sweep: comma-separated learning rates.")
        )

        self.start_button = QPushButton(translate("TrainPanel", "Start"))
        self.start_button.setShortcut(QKeySequence("Ctrl+T"))
        self.start_button.setToolTip(
            translate("TrainPanel", "Train the checked rules side by side (Ctrl+T).")
        )
        self.sweep_button = QPushButton(translate("TrainPanel", "Run lr sweep"))
        self.sweep_button.setShortcut(QKeySequence("Ctrl+L"))
        self.sweep_button.setToolTip(
            translate(
                "TrainPanel",
                "Train every rule at every listed learning rate and seed; plot the final "
                "held-out loss (Ctrl+L).",
            )
        )
        self.pause_button = QPushButton(translate("TrainPanel", "Pause"))
        self.pause_button.setShortcut(QKeySequence("Ctrl+P"))
        self.pause_button.setToolTip(
            translate("TrainPanel", "Hold the run between two steps (Ctrl+P).")
        )
        self.resume_button = QPushButton(translate("TrainPanel", "Resume"))
        self.resume_button.setShortcut(QKeySequence("Ctrl+Shift+P"))
        self.resume_button.setToolTip(
            translate("TrainPanel", "Continue a paused run (Ctrl+Shift+P).")
        )
        self.stop_button = QPushButton(translate("TrainPanel", "Stop"))
        self.stop_button.setShortcut(QKeySequence("Ctrl+Shift+T"))
        self.stop_button.setToolTip(
            translate("TrainPanel", "End the run now; the curves so far stay (Ctrl+Shift+T).")
        )
        self.reset_button = QPushButton(translate("TrainPanel", "Reset"))
        self.reset_button.setShortcut(QKeySequence("Ctrl+Shift+X"))
        self.reset_button.setToolTip(
            translate("TrainPanel", "Stop and clear all curves and the sweep (Ctrl+Shift+X).")
        )
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.progress.setFormat(translate("TrainPanel", "idle"))
        self.progress.setToolTip(
            translate(
                "TrainPanel",
                "Progress of the run or sweep, with the estimated time left (pauses excluded).",
            )
        )
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("QLabel { color: #b00020; }")
        self.error_label.setVisible(False)
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)

        model = QGroupBox(translate("TrainPanel", "Task and model"))
        form = QFormLayout(model)
        form.addRow(translate("TrainPanel", "Task"), self.task)
        form.addRow(translate("TrainPanel", "Rules"), rules_box)
        form.addRow("d_k", self.d_k)
        form.addRow("d_model", self.d_model)
        form.addRow(translate("TrainPanel", "Heads"), self.heads)
        form.addRow("n", self.n)
        form.addRow(translate("TrainPanel", "Vocabulary"), self.vocab)
        form.addRow(translate("TrainPanel", "Copy offset k"), self.offset)
        training = QGroupBox(translate("TrainPanel", "Training"))
        form = QFormLayout(training)
        form.addRow(translate("TrainPanel", "Optimiser"), self.optimizer)
        form.addRow(translate("TrainPanel", "Learning rate"), self.lr)
        form.addRow(translate("TrainPanel", "Batch"), self.batch)
        form.addRow(translate("TrainPanel", "Steps"), self.steps)
        form.addRow(translate("TrainPanel", "Seed"), self.seed)
        sweep = QGroupBox(translate("TrainPanel", "Learning-rate sweep"))
        form = QFormLayout(sweep)
        form.addRow(translate("TrainPanel", "Learning rates"), self.lrs)
        form.addRow(translate("TrainPanel", "Seeds"), self.seeds)
        buttons = QGridLayout()
        buttons.addWidget(self.start_button, 0, 0)
        buttons.addWidget(self.sweep_button, 0, 1)
        buttons.addWidget(self.reset_button, 0, 2)
        buttons.addWidget(self.pause_button, 1, 0)
        buttons.addWidget(self.resume_button, 1, 1)
        buttons.addWidget(self.stop_button, 1, 2)
        # Buttons, progress and messages first: they stay visible without scrolling at 1280×800.
        layout = QVBoxLayout(self)
        layout.addLayout(buttons)
        layout.addWidget(self.progress)
        layout.addWidget(self.status_label)
        layout.addWidget(self.error_label)
        layout.addWidget(model)
        layout.addWidget(training)
        layout.addWidget(sweep)
        layout.addStretch(1)

        for box in (
            self.d_k,
            self.d_model,
            self.heads,
            self.n,
            self.vocab,
            self.offset,
            self.batch,
            self.steps,
            self.seed,
            self.seeds,
        ):
            box.valueChanged.connect(self._on_input_changed)
        self.lr.valueChanged.connect(self._on_input_changed)
        self.task.currentIndexChanged.connect(self._on_input_changed)
        self.optimizer.currentIndexChanged.connect(self._on_input_changed)
        self.lrs.textChanged.connect(self._on_input_changed)
        for box in self.rule_boxes.values():
            box.toggled.connect(self._on_input_changed)
        self._state = TrainState.IDLE
        self._validate()
        self.set_state(TrainState.IDLE)

    # --------------------------------------------------------------------------------- values
    def config(self) -> TrainConfig:
        """The configuration the controls describe.

        Raises
        ------
        ValueError
            For an invalid combination (the engine's message).
        """
        rules = tuple(rule for rule in TRAIN_RULES if self.rule_boxes[rule].isChecked())
        return TrainConfig(
            task=str(self.task.currentData()),
            rules=rules,
            d_k=self.d_k.value(),
            d_model=self.d_model.value() or None,
            heads=self.heads.value(),
            n=self.n.value(),
            vocab=self.vocab.value(),
            offset=self.offset.value(),
            batch=self.batch.value(),
            steps=self.steps.value(),
            optimizer=str(self.optimizer.currentData()),
            lr=self.lr.value(),
            seed=self.seed.value(),
        )

    def sweep_settings(self) -> tuple[tuple[float, ...], int]:
        """``(learning rates, number of seeds)`` of the sweep (ValueError if invalid)."""
        return parse_lrs(self.lrs.text()), self.seeds.value()

    def set_config(self, config: TrainConfig) -> None:
        """Show ``config`` in the controls (without emitting a change per widget)."""
        widgets = [
            self.task,
            self.optimizer,
            self.d_k,
            self.d_model,
            self.heads,
            self.n,
            self.vocab,
            self.offset,
            self.batch,
            self.steps,
            self.lr,
            self.seed,
            *self.rule_boxes.values(),
        ]
        blockers = [QSignalBlocker(w) for w in widgets]
        self.task.setCurrentIndex(self.task.findData(config.task.value))
        self.optimizer.setCurrentIndex(self.optimizer.findData(config.optimizer.value))
        for rule, box in self.rule_boxes.items():
            box.setChecked(rule in config.rules)
        self.d_k.setValue(config.d_k)
        self.d_model.setValue(config.d_model or 0)
        for name in ("heads", "n", "vocab", "offset", "batch", "steps", "seed"):
            getattr(self, name).setValue(getattr(config, name))
        self.lr.setValue(config.lr)
        del blockers
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

    def set_state(self, state: str) -> None:
        """Enable the buttons that make sense in controller state ``state``."""
        self._state = state
        idle = state == TrainState.IDLE
        self.start_button.setEnabled(idle)
        self.sweep_button.setEnabled(idle)
        self.pause_button.setEnabled(state == TrainState.RUNNING)
        self.resume_button.setEnabled(state == TrainState.PAUSED)
        self.stop_button.setEnabled(state in (TrainState.RUNNING, TrainState.PAUSED))
        self.reset_button.setEnabled(state != TrainState.STOPPING)

    @Slot(float, float)
    def set_progress(self, fraction: float, eta_s: float) -> None:
        """Show progress ``fraction`` and the estimated seconds left."""
        self.progress.setValue(round(1000 * min(max(fraction, 0.0), 1.0)))
        if self._state == TrainState.PAUSED:
            text = translate("TrainPanel", "%p% — paused")
        elif fraction >= 1.0:
            text = translate("TrainPanel", "%p% — done")
        elif math.isfinite(eta_s):
            text = translate("TrainPanel", "%p% — {0} left").format(_duration(eta_s))
        else:
            text = "%p%"
        self.progress.setFormat(text)

    # --------------------------------------------------------------------------------- slots
    @Slot()
    def _on_input_changed(self) -> None:
        self._validate()
        self.inputChanged.emit()

    def _validate(self) -> str:
        task = str(self.task.currentData())
        self.offset.setEnabled(task == TaskKind.COPY_BACK.value)
        message = ""
        try:
            self.config()
            self.sweep_settings()
        except ValueError as exc:
            message = str(exc)
        self.show_error(message)
        return message


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return translate("TrainPanel", "{0} s").format(seconds)
    return translate("TrainPanel", "{0} min {1:02d} s").format(seconds // 60, seconds % 60)
