"""Temperature equivalence: softmax(z/T) against the 1/√d_k rule on the selected query row."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QWidget,
)

from engine.config import ScalingRule
from gui.explorer.head_text import head_label
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.kit import style
from gui.kit.axes import axis_items
from gui.kit.i18n import translate
from gui.kit.steady_range import SteadyViewBox

__all__ = ["T_MAX", "T_MIN", "TemperatureView"]

#: Range of the temperature slider (log scale) and spin box.
T_MIN = 0.1
T_MAX = 100.0
#: Slider resolution: steps over the three decades of the range.
_SLIDER_STEPS = 600


def slider_to_temperature(position: int) -> float:
    """Map a slider position to T on a log scale from :data:`T_MIN` to :data:`T_MAX`."""
    frac = position / _SLIDER_STEPS
    return float(T_MIN * (T_MAX / T_MIN) ** frac)


def temperature_to_slider(temperature: float) -> int:
    """Inverse of :func:`slider_to_temperature` (clamped to the slider range)."""
    t = min(max(temperature, T_MIN), T_MAX)
    return round(_SLIDER_STEPS * math.log(t / T_MIN) / math.log(T_MAX / T_MIN))


class TemperatureView(ExplorerView):
    """softmax(z/T) of the selected query row overlaid on softmax(z/√d_k), z = raw q·k.

    The slider (log scale), spin box and "T = √d_k" button emit :attr:`temperatureChanged`;
    the controller recomputes ``engine.analysis.experiment.temperature_comparison`` (which also
    returns the maximum difference printed here: exactly 0 at T = √d_k).
    """

    key = "temperature"

    temperatureChanged = Signal(float)  # the T the user chose (GUI thread)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        controls = QHBoxLayout()
        controls.setContentsMargins(6, 4, 6, 0)
        self._t_label = QLabel()
        self._t_label.setFont(style.font(style.TEXT_PT))
        self._slider = QSlider(Qt.Orientation.Horizontal)
        self._slider.setRange(0, _SLIDER_STEPS)
        self._spin = QDoubleSpinBox()
        self._spin.setRange(T_MIN, T_MAX)
        self._spin.setDecimals(4)
        self._spin.setStepType(QDoubleSpinBox.StepType.AdaptiveDecimalStepType)
        self._sqrt_button = QPushButton("T = √d_k")  # replaced by "T = √d_k = 4" once shown
        controls.addWidget(self._t_label)
        controls.addWidget(self._slider, 1)
        controls.addWidget(self._spin)
        controls.addWidget(self._sqrt_button)
        self._layout.addLayout(controls)

        self._add_plot_widget(1, legend_columns=2)
        self._plot = self._widget.addPlot(row=1, col=0, viewBox=SteadyViewBox(),
                                          axisItems=axis_items())
        style.style_plot(self._plot)
        self._sqrt_curve = style.rule_curve(
            ScalingRule.SQRT, width=5, symbol_size=10, connect="auto", **style.DENSE_CURVE,
            symbolBrush=style.rule_brush(ScalingRule.SQRT, 90))
        # Drawn thinner and on top, so that at T = √d_k both stay visible where they coincide.
        self._t_curve = style.rule_curve(
            ScalingRule.TEMPERATURE, symbol_size=6, connect="auto", **style.DENSE_CURVE,
            symbolBrush=style.rule_brush(ScalingRule.TEMPERATURE))
        self._plot.addItem(self._sqrt_curve)
        self._plot.addItem(self._t_curve)
        self._legend.addItem(self._t_curve, "softmax(z/T)")
        self._legend.addItem(self._sqrt_curve, "softmax(z/√d<sub>k</sub>)")
        self._readout = style.make_label(size=style.LABEL_PT)
        self._widget.addItem(self._readout, row=2, col=0)
        self._note = style.make_label()
        self._widget.addItem(self._note, row=3, col=0)

        self._d_k = 1
        self._row = 0
        self._temperature = float("nan")
        self._p_t = np.zeros(0)
        self._p_sqrt = np.zeros(0)
        self._max_diff = float("nan")
        self._pending: float | None = None  # T we emitted that no result has answered yet
        self._slider.valueChanged.connect(self._on_slider_changed)
        self._spin.valueChanged.connect(self._on_spin_changed)
        self._sqrt_button.clicked.connect(self._on_sqrt_clicked)
        self._set_controls(8.0)
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("TemperatureView", "Temperature")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        self._t_label.setText(translate("TemperatureView", "Temperature T:"))
        self._slider.setToolTip(
            translate("TemperatureView", "Temperature T (log scale, 0.1 to 100)"))
        self._spin.setToolTip(translate("TemperatureView", "Temperature T"))
        self._sqrt_button.setToolTip(
            translate("TemperatureView",
                      "Set T to √d_k: softmax(z/T) then equals the 1/√d_k rule")
        )
        style.label_plot(
            self._plot,
            bottom=translate("TemperatureView", "key index j"),
            left=translate("TemperatureView", "attention weight p<sub>j</sub>"),
        )
        self._note.setText(
            translate(
                "TemperatureView",
                "Dividing by T = √d<sub>k</sub> is the 1/√d<sub>k</sub> rule, forward and "
                "backward: ∂softmax(z/T)/∂z = J(p<sub>T</sub>)/T. Small T sharpens, large T "
                "flattens the row.",
            )
        )

    def show_results(self, results: ExplorerResults) -> None:
        self._d_k = results.config.d_k
        self._sqrt_button.setText(f"T = √d_k = {math.sqrt(self._d_k):.4g}")
        temperature = float(results.temperature)
        if self._pending is None or math.isclose(temperature, self._pending, rel_tol=1e-9):
            # Follow the controller (sessions, resets) unless the user's newer T is in flight,
            # which would make the slider jump back while being dragged.
            self._pending = None
            if not self._slider.isSliderDown():
                self._set_controls(temperature)
        comparison = results.temperature_comparison
        if not self._is_new("comparison", comparison, results.config.query_row):
            return
        if comparison is None:
            return
        p_t, p_sqrt, max_diff = comparison  # engine.analysis.experiment.temperature_comparison
        self._p_t = np.asarray(p_t, dtype=float)
        self._p_sqrt = np.asarray(p_sqrt, dtype=float)
        self._max_diff = float(max_diff)
        self._temperature = temperature
        self._row = results.config.query_row
        x = np.arange(self._p_t.size)
        style.set_markers(self._t_curve, ScalingRule.TEMPERATURE, self._p_t.size)
        style.set_markers(self._sqrt_curve, ScalingRule.SQRT, self._p_sqrt.size)
        self._t_curve.setData(x, self._p_t)
        self._sqrt_curve.setData(x, self._p_sqrt)
        real = results.real_head
        if real is None:
            title = translate("TemperatureView",
                              "Query row i = {0} (head 1), T = {1}, √d<sub>k</sub> = {2}")
            title = title.format(self._row, f"{temperature:.4g}", f"{math.sqrt(self._d_k):.4g}")
        else:
            title = translate("TemperatureView",
                              "Query row i = {0} ({1}), T = {2}, √d<sub>k</sub> = {3}")
            title = title.format(self._row, head_label(real.ref, with_file=False),
                                 f"{temperature:.4g}", f"{math.sqrt(self._d_k):.4g}")
        style.label_plot(self._plot, title=title)
        # A formula: the same in every language.
        self._readout.setText(
            "max<sub>j</sub> |softmax(z/T) − softmax(z/√d<sub>k</sub>)| = "
            f"{self._max_diff:.3g}"
        )

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["key_j", "p_temperature", "p_sqrt", "temperature", "d_k", "max_abs_diff"]
        rows: list[list[float | str]] = [
            [j, float(self._p_t[j]), float(self._p_sqrt[j]), self._temperature, self._d_k,
             self._max_diff]
            for j in range(self._p_t.size)
        ]
        return header, rows

    # -- accessors for tests and the self-test -------------------------------------------------
    def curves(self) -> tuple[pg.PlotDataItem, pg.PlotDataItem]:
        """Return the (softmax(z/T), softmax(z/√d_k)) curves."""
        return self._t_curve, self._sqrt_curve

    def temperature(self) -> float:
        """Return the T shown by the controls."""
        return float(self._spin.value())

    def set_temperature(self, temperature: float) -> None:
        """Set T as if the user typed it (emits :attr:`temperatureChanged`)."""
        self._spin.setValue(temperature)

    # -- slots --------------------------------------------------------------------------------
    def _set_controls(self, temperature: float) -> None:
        with QSignalBlocker(self._slider), QSignalBlocker(self._spin):
            self._spin.setValue(temperature)
            self._slider.setValue(temperature_to_slider(temperature))

    def _emit(self, temperature: float) -> None:
        self._pending = temperature
        self.temperatureChanged.emit(temperature)

    def _on_slider_changed(self, position: int) -> None:
        temperature = slider_to_temperature(position)
        with QSignalBlocker(self._spin):
            self._spin.setValue(temperature)
        # The spin box rounds to its decimals; emit exactly what it shows.
        self._emit(float(self._spin.value()))

    def _on_spin_changed(self, value: float) -> None:
        with QSignalBlocker(self._slider):
            self._slider.setValue(temperature_to_slider(value))
        self._emit(float(value))

    def _on_sqrt_clicked(self) -> None:
        temperature = math.sqrt(self._d_k)
        # Emit the exact √d_k (the spin box would round it to 4 decimals, e.g. for d_k = 2).
        self._set_controls(temperature)
        self._emit(temperature)
