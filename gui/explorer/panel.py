"""The parameter panel: widgets that build a new :class:`AttentionConfig` on every change.

Every edit reads all widgets, builds a config with ``dataclasses.replace`` and, when it is valid,
emits ``configChanged(object)`` once. An invalid combination (e.g. ``d_model`` not divisible by
the head count) shows an inline message and emits nothing. Values are pushed back into the
widgets under ``QSignalBlocker`` so that programmatic updates never echo as edits.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from PySide6.QtCore import QEvent, QSignalBlocker, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.analysis.experiment import check_snapshot_memory
from engine.config import LIMITS, AttentionConfig, MaskKind, ScalingRule
from gui.kit.i18n import QT_TRANSLATE_NOOP, translate

__all__ = ["GUI_LIMITS", "LinkedSlider", "ParameterPanel"]

_SLIDER_STEPS = 1000

#: GUI ranges: the engine's LIMITS, narrowed where a larger value only makes a request fail
#: the memory budget or take minutes (the CLI still accepts the full range).
GUI_LIMITS: dict[str, tuple[float, float]] = {
    **LIMITS,
    # The largest n whose snapshot (all rules, one head) fits the default 1 GiB memory budget;
    # with more heads the panel explains the limit in its inline message.
    "n_tokens": (1, 2048),
    "d_k": (1, 8192),
    "d_model": (1, 16384),
    "init_std": (0.01, 10.0),
    "projection_std": (0.001, 10.0),
    "temperature": (0.01, 1000.0),
    "gain": (0.01, 1000.0),
    "cap": (0.1, 1000.0),
    "samples": (1, 100_000),
    "seed": (0, 2**31 - 1),  # QSpinBox holds a C int
}


class LinkedSlider(QWidget):
    """A slider paired with a spin box (linear or logarithmic slider scale).

    The spin box holds the exact value; the slider is a coarse handle onto it.

    Parameters
    ----------
    low, high
        Inclusive range.
    integer
        Use a ``QSpinBox`` (True) or a ``QDoubleSpinBox``.
    log
        Logarithmic slider mapping (requires ``low > 0``).
    decimals
        Decimals of the double spin box.
    """

    valueChanged = Signal(float)  # payload: the new value

    def __init__(
        self,
        low: float,
        high: float,
        *,
        integer: bool = False,
        log: bool = False,
        decimals: int = 3,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        if log and low <= 0:
            raise ValueError(f"a log slider needs low > 0, got {low}")
        self._low, self._high, self._log, self._integer = float(low), float(high), log, integer
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setRange(0, _SLIDER_STEPS)
        if integer:
            self.spin: QSpinBox | QDoubleSpinBox = QSpinBox(self)
            self.spin.setRange(int(low), int(high))
        else:
            self.spin = QDoubleSpinBox(self)
            self.spin.setDecimals(decimals)
            self.spin.setRange(low, high)
            if log:
                self.spin.setStepType(QAbstractSpinBox.StepType.AdaptiveDecimalStepType)
            else:
                self.spin.setSingleStep((high - low) / 100)
        # Typing "1024" must not emit for 1, 10 and 102 on the way.
        self.spin.setKeyboardTracking(False)
        self.spin.setMinimumWidth(80)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.spin)
        self.slider.valueChanged.connect(self._on_slider_changed)
        self.spin.valueChanged.connect(self._on_spin_changed)
        self._sync_slider()

    def value(self) -> float:
        """Return the current value (an integral float for integer sliders)."""
        return float(self.spin.value())

    def set_value(self, value: float) -> None:
        """Set the value without emitting :attr:`valueChanged`."""
        with QSignalBlocker(self.spin):
            self.spin.setValue(round(value) if self._integer else float(value))
        self._sync_slider()

    def set_range(self, low: float, high: float) -> None:
        """Change the range without emitting (the value is clamped into it)."""
        self._low, self._high = float(low), float(high)
        with QSignalBlocker(self.spin):
            if self._integer:
                self.spin.setRange(int(low), int(high))
            else:
                self.spin.setRange(low, high)
        self._sync_slider()

    def setToolTip(self, text: str) -> None:  # Qt override
        """Set the tooltip on the slider and the spin box."""
        super().setToolTip(text)
        self.slider.setToolTip(text)
        self.spin.setToolTip(text)

    def _to_position(self, value: float) -> int:
        if self._high <= self._low:
            return 0
        if self._log:
            frac = math.log(value / self._low) / math.log(self._high / self._low)
        else:
            frac = (value - self._low) / (self._high - self._low)
        return round(min(max(frac, 0.0), 1.0) * _SLIDER_STEPS)

    def _from_position(self, position: int) -> float:
        frac = position / _SLIDER_STEPS
        if self._log:
            value = self._low * (self._high / self._low) ** frac
        else:
            value = self._low + frac * (self._high - self._low)
        return float(round(value)) if self._integer else value

    def _sync_slider(self) -> None:
        with QSignalBlocker(self.slider):
            self.slider.setValue(self._to_position(self.value()))

    @Slot(int)
    def _on_slider_changed(self, position: int) -> None:
        with QSignalBlocker(self.spin):
            value = self._from_position(position)
            self.spin.setValue(int(value) if self._integer else value)
        self.valueChanged.emit(self.value())

    @Slot()
    def _on_spin_changed(self) -> None:
        self._sync_slider()
        self.valueChanged.emit(self.value())


_RULE_TEXT = {
    ScalingRule.NONE: QT_TRANSLATE_NOOP("ParameterPanel", "none (c = 1)"),
    ScalingRule.SQRT: "1/√d_k",  # math: the same in every language
    ScalingRule.LINEAR: "1/d_k",
    ScalingRule.TEMPERATURE: QT_TRANSLATE_NOOP("ParameterPanel", "temperature 1/T"),
    ScalingRule.QK_NORM: QT_TRANSLATE_NOOP("ParameterPanel", "QK-norm"),
    ScalingRule.SOFTCAP: QT_TRANSLATE_NOOP("ParameterPanel", "soft-cap"),
}
_MASK_TEXT = {
    MaskKind.NONE: QT_TRANSLATE_NOOP("ParameterPanel", "none"),
    MaskKind.CAUSAL: QT_TRANSLATE_NOOP("ParameterPanel", "causal"),
}
#: Form row labels by control name (check boxes carry their text themselves).
_ROW_TEXT = {
    "n_tokens": QT_TRANSLATE_NOOP("ParameterPanel", "tokens n"),
    "d_k": QT_TRANSLATE_NOOP("ParameterPanel", "head dim d_k"),
    "heads": QT_TRANSLATE_NOOP("ParameterPanel", "heads h"),
    "d_model": "d_model",
    "init_std": QT_TRANSLATE_NOOP("ParameterPanel", "init std σ"),
    "projection_std": QT_TRANSLATE_NOOP("ParameterPanel", "projection std s"),
    "rule": QT_TRANSLATE_NOOP("ParameterPanel", "scaling rule"),
    "temperature": QT_TRANSLATE_NOOP("ParameterPanel", "temperature T"),
    "gain": QT_TRANSLATE_NOOP("ParameterPanel", "gain g"),
    "cap": QT_TRANSLATE_NOOP("ParameterPanel", "cap"),
    "rho": QT_TRANSLATE_NOOP("ParameterPanel", "q–k correlation ρ"),
    "mask": QT_TRANSLATE_NOOP("ParameterPanel", "mask"),
    "query_row": QT_TRANSLATE_NOOP("ParameterPanel", "query row"),
    "seed": QT_TRANSLATE_NOOP("ParameterPanel", "seed"),
    "samples": QT_TRANSLATE_NOOP("ParameterPanel", "samples"),
}
_CHECK_TEXT = {
    "link_heads": QT_TRANSLATE_NOOP("ParameterPanel", "link d_k = d_model / h"),
    "use_projection": QT_TRANSLATE_NOOP("ParameterPanel", "use projections W_Q, W_K"),
    "gain_default": QT_TRANSLATE_NOOP("ParameterPanel", "default g = √d_k"),
}
#: Tooltips by control name: the formula each parameter enters.
_TOOLTIPS = {
    "n_tokens": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Number of tokens n (keys per softmax row). Uniform attention has "
        "entropy ln n; the largest of n Gaussian logits of std s is ≈ s·√(2 ln n)."),
    "d_k": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Head dimension d_k. Raw scores: Var(q·k) = d_k·σ⁴ for iid q, k; "
        "1/√d_k scaling gives Var = σ⁴, 1/d_k gives σ⁴/d_k."),
    "heads": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Number of heads h; d_model must be divisible by h. "
        "With the link, d_k = d_model / h."),
    "d_model": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Model width d_model (divisible by h). With projections "
        "Var(q_j) = d_model·s²."),
    "link_heads": QT_TRANSLATE_NOOP(
        "ParameterPanel", "Derive d_k = d_model / h instead of setting d_k directly."),
    "init_std": QT_TRANSLATE_NOOP(
        "ParameterPanel", "Std σ of every component of q and k: Var(q·k) = d_k·σ⁴."),
    "use_projection": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Draw x ~ N(0, I_d_model) and q = x·W_Q, k = x·W_K with "
        "W ~ N(0, s²): Var(q_j) = d_model·s², Var(q·k) = d_k·(d_model·s²)²."),
    "projection_std": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Projection init std s: Var(q_j) = d_model·s² "
        "(s = 1/√d_model keeps unit variance)."),
    "rule": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "How raw scores become logits: none (c = 1), 1/√d_k, 1/d_k, 1/T, "
        "QK-norm g·(q/‖q‖)·(k/‖k‖), soft-cap cap·tanh((q·k/√d_k)/cap)."),
    "temperature": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "logits = q·k / T; T = √d_k reproduces 1/√d_k, "
        "Var(logit) = d_k·σ⁴ / T²."),
    "gain_default": QT_TRANSLATE_NOOP(
        "ParameterPanel", "Use the default QK-norm gain g = √d_k."),
    "gain": QT_TRANSLATE_NOOP(
        "ParameterPanel", "QK-norm: logits = g·cos(q, k) ∈ [−g, g]; Var ≈ g²/d_k."),
    "cap": QT_TRANSLATE_NOOP(
        "ParameterPanel", "Soft-cap: logits = cap·tanh((q·k/√d_k)/cap), bounded by ±cap."),
    "rho": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "q–k correlation: k = ρ·q + √(1−ρ²)·ξ, so E[q·k] = ρ·d_k·σ² "
        "(grows like d_k: the case for 1/d_k)."),
    "mask": QT_TRANSLATE_NOOP(
        "ParameterPanel", "causal: query i attends only to keys j ≤ i (masked logits = −∞)."),
    "query_row": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Row i of the attention matrix shown in the softmax view "
        "(with a causal mask it sees i + 1 keys)."),
    "seed": QT_TRANSLATE_NOOP(
        "ParameterPanel", "Seed of every random draw (same seed, same numbers)."),
    "samples": QT_TRANSLATE_NOOP(
        "ParameterPanel",
        "Independent query rows used for the statistics "
        "(standard errors shrink like 1/√samples)."),
}


class ParameterPanel(QWidget):
    """Widgets for every field of :class:`AttentionConfig`.

    Parameters
    ----------
    config
        Initial configuration (default: ``AttentionConfig()``).

    Signals
    -------
    configChanged(object)
        A new, valid :class:`AttentionConfig` after a user edit (never after
        :meth:`set_config`).
    """

    configChanged = Signal(object)  # payload: AttentionConfig

    def __init__(self, config: AttentionConfig | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self._config = config or AttentionConfig()
        self._error = ""
        lim = GUI_LIMITS
        self._controls: dict[str, QWidget] = {}

        self.n_tokens = LinkedSlider(*lim["n_tokens"], integer=True, log=True)
        self.d_k = LinkedSlider(*lim["d_k"], integer=True, log=True)
        self.heads = QSpinBox()
        self.heads.setRange(*map(int, lim["heads"]))
        self.d_model = QSpinBox()
        self.d_model.setRange(*map(int, lim["d_model"]))
        self.link_heads = QCheckBox()
        self.init_std = LinkedSlider(*lim["init_std"], log=True, decimals=3)
        self.use_projection = QCheckBox()
        self.projection_std = LinkedSlider(*lim["projection_std"], log=True, decimals=4)
        self.rule = QComboBox()
        for rule in ScalingRule:
            self.rule.addItem(_RULE_TEXT[rule], rule.value)
        self.temperature = LinkedSlider(*lim["temperature"], log=True, decimals=3)
        self.gain_default = QCheckBox()
        self.gain = LinkedSlider(*lim["gain"], log=True, decimals=3)
        self.cap = LinkedSlider(*lim["cap"], log=True, decimals=2)
        self.rho = LinkedSlider(*lim["rho"], decimals=3)
        self.mask = QComboBox()
        for mask in MaskKind:
            self.mask.addItem(_MASK_TEXT[mask], mask.value)
        self.query_row = LinkedSlider(0, self._config.n_tokens - 1, integer=True)
        self.seed = QSpinBox()
        self.seed.setRange(*map(int, lim["seed"]))
        self.samples = QSpinBox()
        self.samples.setRange(*map(int, lim["samples"]))
        self.samples.setSingleStep(500)
        for spin in (self.heads, self.d_model, self.seed, self.samples):
            spin.setKeyboardTracking(False)

        self._controls = {
            "n_tokens": self.n_tokens,
            "d_k": self.d_k,
            "heads": self.heads,
            "d_model": self.d_model,
            "link_heads": self.link_heads,
            "init_std": self.init_std,
            "use_projection": self.use_projection,
            "projection_std": self.projection_std,
            "rule": self.rule,
            "temperature": self.temperature,
            "gain_default": self.gain_default,
            "gain": self.gain,
            "cap": self.cap,
            "rho": self.rho,
            "mask": self.mask,
            "query_row": self.query_row,
            "seed": self.seed,
            "samples": self.samples,
        }

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        # Row labels and the check boxes' texts are set (and re-set) by retranslate_ui.
        for name, control in self._controls.items():
            if name in _ROW_TEXT:
                form.addRow(QLabel(), control)
            else:
                form.addRow("", control)
        self._form = form

        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #c0392b; font-weight: bold;")
        self.error_label.setVisible(False)
        self.error_label.setObjectName("parameterError")

        outer = QVBoxLayout(self)
        outer.addLayout(form)
        outer.addWidget(self.error_label)
        outer.addStretch(1)

        self.set_config(self._config)
        self.retranslate_ui()

        for name in ("n_tokens", "d_k", "init_std", "projection_std", "temperature", "gain",
                     "cap", "rho", "query_row"):
            self._controls[name].valueChanged.connect(self._on_control_changed)
        for spin in (self.heads, self.d_model, self.seed, self.samples):
            spin.valueChanged.connect(self._on_control_changed)
        for box in (self.link_heads, self.use_projection, self.gain_default):
            box.toggled.connect(self._on_control_changed)
        for combo in (self.rule, self.mask):
            combo.currentIndexChanged.connect(self._on_control_changed)

    # ----------------------------------------------------------------------------- public API
    def config(self) -> AttentionConfig:
        """Return the last valid configuration."""
        return self._config

    def error_text(self) -> str:
        """Return the inline error message ("" when the widgets hold a valid configuration)."""
        return self._error

    def controls(self) -> dict[str, QWidget]:
        """Return the editable widgets by name (used by the self-test and the tests)."""
        return dict(self._controls)

    def set_config(self, config: AttentionConfig) -> None:
        """Show ``config`` in the widgets without emitting :attr:`configChanged`."""
        self._config = config
        blockers = [QSignalBlocker(w) for w in self._controls.values()]
        try:
            self.n_tokens.set_value(config.n_tokens)
            self.d_k.set_value(config.d_k)
            self.heads.setValue(config.heads)
            self.d_model.setValue(config.d_model)
            self.link_heads.setChecked(config.link_heads)
            self.init_std.set_value(config.init_std)
            self.use_projection.setChecked(config.use_projection)
            self.projection_std.set_value(config.projection_std)
            self.rule.setCurrentIndex(self.rule.findData(config.rule.value))
            self.temperature.set_value(config.temperature)
            self.gain_default.setChecked(config.gain is None)
            self.gain.set_value(config.gain if config.gain is not None
                                else math.sqrt(config.d_k))
            self.cap.set_value(config.cap)
            self.rho.set_value(config.rho)
            self.mask.setCurrentIndex(self.mask.findData(config.mask.value))
            self.query_row.set_range(0, config.n_tokens - 1)
            self.query_row.set_value(config.query_row)
            self.seed.setValue(min(config.seed, int(GUI_LIMITS["seed"][1])))
            self.samples.setValue(min(config.samples, int(GUI_LIMITS["samples"][1])))
        finally:
            del blockers
        self._set_error("")
        self._update_enabled()

    # -------------------------------------------------------------------------------- private
    def _read_widgets(self) -> dict[str, Any]:
        return {
            "n_tokens": int(self.n_tokens.value()),
            "d_k": int(self.d_k.value()),
            "heads": self.heads.value(),
            "d_model": self.d_model.value(),
            "link_heads": self.link_heads.isChecked(),
            "init_std": self.init_std.value(),
            "use_projection": self.use_projection.isChecked(),
            "projection_std": self.projection_std.value(),
            "rule": ScalingRule(self.rule.currentData()),
            "temperature": self.temperature.value(),
            "gain": None if self.gain_default.isChecked() else self.gain.value(),
            "cap": self.cap.value(),
            "rho": self.rho.value(),
            "mask": MaskKind(self.mask.currentData()),
            "query_row": int(self.query_row.value()),
            "seed": self.seed.value(),
            "samples": self.samples.value(),
        }

    @Slot()
    def _on_control_changed(self) -> None:
        # The query row range follows n, so a shorter sequence never leaves an invalid row.
        n = int(self.n_tokens.value())
        if self.query_row.value() > n - 1 or self.query_row.spin.maximum() != n - 1:
            self.query_row.set_range(0, n - 1)
        self._update_enabled()
        values = self._read_widgets()
        try:
            config = dataclasses.replace(self._config, **values)
            # Refuse here, next to the controls, what the engine's memory guard would refuse.
            check_snapshot_memory(config, tuple(ScalingRule))
        except ValueError as exc:
            self._set_error(str(exc))
            return
        self._set_error("")
        if config.link_heads and int(self.d_k.value()) != config.d_k:
            self.d_k.set_value(config.d_k)
        if config == self._config:
            return
        self._config = config
        self.configChanged.emit(config)

    def _set_error(self, text: str) -> None:
        self._error = text
        # The reason is the engine's ValueError message, which is English in every language.
        self.error_label.setText(
            translate("ParameterPanel", "Not applied: {0}").format(text) if text else "")
        self.error_label.setVisible(bool(text))

    def _update_enabled(self) -> None:
        rule = ScalingRule(self.rule.currentData())
        self.d_k.setEnabled(not self.link_heads.isChecked())
        self.init_std.setEnabled(not self.use_projection.isChecked())
        self.projection_std.setEnabled(self.use_projection.isChecked())
        self.gain.setEnabled(not self.gain_default.isChecked())
        # Show only the parameter of the selected rule.
        self._form.setRowVisible(self.temperature, rule is ScalingRule.TEMPERATURE)
        self._form.setRowVisible(self.gain_default, rule is ScalingRule.QK_NORM)
        self._form.setRowVisible(self.gain, rule is ScalingRule.QK_NORM)
        self._form.setRowVisible(self.cap, rule is ScalingRule.SOFTCAP)

    def retranslate_ui(self) -> None:
        """Set row labels, check box and combo texts and tooltips in the current language."""
        for name, text in _ROW_TEXT.items():
            label = self._form.labelForField(self._controls[name])
            if isinstance(label, QLabel):
                label.setText(translate("ParameterPanel", text))
        for name, text in _CHECK_TEXT.items():
            self._controls[name].setText(translate("ParameterPanel", text))  # type: ignore[attr-defined]
        for index, rule in enumerate(ScalingRule):
            self.rule.setItemText(index, translate("ParameterPanel", _RULE_TEXT[rule]))
        for index, mask in enumerate(MaskKind):
            self.mask.setItemText(index, translate("ParameterPanel", _MASK_TEXT[mask]))
        for name, text in _TOOLTIPS.items():
            self._controls[name].setToolTip(translate("ParameterPanel", text))
        self._set_error(self._error)

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """Re-translate when the application's language changes."""
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate_ui()
        super().changeEvent(event)
