"""The Train tab's controls: task, rules, model size, optimiser, sweep settings, buttons."""

from __future__ import annotations

import math
import re

from PySide6.QtCore import QEvent, QSignalBlocker, Signal, Slot
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
from engine.config.train import TRAIN_LIMITS, OptimizerKind, TaskKind, TrainConfig
from gui.kit import style
from gui.kit.i18n import translate
from gui.train.state import TrainState

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


class OptionalLogSpinBox(LogSpinBox):
    """A :class:`LogSpinBox` whose lowest entry, 0 shown as a word ("auto", "off"), means None.

    Values between 0 and the engine's lower limit ``low`` are not accepted; stepping up from
    the word goes to ``first``, stepping down below ``low`` goes back to the word.
    """

    def __init__(
        self, low: float, high: float, value: float | None, first: float,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(0.0, high, 0.0, parent)
        self._low = low
        self._first = first
        self.set_optional(value)

    def set_optional(self, value: float | None) -> None:
        """Show ``value`` (None: the word)."""
        self.setValue(0.0 if value is None else value)

    def optional_value(self) -> float | None:
        """The value, or None when the word is shown."""
        value = self.value()
        return None if value == 0.0 else value

    def textFromValue(self, value: float) -> str:  # Qt override
        return self.specialValueText() if value == 0.0 else super().textFromValue(value)

    def valueFromText(self, text: str) -> float:  # Qt override
        if text.strip() == self.specialValueText().strip():
            return 0.0
        return super().valueFromText(text)

    def validate(self, text: str, pos: int) -> object:  # Qt override
        from PySide6.QtGui import QValidator

        word = self.specialValueText().strip()
        stripped = text.strip()
        if word and stripped == word:
            return QValidator.State.Acceptable, text, pos
        if word and stripped and word.startswith(stripped) and not stripped[0].isdigit():
            return QValidator.State.Intermediate, text, pos
        state, text, pos = super().validate(text, pos)  # type: ignore[misc]
        if state == QValidator.State.Acceptable:
            value = float(stripped)
            if 0.0 < value < self._low:
                return QValidator.State.Intermediate, text, pos
        return state, text, pos

    def stepBy(self, steps: int) -> None:  # Qt override
        value = self.value()
        for _ in range(abs(steps)):
            if steps > 0:
                value = self._first if value == 0.0 else self._next(value, up=True)
            elif value > 0.0:
                lower = self._next(value, up=False)
                value = 0.0 if lower < self._low * (1 - 1e-9) else lower
        self.setValue(min(max(value, 0.0), self.maximum()))


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


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setKeyboardTracking(False)
    return box


class TrainPanel(QWidget):
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
        self.task = QComboBox()
        self.task.addItem("", TaskKind.RETRIEVAL.value)
        self.task.addItem("", TaskKind.COPY_BACK.value)
        self.rule_boxes: dict[ScalingRule, QCheckBox] = {}
        rules_box = QWidget()
        grid = QGridLayout(rules_box)
        grid.setContentsMargins(0, 0, 0, 0)
        for index, rule in enumerate(TRAIN_RULES):
            box = QCheckBox()
            box.setStyleSheet(
                f"QCheckBox {{ color: {style.RULE_COLORS[rule]}; font-weight: bold; }}"
            )
            box.setChecked(rule in config.rules)
            self.rule_boxes[rule] = box
            grid.addWidget(box, index // 3, index % 3)
        self.d_k = _spin(1, 1024, config.d_k)
        self.d_model = _spin(0, 1024, config.d_model or 0)
        self.heads = _spin(1, 16, config.heads)
        self.n = _spin(2, 256, config.n)
        self.vocab = _spin(2, 1024, config.vocab)
        self.offset = _spin(1, 255, config.offset)
        self.batch = _spin(1, 1024, config.batch)
        self.steps = _spin(1, 100_000, config.steps)
        self.lr = LogSpinBox(TRAIN_LIMITS["lr"][0], TRAIN_LIMITS["lr"][1], config.lr)
        self.optimizer = QComboBox()
        self.optimizer.addItem("Adam", OptimizerKind.ADAM.value)
        self.optimizer.addItem("SGD", OptimizerKind.SGD.value)
        self.optimizer.setCurrentIndex(0 if config.optimizer is OptimizerKind.ADAM else 1)
        self.seed = _spin(0, 1_000_000, config.seed)
        # The CLI's --init-std, --clip-norm and --eval-size, with the engine's limits and
        # defaults (None: 1/√d_model, no clipping).
        self.init_std = OptionalLogSpinBox(*TRAIN_LIMITS["init_std"], config.init_std, 0.1)
        self.clip_norm = OptionalLogSpinBox(*TRAIN_LIMITS["clip_norm"], config.clip_norm, 1.0)
        self.eval_size = _spin(*map(int, TRAIN_LIMITS["eval_size"]), config.eval_size)
        self.seeds = _spin(1, 20, 3)
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
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self._progress_eta = math.nan  # last ETA shown, to re-word the bar in a new language
        self._ran = False  # a job ran since the last Reset ("stopped" rather than "idle")
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("QLabel { color: #b00020; }")
        self.error_label.setVisible(False)
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)

        self._model_box = QGroupBox()
        form = QFormLayout(self._model_box)
        # Row labels: QLabel objects kept by name so that retranslate_ui can re-word them.
        self._row_labels: dict[str, QLabel] = {}
        rows = (
            (form, "task", self.task),
            (form, "rules", rules_box),
            (form, "d_k", self.d_k),
            (form, "d_model", self.d_model),
            (form, "heads", self.heads),
            (form, "n", self.n),
            (form, "vocab", self.vocab),
            (form, "offset", self.offset),
        )
        self._training_box = QGroupBox()
        training_form = QFormLayout(self._training_box)
        rows += (
            (training_form, "optimizer", self.optimizer),
            (training_form, "lr", self.lr),
            (training_form, "batch", self.batch),
            (training_form, "steps", self.steps),
            (training_form, "seed", self.seed),
            (training_form, "init_std", self.init_std),
            (training_form, "clip_norm", self.clip_norm),
            (training_form, "eval_size", self.eval_size),
        )
        self._sweep_box = QGroupBox()
        sweep_form = QFormLayout(self._sweep_box)
        rows += ((sweep_form, "lrs", self.lrs), (sweep_form, "seeds", self.seeds))
        for layout_, name, field in rows:
            label = QLabel()
            layout_.addRow(label, field)
            self._row_labels[name] = label
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
        layout.addWidget(self._model_box)
        layout.addWidget(self._training_box)
        layout.addWidget(self._sweep_box)
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
            self.eval_size,
        ):
            box.valueChanged.connect(self._on_input_changed)
        for log_box in (self.lr, self.init_std, self.clip_norm):
            log_box.valueChanged.connect(self._on_input_changed)
        self.task.currentIndexChanged.connect(self._on_input_changed)
        self.optimizer.currentIndexChanged.connect(self._on_input_changed)
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
        self.task.setItemText(0, translate("TrainPanel", "retrieval (key → value lookup)"))
        self.task.setItemText(1, translate("TrainPanel", "copy back (token k places back)"))
        self.task.setToolTip(
            translate(
                "TrainPanel",
                "Retrieval: n key/value pairs and a query key; answer the paired value (needs "
                "a sharp attention on one of n keys). Copy back: output the token k places back "
                "(causal mask).",
            )
        )
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
        for rule, box in self.rule_boxes.items():
            box.setText(style.rule_name(rule))
            box.setToolTip(tips[rule])
        self.d_k.setToolTip(translate("TrainPanel", "Head dimension d_k (width of q and k)."))
        self.d_model.setToolTip(
            translate("TrainPanel", "Model width d_model; 'auto' uses d_k × heads.")
        )
        self.d_model.setSpecialValueText(translate("TrainPanel", "auto (d_k × heads)"))
        self.heads.setToolTip(translate("TrainPanel", "Number of attention heads."))
        self.n.setToolTip(
            translate(
                "TrainPanel", "Retrieval: number of key/value pairs; copy back: sequence length."
            )
        )
        self.vocab.setToolTip(
            translate(
                "TrainPanel",
                "Distinct symbols; chance loss is ln(vocab). Retrieval needs vocab ≥ n.",
            )
        )
        self.offset.setToolTip(
            translate("TrainPanel", "Copy back: distance k to the copied token (k < n).")
        )
        self.batch.setToolTip(translate("TrainPanel", "Training examples per step."))
        self.steps.setToolTip(translate("TrainPanel", "Optimiser steps per run."))
        self.lr.setToolTip(
            translate(
                "TrainPanel", "Learning rate of the training run (arrows step 1, 2, 3, 5 × 10^k)."
            )
        )
        self.optimizer.setToolTip(translate("TrainPanel", "Adam (β = 0.9, 0.999) or plain SGD."))
        self.seed.setToolTip(
            translate(
                "TrainPanel", "Seed of the initial weights, the batches and the held-out set."
            )
        )
        self.init_std.setSpecialValueText(translate("TrainPanel", "auto (1/√d_model)"))
        self.init_std.setToolTip(
            translate(
                "TrainPanel",
                "Standard deviation of the W_Q, W_K, W_V entries at init. Auto: 1/√d_model, "
                "so q and k components have unit variance and unscaled logits variance d_k.",
            )
        )
        self.clip_norm.setSpecialValueText(translate("TrainPanel", "off"))
        self.clip_norm.setToolTip(
            translate(
                "TrainPanel",
                "Clip the global gradient norm to this value before each optimiser step "
                "(off: no clipping).",
            )
        )
        self.eval_size.setToolTip(
            translate(
                "TrainPanel",
                "Examples in the fixed held-out set (drawn from the seed); example 0 is the "
                "probe whose attention is shown.",
            )
        )
        self.seeds.setToolTip(
            translate(
                "TrainPanel",
                "Learning-rate sweep: seeds 0…N−1 per learning rate (mean and spread).",
            )
        )
        self.lrs.setToolTip(
            translate("TrainPanel", "Learning-rate sweep: comma-separated learning rates.")
        )
        buttons = (
            (self.start_button, translate("TrainPanel", "Start"),
             translate("TrainPanel", "Train the checked rules side by side (Ctrl+T).")),
            (self.sweep_button, translate("TrainPanel", "Run lr sweep"),
             translate(
                 "TrainPanel",
                 "Train every rule at every listed learning rate and seed; plot the final "
                 "held-out loss (Ctrl+L).",
             )),
            (self.pause_button, translate("TrainPanel", "Pause"),
             translate("TrainPanel", "Hold the run between two steps (Ctrl+P).")),
            (self.resume_button, translate("TrainPanel", "Resume"),
             translate("TrainPanel", "Continue a paused run (Ctrl+Shift+P).")),
            (self.stop_button, translate("TrainPanel", "Stop"),
             translate("TrainPanel", "End the run now; the curves so far stay (Ctrl+Shift+T).")),
            (self.reset_button, translate("TrainPanel", "Reset"),
             translate("TrainPanel", "Stop and clear all curves and the sweep (Ctrl+Shift+X).")),
        )
        for button, text, tip in buttons:
            shortcut = button.shortcut()
            button.setText(text)  # QAbstractButton.setText replaces the shortcut by a mnemonic
            button.setShortcut(shortcut)
            button.setToolTip(tip)
        self.progress.setToolTip(
            translate(
                "TrainPanel",
                "Progress of the run or sweep, with the estimated time left (pauses excluded).",
            )
        )
        self._model_box.setTitle(translate("TrainPanel", "Task and model"))
        self._training_box.setTitle(translate("TrainPanel", "Training"))
        self._sweep_box.setTitle(translate("TrainPanel", "Learning-rate sweep"))
        row_texts = {
            "task": translate("TrainPanel", "Task"),
            "rules": translate("TrainPanel", "Rules"),
            "d_k": "d_k",
            "d_model": "d_model",
            "heads": translate("TrainPanel", "Heads"),
            "n": "n",
            "vocab": translate("TrainPanel", "Vocabulary"),
            "offset": translate("TrainPanel", "Copy offset k"),
            "optimizer": translate("TrainPanel", "Optimiser"),
            "lr": translate("TrainPanel", "Learning rate"),
            "batch": translate("TrainPanel", "Batch"),
            "steps": translate("TrainPanel", "Steps"),
            "seed": translate("TrainPanel", "Seed"),
            "init_std": translate("TrainPanel", "Init std"),
            "clip_norm": translate("TrainPanel", "Clip norm"),
            "eval_size": translate("TrainPanel", "Held-out size"),
            "lrs": translate("TrainPanel", "Learning rates"),
            "seeds": translate("TrainPanel", "Seeds"),
        }
        for name, text in row_texts.items():
            self._row_labels[name].setText(text)
        self.show_progress_text()
        self._validate()  # the validation message is worded in the current language

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """Re-translate when the application's language changes."""
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate_ui()
        super().changeEvent(event)

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
            init_std=self.init_std.optional_value(),
            clip_norm=self.clip_norm.optional_value(),
            eval_size=self.eval_size.value(),
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
            self.init_std,
            self.clip_norm,
            self.eval_size,
            *self.rule_boxes.values(),
        ]
        blockers = [QSignalBlocker(w) for w in widgets]
        self.task.setCurrentIndex(self.task.findData(config.task.value))
        self.optimizer.setCurrentIndex(self.optimizer.findData(config.optimizer.value))
        for rule, box in self.rule_boxes.items():
            box.setChecked(rule in config.rules)
        self.d_k.setValue(config.d_k)
        self.d_model.setValue(config.d_model or 0)
        for name in ("heads", "n", "vocab", "offset", "batch", "steps", "seed", "eval_size"):
            getattr(self, name).setValue(getattr(config, name))
        self.lr.setValue(config.lr)
        self.init_std.set_optional(config.init_std)
        self.clip_norm.set_optional(config.clip_norm)
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

    def set_state(self, state: TrainState) -> None:
        """Enable the buttons that make sense in controller state ``state``."""
        self._state = state
        if state == TrainState.RUNNING:
            self._ran = True
        idle = state == TrainState.IDLE
        self.start_button.setEnabled(idle)
        self.sweep_button.setEnabled(idle)
        self.pause_button.setEnabled(state == TrainState.RUNNING)
        self.resume_button.setEnabled(state == TrainState.PAUSED)
        self.stop_button.setEnabled(state in (TrainState.RUNNING, TrainState.PAUSED))
        self.reset_button.setEnabled(state != TrainState.STOPPING)
        self.show_progress_text()

    @Slot(float, float)
    def set_progress(self, fraction: float, eta_s: float) -> None:
        """Show progress ``fraction`` and the estimated seconds left."""
        self.progress.setValue(round(1000 * min(max(fraction, 0.0), 1.0)))
        self._progress_eta = eta_s
        self.show_progress_text()

    def reset_progress(self) -> None:
        """Empty the progress bar and show it as idle (Reset)."""
        self._ran = False
        self.set_progress(0.0, math.nan)

    def show_progress_text(self) -> None:
        """Word the progress bar for the state, progress and ETA (in the current language)."""
        state, done = self._state, self.progress.value() >= self.progress.maximum()
        if state == TrainState.PAUSED:
            text = translate("TrainPanel", "%p% — paused")
        elif state == TrainState.STOPPING:
            text = translate("TrainPanel", "%p% — stopping")
        elif done:
            text = translate("TrainPanel", "%p% — done")
        elif state == TrainState.IDLE:
            text = translate("TrainPanel", "%p% — stopped") if self._ran else translate(
                "TrainPanel", "idle")
        elif math.isfinite(self._progress_eta):
            text = translate("TrainPanel", "%p% — {0} left").format(_duration(self._progress_eta))
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
