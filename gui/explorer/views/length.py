"""The length lab: entropy, p_max and entropy / ln n against n (log x), one curve per rule,
from the engine's streamed n sweep, and Scalable-Softmax's toy (exact)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from engine.analysis.length import SsmaxToy, ssmax_toy
from engine.config import ScalingRule, SweepParam
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.explorer.views.laws import group_by_rule, sweep_rows
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import finite_or_nan

if TYPE_CHECKING:
    from engine.analysis.sweep import SweepPoint

__all__ = ["LengthView"]

#: Colours of the toy's two curves (the rules they stand for: 1/√d_k's blue, SSMax's wine).
_TOY_COLORS = {"softmax": style.RULE_COLORS[ScalingRule.SQRT],
               "ssmax": style.RULE_COLORS[ScalingRule.SSMAX]}


class LengthView(ExplorerView):
    """Four panels against n (log x): mean row entropy, mean p_max, entropy / ln n (1 =
    uniform) for iid rows of the current d_k, one curve per rule; and the SSMax toy (all
    logits −2 except one +3): the large logit's weight under softmax and under SSMax.

    Every number is the engine's: SweepPoint fields (``entropy_ratio`` included) and
    :func:`engine.analysis.length.ssmax_toy`.
    """

    key = "length"

    #: SweepPoint field per panel, in layout order (the toy is the fourth panel).
    PANELS: tuple[str, ...] = ("entropy_mean", "p_max_mean", "entropy_ratio")
    #: Half-width of the error bars in standard errors (a 95 % interval).
    ERROR_BAR_SEMS = 1.96

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._add_plot_widget(legend_columns=5, legend_colspan=2)
        self._plots: dict[str, pg.PlotItem] = {}
        for index, field in enumerate((*self.PANELS, "toy")):
            r, c = divmod(index, 2)
            self._plots[field] = self._add_log_plot(1 + r, c, False, bottom="n")
        for field in ("p_max_mean", "entropy_ratio", "toy"):
            self._plots[field].setYRange(0.0, 1.0, padding=0.05)
        self._note = style.make_label()
        self._widget.addItem(self._note, row=3, col=0, colspan=2)
        self._curves: dict[str, dict[ScalingRule, pg.PlotDataItem]] = {
            field: {} for field in self.PANELS}
        self._bars: dict[str, dict[ScalingRule, pg.ErrorBarItem]] = {
            field: {} for field in self.PANELS}
        self._toy_curves: dict[str, pg.PlotDataItem] = {}
        for name, color in _TOY_COLORS.items():
            curve = pg.PlotDataItem(pen=pg.mkPen(color, width=2), symbol="o", symbolSize=6,
                                    symbolBrush=pg.mkBrush(color), symbolPen=None)
            self._plots["toy"].addItem(curve)
            self._toy_curves[name] = curve
        # Inside the toy's view box (its curves leave the top right empty), in the shared text
        # colour and size: pyqtgraph's default legend text is light grey.
        self._toy_legend = pg.LegendItem(
            offset=(-10, 10), labelTextColor=style.FOREGROUND, labelTextSize=f"{style.TEXT_PT}pt",
            pen=pg.mkPen("#999999"), brush=pg.mkBrush(255, 255, 255, 235))
        self._toy_legend.setParentItem(self._plots["toy"].vb)
        self._groups: dict[ScalingRule, list[SweepPoint]] = {}
        self._toy: SsmaxToy | None = None
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("LengthView", "Length")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        titles = {
            "entropy_mean": (translate("LengthView", "Mean row entropy"),
                             translate("LengthView", "H (nats)")),
            "p_max_mean": (translate("LengthView", "Mean largest weight"), "p<sub>max</sub>"),
            "entropy_ratio": (translate("LengthView", "Entropy / ln n (1 = uniform)"),
                              "H / ln n"),
            "toy": (translate("LengthView", "SSMax toy: logits −2, one +3"),
                    translate("LengthView", "weight of the +3 logit")),
        }
        for field, (title, left) in titles.items():
            style.label_plot(self._plots[field], title=title, left=left)
        self._toy_legend.clear()
        self._toy_legend.addItem(self._toy_curves["softmax"], "softmax")
        self._toy_legend.addItem(self._toy_curves["ssmax"], "SSMax")
        self._widget.setToolTip(translate(
            "LengthView",
            "iid rows of n Gaussian logits at the current d_k: with a fixed scale (1/√d_k, YaRN) "
            "the softmax disperses as n grows (p_max → 0, entropy → ln n); ln n/√d_k and "
            "SSMax s·ln n/√d_k keep it focused. Toy (Nakanishi 2025, Fig. 1): softmax's "
            "e³/(e³ + (n−1)e⁻²) → 0, SSMax's 1/(1 + (n−1)·n^(−5s)) → 1."))

    def show_results(self, results: ExplorerResults) -> None:
        config = results.config
        if not self._is_new("length", results.length_points, config.d_k, config.ssmax_s,
                            config.yarn_factor, results.length_done):
            return
        self._groups = group_by_rule(results.length_points, SweepParam.N)
        plan = results.length_plan
        planned = plan.rules if plan is not None else ()
        self._ensure_curves(style.ordered_rules({*self._groups, *planned}))
        if plan is not None:
            self.hold_x([self._plots[field] for field in self.PANELS], plan.values)
        for rule, pts in self._groups.items():
            if not self._is_new(f"points {rule.value}", *pts):
                continue  # while a sweep streams, most pushes add one rule's point
            x = [float(p.value) for p in pts]
            for field in self.PANELS:
                self._curves[field][rule].setData(x, finite_or_nan(
                    [getattr(p, field) for p in pts]))
                self._set_bars(field, rule, pts)
        for rule in list(self._curves["entropy_mean"]):
            if rule not in self._groups:
                self._forget(f"points {rule.value}")
                for field in self.PANELS:
                    self._curves[field][rule].setData([], [])
                    self._bars[field][rule].setData(x=np.zeros(0), y=np.zeros(0),
                                                    height=np.zeros(0))
        if self._toy is None or self._toy.s != config.ssmax_s:
            self._toy = ssmax_toy(s=config.ssmax_s)
            self._toy_curves["softmax"].setData(self._toy.n, self._toy.p_max_softmax)
            self._toy_curves["ssmax"].setData(self._toy.n, self._toy.p_max_ssmax)
        samples = max((int(p.samples) for p in results.length_points), default=0)
        text = translate(
            "LengthView",
            "Lines: Monte Carlo means over iid rows (d<sub>k</sub> = {0}, up to {1} rows per "
            "point, fewer at large n), bars: 95 % intervals (±1.96 standard errors). "
            "SSMax s = {2}, YaRN f = {3}.",
        ).format(config.d_k, samples, f"{config.ssmax_s:g}", f"{config.yarn_factor:g}")
        running = translate("LengthView", "  Sweep running: {0} of {1} points.")
        if plan is not None:
            total = len(plan.values) * len(plan.rules)
            self._note.reserve_text(text + running.format(total, total))
        if results.length_points and not results.length_done:
            total = int(results.length_points[-1].total)
            text += running.format(len(results.length_points), total)
        self._note.setText(text)

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "n", "entropy_mean", "entropy_sem", "p_max_mean", "p_max_sem",
                  "entropy_ratio", "samples"]
        rows = sweep_rows(self._groups, header[2:-1])
        if self._toy is not None:
            for name, values in (("toy_softmax", self._toy.p_max_softmax),
                                 ("toy_ssmax", self._toy.p_max_ssmax)):
                for n, p_max in zip(self._toy.n, values, strict=True):
                    rows.append([name, float(n), "", "", float(p_max), "", "", ""])
        return header, rows

    # -- internals ----------------------------------------------------------------------------
    def plot(self, field: str) -> pg.PlotItem:
        """The panel of a SweepPoint field (``entropy_mean``, ``p_max_mean``,
        ``entropy_ratio``) or ``"toy"``."""
        return self._plots[field]

    def curve(self, field: str, rule: ScalingRule) -> pg.PlotDataItem:
        """The curve of ``field`` for ``rule``."""
        return self._curves[field][ScalingRule(rule)]

    def error_bars(self, field: str, rule: ScalingRule) -> pg.ErrorBarItem:
        """The error bars of ``field`` for ``rule`` (x in log10 n, as the log axis draws)."""
        return self._bars[field][ScalingRule(rule)]

    def _set_bars(self, field: str, rule: ScalingRule, pts: list[SweepPoint]) -> None:
        """±1.96 standard errors around each finite mean; none where the error is unknown."""
        sem_field = "p_max_sem" if field == "p_max_mean" else "entropy_sem"
        x, y, half = [], [], []
        for p in pts:
            mean, sem = float(getattr(p, field)), float(getattr(p, sem_field))
            if field == "entropy_ratio":
                sem /= math.log(p.value) if p.value > 1 else math.nan
            if math.isfinite(mean) and math.isfinite(sem):
                x.append(math.log10(p.value))  # ErrorBarItem ignores the plot's log mode
                y.append(mean)
                half.append(self.ERROR_BAR_SEMS * sem)
        self._bars[field][rule].setData(x=np.asarray(x), y=np.asarray(y),
                                        height=2.0 * np.asarray(half))

    def toy_curve(self, name: str) -> pg.PlotDataItem:
        """The toy's ``"softmax"`` or ``"ssmax"`` curve."""
        return self._toy_curves[name]

    def _ensure_curves(self, rules: list[ScalingRule]) -> None:
        for rule in rules:
            if rule in self._curves["entropy_mean"]:
                continue
            for field in self.PANELS:
                curve = style.rule_curve(rule, width=1.5)
                self._plots[field].addItem(curve)
                self._curves[field][rule] = curve
                bars = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0),
                                       pen=style.rule_pen(rule, width=1), beam=0.0)
                self._plots[field].addItem(bars)
                self._bars[field][rule] = bars
        if self._is_new("legend", *rules):
            self._legend.clear()
            for rule in rules:
                self._legend.addItem(self._curves["entropy_mean"][rule], style.rule_name(rule))
