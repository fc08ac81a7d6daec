"""Histogram of the snapshot's logits next to the Gaussian the variance law predicts.

For a real head there is no law: the dashed curve is then the Gaussian of the same (empirical)
mean and variance as the head's logits, labelled as such.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox, QWidget

from engine.analysis.logit_histogram import logit_histogram
from engine.config import ScalingRule
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.kit import style
from gui.kit.axes import axis_items
from gui.kit.i18n import translate
from gui.kit.steady_range import SteadyViewBox

if TYPE_CHECKING:
    from engine.analysis.experiment import AttentionSnapshot

__all__ = ["HistogramView"]

def variance_text(rule: ScalingRule, empirical: float, theory: float) -> str:
    """Return the read-out line comparing the engine's empirical and theoretical variance."""
    theory_text = f"{theory:.4g}" if math.isfinite(theory) else translate("HistogramView", "n/a")
    return translate("HistogramView", "{0}: Var empirical = {1}, theory = {2}").format(
        style.rule_name(rule), f"{empirical:.4g}", theory_text
    )


def real_variance_text(rule: ScalingRule, mean: float, variance: float) -> str:
    """Return the read-out line of a real head: the empirical mean and variance of its logits."""
    return translate("HistogramView", "{0}: mean = {1}, Var = {2} (empirical)").format(
        style.rule_name(rule), f"{mean:.4g}", f"{variance:.4g}")


class _Panel:
    def __init__(self, widget: pg.GraphicsLayoutWidget, col: int) -> None:
        self.plot = widget.addPlot(row=0, col=col, viewBox=SteadyViewBox(),
                                   axisItems=axis_items())
        self.col = col
        style.style_plot(self.plot)
        self.hist = pg.PlotDataItem(stepMode="center", fillLevel=0.0)
        self.density = pg.PlotDataItem(pen=style.theory_pen(2, pg.QtCore.Qt.PenStyle.DashLine))
        self.plot.addItem(self.hist)
        self.plot.addItem(self.density)
        # Soft-capping bounds every logit to (−cap, cap): the bounds are drawn where it applies.
        self.cap_lines = []
        for _bound in range(2):
            line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(
                style.THEORY_COLOR, width=1.5, style=pg.QtCore.Qt.PenStyle.DotLine),
                label="cap", labelOpts={"position": 0.92, "color": style.FOREGROUND})
            line.setVisible(False)
            self.plot.addItem(line, ignoreBounds=True)
            self.cap_lines.append(line)
        self.label = style.make_label(size=style.LABEL_PT)
        widget.addItem(self.label, row=1, col=col)
        self.rule: ScalingRule | None = None
        self.edges = np.zeros(0)
        self.counts = np.zeros(0)
        self.empirical = math.nan
        self.theory = math.nan


class HistogramView(ExplorerView):
    """Histogram (density) of all finite logits of the snapshot for "none" and the compared rule.

    The dashed curve is the Gaussian density N(0, Var_theory) with Var_theory =
    d_k·σ_q²·σ_k²·c² from the engine (``logit_var_theory``); the text under each plot prints
    the engine's empirical and theoretical variances.
    """

    key = "histogram"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._common_axis = QCheckBox()
        self._common_axis.toggled.connect(self._on_common_axis_toggled)
        self._add_controls(self._common_axis)
        self._add_plot_widget(1)
        self._panels = [_Panel(self._widget, 0), _Panel(self._widget, 1)]
        self._note = style.make_label()
        self._widget.addItem(self._note, row=2, col=0, colspan=2)
        self._snapshot: AttentionSnapshot | None = None
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("HistogramView", "Logit histogram")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        self._common_axis.setText(translate("HistogramView", "Common logit axis"))
        self._common_axis.setToolTip(
            translate("HistogramView", "Show both rules on one logit scale to compare their spread")
        )
        for panel in self._panels:
            style.label_plot(
                panel.plot,
                bottom=translate("HistogramView", "logit s = c·q·k"),
                left=translate("HistogramView", "probability density") if panel.col == 0 else None,
            )

    def show_results(self, results: ExplorerResults) -> None:
        snapshot = results.snapshot
        if not self._is_new("logits", snapshot, results.config.rule):
            return
        if snapshot is None:
            return
        self._snapshot = snapshot
        compare = ScalingRule(results.config.rule)
        if compare is ScalingRule.NONE or compare not in snapshot.rules:
            # Comparing "none" with itself shows nothing: use the Transformer rule instead.
            compare = ScalingRule.SQRT
        for panel, rule in zip(self._panels, (ScalingRule.NONE, compare), strict=True):
            self._show_rule(panel, snapshot, rule)
        self._on_common_axis_toggled(self._common_axis.isChecked())
        if snapshot.real_head is not None:
            self._note.setText(translate(
                "HistogramView",
                "Dashed: the Gaussian of the same mean and variance as the head's logits "
                "(every unmasked pair), for comparison only: real q and k follow no variance "
                "law."))
            return
        note = translate(
            "HistogramView",
            "Dashed: Gaussian N(0, Var<sub>theory</sub>), Var<sub>theory</sub> = "
            "d<sub>k</sub>·σ<sub>q</sub>²·σ<sub>k</sub>²·c² for independent tokens; both "
            "variances are over pairs i ≠ j.",
        )
        if snapshot.config.rho != 0.0:
            note += "<br>" + translate(
                "HistogramView",
                "With ρ ≠ 0, key i is correlated with query i: those diagonal logits (mean "
                "c·ρ·d<sub>k</sub>) form the extra tail (right for ρ > 0, left for ρ &lt; 0).",
            )
        self._note.setText(note)

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = [
            "rule", "bin_left", "bin_right", "density", "var_empirical", "var_theory",
        ]
        rows: list[list[float | str]] = []
        for panel in self._panels:
            if panel.rule is None:
                continue
            for b in range(panel.counts.size):
                rows.append([
                    panel.rule.value,
                    float(panel.edges[b]),
                    float(panel.edges[b + 1]),
                    float(panel.counts[b]),
                    panel.empirical,
                    panel.theory,
                ])
        return header, rows

    # -- internals ----------------------------------------------------------------------------
    def variance_labels(self) -> list[str]:
        """Return the variance read-outs as displayed (for tests)."""
        return [panel.label.text for panel in self._panels]

    def density_curves(self) -> list[pg.PlotDataItem]:
        """Return the dashed Gaussian curve of each panel (for tests)."""
        return [panel.density for panel in self._panels]

    def panel_rules(self) -> list[ScalingRule | None]:
        """Return the rule shown in each panel."""
        return [panel.rule for panel in self._panels]

    def _show_rule(self, panel: _Panel, snapshot: AttentionSnapshot, rule: ScalingRule) -> None:
        view = snapshot.rules[rule]
        real = snapshot.real_head is not None
        histogram = logit_histogram(view, real)
        empirical, theory = float(view.logit_var_empirical), float(view.logit_var_theory)
        capped = rule is ScalingRule.SOFTCAP
        for sign, line in zip((-1, 1), panel.cap_lines, strict=True):
            line.setVisible(capped)
            if capped:
                line.setValue(sign * float(snapshot.config.cap))
                style.set_line_label(line, translate("HistogramView", "−cap") if sign < 0
                                     else translate("HistogramView", "+cap"))
        panel.rule, panel.edges, panel.counts = rule, histogram.edges, histogram.density
        panel.empirical, panel.theory = empirical, theory
        panel.hist.setData(histogram.edges, histogram.density)
        panel.hist.setPen(style.rule_pen(rule, width=1.5))
        panel.hist.setBrush(style.rule_brush(rule, 90))
        panel.density.setData(histogram.gauss_x, histogram.gauss_y)
        color = style.RULE_COLORS[rule]
        style.label_plot(panel.plot, title=(
            f'<span style="color:{color}"><b>{style.rule_name(rule)}</b></span>'
            f"  (c = {float(view.scale):.4g}"
            + (", " + translate("HistogramView", "|s| &lt; cap = {0}").format(
                f"{float(snapshot.config.cap):.4g}") + ")" if capped else ")")))
        panel.label.setText(real_variance_text(rule, histogram.mean, empirical) if real
                            else variance_text(rule, empirical, theory))

    def _on_common_axis_toggled(self, checked: bool) -> None:
        first, second = (panel.plot for panel in self._panels)
        second.setXLink(first if checked else None)
        if checked:
            lows = [p.edges[0] for p in self._panels if p.edges.size > 1]
            highs = [p.edges[-1] for p in self._panels if p.edges.size > 1]
            if lows:
                first.setXRange(min(lows), max(highs), padding=0.02)
        else:
            for panel in self._panels:
                panel.plot.enableAutoRange(axis="x")
