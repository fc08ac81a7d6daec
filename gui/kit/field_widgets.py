"""Number widgets the generated forms and the panels are made of: a linked slider, log spin
boxes and a plain number box."""

from __future__ import annotations

import math
import re

from PySide6.QtCore import QSignalBlocker, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QSlider,
    QSpinBox,
    QWidget,
)

__all__ = ["LinkedSlider", "LogSpinBox", "OptionalLogSpinBox", "number_spin"]

_SLIDER_STEPS = 1000


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
        else:
            self.spin = QDoubleSpinBox(self)
            self.spin.setDecimals(decimals)
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
        self.set_range(low, high)

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


def number_spin(low: float, high: float, value: float, decimals: int) -> QDoubleSpinBox:
    """A spin box for ``low`` … ``high`` showing ``decimals`` places, that reports its value
    when editing ends rather than at every keystroke."""
    spin = QDoubleSpinBox()
    spin.setRange(low, high)
    spin.setDecimals(decimals)
    spin.setValue(value)
    spin.setKeyboardTracking(False)
    return spin
