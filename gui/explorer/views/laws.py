"""Scaling laws against d_k from the streaming sweep: variance, entropy, p_max, saturation."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule, SweepParam
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import finite_or_nan, positive_or_nan

if TYPE_CHECKING:
    from engine.analysis.sweep import SweepPoint

__all__ = ["LawsView", "group_by_rule", "sweep_rows"]


def group_by_rule(
    points: Sequence[SweepPoint], param: SweepParam = SweepParam.D_K
) -> dict[ScalingRule, list[SweepPoint]]:
    """Return the sweep points of ``param`` per rule (display order), each sorted by value."""
    groups: dict[ScalingRule, list[SweepPoint]] = {}
    for point in points:
        if SweepParam(point.param) is not param:
            continue
        groups.setdefault(ScalingRule(point.rule), []).append(point)
    return {
        rule: sorted(groups[rule], key=lambda p: float(p.value))
        for rule in style.ordered_rules(groups)
    }


def sweep_rows(
    groups: Mapping[ScalingRule, Sequence[SweepPoint]], fields: Sequence[str]
) -> list[list[float | str]]:
    """Return the CSV rows of the sweep points of :func:`group_by_rule`, one per point: rule,
    value, the SweepPoint ``fields`` (as floats) and the number of samples."""
    return [[rule.value, float(p.value), *(float(getattr(p, f)) for f in fields), int(p.samples)]
            for rule, pts in groups.items() for p in pts]


class LawsView(ExplorerView):
    """Four panels against d_k (log x): logit variance (log-log, points + theory lines), mean
    row entropy with ln n, mean p_max, and the share of saturated rows (p_max > 0.99).

    Points stream in while the sweep runs; every number is a field of the engine's SweepPoint.
    """

    key = "laws"

    #: (SweepPoint field, log y) per panel, in layout order.
    PANELS: tuple[tuple[str, bool], ...] = (
        ("logit_var", True),
        ("entropy_mean", False),
        ("p_max_mean", False),
        ("saturated_share", False),
    )

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._add_plot_widget(legend_columns=4, legend_colspan=2)
        self._plots: dict[str, pg.PlotItem] = {}
        self._vlines: list[pg.InfiniteLine] = []
        for index, (field, log_y) in enumerate(self.PANELS):
            r, c = divmod(index, 2)
            plot = self._add_log_plot(1 + r, c, log_y, link=self._plots.get("logit_var"))
            vline = style.reference_line(1, Qt.PenStyle.DotLine, angle=90)
            plot.addItem(vline, ignoreBounds=True)
            self._vlines.append(vline)
            self._plots[field] = plot
        self._n = 1
        self._fix_bounded_ranges()
        # The label under the line: above it the range leaves one normal text line of room,
        # too little for the enlarged text of presentation mode in a short panel.
        self._ln_n = style.reference_line(2, Qt.PenStyle.DashLine, "ln n", 0.97, (1, 0))
        self._plots["entropy_mean"].addItem(self._ln_n)
        self._note = style.make_label()
        self._widget.addItem(self._note, row=3, col=0, colspan=2)
        self._points: dict[str, dict[ScalingRule, pg.PlotDataItem]] = {
            field: {} for field, _ in self.PANELS
        }
        self._theory: dict[ScalingRule, pg.PlotDataItem] = {}
        self._theory_sample = pg.PlotDataItem(pen=style.theory_pen(2, Qt.PenStyle.DashLine))
        self._groups: dict[ScalingRule, list[SweepPoint]] = {}
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("LawsView", "Scaling laws")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        titles = {
            "logit_var": (translate("LawsView", "Logit variance"), translate("LawsView", "Var(s)")),
            "entropy_mean": (
                translate("LawsView", "Mean row entropy"),
                translate("LawsView", "H (nats)"),
            ),
            "p_max_mean": (translate("LawsView", "Mean largest weight"), "p<sub>max</sub>"),
            "saturated_share": (
                translate("LawsView", "Saturated rows"),
                translate("LawsView", "share with p<sub>max</sub> > 0.99"),
            ),
        }
        for field, (title, left) in titles.items():
            style.label_plot(self._plots[field], title=title, left=left)

    def show_results(self, results: ExplorerResults) -> None:
        n = results.config.n_tokens
        d_k = results.config.d_k
        if not self._is_new("sweep", results.sweep_points, n, d_k, results.sweep_done):
            return
        self._groups = group_by_rule(results.sweep_points)
        plan = results.sweep_plan
        planned = plan.rules if plan is not None else ()
        self._ensure_curves(style.ordered_rules({*self._groups, *planned}))
        if plan is not None:
            self.hold_x(list(self._plots.values()), [*plan.values, d_k])
        for rule, pts in self._groups.items():
            if not self._is_new(f"points {rule.value}", *pts):
                continue  # while a sweep streams, most pushes add one rule's point
            x = [float(p.value) for p in pts]
            for field, log_y in self.PANELS:
                y = [getattr(p, field) for p in pts]
                shown = positive_or_nan(y) if log_y else finite_or_nan(y)
                self._points[field][rule].setData(x, shown)
            theory = positive_or_nan([p.logit_var_theory for p in pts])
            self._theory[rule].setData(x, theory)
        for rule in list(self._theory):
            if rule not in self._groups:
                self._forget(f"points {rule.value}")
                for field, _ in self.PANELS:
                    self._points[field][rule].setData([], [])
                self._theory[rule].setData([], [])
        self._ln_n.setValue(math.log(n))
        if n != self._n:
            self._n = n
            self._fix_bounded_ranges()
        for vline in self._vlines:
            vline.setValue(math.log10(d_k))
        done = sum(len(p) for p in self._groups.values())
        total = int(results.sweep_points[-1].total) if results.sweep_points else 0
        running = translate("LawsView", "  Sweep running: {0} of {1} points.")
        note = translate(
            "LawsView",
            "Markers: Monte Carlo (n = {0}); dashed: closed-form variance (d<sub>k</sub>·"
            "σ<sub>q</sub>²σ<sub>k</sub>²·c² at ρ = 0). Dotted line: current "
            "d<sub>k</sub> = {1}.",
        ).format(n, d_k)
        streaming = not results.sweep_done and bool(results.sweep_points)
        if plan is not None:
            planned_total = len(plan.values) * len(plan.rules)
            self._note.reserve_text(note + running.format(planned_total, planned_total))
        self._note.setText(note + running.format(done, total) if streaming else note)

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = [
            "rule", "d_k", "logit_var", "logit_var_theory", "entropy_mean", "entropy_sem",
            "p_max_mean", "p_max_sem", "saturated_share", "samples",
        ]
        return header, sweep_rows(self._groups, header[2:-1])

    def reset_view(self) -> None:
        super().reset_view()
        self._fix_bounded_ranges()

    # -- internals ----------------------------------------------------------------------------
    def plot(self, field: str) -> pg.PlotItem:
        """Return the plot of a SweepPoint field (``logit_var``, ``entropy_mean``, ...)."""
        return self._plots[field]

    def curve(self, field: str, rule: ScalingRule) -> pg.PlotDataItem:
        """Return the empirical curve of ``field`` for ``rule``."""
        return self._points[field][ScalingRule(rule)]

    def theory_curve(self, rule: ScalingRule) -> pg.PlotDataItem:
        """Return the theoretical variance line of ``rule``."""
        return self._theory[ScalingRule(rule)]

    def _fix_bounded_ranges(self) -> None:
        """Pin the y ranges of bounded quantities (0 ≤ H ≤ ln n; p_max and shares in [0, 1])
        so that panels stay comparable while points stream in and ln n keeps room for its label.
        """
        self._plots["entropy_mean"].setYRange(0.0, max(math.log(self._n), 0.1) * 1.2, padding=0)
        self._plots["p_max_mean"].setYRange(0.0, 1.0, padding=0.05)
        self._plots["saturated_share"].setYRange(0.0, 1.0, padding=0.05)

    def _ensure_curves(self, rules: list[ScalingRule]) -> None:
        new = [rule for rule in rules if rule not in self._theory]
        for rule in new:
            for field, _ in self.PANELS:
                curve = style.rule_curve(rule, width=1.5, symbol_size=8)
                self._plots[field].addItem(curve)
                self._points[field][rule] = curve
            theory = pg.PlotDataItem(
                pen=style.rule_pen(rule, width=2, style=Qt.PenStyle.DashLine), connect="finite"
            )
            self._plots["logit_var"].addItem(theory)
            self._theory[rule] = theory
        # The legend lists exactly the rules of the current sweep (curves of rules that left
        # it are emptied, not deleted, so that they can come back without new items).
        if self._is_new("legend", *rules):
            self._legend.clear()
            for rule in rules:
                self._legend.addItem(self._points["logit_var"][rule], style.rule_name(rule))
            self._legend.addItem(self._theory_sample, translate("LawsView", "theory"))
