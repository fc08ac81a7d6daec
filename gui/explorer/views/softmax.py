"""The softmax distribution of the selected query row under every rule of the snapshot."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule
from gui.explorer.head_text import head_label
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.kit import style
from gui.kit.axes import PlotAxis
from gui.kit.i18n import translate
from gui.kit.steady_range import SteadyViewBox
from gui.kit.token_axis import TokenAxis, short_token

if TYPE_CHECKING:
    from engine.analysis.experiment import AttentionSnapshot

__all__ = ["SoftmaxView"]

#: Head whose row is shown (the per-row statistics of the legend belong to this head).
HEAD = 0


def legend_text(rule: ScalingRule, entropy: float, p_max: float) -> str:
    """Return the legend entry of ``rule``: its name, entropy H (nats) and p_max."""
    return f"{style.rule_name(rule)} | H={entropy:.2f} | p_max={p_max:.3f}"


class SoftmaxView(ExplorerView):
    """p_j = softmax(s)_j of one query row against the key index j, one curve per rule.

    The legend gives each rule's row entropy H (nats) and p_max, taken from the engine's
    per-row statistics of the snapshot; the uniform level 1/n is drawn for reference.
    """

    key = "softmax"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # The legend lives in its own layout cell above the plot: a spike of p ≈ 1 can sit
        # anywhere, so no corner of the plot is guaranteed to be free.
        self._add_plot_widget(legend_columns=3)
        # The key axis shows a real head's tokens (numbers for random q, k).
        self._plot = self._widget.addPlot(row=1, col=0, viewBox=SteadyViewBox(),
                                          axisItems={"bottom": TokenAxis("bottom", offset=0.0),
                                                     "left": PlotAxis("left")})
        style.style_plot(self._plot)
        self._uniform = style.reference_line(  # labelled by retranslate_ui
            1, pg.QtCore.Qt.PenStyle.DotLine, "", 0.97, (1, 1))
        self._plot.addItem(self._uniform)
        self._curves: dict[ScalingRule, pg.PlotDataItem] = {}
        self._snapshot: AttentionSnapshot | None = None
        self._row = 0
        self._rules: list[ScalingRule] = []
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("SoftmaxView", "Softmax of one row")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        style.label_plot(
            self._plot,
            bottom=translate("SoftmaxView", "key index j"),
            left=translate("SoftmaxView", "attention weight p<sub>j</sub>"),
        )
        style.set_line_label(self._uniform, translate("SoftmaxView", "uniform"))

    def show_results(self, results: ExplorerResults) -> None:
        snapshot = results.snapshot
        if not self._is_new("row", snapshot, results.config.query_row):
            return
        if snapshot is None:
            return
        rules = style.ordered_rules(snapshot.rules)
        if rules != self._rules:
            self._rebuild_curves(rules)
        first = snapshot.rules[rules[0]]
        n = first.logits.shape[-1]
        row = min(results.config.query_row, first.logits.shape[-2] - 1)
        self._snapshot, self._row = snapshot, row
        x = np.arange(n)
        for rule in rules:
            view = snapshot.rules[rule]
            curve = self._curves[rule]
            style.set_markers(curve, rule, n)
            curve.setData(x, np.asarray(view.row_weights(HEAD, row), dtype=float))
            label = self._legend.getLabel(curve)
            if label is not None:
                label.setText(
                    legend_text(rule, float(view.entropy[HEAD, row]), float(view.p_max[HEAD, row]))
                )
        # Uniform over the keys the row may attend to (i + 1 of them under a causal mask).
        attended = int(np.isfinite(first.logits[HEAD, row]).sum())
        self._uniform.setValue(1.0 / max(attended, 1))
        real = snapshot.real_head
        tokens = None if real is None else real.tokens
        # A real head's key tokens on the x axis (every k-th when there are many).
        self._plot.getAxis("bottom").set_tokens(tokens)
        if real is None:
            title = translate("SoftmaxView", "Query row i = {0} (head 1), n = {1} keys").format(
                row, n)
        else:
            query = str(row) if tokens is None else f"{row} “{short_token(tokens[row])}”"
            title = translate("SoftmaxView", "Query row i = {0} ({1}), n = {2} keys").format(
                query, head_label(real.ref, with_file=False), n)
        style.label_plot(self._plot, title=title)

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "head", "query_i", "key_j", "p", "row_entropy", "row_p_max"]
        rows: list[list[float | str]] = []
        if self._snapshot is None:
            return header, rows
        for rule in self._rules:
            view = self._snapshot.rules[rule]
            p = np.asarray(view.row_weights(HEAD, self._row), dtype=float)
            h = float(view.entropy[HEAD, self._row])
            pm = float(view.p_max[HEAD, self._row])
            rows.extend([rule.value, HEAD, self._row, j, float(p[j]), h, pm] for j in range(p.size))
        return header, rows

    # -- internals ----------------------------------------------------------------------------
    def title_text(self) -> str:
        """Return the plot title as displayed (for tests)."""
        return str(self._plot.titleLabel.text)

    def curve(self, rule: ScalingRule) -> pg.PlotDataItem:
        """Return the curve of ``rule`` (for tests)."""
        return self._curves[ScalingRule(rule)]

    def legend_labels(self) -> dict[ScalingRule, str]:
        """Return the legend text per rule as displayed."""
        out = {}
        for rule, curve in self._curves.items():
            label = self._legend.getLabel(curve)
            out[rule] = label.text if label is not None else ""
        return out

    def _rebuild_curves(self, rules: list[ScalingRule]) -> None:
        for curve in self._curves.values():
            self._legend.removeItem(curve)
            self._plot.removeItem(curve)
        self._curves = {}
        for rule in rules:
            # Up to 8192 points redrawn on every change: see style.DENSE_CURVE.
            curve = style.rule_curve(rule, symbol_size=6, symbolBrush=style.rule_brush(rule, 160),
                                     connect="auto", **style.DENSE_CURVE)
            self._plot.addItem(curve)
            self._legend.addItem(curve, style.rule_name(rule))
            self._curves[rule] = curve
        self._rules = rules
