"""Precision lab: overflow and weight error of low-precision attention against d_k.

Every number comes from the explorer's streamed d_k sweep: its points carry, for rules none
and sqrt, one :class:`~engine.analysis.sweep_precision.PrecisionStat` per format × softmax form
× rounding (computed by the engine in the worker thread) and the mean row max |logit|. The
format and softmax-form selectors only choose which of them the curves show.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QLabel, QWidget

from engine.analysis.sweep_precision import grid_rows
from engine.config import Precision, Rounding, ScalingRule, SoftmaxForm
from engine.core.precision import largest_value
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.explorer.views.laws import group_by_rule
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import finite_or_nan, positive_or_nan

if TYPE_CHECKING:
    from engine.analysis.sweep import SweepPoint

__all__ = ["PrecisionView"]

# The formats the selector offers (those of the engine's precision grid).
FORMATS: tuple[Precision, ...] = (Precision.FLOAT16, Precision.BFLOAT16, Precision.FLOAT8_E4M3)
# The rules the view shows (the grid's rules).
RULES: tuple[ScalingRule, ...] = (ScalingRule.NONE, ScalingRule.SQRT)
#: A point's weight error is drawn only when it averages at least this share of its rows:
#: an error over the few rows that did not overflow describes those rows, not the point.
MIN_AVERAGED_SHARE = 0.5


def _set(curve: pg.PlotDataItem, x: list[float], y: list[float]) -> None:
    """Show (x, y), or nothing when no y is a number (a sweep without the precision grid)."""
    if any(math.isfinite(v) for v in y):
        curve.setData(x, y)
    else:
        curve.setData([], [])


class PrecisionView(ExplorerView):
    """Three panels against d_k (log x), for rules none and 1/√d_k in the chosen format:
    the share of rows whose exponentials, their sum or their weights overflow; the mean per-row
    max|Δp| against the float64 weights (solid: logits and softmax rounded, dashed: only the
    logits); and the mean row max |logit| with lines at the format's largest value and at its
    logarithm (where exp overflows without the max subtracted).
    """

    key = "precision"

    PANELS: tuple[str, ...] = ("overflow", "error", "logit")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._format_label = QLabel()
        self._format = QComboBox()
        for precision in FORMATS:
            self._format.addItem(precision.value, precision.value)
        self._form_label = QLabel()
        self._form = QComboBox()
        self._form.addItem("", SoftmaxForm.STABLE.value)
        self._form.addItem("", SoftmaxForm.NAIVE.value)
        # The naive form first: unscaled rows overflowing fp16 is the lab's opening picture.
        self._form.setCurrentIndex(1)
        self._add_controls(self._format_label, self._format, self._form_label, self._form)
        self._add_plot_widget(1, legend_columns=4, legend_colspan=3)
        self._plots: dict[str, pg.PlotItem] = {}
        for col, panel in enumerate(self.PANELS):
            self._plots[panel] = self._add_log_plot(1, col, panel != "overflow",
                                                    link=self._plots.get("overflow"))
        self._plots["overflow"].setYRange(0.0, 1.0, padding=0.05)
        self._curves: dict[tuple[str, ScalingRule], pg.PlotDataItem] = {}
        for rule in RULES:
            for panel, dashed in (("overflow", False), ("error", False), ("error_logits", True),
                                  ("logit", False)):
                pen = style.rule_pen(rule, width=2, style=Qt.PenStyle.DashLine if dashed
                                     else Qt.PenStyle.SolidLine)
                curve = style.rule_curve(rule, pen=pen,
                                         symbol=None if dashed else style.rule_symbol(rule))
                self._plots["error" if panel == "error_logits" else panel].addItem(curve)
                self._curves[(panel, rule)] = curve
        # The largest value sits near the top of the plot: its label goes below the line.
        self._max_line = style.reference_line(1.5, Qt.PenStyle.DashLine, " ", 0.05, (0, 0))
        self._exp_line = style.reference_line(1.5, Qt.PenStyle.DotLine, " ", 0.05)
        # Both lines count for the auto-range (a log axis holds 2 … 65504 readably); bfloat16's
        # largest value (3.4e38) is hidden instead, which also drops it from the range.
        for line in (self._max_line, self._exp_line):
            self._plots["logit"].addItem(line)
        self._logits_sample = pg.PlotDataItem(pen=style.theory_pen(2, Qt.PenStyle.DashLine))
        # Where a rule's error curve stops because most rows overflowed, the note below the
        # plots says so: labels inside the panel overlapped each other and, in a panel as
        # narrow as the 1024×768 window's, the curves.
        self._stop_texts: dict[ScalingRule, str] = {}
        self._note = style.make_label()
        self._widget.addItem(self._note, row=2, col=0, colspan=3)
        self._groups: dict[ScalingRule, list[SweepPoint]] = {}
        self._results: ExplorerResults | None = None
        self._format.currentIndexChanged.connect(self._on_choice)
        self._form.currentIndexChanged.connect(self._on_choice)
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("PrecisionView", "Precision")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        self._format_label.setText(translate("PrecisionView", "Format:"))
        self._format.setToolTip(translate(
            "PrecisionView", "Number format of the logits, exponentials, row sum and weights "
            "(computed in float32 and rounded to it after every step)"))
        self._form_label.setText(translate("PrecisionView", "Softmax:"))
        self._form.setItemText(0, translate("PrecisionView", "max subtracted (stable)"))
        self._form.setItemText(1, translate("PrecisionView", "naive exp(z)"))
        self._form.setToolTip(translate(
            "PrecisionView", "Subtract the row maximum before exp (stable) or not (naive)"))
        style.label_plot(self._plots["overflow"],
                         title=translate("PrecisionView", "Rows that overflow"),
                         left=translate("PrecisionView", "share of rows"))
        style.label_plot(self._plots["error"],
                         title=translate("PrecisionView", "Weight error"),
                         left=translate("PrecisionView", "mean per-row max|Δp|"))
        style.label_plot(self._plots["logit"],
                         title=translate("PrecisionView", "Largest logit"),
                         left=translate("PrecisionView", "mean row max|z|"))
        self._legend.clear()
        for rule in RULES:
            self._legend.addItem(self._curves[("overflow", rule)], style.rule_name(rule))
        self._legend.addItem(self._logits_sample,
                             translate("PrecisionView", "only the logits rounded"))

    def show_results(self, results: ExplorerResults) -> None:
        if not self._is_new("sweep", results.sweep_points, results.sweep_done):
            return
        self._results = results
        self._groups = {rule: pts for rule, pts in group_by_rule(results.sweep_points).items()
                        if rule in RULES}
        if results.sweep_plan is not None:
            self.hold_x(list(self._plots.values()), results.sweep_plan.values)
        self._draw()

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "d_k", "format", "softmax", "rounding", "overflow_share",
                  "weight_err_mean", "logit_absmax_mean", "samples", "grid_rows",
                  "weight_err_rows"]
        rows: list[list[float | str]] = []
        for rule, pts in self._groups.items():
            for p in pts:
                for stat in p.precision:
                    rows.append([rule.value, float(p.value), stat.precision.value,
                                 stat.softmax.value, stat.rounding.value,
                                 float(stat.overflow_share), float(stat.weight_err_mean),
                                 float(p.logit_absmax_mean), int(p.samples),
                                 int(stat.rows), int(stat.error_rows)])
        return header, rows

    # -- for tests and the tour ---------------------------------------------------------------
    def curve(self, panel: str, rule: ScalingRule) -> pg.PlotDataItem:
        """The curve of ``panel`` (overflow, error, error_logits, logit) for ``rule``."""
        return self._curves[(panel, ScalingRule(rule))]

    def set_choice(self, precision: Precision | str, softmax: SoftmaxForm | str) -> None:
        """Select the shown format and softmax form (as the two selectors do)."""
        self._format.setCurrentIndex(self._format.findData(Precision(precision).value))
        self._form.setCurrentIndex(self._form.findData(SoftmaxForm(softmax).value))

    def choice(self) -> tuple[Precision, SoftmaxForm]:
        """The selected format and softmax form."""
        return Precision(self._format.currentData()), SoftmaxForm(self._form.currentData())

    def limit_lines(self) -> tuple[float, float]:
        """The values (not logarithms) of the largest-value and exp-overflow lines."""
        return 10.0 ** self._max_line.value(), 10.0 ** self._exp_line.value()

    # -- internals ----------------------------------------------------------------------------
    def _on_choice(self) -> None:
        self._draw()

    def _stat(self, point: SweepPoint, precision: Precision, softmax: SoftmaxForm,
              rounding: Rounding) -> tuple[float, float]:
        """The point's overflow share and weight error (NaN where too few rows average it)."""
        for stat in point.precision:
            if (stat.precision, stat.softmax, stat.rounding) == (precision, softmax, rounding):
                averaged = stat.error_rows >= MIN_AVERAGED_SHARE * stat.rows
                return stat.overflow_share, stat.weight_err_mean if averaged else math.nan
        return math.nan, math.nan

    def stop_label(self, rule: ScalingRule) -> str:
        """What the note says of where ``rule``'s error curve stops ("" when it does not)."""
        return self._stop_texts.get(ScalingRule(rule), "")

    def _mark_stop(self, rule: ScalingRule, x: list[float], errors: list[float],
                   overflow: list[float]) -> None:
        """Say where the error curve stops because most rows overflowed."""
        drawn = any(math.isfinite(e) and e > 0 for e in errors)
        first_gap = next((i for i, e in enumerate(errors)
                          if not math.isfinite(e) and overflow[i] > 1.0 - MIN_AVERAGED_SHARE),
                         None)
        self._stop_texts.pop(rule, None)
        if first_gap is not None and drawn:
            self._stop_texts[rule] = _stop_text(rule, overflow[first_gap], x[first_gap])

    def _draw(self) -> None:
        precision, softmax = self.choice()
        for rule in RULES:
            pts = self._groups.get(rule, [])
            x = [float(p.value) for p in pts]
            rounded = [self._stat(p, precision, softmax, Rounding.ALL) for p in pts]
            logits = [self._stat(p, precision, SoftmaxForm.STABLE, Rounding.LOGITS) for p in pts]
            _set(self.curve("overflow", rule), x, finite_or_nan([r[0] for r in rounded]))
            errors = positive_or_nan([r[1] for r in rounded])
            _set(self.curve("error", rule), x, errors)
            self._mark_stop(rule, x, errors, [r[0] for r in rounded])
            _set(self.curve("error_logits", rule), x, positive_or_nan([r[1] for r in logits]))
            _set(self.curve("logit", rule), x,
                 positive_or_nan([p.logit_absmax_mean for p in pts]))
        top = largest_value(precision)
        self._max_line.setVisible(precision is not Precision.BFLOAT16)
        self._max_line.setValue(math.log10(top))
        style.set_line_label(self._max_line, translate(
            "PrecisionView", "largest {0}:\n{1:.6g}").format(precision.value, top))
        self._exp_line.setValue(math.log10(math.log(top)))
        style.set_line_label(self._exp_line, translate(
            "PrecisionView", "ln {0:.6g} ≈ {1:.3g}:\nnaive exp\noverflows").format(
                top, math.log(top)))
        note = self._note_text(precision)
        running = translate("PrecisionView", "  Sweep running.")
        streaming = self._results is not None and bool(self._results.sweep_points) and not (
            self._results.sweep_done)
        plan = self._results.sweep_plan if self._results is not None else None
        if plan is not None:  # room for the longest the note may become, stops included
            stops = "".join(f" {_stop_text(rule, 1.0, max(plan.values))}" for rule in RULES)
            self._note.reserve_text(self._note_text(precision, stops=False) + running + stops)
        self._note.setText(note + running if streaming else note)

    def _note_text(self, precision: Precision, *, stops: bool = True) -> str:
        config = self._results.config if self._results is not None else None
        n = config.n_tokens if config is not None else 0
        samples = min((p.samples for pts in self._groups.values() for p in pts), default=0)
        text = translate(
            "PrecisionView",
            "n = {0}, q and k ~ N(0, 1); weight errors over the first {3} of {1} rows per "
            "point, against the float64 max-subtracted softmax, averaged over the rows that "
            "do not overflow; where more than half of them overflow no error is drawn. Right: "
            "dashed, the largest {2} value; dotted, its logarithm, above which "
            "exp overflows unless the row maximum is subtracted.",
        ).format(n, samples, precision.value, min(samples, grid_rows(max(n, 1))))
        if config is not None and config.rho != 0.0:
            # the sweep draws every key from the query (engine.analysis.sweep_rows)
            text += translate(
                "PrecisionView", " Every key is correlated with the query: k = ρq + "
                "√(1−ρ²)ξ with ρ = {0}, so q·k grows like ρ·d<sub>k</sub>.").format(
                    f"{config.rho:.3g}")
        if precision is Precision.BFLOAT16:
            text += translate("PrecisionView", " bfloat16 keeps float32's range (3.4·10³⁸).")
        if stops:
            text += "".join(f" {self._stop_texts[rule]}" for rule in RULES
                            if rule in self._stop_texts)
        return text


def _stop_text(rule: ScalingRule, share: float, d_k: float) -> str:
    """The note's sentence on where ``rule``'s error curve stops."""
    return translate("PrecisionView", "The error curve of {0} stops at d<sub>k</sub> = {2:g}, "
                     "where {1:.0%} of its rows overflow.").format(
                         html.escape(style.rule_name(rule)), share, d_k)
