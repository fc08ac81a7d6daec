"""The Model tab's controls: the model and its text, the α grid, where the intervention applies,
the rule and the precision, and Run with its progress and Cancel.

One column, so that the plots keep the width of a 1280-pixel window.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.config import ScalingRule
from engine.core.scaling import Rule
from engine.models import DEFAULT_ALPHAS, ModelError, layers_text, sample_models
from engine.models.intervention import PRECISIONS, SOFTMAX_FORMS, alpha_grid
from gui.kit import style
from gui.kit.field_widgets import number_spin
from gui.kit.i18n import translate
from gui.kit.model_input import DEFAULT_TEXT, BoundedTextEdit, ModelPathRow, memory_spin
from gui.kit.session_model import (
    ALPHA_POINTS,
    ALPHA_RANGE,
    LAYER_ALPHA_RANGE,
    LAYER_RANGE,
    MAX_TOKENS,
    MODEL_SCOPES,
    PARAMETER_RANGE,
)
from gui.model.task import ModelTask

__all__ = ["RULE_PARAMETER", "ModelControls"]

#: The parameter each rule takes from the parameter box (the rules without one are absent).
RULE_PARAMETER = {ScalingRule.TEMPERATURE: ("temperature", "T", 8.0),
                  ScalingRule.QK_NORM: ("gain", "g", 8.0),
                  ScalingRule.SOFTCAP: ("cap", "cap", 50.0),
                  ScalingRule.SSMAX: ("ssmax_s", "s", 0.43),
                  ScalingRule.YARN: ("yarn_factor", "f", 4.0)}


class ModelControls(QWidget):
    """The controls column; its widgets are public for the tab and its tests.

    Signals
    -------
    runRequested()
        Run was pressed with every input readable (:meth:`task` builds the request).
    """

    runRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("model_controls")
        self.path_row = ModelPathRow()
        self.path = self.path_row.edit
        self.sample_button = QPushButton()
        self.sample_button.setObjectName("model_sample")
        self.sample_button.clicked.connect(self.use_sample)
        self.text = BoundedTextEdit(DEFAULT_TEXT)
        self.text.setObjectName("model_text")
        self.text.setTabChangesFocus(True)
        self.text.setFixedHeight(self.fontMetrics().lineSpacing() * 4 + 12)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(MAX_TOKENS.low, MAX_TOKENS.high)
        self.max_tokens.setValue(128)
        self.memory = memory_spin()
        # The ranges are the ones a session's values are checked against.
        self.alpha_low = number_spin(ALPHA_RANGE.low, ALPHA_RANGE.high, DEFAULT_ALPHAS[0], 3)
        self.alpha_high = number_spin(ALPHA_RANGE.low, ALPHA_RANGE.high, DEFAULT_ALPHAS[-1], 3)
        self.alpha_points = QSpinBox()
        self.alpha_points.setRange(ALPHA_POINTS.low, ALPHA_POINTS.high)
        self.alpha_points.setValue(len(DEFAULT_ALPHAS))
        self.scope = QComboBox()
        self.scope.setObjectName("model_scope")
        for key in MODEL_SCOPES:
            self.scope.addItem("", key)
        self.layers = QLineEdit()
        self.layer = QSpinBox()
        self.layer.setRange(LAYER_RANGE.low, LAYER_RANGE.high)
        self.heads = QLineEdit()
        self.rule = QComboBox()
        self.rule.setObjectName("model_rule")
        for kind in (None, *ScalingRule):  # None: the model's own scale
            self.rule.addItem("", kind)
        self.parameter = number_spin(PARAMETER_RANGE.low, PARAMETER_RANGE.high, 8.0, 3)
        self.precision = QComboBox()
        for name in PRECISIONS:
            self.precision.addItem(name, name)
        self.softmax = QComboBox()
        for key in SOFTMAX_FORMS:
            self.softmax.addItem("", key)
        # 0 shows as "√d_k": the α that undoes a 1/√d_k model's scale ("no scaling").
        self.layer_alpha = number_spin(LAYER_ALPHA_RANGE.low, LAYER_ALPHA_RANGE.high, 0.0, 3)
        self.run_button = QPushButton()
        self.run_button.setObjectName("model_run")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self._on_run)
        # Ctrl+Enter runs from anywhere in the panel: the text box keeps Enter for new lines.
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(self.run_button.click)
        self.cancel_button = QPushButton()
        self.cancel_button.setObjectName("model_cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setVisible(False)
        self.message = QLabel()
        self.message.setObjectName("model_message")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.labels = {name: QLabel() for name in (
            "model", "text", "max_tokens", "memory", "alphas", "to", "points", "scope", "layers",
            "layer", "heads", "rule", "parameter", "precision", "softmax", "layer_alpha")}
        self._build()
        self.scope.currentIndexChanged.connect(self._update_visible)
        self.rule.currentIndexChanged.connect(self._on_rule_changed)
        self.rule.currentIndexChanged.connect(self._show_parameter)
        self._update_visible()

    def _build(self) -> None:
        labels = self.labels
        column = QVBoxLayout(self)
        column.setContentsMargins(6, 4, 6, 4)
        column.setSpacing(4)
        # The row's edit on a line of its own, the sample beside the label: the column is narrow.
        title = QHBoxLayout()
        title.addWidget(labels["model"], 1)
        title.addWidget(self.sample_button)
        column.addLayout(title)
        column.addWidget(self.path)
        buttons = QHBoxLayout()
        for button in (self.path_row.folder_button, self.path_row.gguf_button):
            buttons.addWidget(button)
        column.addLayout(buttons)
        column.addWidget(labels["text"])
        column.addWidget(self.text)
        grid = QGridLayout()
        grid.setHorizontalSpacing(6)
        rows = (("max_tokens", self.max_tokens), ("memory", self.memory),
                ("scope", self.scope), ("layers", self.layers), ("layer", self.layer),
                ("heads", self.heads), ("rule", self.rule), ("parameter", self.parameter),
                ("precision", self.precision), ("softmax", self.softmax),
                ("layer_alpha", self.layer_alpha))
        for row, (name, widget) in enumerate(rows):
            labels[name].setBuddy(widget)
            grid.addWidget(labels[name], row, 0)
            grid.addWidget(widget, row, 1)
        column.addLayout(grid)
        labels["alphas"].setWordWrap(True)
        column.addWidget(labels["alphas"])
        # Two short rows: the column stays narrow beside the tour's dock at 1024 px.
        alphas, points = QHBoxLayout(), QHBoxLayout()
        for widget in (self.alpha_low, labels["to"], self.alpha_high):
            alphas.addWidget(widget)
        points.addWidget(labels["points"])
        points.addWidget(self.alpha_points)
        points.addStretch(1)
        column.addLayout(alphas)
        column.addLayout(points)
        run = QHBoxLayout()
        run.addWidget(self.run_button, 1)
        run.addWidget(self.cancel_button)
        column.addLayout(run)
        column.addWidget(self.progress)
        column.addWidget(self.message)
        column.addStretch(1)

    # ----------------------------------------------------------------------------- accessors
    def alphas(self) -> tuple[float, ...]:
        """The α grid of the sweep (α = 1 included)."""
        return alpha_grid(self.alpha_low.value(), self.alpha_high.value(),
                          self.alpha_points.value())

    def rule_value(self) -> Rule | None:
        """The explorer rule that replaces the model's scale (None: the model's own)."""
        kind = self.rule.currentData()
        if kind is None:
            return None
        parameter = RULE_PARAMETER.get(kind)
        if parameter is None:
            return Rule(kind)
        return Rule(kind, **{parameter[0]: self.parameter.value()})

    def task(self, threads: int) -> ModelTask:
        """The request of the inputs shown, run on ``threads`` threads (BLAS's and the engine's).

        Raises
        ------
        ValueError
            An input cannot be read (no model, an empty text, layers or heads mistyped, a
            rule parameter out of its range): the message names it.
        """
        path = self.path_row.path()
        if not path:
            raise ModelError(translate("ModelView", "choose a model folder or GGUF file first"))
        scope = self.scope.currentData()
        layers = (tuple(layers_text(self.layers.text())) if scope == "layers" else None)
        heads_text = self.heads.text().strip()
        heads = (tuple(layers_text(heads_text, what="head"))
                 if scope == "heads" and heads_text and heads_text != "all" else None)
        layer_alpha = self.layer_alpha.value()
        alphas = self.alphas()
        chosen = alphas[-1]
        return ModelTask(path=path, text=self.text.toPlainText(), alphas=alphas,
                         scope=scope, layers=layers, layer=self.layer.value(), heads=heads,
                         rule=self.rule_value(), precision=self.precision.currentData(),
                         softmax=self.softmax.currentData(),
                         layer_alpha=layer_alpha if layer_alpha > 0 else None,
                         chosen_alpha=chosen, max_tokens=self.max_tokens.value(),
                         memory_budget=self.memory_budget(), threads=threads)

    def memory_budget(self) -> int:
        """The memory limit in bytes."""
        return int(self.memory.value() * 2**30)

    # ------------------------------------------------------------------------------ updates
    def set_busy(self, busy: bool) -> None:
        """A job runs: Cancel is live and the progress shows."""
        self.cancel_button.setEnabled(busy)
        self.progress.setVisible(busy)
        if busy:
            self.progress.setRange(0, 0)

    def show_progress(self, done: int, total: int) -> None:
        """``done`` of ``total`` points and continuations computed."""
        if total > 0:
            self.progress.setRange(0, total)
            self.progress.setValue(done)
            self.progress.setFormat(translate("ModelView", "{0}/{1} steps").format(done, total))

    @Slot()
    def use_sample(self) -> bool:
        """Fill in an installed sample model (SmolLM2 before a BERT one); without one, say how
        to install it. True when a sample was filled in."""
        # A causal model first: a BERT folder scores a text but cannot continue it.
        samples = sorted(sample_models(), key=lambda item: "bert" in item[0].architecture.lower())
        for _sample, path in samples:
            if path is not None:
                self.path.setText(str(path))
                return True
        if samples:
            self.message.setText(translate(
                "ModelView", "No sample model is installed: {0}").format(
                samples[0][0].pip_command))
        return False

    def retranslate_ui(self) -> None:
        """Labels, choices and tooltips in the current language."""
        text = {
            "model": translate("ModelView", "Model:"), "text": translate("ModelView", "Text:"),
            "max_tokens": translate("ModelView", "Max tokens:"),
            "memory": translate("ModelView", "Memory limit:"),
            "alphas": translate("ModelView", "α grid (log-spaced, α = 1 always in):"),
            "to": translate("ModelView", "to"), "points": translate("ModelView", "points"),
            "scope": translate("ModelView", "Apply to:"),
            "layers": translate("ModelView", "Layers:"), "layer": translate("ModelView", "Layer:"),
            "heads": translate("ModelView", "Heads:"), "rule": translate("ModelView", "Scale:"),
            "parameter": translate("ModelView", "Parameter:"),
            "precision": translate("ModelView", "Precision:"),
            "softmax": translate("ModelView", "Softmax:"),
            "layer_alpha": translate("ModelView", "α per layer:")}
        for name, label in self.labels.items():
            label.setText(text[name])
        self.path_row.retranslate_ui()
        for button in (self.path_row.folder_button, self.path_row.gguf_button):
            # No mnemonic in the tab: Alt+F is the File menu's, Alt+G the capture dialog's.
            button.setText(re.sub(r"\(&\w\)", "", button.text()).replace("&", ""))
        self.sample_button.setText(translate("ModelView", "Sample"))
        self.sample_button.setToolTip(translate(
            "ModelView", "Use the installed sample model (SmolLM2-135M); names the pip "
            "command when none is installed"))
        self.text.setToolTip(translate("ModelView", "The text whose next-token loss is measured "
                                       "(tokenized with the model's own tokenizer)"))
        self.max_tokens.setToolTip(translate("ModelView", "A longer text is cut to its first "
                                             "tokens"))
        self.memory.setToolTip(translate("ModelView", "The most memory one forward may "
                                         "allocate; a longer text is refused with the numbers"))
        for spin in (self.alpha_low, self.alpha_high, self.alpha_points):
            spin.setToolTip(translate(
                "ModelView", "α multiplies every attention logit of the chosen layers and "
                "heads; α = 1 is the model itself, α = √d_k undoes its 1/√d_k"))
        for index, name in enumerate((translate("ModelView", "all layers"),
                                      translate("ModelView", "layers"),
                                      translate("ModelView", "heads of one layer"))):
            self.scope.setItemText(index, name)
        self.scope.setToolTip(translate("ModelView", "Where α (and the scale, the precision) "
                                        "applies"))
        self.layers.setPlaceholderText(translate("ModelView", "e.g. 0,2,5-7"))
        self.heads.setPlaceholderText(translate("ModelView", "all (or e.g. 0,3)"))
        self.rule.setItemText(0, translate("ModelView", "model's own"))
        for index, rule in enumerate(ScalingRule, start=1):
            self.rule.setItemText(index, style.rule_name(rule))
        self.rule.setToolTip(translate(
            "ModelView", "Keep the model's own scale c, or replace it by an explorer rule (α "
            "multiplies either)"))
        self.parameter.setToolTip(translate("ModelView", "The rule's parameter: T, gain g, cap, "
                                            "SSMax s or YaRN f"))
        self.precision.setToolTip(translate("ModelView", "Round the attention logits and "
                                            "softmax to this format (float32: no rounding)"))
        forms = {"stable": translate("ModelView", "stable (max subtracted)"),
                 "naive": translate("ModelView", "naive exp(z)")}
        for index in range(self.softmax.count()):
            self.softmax.setItemText(index, forms[self.softmax.itemData(index)])
        self.softmax.setToolTip(translate("ModelView", "How the rounded softmax is taken"))
        self.layer_alpha.setSpecialValueText(translate("ModelView", "√d_k (no scaling)"))
        self.layer_alpha.setToolTip(translate(
            "ModelView", "The α applied to one layer (or head) at a time for the per-layer "
            "curve"))
        self.run_button.setText(translate("ModelView", "Run"))
        self.run_button.setToolTip(translate("ModelView", "Score the text under every α of the "
                                             "grid, then each layer in turn, then continue it "
                                             "(Ctrl+Enter)"))
        self.cancel_button.setText(translate("ModelView", "Cancel"))
        self.cancel_button.setToolTip(translate("ModelView", "Stop; the points computed so far "
                                                "stay (Esc)"))
        self._show_parameter()

    # -------------------------------------------------------------------------------- private
    @Slot()
    def _update_visible(self) -> None:
        scope = self.scope.currentData()
        for name, widget, shown in (("layers", self.layers, scope == "layers"),
                                    ("layer", self.layer, scope == "heads"),
                                    ("heads", self.heads, scope == "heads")):
            widget.setVisible(shown)
            self.labels[name].setVisible(shown)

    @Slot()
    def _show_parameter(self) -> None:
        parameter = RULE_PARAMETER.get(self.rule.currentData())
        self.parameter.setVisible(parameter is not None)
        self.labels["parameter"].setVisible(parameter is not None)
        if parameter is not None:
            self.labels["parameter"].setText(parameter[1])

    @Slot()
    def _on_rule_changed(self) -> None:
        parameter = RULE_PARAMETER.get(self.rule.currentData())
        if parameter is not None:  # each rule starts from its own default
            self.parameter.setValue(parameter[2])

    @Slot()
    def _on_run(self) -> None:
        self.message.setText("")
        self.runRequested.emit()
