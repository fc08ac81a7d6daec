"""Live training curves per rule: loss, held-out accuracy, gradient norm, attention entropy."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QComboBox, QLabel, QScrollArea, QWidget

from engine.config import ScalingRule
from engine.training.smoothing import trailing_mean
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.wrapping_tabs import FlowLayout
from gui.train.curve_ranges import (
    MANAGED_Y,
    SteppedYRanges,
    divergence_y,
    finite_array,
    positive_array,
)
from gui.train.results import TrainResults
from gui.train.view import TrainView

__all__ = ["LOSS_SMOOTHING_STEPS", "TrainCurvesView"]

_CTX = "TrainCurvesView"

#: Steps the smoothed training loss averages over: enough to calm a batch of 64's noise, few
#: enough to follow the fall of a 500-step run.
LOSS_SMOOTHING_STEPS = 50
#: The x range of the empty plots before the first run has a length (steps).
_DEFAULT_PLANNED_STEPS = 500


class TrainCurvesView(TrainView):
    """Four live panels against the training step, one colour per rule.

    Loss (log y): training loss of every step (solid) and held-out loss at every evaluation
    (dashed with markers), the chance level ln(vocab) dotted; held-out accuracy with chance
    1/vocab; global gradient norm (log y) as recorded at every snapshot; mean attention
    entropy over heads. A diverged rule gets a cross on its loss curve and "diverged at step k".
    """

    key = "train_curves"

    #: Panel names in layout order, with log-y.
    PANELS: tuple[tuple[str, bool], ...] = (
        ("loss", True),
        ("accuracy", False),
        ("grad_norm", True),
        ("entropy", False),
    )
    #: Width (px) from which the panels stand two by two; narrower, they stack. It lies above
    #: the two-column layout's minimum, so the choice cannot flip as a scroll area resizes it.
    TWO_COLUMNS_FROM = 560
    #: Least height (px) of a stacked panel, its title and axis included.
    STACKED_PLOT_HEIGHT = 200

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        controls_row = QWidget()
        policy = controls_row.sizePolicy()
        policy.setHeightForWidth(True)
        controls_row.setSizePolicy(policy)
        controls = FlowLayout(controls_row, spacing=6)
        controls.setContentsMargins(6, 2, 6, 0)
        self._smoothing_label = QLabel()
        self._smoothing = QComboBox()
        self._smoothing.addItem("", 1)
        self._smoothing.addItem("", LOSS_SMOOTHING_STEPS)
        self._loss_axis_label = QLabel()
        self._loss_axis = QComboBox()
        self._loss_axis.addItem("", True)
        self._loss_axis.addItem("", False)
        for widget in (self._smoothing_label, self._smoothing,
                       self._loss_axis_label, self._loss_axis):
            controls.addWidget(widget)
        self._layout.addWidget(controls_row)
        self._widget = style.make_layout_widget()
        self._layout.addWidget(self._widget, 1)
        self._legend = style.make_legend(col_count=7)
        self._plots: dict[str, pg.PlotItem] = {}
        first: pg.PlotItem | None = None
        for name, log_y in self.PANELS:
            plot = pg.PlotItem(axisItems=style.log_axis_items())
            style.style_plot(plot)  # titles and labels: retranslate_ui
            style.set_log_mode(plot, x=False, y=log_y)
            # Long runs: draw only what is visible, peak-downsampled to the pixel width.
            plot.setClipToView(True)
            plot.setDownsampling(auto=True, mode="peak")
            # The left axis keeps its width while a run's loss falls through the decades: a
            # width change re-lays out the plot and repaints its column later, outside the
            # controller's timed paint, as a long unplanned stall. Room for a wide tick label is
            # reserved up front (wider than "1e-07" of the log plots) and the axis may grow but
            # never shrink.
            axis = plot.getAxis("left")
            axis.setStyle(autoReduceTextSpace=False)
            reserve = QFontMetrics(axis.font()).horizontalAdvance("-0.0001")
            axis.textWidth = max(axis.textWidth, reserve)
            axis._updateWidth()
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            self._plots[name] = plot
        self._plots["accuracy"].setYRange(0.0, 1.0, padding=0.03)
        self._plots["accuracy"].enableAutoRange(y=False)
        # The other y ranges move in coarse steps (see SteppedYRanges).
        self._y_ranges = SteppedYRanges({name: self._plots[name] for name in MANAGED_Y})
        chance_pen = pg.mkPen(style.THEORY_COLOR, width=1.5, style=Qt.PenStyle.DotLine)
        self._chance_loss = pg.InfiniteLine(
            angle=0,
            pen=chance_pen,
            label="",  # set by retranslate_ui
            labelOpts={"position": 0.97, "color": style.THEORY_COLOR, "anchors": [(1, 1), (1, 1)]},
        )
        self._chance_acc = pg.InfiniteLine(
            angle=0,
            pen=chance_pen,
            label="",  # set by retranslate_ui
            labelOpts={"position": 0.97, "color": style.THEORY_COLOR, "anchors": [(1, 1), (1, 1)]},
        )
        for line, name in ((self._chance_loss, "loss"), (self._chance_acc, "accuracy")):
            line.setVisible(False)
            self._plots[name].addItem(line, ignoreBounds=True)
        self._note = style.make_label()
        self._columns = 0
        self._watched_area: QScrollArea | None = None
        self._arrange(2)
        self._curves: dict[tuple[str, ScalingRule], pg.PlotDataItem] = {}
        self._markers: dict[ScalingRule, tuple[pg.PlotDataItem, pg.TextItem]] = {}
        self._legend_rules: list[ScalingRule] | None = None
        self._train_sample = pg.PlotDataItem(pen=pg.mkPen(style.THEORY_COLOR, width=1.5))
        self._eval_sample = pg.PlotDataItem(
            pen=pg.mkPen(style.THEORY_COLOR, width=1.5, style=Qt.PenStyle.DashLine),
            symbol="o",
            symbolSize=5,
            symbolBrush=style.THEORY_COLOR,
            symbolPen=None,
        )
        self._results = TrainResults()
        self._x_total = -1
        self._planned_steps = _DEFAULT_PLANNED_STEPS
        self._smoothing.currentIndexChanged.connect(self._on_loss_display_changed)
        self._loss_axis.currentIndexChanged.connect(self._on_loss_display_changed)
        self.retranslate_ui()
        self.clear()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("TrainCurvesView", "Training curves")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        labels = {
            "loss": (
                translate("TrainCurvesView", "Loss"),
                translate("TrainCurvesView", "cross-entropy (nats)"),
            ),
            "accuracy": (
                translate("TrainCurvesView", "Held-out accuracy"),
                translate("TrainCurvesView", "accuracy"),
            ),
            "grad_norm": (translate("TrainCurvesView", "Global gradient norm"), "‖∇<sub>θ</sub>L‖"),
            "entropy": (
                # Short titles: the stacked panels of a narrow window are as wide as the longest.
                translate("TrainCurvesView", "Mean attention entropy"),
                translate("TrainCurvesView", "H (nats)"),
            ),
        }
        step = translate("TrainCurvesView", "step")
        for name, (title, left) in labels.items():
            style.label_plot(self._plots[name], title=title, left=left, bottom=step)
        for line in (self._chance_loss, self._chance_acc):
            line.label.setFormat(translate("TrainCurvesView", "chance"))
        self._smoothing_label.setText(translate("TrainCurvesView", "Training loss:"))
        self._smoothing.setItemText(0, translate("TrainCurvesView", "every step"))
        self._smoothing.setItemText(1, translate(
            "TrainCurvesView", "mean of the last {0} steps").format(LOSS_SMOOTHING_STEPS))
        self._smoothing.setToolTip(translate(
            "TrainCurvesView",
            "The loss of one batch jumps by orders of magnitude from step to step; its trailing "
            "mean shows the trend next to the held-out loss. The CSV keeps every step."))
        self._loss_axis_label.setText(translate("TrainCurvesView", "Loss axis:"))
        self._loss_axis.setItemText(0, translate("TrainCurvesView", "log"))
        self._loss_axis.setItemText(1, translate("TrainCurvesView", "linear"))
        self._loss_axis.setToolTip(translate(
            "TrainCurvesView",
            "Log shows the late, small losses; linear shows the early fall as it is."))
        self._legend_rules = None  # the next show_results relabels the legend

    def export_item(self) -> pg.GraphicsLayoutWidget:
        return self._widget

    def show_results(self, results: TrainResults) -> None:
        """Show the latest training snapshot and gradient record (cheap ``setData`` only)."""
        snap = results.snapshot
        if not self._is_new("train", snap, results.grad_steps):
            return
        self._results = results
        if snap is None:
            self._clear_items()
            return
        rules = list(snap.rules)
        self._ensure_items(rules)
        for rule, curve in self._curves.items():
            if rule[1] not in snap.rules:
                curve.setData([], [])
        for rule, (marker, text) in self._markers.items():
            if rule not in snap.rules:
                marker.setData([], [])
                text.setVisible(False)
        training_losses = []  # as drawn: the y ranges fit these
        for index, (rule, st) in enumerate(snap.rules.items()):
            steps = np.arange(1, st.loss_history.size + 1)
            eval_steps = np.asarray(st.eval_steps, dtype=np.float64)
            curves = self._curves
            training_losses.append(self._shown_training_loss(st.loss_history))
            curves[("train_loss", rule)].setData(steps, training_losses[-1])
            curves[("eval_loss", rule)].setData(eval_steps, positive_array(st.eval_loss_history))
            curves[("accuracy", rule)].setData(eval_steps, finite_array(st.eval_accuracy_history))
            entropy = np.asarray(st.entropy_history, dtype=np.float64)
            mean_h = entropy.mean(axis=1) if entropy.size else np.zeros(0)
            self._curves[("entropy", rule)].setData(eval_steps[: mean_h.size], finite_array(mean_h))
            # Markers only while they stay apart, and not while training runs: scatter
            # symbols cost as much as all the lines together in every 30 Hz repaint.
            marked = bool(snap.done) and eval_steps.size <= style.MARKER_MAX_POINTS
            for series in ("eval_loss",):
                curve = self._curves[(series, rule)]
                if (curve.opts["symbol"] is not None) != marked:
                    curve.setSymbol(style.rule_symbol(rule) if marked else None)
            grads = results.grad_norms.get(rule)
            if grads is not None and len(grads) == len(results.grad_steps):
                self._curves[("grad_norm", rule)].setData(results.grad_steps, positive_array(grads))
            else:
                self._curves[("grad_norm", rule)].setData([], [])
            self._show_divergence(rule, st, index)
        total = int(snap.total_steps)
        if total != self._x_total:
            self._x_total = total
            self._plots["loss"].setXRange(0, total, padding=0.02)
        self._chance_loss.setValue(self._loss_coordinate(float(snap.chance_loss)))
        self._chance_loss.setVisible(True)
        self._chance_acc.setValue(1.0 / snap.config.vocab)
        self._chance_acc.setVisible(True)
        self._note.setText(self._note_text(snap))
        self._y_ranges.fit(snap, results, training_losses)
        # Auto-range now rather than in the paint: a range set while painting schedules a
        # second full repaint of all four plots.
        self._widget.scene().prepareForPaint()

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "series", "step", "value"]
        rows: list[list[float | str]] = []
        snap = self._results.snapshot
        if snap is None:
            return header, rows
        for rule, st in snap.rules.items():
            series = [
                ("train_loss", np.arange(1, st.loss_history.size + 1), st.loss_history),
                ("eval_loss", st.eval_steps, st.eval_loss_history),
                ("eval_accuracy", st.eval_steps, st.eval_accuracy_history),
                (
                    "entropy_mean",
                    st.eval_steps,
                    np.asarray(st.entropy_history).mean(axis=1) if len(st.eval_steps) else (),
                ),
                ("grad_norm", self._results.grad_steps, self._results.grad_norms.get(rule, ())),
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
            snap = self._results.snapshot
            self._y_ranges.fit(snap, self._results, [self._shown_training_loss(st.loss_history)
                                                     for st in snap.rules.values()])

    # -- reflow -------------------------------------------------------------------------------
    def columns(self) -> int:
        """How many columns the four panels stand in now (2, or 1 in a narrow window)."""
        return self._columns

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt override
        """Stack the panels in one column when two would be squeezed or cut off."""
        super().resizeEvent(event)
        self._reflow()

    def showEvent(self, event: QShowEvent) -> None:  # Qt override
        """Follow the width of the scroll area around the view (see :meth:`_available_width`)."""
        super().showEvent(event)
        area = self._scroll_area()
        if area is not None and area is not self._watched_area:
            self._watched_area = area
            area.viewport().installEventFilter(self)
        self._reflow()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """Re-flow when the scroll area's viewport changes width."""
        if event.type() == QEvent.Type.Resize and self.isVisible():
            self._reflow()
        return False

    def _scroll_area(self) -> QScrollArea | None:
        parent = self.parentWidget()
        while parent is not None and not isinstance(parent, QScrollArea):
            parent = parent.parentWidget()
        return parent

    def _available_width(self) -> int:
        """The width the window gives the view: its scroll area's viewport, not the view's own
        width, which never falls below the minimum of the current arrangement (two columns
        and a seven-column legend would otherwise keep themselves too wide for good)."""
        area = self._watched_area
        if area is None:
            return self.width()
        return area.viewport().width() - 2 * self._layout.contentsMargins().left()

    def _reflow(self) -> None:
        width = self._available_width()
        columns = 2 if width >= self.TWO_COLUMNS_FROM else 1
        if columns != self._columns:
            self._arrange(columns)
        else:
            self._fit_legend()

    def _fit_legend(self) -> None:
        """As many legend columns as fit the width (one entry per row in a narrow window)."""
        room = self._available_width() - 40  # the layout's margins and the view's frame
        for count in range(7, 0, -1):
            self._legend.setColumnCount(count)
            if self._legend.layout.minimumWidth() <= room:
                break

    def _arrange(self, columns: int) -> None:
        ci = self._widget.ci
        for item in [self._legend, self._note, *self._plots.values()]:
            if item in ci.items:
                ci.removeItem(item)
        ci.addItem(self._legend, row=0, col=0, colspan=columns)
        for index, plot in enumerate(self._plots.values()):
            row, col = divmod(index, columns)
            ci.addItem(plot, row=1 + row, col=col)
            # Stacked, the panels keep a readable height and the page scrolls instead.
            plot.setMinimumHeight(self.STACKED_PLOT_HEIGHT if columns == 1 else 0)
        plot_rows = range(1, 1 + len(self._plots) // columns)
        ci.addItem(self._note, row=1 + len(plot_rows), col=0, colspan=columns)
        for row in range(max(ci.layout.rowCount(), 8)):
            ci.layout.setRowStretchFactor(row, 1 if row in plot_rows else 0)
        for col in range(2):
            ci.layout.setColumnStretchFactor(col, 1 if col < columns else 0)
        self._columns = columns
        self._fit_legend()
        style.relayout(self._widget)
        # Re-adding items re-activates the top layout at its minimum size: give it the
        # viewport again (what pyqtgraph's resizeEvent does).
        ci.setGeometry(self._widget.range)

    # -- loss display -------------------------------------------------------------------------
    def loss_smoothing(self) -> int:
        """Steps the training-loss curve averages over (1: every step as recorded)."""
        return int(self._smoothing.currentData())

    def set_loss_smoothing(self, steps: int) -> None:
        """Show the training loss per step (``1``) or averaged (:data:`LOSS_SMOOTHING_STEPS`)."""
        index = self._smoothing.findData(int(steps))
        if index < 0:
            raise ValueError(f"smoothing must be 1 or {LOSS_SMOOTHING_STEPS} steps, got {steps}")
        self._smoothing.setCurrentIndex(index)

    def loss_axis_is_log(self) -> bool:
        """Whether the loss plot's y axis is logarithmic (the default)."""
        return bool(self._loss_axis.currentData())

    def set_loss_axis_log(self, log_y: bool) -> None:
        """Make the loss plot's y axis logarithmic or linear."""
        self._loss_axis.setCurrentIndex(0 if log_y else 1)

    def set_planned_steps(self, steps: int) -> None:
        """The length of the next run: the step axis of the empty plots spans it."""
        self._planned_steps = max(int(steps), 1)
        if self._results.snapshot is None:
            self._show_empty_axes()

    # -- public helpers (tests) ----------------------------------------------------------------
    def clear(self) -> None:
        """Remove every curve's data (Reset)."""
        self._forget()
        self._results = TrainResults()
        self._x_total = -1
        self._clear_items()
        self._y_ranges.reset()
        self._show_empty_axes()

    def legend_is_shown(self) -> bool:
        """Whether the legend is on screen (hidden while there is nothing to name)."""
        return self._legend.isVisible()

    def plot(self, name: str) -> pg.PlotItem:
        """The plot ``loss``, ``accuracy``, ``grad_norm`` or ``entropy``."""
        return self._plots[name]

    def curve(self, series: str, rule: ScalingRule | str) -> pg.PlotDataItem:
        """The curve of ``series`` (``train_loss``, ``eval_loss``, ``accuracy``, ``grad_norm``,
        ``entropy``) for ``rule``."""
        return self._curves[(series, ScalingRule(rule))]

    def divergence_text(self, rule: ScalingRule | str) -> str:
        """The visible divergence label of ``rule`` ("" when none is shown)."""
        item = self._markers.get(ScalingRule(rule))
        if item is None or not item[1].isVisible():
            return ""
        return item[1].toPlainText()

    def divergence_marker(self, rule: ScalingRule | str) -> pg.PlotDataItem:
        """The marker of ``rule``'s divergence on the loss plot."""
        return self._markers[ScalingRule(rule)][0]

    def chance_loss_line(self) -> pg.InfiniteLine:
        """The horizontal "chance" line of the loss plot, in the axis' own units."""
        return self._chance_loss

    def legend_labels(self) -> list[str]:
        """The legend's labels in order."""
        return [label.text for _sample, label in self._legend.items]

    # -- internals ----------------------------------------------------------------------------
    def _shown_training_loss(self, history: np.ndarray) -> np.ndarray:
        window = self.loss_smoothing()
        values = trailing_mean(positive_array(history), window) if window > 1 else history
        return positive_array(values)

    def _loss_coordinate(self, loss: float) -> float:
        """Where ``loss`` sits on the loss plot's y axis (log10 on a log axis)."""
        return math.log10(loss) if self.loss_axis_is_log() else loss

    def _on_loss_display_changed(self) -> None:
        log_y = self.loss_axis_is_log()
        if log_y != self._plots["loss"].getAxis("left").logMode:
            style.set_log_mode(self._plots["loss"], x=False, y=log_y)
            self._y_ranges.set_log_y("loss", log_y)
        results = self._results
        self._forget()
        self._legend_rules = None  # the training-loss entry names the smoothing
        if results.snapshot is None:
            self._show_empty_axes()
        else:
            self.show_results(results)

    def _show_empty_axes(self) -> None:
        """Before a run: the planned steps across, a decade or two up (not 0…1 on every axis)."""
        self._plots["loss"].setXRange(0, self._planned_steps, padding=0.02)
        # Log axes: 0.1…10 nats holds ln(vocab) of any task here and shows labelled decades.
        empty_y = {"loss": (-1.0, 1.0) if self.loss_axis_is_log() else (0.0, 5.0),
                   "grad_norm": (-2.0, 1.0), "entropy": (0.0, 3.0)}
        for name, (low, high) in empty_y.items():
            self._plots[name].setYRange(low, high, padding=0.02)
        self._y_ranges.reset()

    def _clear_items(self) -> None:
        self._legend.setVisible(False)
        for curve in self._curves.values():
            curve.setData([], [])
        for marker, text in self._markers.values():
            marker.setData([], [])
            text.setVisible(False)
        self._chance_loss.setVisible(False)
        self._chance_acc.setVisible(False)
        self._note.setText(
            translate(
                "TrainCurvesView",
                "Press Start (Ctrl+T) to train the selected rules side by "
                "side: same initial weights, same batches.",
            )
        )

    def _note_text(self, snap: object) -> str:
        parts = []
        for rule, st in snap.rules.items():  # type: ignore[attr-defined]
            if st.diverged:
                parts.append(
                    translate("TrainCurvesView", "{0}: diverged at step {1}").format(
                        style.rule_name(rule), st.diverged_at
                    )
                )
            else:
                parts.append(
                    translate(
                        "TrainCurvesView", "{0}: held-out loss {1:.3g}, accuracy {2:.2f}"
                    ).format(style.rule_name(rule), st.eval_loss, st.eval_accuracy)
                )
        head = translate(
            "TrainCurvesView", "Step {0} of {1}, chance loss ln {2} = {3:.3g}."
        ).format(snap.step, snap.total_steps, snap.config.vocab, snap.chance_loss)  # type: ignore[attr-defined]
        return head + " " + "; ".join(parts)

    def _show_divergence(self, rule: ScalingRule, st: object, index: int) -> None:
        marker, text = self._markers[rule]
        if st.diverged_at is None:  # type: ignore[attr-defined]
            if text.isVisible():
                marker.setData([], [])
                text.setVisible(False)
            return
        k = int(st.diverged_at)  # type: ignore[attr-defined]
        y = divergence_y(st)
        marker.setData([max(k, 0)], [y])
        text.setText(translate("TrainCurvesView", "diverged at step {0}").format(k))
        # On a log-y plot, items other than PlotDataItems are placed in log10 coordinates.
        text.setPos(max(k, 0), self._loss_coordinate(y))
        # Stack the labels of rules that diverge at nearly the same place.
        text.setAnchor((0.0, 1.0 + 1.15 * index))
        text.setVisible(True)

    def _ensure_items(self, rules: list[ScalingRule]) -> None:
        for rule in rules:
            if ("train_loss", rule) in self._curves:
                continue
            pen = style.rule_pen(rule, width=1.5)
            dashed = style.rule_pen(rule, width=1.5, style=Qt.PenStyle.DashLine)
            symbol = {
                "symbol": style.rule_symbol(rule),
                "symbolSize": 6,
                "symbolPen": style.rule_pen(rule, width=1),
                "symbolBrush": style.rule_brush(rule, 200),
            }
            # One point per step: aliased 1 px pens (an antialiased wider pen goes through
            # Qt's general stroker, several ms per repaint and curve: style.DENSE_CURVE).
            thin = style.rule_pen(rule, width=1)
            specs = {
                "train_loss": ("loss", {"pen": thin, **style.DENSE_CURVE}),
                "eval_loss": ("loss", {"pen": dashed, **symbol}),
                "accuracy": ("accuracy", {"pen": pen}),
                "grad_norm": ("grad_norm", {"pen": thin, **style.DENSE_CURVE}),
                "entropy": ("entropy", {"pen": pen}),
            }
            for series, (plot, options) in specs.items():
                curve = pg.PlotDataItem(connect="finite", **options)
                self._plots[plot].addItem(curve)
                self._curves[(series, rule)] = curve
            marker = pg.PlotDataItem(
                pen=None,
                symbol="x",
                symbolSize=18,
                symbolPen=style.rule_pen(rule, width=3),
                symbolBrush=style.rule_brush(rule),
            )
            marker.setZValue(20)
            self._plots["loss"].addItem(marker)
            text = style.make_text_item(anchor=(0.0, 1.0))
            text.setColor(style.rule_color(rule))
            text.setZValue(21)
            text.setVisible(False)
            self._plots["loss"].addItem(text, ignoreBounds=True)
            self._markers[rule] = (marker, text)
        self._legend.setVisible(True)
        ordered = style.ordered_rules(rules)
        if ordered != self._legend_rules:
            self._legend.clear()
            for rule in ordered:
                self._legend.addItem(self._curves[("accuracy", rule)], style.rule_name(rule))
            training = translate("TrainCurvesView", "training loss")
            if self.loss_smoothing() > 1:
                training = translate("TrainCurvesView", "training loss, mean of {0} steps").format(
                    self.loss_smoothing())
            self._legend.addItem(self._train_sample, training)
            self._legend.addItem(self._eval_sample, translate("TrainCurvesView", "held-out"))
            self._legend_rules = ordered
            self._fit_legend()
