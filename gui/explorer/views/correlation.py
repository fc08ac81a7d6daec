"""RMS of the scaled logit c·q·k against d_k for correlated q, k: when 1/d_k is right (μP)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import positive_or_nan

__all__ = ["CorrelationView"]

#: (rule, key suffix in the engine's correlation_rms result) of the rules shown.
_RULES = ((ScalingRule.SQRT, "sqrt"), (ScalingRule.LINEAR, "linear"))


class CorrelationView(ExplorerView):
    """RMS(c·q·k) against d_k (log-log) at the current ρ, for c = 1/√d_k and c = 1/d_k.

    Markers are the engine's Monte Carlo RMS, lines its closed form c·√(ρ²d² + d(1+ρ²))
    (``engine.analysis.correlation.correlation_rms``). 1/√d_k keeps the RMS at 1 only when
    ρ = 0; for ρ ≠ 0 q·k grows like ρ·d_k and 1/d_k is the rule that keeps it bounded (→ |ρ|).
    """

    key = "correlation"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._add_plot_widget(legend_columns=3)
        self._plot = self._add_log_plot(1, 0, True)
        # At log10(1) = 0: the unit-RMS target of a good scaling rule.
        self._unit = style.reference_line(1, Qt.PenStyle.DotLine, "RMS = 1", 0.03, pos=0.0)
        self._plot.addItem(self._unit)
        self._points: dict[ScalingRule, pg.PlotDataItem] = {}
        self._lines: dict[ScalingRule, pg.PlotDataItem] = {}
        for rule, _ in _RULES:
            line = pg.PlotDataItem(
                pen=style.rule_pen(rule, width=2, style=Qt.PenStyle.DashLine), connect="finite"
            )
            points = style.rule_curve(rule, symbol_size=9, pen=None, connect="auto")
            self._plot.addItem(line)
            self._plot.addItem(points)
            self._lines[rule] = line
            self._points[rule] = points
            self._legend.addItem(points, "")  # named by retranslate_ui
        self._theory_sample = pg.PlotDataItem(pen=style.theory_pen(2, Qt.PenStyle.DashLine))
        self._legend.addItem(self._theory_sample, "c·√(ρ²d<sub>k</sub>² + d<sub>k</sub>(1+ρ²))")
        self._note = style.make_label()
        self._widget.addItem(self._note, row=2, col=0)
        self._data: Mapping[str, Any] | None = None
        self._rho = 0.0
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("CorrelationView", "q–k correlation")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        style.label_plot(self._plot, left=translate("CorrelationView", "RMS of c·q·k"))
        for rule, points in self._points.items():
            label = self._legend.getLabel(points)
            if label is not None:
                label.setText(translate("CorrelationView", "{0} Monte Carlo").format(
                    style.rule_name(rule)))

    def show_results(self, results: ExplorerResults) -> None:
        data = results.correlation
        if not self._is_new("correlation", data, results.config.rho):
            return
        self._rho = float(results.config.rho)
        if data is None:
            return
        self._data = data
        d_k = np.asarray(data["d_k"], dtype=float)
        for rule, suffix in _RULES:
            self._points[rule].setData(d_k, positive_or_nan(data[f"rms_{suffix}"]))
            self._lines[rule].setData(d_k, positive_or_nan(data[f"theory_{suffix}"]))
        rho = self._rho
        style.label_plot(self._plot, title=translate(
            "CorrelationView", "k = ρq + √(1−ρ²)ξ with ρ = {0}").format(f"{rho:.3g}"))
        if rho == 0.0:
            verdict = translate(
                "CorrelationView",
                "At ρ = 0, 1/√d<sub>k</sub> keeps the RMS at 1 for every d<sub>k</sub>; "
                "1/d<sub>k</sub> shrinks it like 1/√d<sub>k</sub> (too flat).",
            )
        else:
            verdict = translate(
                "CorrelationView",
                "At ρ ≠ 0, q·k grows like ρ·d<sub>k</sub>: under 1/√d<sub>k</sub> the RMS grows "
                "like |ρ|·√d<sub>k</sub>, while 1/d<sub>k</sub> keeps it bounded (→ |ρ| = {0}), "
                "as μP prescribes.",
            ).format(f"{abs(rho):.3g}")
        self._note.setText(
            translate(
                "CorrelationView",
                "1/√d<sub>k</sub> normalises independent q, k (ρ = 0); 1/d<sub>k</sub> "
                "normalises correlated ones (ρ ≠ 0).",
            )
            + "<br>"
            + verdict
        )

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rho", "d_k", "rule", "rms_empirical", "rms_theory", "rel_sem"]
        rows: list[list[float | str]] = []
        data = self._data
        if data is None:
            return header, rows
        rel_sem = np.asarray(data["rel_sem"], dtype=float)
        for rule, suffix in _RULES:
            for index, d in enumerate(np.asarray(data["d_k"])):
                rows.append([
                    self._rho,
                    int(d),
                    rule.value,
                    float(data[f"rms_{suffix}"][index]),
                    float(data[f"theory_{suffix}"][index]),
                    float(rel_sem[index]),
                ])
        return header, rows

    # -- accessors for tests --------------------------------------------------------------------
    def points(self, rule: ScalingRule) -> pg.PlotDataItem:
        """Return the Monte Carlo markers of ``rule``."""
        return self._points[ScalingRule(rule)]

    def theory_line(self, rule: ScalingRule) -> pg.PlotDataItem:
        """Return the closed-form line of ``rule``."""
        return self._lines[ScalingRule(rule)]
