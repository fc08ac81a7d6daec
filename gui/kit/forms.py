"""Forms generated from the config field declarations (``engine.config``'s ``*_FIELDS``).

A :class:`FieldForm` makes one row per field that declares a :class:`~engine.config.base.Gui`:
a :class:`~gui.kit.field_widgets.LinkedSlider`, a spin box, a log spin box, a combo box or a
check box, with the declared range, scale, decimals, label and tooltip. A field that may be
``None`` gets its "default" form: a word in the spin box, or a check box above the slider. The
form reads the widgets back as field values, shows a config's values without emitting, and
applies the declared ``enabled_when``/``visible_when`` couplings. Couplings that are not a
plain "field equals value" stay in the panel.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from PySide6.QtCore import QObject, QSignalBlocker, Signal, Slot
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QLabel, QSpinBox, QWidget

from engine.config.base import BoundField, Gui, JsonConfig, Msg
from gui.kit.field_widgets import LinkedSlider, LogSpinBox, OptionalLogSpinBox
from gui.kit.i18n import translate

__all__ = ["FieldForm", "translated"]

#: Suffix of the name of the check box that selects a field's ``None`` default.
DEFAULT_SUFFIX = "_default"


def translated(text: Msg | str) -> str:
    """A declared text in the current language (plain strings read the same in every one)."""
    if isinstance(text, Msg):
        return translate(text.context, text.text)
    return text


class FieldForm(QObject):
    """The rows of every field of ``cls`` that declares a panel row, in declaration order.

    Parameters
    ----------
    cls
        The config class whose ``FIELDS`` table is shown.
    layouts
        Where rows go, by the declared ``Gui.group`` ("" for fields without a group).
    custom
        Widgets the panel makes itself, for fields declared with ``widget="custom"``; they get
        their row label, but reading, showing and signals are the panel's.

    Signals
    -------
    changed()
        A widget of the form changed (not emitted by :meth:`set_values`).
    """

    changed = Signal()

    def __init__(
        self,
        cls: type[JsonConfig],
        layouts: Mapping[str, QFormLayout],
        custom: Mapping[str, QWidget] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.fields = {name: f for name, f in cls.bound().items() if f.spec.gui is not None}
        self.widgets: dict[str, QWidget] = {}
        self.labels: dict[str, QLabel] = {}
        self._layouts = layouts
        self._fixed: frozenset[str] = frozenset()
        self._fixed_tooltip = ""
        self._ever_fixed: set[str] = set()
        custom = dict(custom or {})
        for name, field in self.fields.items():
            gui = _gui(field)
            layout = layouts[gui.group]
            widget = custom.pop(name) if gui.widget == "custom" else self._make(field, gui)
            if field.optional and gui.widget == "slider":
                box = QCheckBox()
                box.toggled.connect(self._on_changed)
                self.widgets[name + DEFAULT_SUFFIX] = box
                layout.addRow("", box)
            self.widgets[name] = widget
            if isinstance(widget, QCheckBox):
                layout.addRow("", widget)  # a check box carries its text itself
            else:
                label = QLabel()
                layout.addRow(label, widget)
                self.labels[name] = label
        if custom:
            raise ValueError(f"custom widgets for undeclared fields: {', '.join(custom)}")
        self.retranslate()

    # --------------------------------------------------------------------------- building
    def _make(self, field: BoundField, gui: Gui) -> QWidget:
        numeric = gui.widget in ("slider", "spin", "log_spin")
        low, high = field.gui_range if numeric else (0.0, 0.0)
        widget: QWidget
        if gui.widget == "slider":
            widget = LinkedSlider(low, high, integer=field.kind is int, log=gui.log,
                                  decimals=gui.decimals)
            widget.valueChanged.connect(self._on_changed)
        elif gui.widget == "spin" and field.kind is int:
            widget = QSpinBox()
            # A field that may be None shows its word one below the range.
            widget.setRange(int(low) - (1 if field.optional else 0), int(high))
            if gui.step is not None:
                widget.setSingleStep(int(gui.step))
            widget.setValue(field.default if field.default is not None else int(low) - 1)
            widget.setKeyboardTracking(False)
            widget.valueChanged.connect(self._on_changed)
        elif gui.widget == "log_spin":
            if field.optional:
                widget = OptionalLogSpinBox(low, high, field.default, gui.first)
            else:
                widget = LogSpinBox(low, high, field.default)
            widget.valueChanged.connect(self._on_changed)
        elif gui.widget == "combo" and field.is_enum:
            widget = QComboBox()
            choices = gui.choices or {}
            for member in field.kind:  # type: ignore[attr-defined]
                widget.addItem(translated(choices.get(member, member.value)), member.value)
            widget.currentIndexChanged.connect(self._on_changed)
        elif gui.widget == "check" and field.kind is bool:
            widget = QCheckBox()
            widget.toggled.connect(self._on_changed)
        else:
            raise ValueError(f"{field.name}: no {gui.widget!r} widget for {field.kind.__name__}")
        return widget

    def retranslate(self) -> None:
        """Set labels, check box and item texts, words and tooltips in the current language."""
        for name, field in self.fields.items():
            gui = _gui(field)
            widget = self.widgets[name]
            if name in self.labels:
                self.labels[name].setText(translated(gui.label))
            elif isinstance(widget, QCheckBox):
                widget.setText(translated(gui.label))
            if name in self._fixed:
                widget.setToolTip(self._fixed_tooltip)
            elif gui.tooltip is not None:
                widget.setToolTip(translated(gui.tooltip))
            if isinstance(widget, QComboBox) and gui.choices:
                for index in range(widget.count()):
                    text = gui.choices.get(widget.itemData(index))
                    if text is not None:
                        widget.setItemText(index, translated(text))
            if gui.default_text is not None:
                box = self.widgets.get(name + DEFAULT_SUFFIX)
                if isinstance(box, QCheckBox):
                    box.setText(translated(gui.default_text))
                    if gui.default_tooltip is not None:
                        box.setToolTip(translated(gui.default_tooltip))
                elif isinstance(widget, QSpinBox | OptionalLogSpinBox):
                    widget.setSpecialValueText(translated(gui.default_text))

    def set_fixed(self, names: Iterable[str], tooltip: str = "") -> None:
        """Disable the rows of ``names`` (their value is fixed by something else) and show
        ``tooltip`` on them instead of their formula; an empty ``names`` frees them again.

        The caller re-sets ``tooltip`` on a language change (it is already translated).
        """
        self._fixed = frozenset(names)
        self._fixed_tooltip = tooltip
        self._ever_fixed |= self._fixed
        self.retranslate()
        self.update_states()

    # ----------------------------------------------------------------------------- values
    def value(self, name: str) -> Any:
        """The value the widget of field ``name`` holds (``None`` for its default)."""
        field, widget = self.fields[name], self.widgets[name]
        default_box = self.widgets.get(name + DEFAULT_SUFFIX)
        if isinstance(default_box, QCheckBox) and default_box.isChecked():
            return None
        if isinstance(widget, LinkedSlider):
            return int(widget.value()) if field.kind is int else widget.value()
        if isinstance(widget, OptionalLogSpinBox):
            return widget.optional_value()
        if isinstance(widget, QSpinBox):
            value = widget.value()
            return None if field.optional and value == widget.minimum() else value
        if isinstance(widget, LogSpinBox):
            return widget.value()
        if isinstance(widget, QComboBox):
            return field.kind(widget.currentData())
        if isinstance(widget, QCheckBox):
            return widget.isChecked()
        raise ValueError(f"{name}: the panel reads its custom widget itself")

    def values(self) -> dict[str, Any]:
        """Every non-custom field's value, by name."""
        return {name: self.value(name) for name, field in self.fields.items()
                if _gui(field).widget != "custom"}

    def set_values(self, config: Any) -> None:
        """Show ``config``'s values in the (non-custom) widgets without emitting."""
        blockers = [QSignalBlocker(w) for w in self.widgets.values()]
        try:
            for name, field in self.fields.items():
                if _gui(field).widget != "custom":
                    self._show(name, field, getattr(config, name))
        finally:
            del blockers
        self.update_states()

    def _show(self, name: str, field: BoundField, value: Any) -> None:
        widget = self.widgets[name]
        default_box = self.widgets.get(name + DEFAULT_SUFFIX)
        if isinstance(default_box, QCheckBox):
            default_box.setChecked(value is None)
        if isinstance(widget, LinkedSlider):
            if value is not None:
                widget.set_value(value)
        elif isinstance(widget, OptionalLogSpinBox):
            widget.set_optional(value)
        elif isinstance(widget, QSpinBox):
            # Clamp: the engine may allow more than the row (a saved seed of 2**32 - 1).
            shown = widget.minimum() if value is None else value
            widget.setValue(int(min(max(shown, widget.minimum()), widget.maximum())))
        elif isinstance(widget, LogSpinBox):
            widget.setValue(value)
        elif isinstance(widget, QComboBox):
            widget.setCurrentIndex(widget.findData(field.kind(value).value))
        elif isinstance(widget, QCheckBox):
            widget.setChecked(value)

    def update_states(self) -> None:
        """Apply the declared ``enabled_when``/``visible_when`` and the default check boxes."""
        for name, field in self.fields.items():
            gui = _gui(field)
            widget = self.widgets[name]
            default_box = self.widgets.get(name + DEFAULT_SUFFIX)
            enabled = True
            if gui.enabled_when is not None:
                other, wanted = gui.enabled_when
                enabled = self.value(other) == wanted
            if isinstance(default_box, QCheckBox):
                enabled = enabled and not default_box.isChecked()
                default_box.setEnabled(name not in self._fixed)
            enabled = enabled and name not in self._fixed
            if gui.enabled_when is not None or default_box is not None or (
                    name in self._ever_fixed):
                widget.setEnabled(enabled)
                if name in self.labels:
                    self.labels[name].setEnabled(name not in self._fixed)
            if gui.visible_when is not None:
                other, wanted = gui.visible_when
                visible = self.value(other) == wanted
                layout = self._layouts[gui.group]
                if default_box is not None:
                    layout.setRowVisible(default_box, visible)
                layout.setRowVisible(widget, visible)

    @Slot()
    def _on_changed(self) -> None:
        self.changed.emit()


def _gui(field: BoundField) -> Gui:
    assert field.spec.gui is not None
    return field.spec.gui
