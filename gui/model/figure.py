"""The Model tab's plots: the loss against α (log axis, the model's own α = 1 marked), the loss
when α is applied to one layer (or head) at a time, and the mean attention entropy per layer.

Built once; :meth:`ModelFigure.show_results` only sets data (the engine computed every number).
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from engine.config import ScalingRule
from gui.kit import style
from gui.kit.axes import axis_items
from gui.kit.i18n import translate
from gui.kit.layout_fit import fit_legend_columns
from gui.kit.plot_view import LEGEND_MARGIN, finite_or_nan
from gui.kit.presentation import ScalableLayoutWidget
from gui.model.controller import ModelResults

__all__ = ["ModelFigure", "format_alpha"]

#: The intervention's colour and marker: those of the rule without scaling.
INTERVENED = ScalingRule.NONE


def format_alpha(alpha: float) -> str:
    """α as the axis and the menus show it: ``1/8``, ``0.707``, ``1``, ``8``."""
    if 0 < alpha < 1 and abs(1 / alpha - round(1 / alpha)) < 1e-9:
        return f"1/{round(1 / alpha)}"
    return f"{alpha:.3g}"


def alpha_ticks(alphas: tuple[float, ...]) -> list[tuple[float, str]]:
    """The α axis's labelled ticks (log₁₀ positions): the grid's powers of two, or every α of
    a grid without two of them."""
    powers = [a for a in alphas if abs(math.log2(a) - round(math.log2(a))) < 1e-9]
    return [(math.log10(a), format_alpha(a)) for a in (powers if len(powers) >= 2 else alphas)]


class ModelFigure(ScalableLayoutWidget):
    """Header, α curve (left, two rows high), per-layer loss and per-layer entropy (right).

    Attributes
    ----------
    alpha_curve, layer_curve, own_entropy, layer_entropy
        The plotted curves (tests read their data).
    """

    def __init__(self) -> None:
        super().__init__()
        self.setBackground(style.BACKGROUND)
        self.header = style.make_label()
        self.ci.addItem(self.header, row=0, col=0, colspan=2)
        self.alpha_plot = self.ci.addPlot(row=1, col=0, rowspan=2,
                                          axisItems=style.log_axis_items())
        # Axes that draw their grid as filled rectangles (gui/kit/axes.py): a sweep's points
        # re-draw them often.
        self.layer_plot = self.ci.addPlot(row=1, col=1, axisItems=axis_items())
        self.entropy_plot = self.ci.addPlot(row=2, col=1, axisItems=axis_items())
        self.legend = style.make_legend(col_count=2)
        self.ci.addItem(self.legend, row=3, col=0, colspan=2)
        for plot in (self.alpha_plot, self.layer_plot, self.entropy_plot):
            style.style_plot(plot)
        self.entropy_plot.setXLink(self.layer_plot)
        style.set_log_mode(self.alpha_plot, x=True, y=False)
        self.alpha_curve = style.rule_curve(INTERVENED, symbol_size=8)
        self.alpha_plot.addItem(self.alpha_curve)
        self.own_line = style.reference_line(1.5, Qt.PenStyle.DashLine, "", 0.95, (0, 0),
                                             pos=0.0, angle=90)
        self.alpha_plot.addItem(self.own_line, ignoreBounds=True)  # log x: 0 is α = 1
        self.chosen_line = pg.InfiniteLine(
            angle=90, pen=pg.mkPen(style.rule_color(INTERVENED), width=1,
                                   style=Qt.PenStyle.DotLine))
        self.chosen_line.setVisible(False)
        self.alpha_plot.addItem(self.chosen_line, ignoreBounds=True)
        self.layer_curve = style.rule_curve(INTERVENED, symbol_size=7)
        self.layer_plot.addItem(self.layer_curve)
        own_pen = style.theory_pen(1.5, Qt.PenStyle.DashLine)
        self.own_loss = pg.InfiniteLine(angle=0, pen=own_pen)
        self.own_loss.setVisible(False)
        self.layer_plot.addItem(self.own_loss, ignoreBounds=False)
        # The model's own scale is drawn alike in every plot: grey and dashed.
        self.own_entropy = pg.PlotDataItem(pen=own_pen, symbol="s", symbolSize=6,
                                           symbolPen=pg.mkPen(style.THEORY_COLOR),
                                           symbolBrush=pg.mkBrush(style.THEORY_COLOR))
        self.layer_entropy = style.rule_curve(INTERVENED, symbol_size=7)
        self.entropy_plot.addItem(self.own_entropy)
        self.entropy_plot.addItem(self.layer_entropy)
        self.ci.layout.setColumnStretchFactor(0, 3)
        self.ci.layout.setColumnStretchFactor(1, 2)
        self._second_kind = "layer"
        self._alphas: tuple[float, ...] = ()
        self.retranslate_ui()

    def resizeEvent(self, event: object) -> None:  # Qt override
        """Give the legend as many columns as the figure's width holds."""
        self.fit_legend()
        super().resizeEvent(event)

    def fit_legend(self) -> None:
        """One row of legend entries where they fit side by side, else one per row."""
        legend = getattr(self, "legend", None)  # Qt resizes the widget while it is built
        if legend is not None:
            fit_legend_columns(legend, self.width() / self.scale_factor() - LEGEND_MARGIN,
                               legend.most_columns)

    def retranslate_ui(self) -> None:
        """Titles, axis labels and the legend in the current language."""
        head = self._second_kind == "head"
        style.label_plot(self.alpha_plot, title=translate("ModelView", "Loss against α"),
                         left=translate("ModelView", "loss (nats per token)"),
                         bottom=translate("ModelView", "α (× every attention logit)"))
        style.label_plot(
            self.layer_plot, title=(translate("ModelView", "α on one head") if head
                                    else translate("ModelView", "α on one layer")),
            left=translate("ModelView", "loss (nats)"))
        style.label_plot(self.entropy_plot,
                         title=translate("ModelView", "Attention entropy"),
                         left=translate("ModelView", "entropy (nats)"),
                         bottom=(translate("ModelView", "head") if head
                                 else translate("ModelView", "layer")))
        style.set_line_label(self.own_line, translate("ModelView", "model's own\nscale (α = 1)"))
        self.legend.clear()
        self.legend.addItem(self.own_entropy, translate("ModelView", "model's own scale (α = 1)"))
        self.legend.addItem(self.layer_entropy, (
            translate("ModelView", "α on that head only") if head
            else translate("ModelView", "α on that layer only")))
        self.fit_legend()

    def show_results(self, results: ModelResults, chosen_alpha: float | None) -> None:
        """Draw the points of ``results`` and mark ``chosen_alpha`` on the α axis."""
        kind = results.task.second_kind() if results.task is not None else "layer"
        if kind != self._second_kind:
            self._second_kind = kind
            self.retranslate_ui()
        alphas = results.task.alphas if results.task is not None else ()
        if alphas != self._alphas:
            self._alphas = alphas
            self.alpha_plot.getAxis("bottom").setTicks([alpha_ticks(alphas), []] if alphas
                                                       else None)
        alpha_points = results.alpha_points
        self.alpha_curve.setData(np.array([p.alpha for p in alpha_points], dtype=float),
                                 finite_or_nan([p.score.loss for p in alpha_points]))
        self.chosen_line.setVisible(chosen_alpha is not None and bool(alpha_points))
        if chosen_alpha is not None:
            self.chosen_line.setValue(np.log10(chosen_alpha))
        second = results.second_points
        where = np.array([_place(p) for p in second], dtype=float)
        self.layer_curve.setData(where, finite_or_nan([p.score.loss for p in second]))
        self.layer_entropy.setData(where, finite_or_nan(
            [p.score.layer_entropy[p.layer] for p in second]))
        reference = results.reference()
        self.own_loss.setVisible(reference is not None)
        if reference is None:
            self.own_entropy.setData([], [])
            return
        self.own_loss.setValue(reference.loss)
        entropy = np.asarray(reference.layer_entropy, dtype=float)
        if kind == "head" and second:
            layer = second[0].layer
            count = results.model.heads if results.model is not None else len(second)
            self.own_entropy.setData(np.arange(count, dtype=float),
                                     np.full(count, entropy[layer]))
        else:
            self.own_entropy.setData(np.arange(entropy.size, dtype=float),
                                     finite_or_nan(entropy))


def _place(point: object) -> float:
    """Where a point of the second sweep sits on its axis: its head, or its layer."""
    head = getattr(point, "head", None)
    return float(head if head is not None else getattr(point, "layer", 0))
