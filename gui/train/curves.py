"""Live training curves per rule: loss, held-out accuracy, gradient norm, attention entropy."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule
from engine.training.smoothing import trailing_mean
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import positive_or_nan
from gui.train.curve_grid import PanelGrid
from gui.train.curve_items import RuleCurves
from gui.train.curve_ranges import MANAGED_Y, SteppedYRanges
from gui.train.loss_display import LossDisplay
from gui.train.results import TrainResults
from gui.train.view import TrainView

__all__ = ["TrainCurvesView"]

#: The x range of the empty plots before the first run has a length (steps).
_DEFAULT_PLANNED_STEPS = 500


def _chance_line(below: bool) -> pg.InfiniteLine:
    """A dotted horizontal "chance" line, hidden until a run gives it a level.

    Its label sits at the right end, below the line (``below``: the loss, whose chance level
    is near the top of its plot, where a label above was cut) or above it (the accuracy, whose
    chance level 1/vocab is near the bottom).
    """
    anchor = (1, 0) if below else (1, 1)
    line = style.reference_line(1.5, Qt.PenStyle.DotLine, "", 0.97, anchor)  # text: retranslate_ui
    line.setVisible(False)
    return line


class TrainCurvesView(TrainView):
    """Four live panels against the training step, one colour per rule.

    Loss (log y): training loss of every step (solid) and held-out loss at every evaluation
    (dashed with markers), the chance level ln(vocab) dotted; held-out accuracy with chance
    1/vocab; global gradient norm (log y) of every step; mean attention entropy over heads.
    A diverged rule gets a cross on its loss curve and "diverged at step k".
    :attr:`loss_display` chooses how the training loss is drawn.
    """

    key = "train_curves"

    #: Panel names in layout order, with log-y.
    PANELS = (("loss", True), ("accuracy", False), ("grad_norm", True), ("entropy", False))

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loss_display = LossDisplay()
        self._layout.insertWidget(0, self.loss_display)
        self._legend = style.make_legend(col_count=7)
        self._plots: dict[str, pg.PlotItem] = {}
        for name, log_y in self.PANELS:
            plot = pg.PlotItem(axisItems=style.log_axis_items())
            style.style_plot(plot)  # titles and labels: retranslate_ui
            style.set_log_mode(plot, x=False, y=log_y)
            # Long runs: draw only what is visible, peak-downsampled to the pixel width.
            plot.setClipToView(True)
            plot.setDownsampling(auto=True, mode="peak")
            # The left axis keeps its width while a run's loss falls through the decades: a
            # width change re-lays out the plot and repaints its column outside the
            # controller's timed paint. Room for a wide tick label is reserved up front (wider
            # than "1e-07" of the log plots); the axis may grow but never shrinks.
            axis = plot.getAxis("left")
            reserve = QFontMetrics(axis.font()).horizontalAdvance("-0.0001")
            axis.textWidth = max(axis.textWidth, reserve)
            axis._updateWidth()
            if self._plots:
                plot.setXLink(self._plots["loss"])
            self._plots[name] = plot
        self._plots["accuracy"].setYRange(0.0, 1.0, padding=0.03)
        self._plots["accuracy"].enableAutoRange(y=False)
        self._y_ranges = SteppedYRanges({name: self._plots[name] for name in MANAGED_Y})
        self._chance_loss, self._chance_acc = _chance_line(below=True), _chance_line(below=False)
        self._plots["loss"].addItem(self._chance_loss, ignoreBounds=True)
        self._plots["accuracy"].addItem(self._chance_acc, ignoreBounds=True)
        self._grid = PanelGrid(self, self._widget, self._legend, list(self._plots.values()),
                               self._note)
        self._rules: dict[ScalingRule, RuleCurves] = {}
        self._train_sample = pg.PlotDataItem(pen=pg.mkPen(style.THEORY_COLOR, width=1.5))
        self._eval_sample = pg.PlotDataItem(
            pen=style.theory_pen(1.5, Qt.PenStyle.DashLine),
            symbol="o", symbolSize=5, symbolBrush=style.THEORY_COLOR, symbolPen=None)
        self._results = TrainResults()
        self._x_total = -1
        self._planned_steps = _DEFAULT_PLANNED_STEPS
        self.loss_display.changed.connect(self._on_loss_display_changed)
        self.retranslate_ui()
        self.clear()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("TrainCurvesView", "Training curves")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        # Short titles: the stacked panels of a narrow window are as wide as the longest.
        labels = {
            "loss": (translate("TrainCurvesView", "Loss"),
                     translate("TrainCurvesView", "cross-entropy (nats)")),
            "accuracy": (translate("TrainCurvesView", "Held-out accuracy"),
                         translate("TrainCurvesView", "accuracy")),
            "grad_norm": (translate("TrainCurvesView", "Global gradient norm"), "‖∇<sub>θ</sub>L‖"),
            "entropy": (translate("TrainCurvesView", "Mean attention entropy"),
                        translate("TrainCurvesView", "H (nats)")),
        }
        step = translate("TrainCurvesView", "step")
        for name, (title, left) in labels.items():
            style.label_plot(self._plots[name], title=title, left=left, bottom=step)
        for line in (self._chance_loss, self._chance_acc):
            style.set_line_label(line, translate("TrainCurvesView", "chance"))
        self.loss_display.retranslate_ui()

    def show_results(self, results: TrainResults) -> None:
        """Show the latest training snapshot and gradient record (cheap ``setData`` only)."""
        snap = results.snapshot
        if not self._is_new("train", snap):
            return
        self._results = results
        if snap is None:
            self._clear_items()
            return
        self._ensure_items(list(snap.rules))
        for rule, items in self._rules.items():
            if rule not in snap.rules:
                items.clear()
        training_losses = self._shown_training_losses()  # as drawn: the y ranges fit these
        for index, (rule, st) in enumerate(snap.rules.items()):
            items = self._rules[rule]
            items.show(st, training_losses[index], bool(snap.done))
            items.show_divergence(st, index, self._loss_coordinate)
        total = int(snap.total_steps)
        if total != self._x_total:
            self._x_total = total
            self._plots["loss"].setXRange(0, total, padding=0.02)
        self._chance_loss.setValue(self._loss_coordinate(float(snap.chance_loss)))
        self._chance_acc.setValue(1.0 / snap.config.vocab)
        for line in (self._chance_loss, self._chance_acc):
            line.setVisible(True)
        self._note.setText(self._note_text(snap))
        self._y_ranges.fit(snap, training_losses)
        # Auto-range now rather than in the paint: a range set while painting schedules a
        # second full repaint of all four plots.
        self._widget.scene().prepareForPaint()

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "series", "step", "value"]
        rows: list[list[float | str]] = []
        snap = self._results.snapshot
        if snap is None:
            return header, rows
        # Every series is the snapshot's own record (every step, or every evaluation), never
        # the snapshots that happened to arrive: the table must not depend on the machine's load.
        for rule, st in snap.rules.items():
            steps = np.arange(1, st.loss_history.size + 1)
            series = [
                ("train_loss", steps, st.loss_history),
                ("eval_loss", st.eval_steps, st.eval_loss_history),
                ("eval_accuracy", st.eval_steps, st.eval_accuracy_history),
                ("entropy_mean", st.eval_steps,
                 np.asarray(st.entropy_history).mean(axis=1) if len(st.eval_steps) else ()),
                ("grad_norm", steps, st.grad_norm_history),
            ]
            for name, xs, ys in series:
                for x, y in zip(xs, ys, strict=False):
                    rows.append([rule.value, name, int(x), float(y)])
        return header, rows

    def reset_view(self) -> None:
        for name, plot in self._plots.items():
            plot.enableAutoRange()
            if name == "accuracy":
                plot.setYRange(0.0, 1.0, padding=0.03)
        self._y_ranges.reset()
        if self._x_total > 0:
            self._plots["loss"].setXRange(0, self._x_total, padding=0.02)
        if self._results.snapshot is not None:
            self._y_ranges.fit(self._results.snapshot, self._shown_training_losses())

    def clear(self) -> None:
        """Remove every curve's data (Reset)."""
        self._forget()
        self._results = TrainResults()
        self._x_total = -1
        self._clear_items()
        self._show_empty_axes()

    # -- reflow -------------------------------------------------------------------------------
    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt override
        """Stack the panels in one column when two would be squeezed or cut off."""
        super().resizeEvent(event)
        self._grid.reflow()

    def showEvent(self, event: QShowEvent) -> None:  # Qt override
        """Follow the width of the scroll area around the view (see :class:`PanelGrid`)."""
        super().showEvent(event)
        self._grid.follow_scroll_area()

    def fit_to_width(self, width: int) -> None:
        """The panel grid follows the width itself (two columns or stacked, and the legend)."""
        del width
        self._grid.reflow()

    # -- what the user sees -------------------------------------------------------------------
    def set_planned_steps(self, steps: int) -> None:
        """The length of the next run: the step axis of the empty plots spans it."""
        self._planned_steps = max(int(steps), 1)
        if self._results.snapshot is None:
            self._show_empty_axes()

    def legend_is_shown(self) -> bool:
        """Whether the legend is on screen (hidden while there is nothing to name)."""
        return self._legend.isVisible()

    def plot(self, name: str) -> pg.PlotItem:
        """The plot ``loss``, ``accuracy``, ``grad_norm`` or ``entropy``."""
        return self._plots[name]

    def rule_curves(self, rule: ScalingRule | str) -> RuleCurves:
        """The curves and divergence mark of ``rule``."""
        return self._rules[ScalingRule(rule)]

    def chance_loss_line(self) -> pg.InfiniteLine:
        """The horizontal "chance" line of the loss plot, in the axis' own units."""
        return self._chance_loss

    # -- internals ----------------------------------------------------------------------------
    def _shown_training_losses(self) -> list[np.ndarray]:
        """Every rule's training loss as drawn: per step or its trailing mean."""
        window = self.loss_display.smoothing()
        shown = []
        for st in self._results.snapshot.rules.values():
            history = st.loss_history
            values = trailing_mean(positive_or_nan(history), window) if window > 1 else history
            shown.append(positive_or_nan(values))
        return shown

    def _loss_coordinate(self, loss: float) -> float:
        """Where ``loss`` sits on the loss plot's y axis (log10 on a log axis)."""
        return math.log10(loss) if self.loss_display.log_y() else loss

    def _on_loss_display_changed(self) -> None:
        log_y = self.loss_display.log_y()
        if log_y != self._plots["loss"].getAxis("left").logMode:
            style.set_log_mode(self._plots["loss"], x=False, y=log_y)
            self._y_ranges.set_log_y("loss", log_y)
        results = self._results
        self._forget()  # the legend too: its training-loss entry names the smoothing
        if results.snapshot is None:
            self._show_empty_axes()
        else:
            self.show_results(results)

    def _show_empty_axes(self) -> None:
        """Before a run: the planned steps across, a decade or two up (not 0…1 on every axis)."""
        self._plots["loss"].setXRange(0, self._planned_steps, padding=0.02)
        # Log axes: 0.1…10 nats holds ln(vocab) of any task here and shows labelled decades.
        empty_y = {"loss": (-1.0, 1.0) if self.loss_display.log_y() else (0.0, 5.0),
                   "grad_norm": (-2.0, 1.0), "entropy": (0.0, 3.0)}
        for name, (low, high) in empty_y.items():
            self._plots[name].setYRange(low, high, padding=0.02)
        self._y_ranges.reset()

    def _clear_items(self) -> None:
        self._legend.setVisible(False)
        for items in self._rules.values():
            items.clear()
        self._chance_loss.setVisible(False)
        self._chance_acc.setVisible(False)
        self._note.setText(translate(
            "TrainCurvesView", "Press Start (Ctrl+T) to train the selected rules side by side: "
            "same initial weights, same batches."))

    def _note_text(self, snap: Any) -> str:
        parts = []
        for rule, st in snap.rules.items():
            if st.diverged:
                parts.append(translate("TrainCurvesView", "{0}: diverged at step {1}").format(
                    style.rule_name(rule), st.diverged_at))
            else:
                parts.append(translate(
                    "TrainCurvesView", "{0}: held-out loss {1:.3g}, accuracy {2:.2f}").format(
                    style.rule_name(rule), st.eval_loss, st.eval_accuracy))
        head = translate("TrainCurvesView", "Step {0} of {1}, chance loss ln {2} = {3:.3g}.")
        head = head.format(snap.step, snap.total_steps, snap.config.vocab, snap.chance_loss)
        return head + " " + "; ".join(parts)

    def _ensure_items(self, rules: list[ScalingRule]) -> None:
        for rule in rules:
            if rule not in self._rules:
                self._rules[rule] = RuleCurves(self._plots, rule)
        self._legend.setVisible(True)
        ordered = style.ordered_rules(rules)
        if not self._is_new("legend", *ordered):
            return
        self._legend.clear()
        for rule in ordered:
            self._legend.addItem(self._rules[rule].curves["accuracy"], style.rule_name(rule))
        training = translate("TrainCurvesView", "training loss")
        if self.loss_display.smoothing() > 1:
            training = translate("TrainCurvesView", "training loss, mean of {0} steps").format(
                self.loss_display.smoothing())
        self._legend.addItem(self._train_sample, training)
        self._legend.addItem(self._eval_sample, translate("TrainCurvesView", "held-out"))
        self._grid.fit_legend()
