"""Softmax Jacobian norms against d_k: median and 10–90 % band per rule, plus saturation.

The curves are the d_k sweep of random q, k (a theory view). For a real head its own numbers
(the engine's ``snapshot.gradients``: median and 10–90 % of its query rows, saturated share)
are drawn as stars with bars at the head's d_k, next to the sweep.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule
from gui.explorer.head_text import head_label
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.explorer.views.laws import group_by_rule, sweep_rows
from gui.kit import style
from gui.kit.cell_items import WrappingLabel
from gui.kit.i18n import translate
from gui.kit.plot_view import finite_or_nan, positive_or_nan

if TYPE_CHECKING:
    from engine.analysis.sweep import SweepPoint

__all__ = ["GradientView"]

#: (panel key, SweepPoint prefix): the two gradient quantities.
_QUANTITIES = (("jac", "jac_fro"), ("raw", "jac_raw"))


class _Band:
    """Median curve plus a filled 10–90 % band of one rule in one panel."""

    def __init__(self, plot: pg.PlotItem, rule: ScalingRule) -> None:
        edge_pen = pg.mkPen(style.rule_color(rule, 110), width=1)
        self.low = pg.PlotDataItem(pen=edge_pen)
        self.high = pg.PlotDataItem(pen=edge_pen)
        self.fill = pg.FillBetweenItem(self.low, self.high, brush=style.rule_brush(rule, 45))
        self.median = style.rule_curve(rule)
        plot.addItem(self.low)
        plot.addItem(self.high)
        # The fill spans exactly the two edge curves: auto-range need not measure its path too.
        plot.addItem(self.fill, ignoreBounds=True)
        plot.addItem(self.median)

    def set_data(self, x: list[float], median: list[float], q10: list[float], q90: list[float]):
        y = positive_or_nan(median)
        # No point at all (QK-norm has no c, so no ∂p/∂S_raw): an empty curve, not an all-NaN
        # one, whose scatter bounds (np.nanmin) warn on every paint; under a warnings-as-errors
        # filter that exception, raised inside a boundingRect called by Qt, crashes PySide.
        if any(map(math.isfinite, y)):
            self.median.setData(x, y)
        else:
            self.median.setData([], [])
        # The band is drawn only where both quantiles are positive: a log axis cannot show an
        # exactly one-hot row's zero gradient, and NaNs would break the filled polygon.
        keep = [i for i in range(len(x)) if q10[i] > 0 and q90[i] > 0 and math.isfinite(q90[i])]
        self.low.setData([x[i] for i in keep], [q10[i] for i in keep])
        self.high.setData([x[i] for i in keep], [q90[i] for i in keep])

    def clear(self) -> None:
        for item in (self.low, self.high, self.median):
            item.setData([], [])


class _HeadMark:
    """A real head's median (star) and 10–90 % bar of one rule at its d_k in one panel."""

    def __init__(self, plot: pg.PlotItem, rule: ScalingRule) -> None:
        self.bar = pg.PlotDataItem(pen=style.rule_pen(rule, width=2), connect="pairs")
        self.star = pg.PlotDataItem(
            pen=None, symbol="star", symbolSize=16, symbolPen=pg.mkPen(style.FOREGROUND, width=1),
            symbolBrush=style.rule_brush(rule, 230))
        for item in (self.bar, self.star):
            item.setZValue(20)
            plot.addItem(item)

    def set_data(self, d_k: float, median: float, q10: float | None = None,
                 q90: float | None = None, *, log_y: bool = True) -> None:
        # A log axis cannot show 0 (an exactly one-hot row): no star then, as for the sweep.
        y = positive_or_nan([median])[0] if log_y else float(median)
        self.star.setData([d_k] if math.isfinite(y) else [], [y] if math.isfinite(y) else [])
        if q10 is not None and q90 is not None and q10 > 0 and math.isfinite(q90) and q90 > 0:
            self.bar.setData([d_k, d_k], [q10, q90])
        else:
            self.bar.setData([], [])

    def clear(self) -> None:
        for item in (self.bar, self.star):
            item.setData([], [])


class GradientView(ExplorerView):
    """How large the softmax gradient is, per rule, against d_k (log-log).

    Left: ‖J‖_F = ‖∂p/∂s‖_F with respect to the scaled logits s. Middle: ‖∂p/∂S_raw‖_F =
    c·‖J‖_F with respect to the raw dot products q·k. Both show the median over query rows and
    the 10–90 % band, from the engine's sweep points. Right: share of saturated rows.
    """

    key = "gradients"

    #: Widths (px) from which the three panels stand in three or two columns; below the
    #: second they stack. Each threshold lies above that arrangement's minimum width, so the
    #: choice cannot flip back and forth as the scroll area resizes the view.
    COLUMN_WIDTHS = ((3, 840), (2, 520))

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._add_plot_widget()
        self._legend = style.make_legend(col_count=6)  # placed by the reflow
        self._plots: dict[str, pg.PlotItem] = {}
        # Wrapping labels in their own cells, not plot titles (whose minimum width is one line).
        self._titles: dict[str, pg.LabelItem] = {}
        # (panel key, log y axis); titles and axis labels are set by retranslate_ui.
        specs = (("jac", True), ("raw", True), ("saturated", False))
        for key, log_y in specs:
            # The gradient panels share the d_k range; linking the wider saturation panel too
            # would align the axes pixel by pixel and stretch its d_k range past the data.
            link = None if key == "saturated" else self._plots.get("jac")
            self._plots[key] = self._add_log_plot(None, 0, log_y, link=link)
            title = style.make_label(size=style.TITLE_PT)
            # A wrapping label prefers its current wrapped width, which depends on the previous
            # arrangement; a fixed small preference lets the plots alone share the columns.
            title.setPreferredWidth(WrappingLabel.MIN_WIDTH)
            self._titles[key] = title
        self._plots["saturated"].setYRange(0.0, 1.0, padding=0.05)
        self._note = style.make_label()
        self._columns = 0
        self._arrange(3)
        self._bands: dict[str, dict[ScalingRule, _Band]] = {"jac": {}, "raw": {}}
        self._saturated: dict[ScalingRule, pg.PlotDataItem] = {}
        self._groups: dict[ScalingRule, list[SweepPoint]] = {}
        self._head_marks: dict[str, dict[ScalingRule, _HeadMark]] = {
            "jac": {}, "raw": {}, "saturated": {}}
        self._head_gradients: dict[ScalingRule, object] = {}
        self._head_ref: object | None = None
        self._note_text = ""
        self._apply_language()

    # -- reflow -------------------------------------------------------------------------------
    def columns(self) -> int:
        """How many columns the panels stand in now (3, 2 or 1)."""
        return self._columns

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt override
        """Re-arrange the panels for the new width (three, two or one column)."""
        super().resizeEvent(event)
        width = event.size().width()
        columns = next((cols for cols, low in self.COLUMN_WIDTHS if width >= low), 1)
        if columns != self._columns:
            self._arrange(columns)

    def _arrange(self, columns: int) -> None:
        """Place legend, titles, plots and note in a grid of ``columns`` columns."""
        ci = self._widget.ci
        items: list[pg.GraphicsObject] = [self._legend, self._note]
        for key in self._plots:
            items += [self._titles[key], self._plots[key]]
        for item in items:
            if item in ci.items:
                ci.removeItem(item)
        layout = ci.layout
        ci.addItem(self._legend, row=0, col=0, colspan=columns)
        row = 1
        plot_rows: list[int] = []
        for index, key in enumerate(self._plots):
            col = index % columns
            # The last panel of a short row spans the row (the saturation panel in 2 columns).
            span = columns - col if index == len(self._plots) - 1 else 1
            ci.addItem(self._titles[key], row=row, col=col, colspan=span)
            ci.addItem(self._plots[key], row=row + 1, col=col, colspan=span)
            plot_rows.append(row + 1)
            if col + span == columns:
                row += 2
        ci.addItem(self._note, row=row, col=0, colspan=columns)
        # Set after the items are back: an emptied grid ignores factors of rows and columns it
        # does not have.
        for r in range(max(layout.rowCount(), 8)):
            layout.setRowStretchFactor(r, 1 if r in plot_rows else 0)
        # Give the two gradient panels more room than the saturation panel.
        stretch = {3: (3, 3, 2), 2: (1, 1, 0), 1: (1, 0, 0)}[columns]
        for col, factor in enumerate(stretch):
            layout.setColumnStretchFactor(col, factor)
        self._legend.most_columns = 6 if columns > 1 else 2
        self._legend.setColumnCount(self._legend.most_columns)
        self._columns = columns
        style.relayout(self._widget)
        # Re-adding items re-activates the top layout at its minimum size: give it the
        # viewport again (what pyqtgraph's resizeEvent does).
        self._widget.ci.setGeometry(self._widget.range)

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("GradientView", "Gradients")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        texts = {
            "jac": (
                translate("GradientView", "‖∂p/∂s‖<sub>F</sub> (w.r.t. scaled logits)"),
                "‖J‖<sub>F</sub>",
            ),
            "raw": (
                translate("GradientView", "‖∂p/∂S<sub>raw</sub>‖<sub>F</sub> = "
                          "c·‖J‖<sub>F</sub> (w.r.t. raw q·k)"),
                "c·‖J‖<sub>F</sub>",
            ),
            "saturated": (
                translate("GradientView", "Saturated rows"),
                translate("GradientView", "share with p<sub>max</sub> > 0.99"),
            ),
        }
        for key, (title, left) in texts.items():
            self._titles[key].setText(title)
            style.label_plot(self._plots[key], left=left)
        self._note_text = translate(
            "GradientView",
            "Lines: median over query rows; bands: 10–90 % of rows.<br>Measured against "
            "the raw q·k, the unscaled rule (c = 1) has the larger gradient at moderate "
            "d<sub>k</sub>; it collapses only once the softmax saturates "
            "(large d<sub>k</sub>).",
        )
        self._set_note()

    def show_results(self, results: ExplorerResults) -> None:
        snapshot = results.snapshot
        gradients = None if snapshot is None else snapshot.gradients
        if self._is_new("head", gradients):
            self._show_head(snapshot, gradients, results.config.rule)
        if not self._is_new("sweep", results.sweep_points):
            return
        self._groups = group_by_rule(results.sweep_points)
        plan = results.sweep_plan
        planned = plan.rules if plan is not None else ()
        self._ensure_items(style.ordered_rules({*self._groups, *planned}))
        if plan is not None:
            self.hold_x(list(self._plots.values()), [*plan.values, results.config.d_k])
        for rule in self._saturated:
            pts = self._groups.get(rule)
            if pts and not self._is_new(f"points {rule.value}", *pts):
                continue  # while a sweep streams, most pushes add one rule's point
            if not pts:
                self._forget(f"points {rule.value}")
                for key, _ in _QUANTITIES:
                    self._bands[key][rule].clear()
                self._saturated[rule].setData([], [])
                continue
            x = [float(p.value) for p in pts]
            for key, prefix in _QUANTITIES:
                self._bands[key][rule].set_data(
                    x,
                    [float(getattr(p, f"{prefix}_median")) for p in pts],
                    [float(getattr(p, f"{prefix}_q10")) for p in pts],
                    [float(getattr(p, f"{prefix}_q90")) for p in pts],
                )
            self._saturated[rule].setData(x, finite_or_nan([p.saturated_share for p in pts]))

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = [
            "rule", "d_k", "jac_fro_median", "jac_fro_q10", "jac_fro_q90",
            "jac_raw_median", "jac_raw_q10", "jac_raw_q90", "saturated_share", "samples",
        ]
        rows = sweep_rows(self._groups, header[2:-1])
        if not self._head_gradients:
            return header, rows
        # A real head: a "source" column tells the sweep's rows from the head's own.
        rows = [[*row, "sweep"] for row in rows]
        for rule, g in self._head_gradients.items():
            rows.append([
                rule.value, float(g.d_k),  # type: ignore[attr-defined]
                *(float(getattr(g, f"{prefix}_{q}")) for prefix in ("jac_fro", "jac_raw")
                  for q in ("median", "q10", "q90")),
                float(g.saturated_share), int(g.rows), "head",  # type: ignore[attr-defined]
            ])
        return [*header, "source"], rows

    def reset_view(self) -> None:
        super().reset_view()
        self._plots["saturated"].setYRange(0.0, 1.0, padding=0.05)

    # -- internals ----------------------------------------------------------------------------
    def plot(self, key: str) -> pg.PlotItem:
        """Return the ``"jac"``, ``"raw"`` or ``"saturated"`` plot."""
        return self._plots[key]

    def panel_title(self, key: str) -> str:
        """Return the title shown above the ``"jac"``, ``"raw"`` or ``"saturated"`` plot."""
        return str(self._titles[key].text)

    def median_curve(self, key: str, rule: ScalingRule) -> pg.PlotDataItem:
        """Return the median curve of ``rule`` in the ``"jac"`` or ``"raw"`` panel."""
        return self._bands[key][ScalingRule(rule)].median

    def band_curves(self, key: str, rule: ScalingRule) -> tuple[pg.PlotDataItem, pg.PlotDataItem]:
        """Return the (10 %, 90 %) quantile curves bounding ``rule``'s band."""
        band = self._bands[key][ScalingRule(rule)]
        return band.low, band.high

    def saturated_curve(self, rule: ScalingRule) -> pg.PlotDataItem:
        """Return the saturated-share curve of ``rule``."""
        return self._saturated[ScalingRule(rule)]

    def head_marks(self, key: str, rule: ScalingRule) -> tuple[pg.PlotDataItem, pg.PlotDataItem]:
        """Return the real head's (star, bar) of ``rule`` in panel ``key`` (for tests)."""
        mark = self._head_marks[key][ScalingRule(rule)]
        return mark.star, mark.bar

    def _set_note(self) -> None:
        text = self._note_text
        ref = self._head_ref
        if ref is not None:
            text += "<br>" + translate(
                "GradientView",
                "Stars: this head ({0}), median over its query rows; bars: 10–90 % of its "
                "rows.").format(head_label(ref))
        self._note.setText(text)

    def _show_head(self, snapshot: object, gradients: object, rule: ScalingRule) -> None:
        """Draw (or clear) the real head's own numbers: one star and bar per rule shown."""
        for marks in self._head_marks.values():
            for mark in marks.values():
                mark.clear()
        self._head_gradients = {}
        real = getattr(snapshot, "real_head", None)
        self._head_ref = None if real is None else real.ref
        if gradients is not None:
            wanted = list(dict.fromkeys((ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR,
                                         ScalingRule(rule))))
            for r in wanted:
                g = gradients[r]  # type: ignore[index]
                self._head_gradients[r] = g
                for key, prefix in _QUANTITIES:
                    mark = self._head_mark(key, r)
                    mark.set_data(float(g.d_k), getattr(g, f"{prefix}_median"),
                                  getattr(g, f"{prefix}_q10"), getattr(g, f"{prefix}_q90"))
                self._head_mark("saturated", r).set_data(float(g.d_k), g.saturated_share,
                                                         log_y=False)
        self._set_note()

    def _head_mark(self, key: str, rule: ScalingRule) -> _HeadMark:
        marks = self._head_marks[key]
        if rule not in marks:
            marks[rule] = _HeadMark(self._plots[key], rule)
        return marks[rule]

    def _ensure_items(self, rules: list[ScalingRule]) -> None:
        new = [rule for rule in rules if rule not in self._saturated]
        for rule in new:
            for key, _ in _QUANTITIES:
                self._bands[key][rule] = _Band(self._plots[key], rule)
            curve = style.rule_curve(rule)
            self._plots["saturated"].addItem(curve)
            self._saturated[rule] = curve
        # Only the rules of the current sweep are listed (others keep empty items).
        if self._is_new("legend", *rules):
            self._legend.clear()
            for rule in rules:
                self._legend.addItem(self._bands["jac"][rule].median, style.rule_name(rule))
