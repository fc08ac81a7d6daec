"""The parameter panel: widgets that build a new :class:`AttentionConfig` on every change.

The rows are generated from :data:`engine.config.ATTENTION_FIELDS` (range, scale, label,
tooltip formula of every field). Every edit reads all widgets, builds a config with
``dataclasses.replace`` and, when it is valid, emits ``configChanged(object)`` once. An invalid
combination (e.g. ``d_model`` not divisible by the head count) shows an inline message and emits
nothing. Values are pushed back into the widgets under ``QSignalBlocker`` so that programmatic
updates never echo as edits.

While a real head is shown (:meth:`ParameterPanel.set_real_head`) the rows that only shape
random q, k are disabled; the rule, its parameters, the mask and the query row stay live and
replay on the head's q, k.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QFormLayout, QLabel, QVBoxLayout, QWidget

from engine.config import AttentionConfig
from engine.core.scaling import qk_norm_gain
from gui.explorer.head_text import head_label
from gui.kit.forms import FieldForm
from gui.kit.i18n import Retranslating, translate

__all__ = ["FIXED_BY_HEAD", "ParameterPanel"]

#: The fields a real head fixes (they only shape random q, k, or are the head's geometry).
FIXED_BY_HEAD = frozenset({
    "n_tokens", "d_k", "heads", "d_model", "link_heads", "init_std", "use_projection",
    "projection_std", "rho", "seed", "samples",
})


class ParameterPanel(Retranslating, QWidget):
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
        self._head: Any = None  # the HeadRef shown, or None
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self._form = FieldForm(AttentionConfig, {"": form}, parent=self)
        # The widgets by field name (and gain_default), also as attributes: panel.d_k, ...
        self._controls: dict[str, QWidget] = dict(self._form.widgets)
        for name, control in self._controls.items():
            setattr(self, name, control)

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

        self._form.changed.connect(self._on_control_changed)

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
        self._form.set_values(config)
        # Special couplings: the engine's default gain shown on the slider, rows 0..n-1.
        if config.gain is None:
            self.gain.set_value(qk_norm_gain(config.d_k))
        self.query_row.set_range(0, config.n_tokens - 1)
        self.query_row.set_value(config.query_row)
        self._set_error("")

    def show_refusal(self, message: str, applied: AttentionConfig) -> None:
        """Show next to the controls why the controller refused the emitted configuration (the
        memory guard at its door); :meth:`config` is ``applied``, the one still in force."""
        self._config = applied
        self._set_error(message)

    @Slot(object)
    def set_real_head(self, ref: Any) -> None:
        """Disable the rows a real head fixes (``ref``: a ``HeadRef``), or free them (``None``)."""
        self._head = ref
        self._set_fixed()

    def real_head(self) -> Any:
        """The ``HeadRef`` the panel is fixed to, or ``None``."""
        return self._head

    # -------------------------------------------------------------------------------- private
    def _set_fixed(self) -> None:
        if self._head is None:
            self._form.set_fixed(())
            return
        self._form.set_fixed(FIXED_BY_HEAD, translate(
            "ParameterPanel", "Fixed by the loaded head ({0}). Use “Back to random q, k” "
            "to change it.").format(head_label(self._head)))

    @Slot()
    def _on_control_changed(self) -> None:
        # The query row range follows n, so a shorter sequence never leaves an invalid row.
        # A real head's n may exceed the slider's range: take it from the config then.
        n = self._config.n_tokens if self._head is not None else int(self.n_tokens.value())
        if self.query_row.value() > n - 1 or self.query_row.spin.maximum() != n - 1:
            self.query_row.set_range(0, n - 1)
        self._form.update_states()
        values = self._form.values()
        if self._head is not None:
            values = {k: v for k, v in values.items() if k not in FIXED_BY_HEAD}
        try:
            config = dataclasses.replace(self._config, **values)
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

    def retranslate_ui(self) -> None:
        """Set row labels, check box and combo texts and tooltips in the current language."""
        self._form.retranslate()
        self._set_fixed()
        self._set_error(self._error)
