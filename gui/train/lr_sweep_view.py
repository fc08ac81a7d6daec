"""Learning-rate sweep: final held-out loss against the learning rate, per rule."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule
from engine.training.lr_results import lr_sweep_table
from gui.kit import style
from gui.kit.i18n import translate
from gui.train.results import TrainResults
from gui.train.view import TrainView

__all__ = ["LrSweepView", "SweepItems"]


class SweepItems:
    """The plot items of one rule (built once, updated with setData).

    Attributes
    ----------
    runs
        A marker per finished run (learning rate, seed).
    mean, band, diverged, stable
        The summary: the mean over seeds, the band of their min…max, crosses where a seed
        diverged, and the ring on the largest stable learning rate.
    """

    def __init__(self, plot: pg.PlotItem, rule: ScalingRule) -> None:
        self.runs = style.rule_curve(rule, symbol_size=6, pen=None,
                                     symbolBrush=style.rule_brush(rule, 90))
        self.mean = style.rule_curve(rule, width=2.5, symbol_size=10,
                                     symbolBrush=style.rule_brush(rule))
        # The band follows two faint edge curves (log mode is applied to them by the plot).
        # They need a pen: a PlotDataItem without one never hands its data to the curve that
        # FillBetweenItem reads, and the min…max band would never be drawn.
        edge = pg.mkPen(style.rule_color(rule, 110), width=1)
        self.low = pg.PlotDataItem(pen=edge)
        self.high = pg.PlotDataItem(pen=edge)
        self.band = pg.FillBetweenItem(self.low, self.high, brush=style.rule_brush(rule, 50))
        self.diverged = pg.PlotDataItem(pen=None, symbol="x", symbolSize=14,
                                        symbolPen=style.rule_pen(rule, width=2.5))
        self.stable = pg.PlotDataItem(pen=None, symbol="o", symbolSize=22,
                                      symbolPen=style.rule_pen(rule, width=2.5),
                                      symbolBrush=pg.mkBrush(0, 0, 0, 0))
        self.stable_line = pg.InfiniteLine(
            angle=90, pen=style.rule_pen(rule, width=1.5, style=Qt.PenStyle.DotLine))
        self.stable_line.setVisible(False)
        # The band adds no extent of its own (its edges are in the plot); while empty its path
        # sits at the view origin, i.e. lr = 1 on the log axis, and stretched the x range there.
        plot.addItem(self.band, ignoreBounds=True)
        for item in (self.low, self.high, self.runs, self.mean, self.diverged, self.stable):
            plot.addItem(item)
        plot.addItem(self.stable_line, ignoreBounds=True)
        self.band.setZValue(-5)
        self.stable.setZValue(15)

    def clear(self) -> None:
        """Remove the runs and the summary."""
        self.runs.setData([], [])
        self.clear_summary()

    def clear_summary(self) -> None:
        """Remove what the finished sweep's result draws."""
        for item in (self.mean, self.low, self.high, self.diverged, self.stable):
            item.setData([], [])
        self.stable_line.setVisible(False)


class LrSweepView(TrainView):
    """Final held-out loss after the run against the learning rate (log-log), per rule.

    While the sweep runs, every finished (lr, seed) run appears as a small marker; when it is
    done, a line joins the mean over seeds, a band spans the seeds' min…max, crosses mark
    learning rates where a seed diverged, and a large ring plus a dotted vertical line mark the
    largest *stable* learning rate (no seed diverged and mean final loss below the dashed
    threshold, ``stable_ratio`` × the initial loss).
    """

    key = "train_lr_sweep"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._legend = style.make_legend(col_count=5)
        self._widget.addItem(self._legend, row=0, col=0)
        self._plot = self._widget.addPlot(row=1, col=0, axisItems=style.log_axis_items())
        style.style_plot(self._plot)  # title and labels: retranslate_ui
        style.set_log_mode(self._plot, x=True, y=True)
        self._threshold = style.reference_line(  # labelled by retranslate_ui
            1.5, Qt.PenStyle.DashLine, "", 0.03)
        self._threshold.setVisible(False)
        self._plot.addItem(self._threshold, ignoreBounds=True)
        self._widget.addItem(self._note, row=2, col=0)
        self._items: dict[ScalingRule, SweepItems] = {}
        self._sweep: Any = None
        self._stable_sample = pg.PlotDataItem(pen=None, symbol="o", symbolSize=14,
                                              symbolPen=pg.mkPen(style.THEORY_COLOR, width=2),
                                              symbolBrush=pg.mkBrush(0, 0, 0, 0))
        self._diverged_sample = pg.PlotDataItem(pen=None, symbol="x", symbolSize=12,
                                                symbolPen=pg.mkPen(style.THEORY_COLOR, width=2))
        self.retranslate_ui()
        self.clear()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("LrSweepView", "Learning-rate sweep")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        style.label_plot(
            self._plot,
            # Two lines: one would be wider than the view beside the Train panel and the tour.
            title=translate("LrSweepView", "Final held-out loss<br>against learning rate"),
            left=translate("LrSweepView", "final held-out loss (nats)"),
            bottom=translate("LrSweepView", "learning rate"))
        # Hidden until a sweep finishes.
        style.set_line_label(self._threshold, translate("LrSweepView", "stable threshold"))

    def show_results(self, results: TrainResults) -> None:
        """Show the sweep's finished runs, then its summary once the result arrives."""
        sweep = results.sweep
        if not self._is_new("sweep", sweep):
            return
        self._sweep = sweep
        if sweep is None:
            self._clear_items()
            return
        result = sweep.result
        self._ensure_items(list(result.config.rules) if result is not None
                           else list(dict.fromkeys(r.rule for r in sweep.runs)))
        for rule, items in self._items.items():
            runs = [r for r in sweep.runs if r.rule is rule]
            items.runs.setData([r.lr for r in runs], [r.final_loss for r in runs])
            rows = [] if result is None else [r for r in result.rows if r.rule is rule]
            if not rows:
                items.clear_summary()
                continue
            items.mean.setData([r.lr for r in rows], [r.final_loss_mean for r in rows])
            banded = [r for r in rows if math.isfinite(r.final_loss_min) and r.final_loss_min > 0]
            items.low.setData([r.lr for r in banded], [r.final_loss_min for r in banded])
            items.high.setData([r.lr for r in banded], [r.final_loss_max for r in banded])
            bad = [r for r in rows if r.diverged > 0]
            items.diverged.setData([r.lr for r in bad], [r.initial_loss_mean for r in bad])
            best = result.largest_stable_lr.get(rule)
            if best is None:
                items.stable.setData([], [])
                items.stable_line.setVisible(False)
            else:
                row = result.row(rule, best)
                items.stable.setData([best], [row.final_loss_mean])
                items.stable_line.setValue(math.log10(best))
                items.stable_line.setVisible(True)
        if result is not None:
            initial = np.nanmean([r.initial_loss_mean for r in result.rows])
            self._threshold.setValue(math.log10(result.stable_ratio * initial))
        self._threshold.setVisible(result is not None)
        self._note.setText(self._note_text(sweep))

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        sweep = self._sweep
        result = None if sweep is None else sweep.result
        if result is None:
            header = ["rule", "lr", "seed", "final_loss", "final_accuracy", "diverged_at"]
            runs = () if sweep is None else sweep.runs
            return header, [[r.rule.value, r.lr, r.seed, r.final_loss, r.final_accuracy,
                             "" if r.diverged_at is None else r.diverged_at] for r in runs]
        return lr_sweep_table(result)  # type: ignore[return-value]

    # -- helpers ------------------------------------------------------------------------------
    def clear(self) -> None:
        """Remove every point (Reset)."""
        self._forget()
        self._sweep = None
        self._clear_items()

    def plot(self) -> pg.PlotItem:
        """The plot."""
        return self._plot

    def sweep_items(self, rule: ScalingRule | str) -> SweepItems:
        """The runs and summary drawn for ``rule``."""
        return self._items[ScalingRule(rule)]

    def threshold_label(self) -> str:
        """The text shown on the dashed stable-threshold line ("" while the line is hidden)."""
        shown = self._threshold.isVisible()
        return self._threshold.label.textItem.toPlainText() if shown else ""

    def _clear_items(self) -> None:
        for items in self._items.values():
            items.clear()
        self._threshold.setVisible(False)
        self._note.setText(translate(
            "LrSweepView", "Run a learning-rate sweep (Ctrl+L) to see how far each rule's "
            "learning rate can be pushed."))

    def _note_text(self, sweep: Any) -> str:
        result = sweep.result
        if result is None:
            return translate("LrSweepView", "Sweep running: {0} of {1} runs done (learning rate "
                             "{2:g}, seed {3}).").format(sweep.done_runs, sweep.total_runs,
                                                         sweep.lr, sweep.seed)
        parts = []
        for rule in result.config.rules:
            best = result.largest_stable_lr.get(rule)
            parts.append(f"{style.rule_name(rule)}: " + (
                f"{best:g}" if best is not None else translate("LrSweepView", "no stable lr")))
        return translate(
            "LrSweepView",
            "Largest stable learning rate (d<sub>k</sub> = {0}, {1} seeds, {2} "
            "steps): {3}. Band: min…max over seeds; ×: a seed diverged.",
        ).format(result.config.d_k, len(result.seeds), result.config.steps, ", ".join(parts))

    def _ensure_items(self, rules: list[ScalingRule]) -> None:
        for rule in rules:
            if rule not in self._items:
                self._items[rule] = SweepItems(self._plot, rule)
        ordered = style.ordered_rules(rules)
        if self._is_new("legend", *ordered):
            self._legend.clear()
            for rule in ordered:
                self._legend.addItem(self._items[rule].mean, style.rule_name(rule))
            self._legend.addItem(self._stable_sample, translate("LrSweepView", "largest stable lr"))
            self._legend.addItem(self._diverged_sample, translate("LrSweepView", "diverged"))
