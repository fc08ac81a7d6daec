"""The Heads tab's controls: what colours the grid, the logits diagnosed (the file's own scale or
a rule with its T, gain and cap), the batch entry replayed, the rules whose maps show, and the
scan's progress with its Cancel button.

Two rows, so that the tab fits 1024 px beside nothing and never widens the window.
"""

from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.config import ScalingRule
from engine.config.rules import RULE_DEFAULTS
from engine.core.scaling import Rule
from gui.heads.metrics import METRICS, Metric
from gui.heads.replay import DEFAULT_REPLAY_RULES
from gui.heads.worker import Logits
from gui.kit import style
from gui.kit.field_widgets import number_spin
from gui.kit.i18n import translate

__all__ = ["HeadsControls"]


class HeadsControls(QWidget):
    """The tab's two rows of controls; the widgets are public, for the tab and its tests.

    Signals
    -------
    logitsChanged()
        The user changed the logits or a rule's parameter (:meth:`logits`).
    replayRulesChanged()
        The user picked other rules to show (:meth:`replay_rules`, never empty).
    """

    logitsChanged = Signal()
    replayRulesChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # Not "metric": Shiboken would call it as the override of QPaintDevice.metric().
        self.colour_label, self.colour_by = QLabel(), QComboBox()
        for metric in METRICS:
            self.colour_by.addItem("", metric.key)
        self.logits_label, self.logits_rule = QLabel(), QComboBox()
        for kind in (None, *ScalingRule):  # None: the file's own scale
            self.logits_rule.addItem("", kind)
        self.temperature = number_spin(1e-3, 1e6, 8.0, 3)
        self.gain = number_spin(0.0, 1e6, 0.0, 3)
        self.cap = number_spin(1e-3, 1e6, RULE_DEFAULTS["cap"], 2)
        self.param_labels = (QLabel(), QLabel(), QLabel())
        self.batch_label, self.batch = QLabel(), QSpinBox()
        self.batch.setRange(0, 0)
        self.rules_button = QToolButton()
        self.rules_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.rules_button.setMenu(QMenu(self.rules_button))
        self.rule_actions: dict[ScalingRule, QAction] = {}
        for rule in ScalingRule:
            action = self.rules_button.menu().addAction(rule.value)
            action.setCheckable(True)
            action.setChecked(rule in DEFAULT_REPLAY_RULES)
            action.toggled.connect(self._on_rule_toggled)
            self.rule_actions[rule] = action
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(180)
        self.progress.setVisible(False)
        self.cancel = QPushButton()
        self.cancel.setVisible(False)

        rows = QVBoxLayout(self)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(2)
        first, second = QHBoxLayout(), QHBoxLayout()
        t_label, gain_label, cap_label = self.param_labels
        for row, widgets in ((first, (self.colour_label, self.colour_by, self.logits_label,
                                      self.logits_rule, self.rules_button)),
                             (second, (t_label, self.temperature, gain_label, self.gain,
                                       cap_label, self.cap, self.batch_label, self.batch))):
            row.setContentsMargins(6, 0, 6, 0)
            for widget in widgets:
                row.addWidget(widget)
            row.addStretch(1)
            rows.addLayout(row)
        first.addWidget(self.progress)
        first.addWidget(self.cancel)

        for signal in (self.logits_rule.currentIndexChanged, self.temperature.valueChanged,
                       self.gain.valueChanged, self.cap.valueChanged):
            signal.connect(self.logitsChanged)

    def current_metric(self) -> Metric:
        """The diagnostic that colours the grid."""
        return METRICS[max(self.colour_by.currentIndex(), 0)]

    def logits(self) -> Logits:
        """The logits picked and the rules' parameters (T, gain and cap serve the replay
        whatever the logits: they stay editable)."""
        kind, gain = self.logits_rule.currentData(), self.gain.value()
        rule = Rule(ScalingRule.SQRT if kind is None else kind,
                    temperature=self.temperature.value(), gain=gain if gain > 0 else None,
                    cap=self.cap.value())
        return Logits(rule, own_scale=kind is None)

    def replay_rules(self) -> tuple[ScalingRule, ...]:
        """The rules whose maps show, in the order of :class:`ScalingRule`."""
        return tuple(rule for rule, action in self.rule_actions.items() if action.isChecked())

    def show_logits(self, logits: Logits) -> None:
        """Set the logits controls to ``logits`` without emitting :attr:`logitsChanged`."""
        widgets = (self.logits_rule, self.temperature, self.gain, self.cap)
        blockers = [QSignalBlocker(widget) for widget in widgets]
        rule = logits.rule
        self.logits_rule.setCurrentIndex(max(self.logits_rule.findData(
            None if logits.own_scale else rule.kind), 0))
        self.temperature.setValue(rule.temperature)
        self.gain.setValue(rule.gain or 0.0)
        self.cap.setValue(rule.cap)
        del blockers

    def show_replay_rules(self, rules: tuple[ScalingRule, ...]) -> None:
        """Check ``rules`` in the menu without emitting :attr:`replayRulesChanged`."""
        for rule, action in self.rule_actions.items():
            with QSignalBlocker(action):
                action.setChecked(rule in rules)

    @Slot(int, int)
    def show_progress(self, done: int, total: int) -> None:
        """Heads diagnosed of ``total``, on the progress bar."""
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(translate("HeadsView", "{0}/{1} heads").format(done, total))

    @Slot(bool)
    def set_busy(self, busy: bool) -> None:
        """Show the progress bar and the Cancel button while a scan or a replay runs."""
        self.progress.setVisible(busy)
        self.cancel.setVisible(busy)

    def retranslate_ui(self) -> None:
        """Labels, tooltips and choices in the current language."""
        self.colour_label.setText(translate("HeadsView", "Colour by"))
        self.logits_label.setText(translate("HeadsView", "Logits"))
        for label, text in zip(self.param_labels, ("T", translate("HeadsView", "gain"),
                                                   translate("HeadsView", "cap")), strict=True):
            label.setText(text)
        self.batch_label.setText(translate("HeadsView", "batch entry"))
        self.cancel.setText(translate("HeadsView", "Cancel"))
        self.gain.setSpecialValueText(translate("HeadsView", "√d_k"))
        self.colour_by.setToolTip(translate("HeadsView", "The diagnostic that colours the grid"))
        self.logits_rule.setToolTip(translate(
            "HeadsView", "The logits diagnosed: the file's own scale c (meta.scale, default "
            "1/√d_k), or a scaling rule re-applied to the same q and k"))
        self.temperature.setToolTip(translate("HeadsView", "Temperature T of the rule 1/T"))
        self.gain.setToolTip(translate("HeadsView", "QK-norm gain g (√d_k: the default)"))
        self.cap.setToolTip(translate("HeadsView", "Soft-cap value: cap·tanh(c·q·k/cap)"))
        self.batch.setToolTip(translate(
            "HeadsView", "Batch entry whose attention weights the replay shows (the "
            "diagnostics average over all entries)"))
        self.rules_button.setText(translate("HeadsView", "Replay rules"))
        self.rules_button.setToolTip(translate(
            "HeadsView", "The rules whose attention maps are shown for the selected head "
            "(every rule is replayed and exported to CSV)"))
        for rule, action in self.rule_actions.items():
            action.setText(style.rule_name(rule))
        for index, metric in enumerate(METRICS):
            self.colour_by.setItemText(index, metric.text())
        self.logits_rule.setItemText(0, translate("HeadsView", "file's own scale"))
        for index, rule in enumerate(ScalingRule, start=1):
            self.logits_rule.setItemText(index, style.rule_name(rule))

    @Slot(bool)
    def _on_rule_toggled(self, _checked: bool) -> None:
        if self.replay_rules():
            self.replayRulesChanged.emit()
            return
        action = self.sender()  # the last map stays: an empty replay looks like a failure
        with QSignalBlocker(action):
            action.setChecked(True)
