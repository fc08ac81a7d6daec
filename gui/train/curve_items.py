"""The training curves of one rule, and the NaN-masked series they draw."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt

from engine.config import ScalingRule
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import finite_or_nan, positive_or_nan

__all__ = ["RuleCurves"]


def divergence_y(st: Any) -> float:
    """Loss value at which to draw a rule's divergence marker (the last finite loss)."""
    good = np.asarray(st.loss_history, dtype=np.float64)[: max(int(st.diverged_at), 0)]
    good = good[np.isfinite(good) & (good > 0)]
    if good.size:
        return float(good[-1])
    initial = float(st.initial_eval_loss)
    return initial if math.isfinite(initial) and initial > 0 else 1.0


class RuleCurves:
    """The curves of one rule on the four panels, and the cross and label of its divergence.

    Attributes
    ----------
    curves
        Series (``train_loss``, ``eval_loss``, ``accuracy``, ``grad_norm``, ``entropy``) ->
        its curve.
    marker, label
        The cross on the loss plot where the rule diverged, and its "diverged at step k".
    """

    def __init__(self, plots: Mapping[str, pg.PlotItem], rule: ScalingRule) -> None:
        pen = style.rule_pen(rule, width=1.5)
        dashed = style.rule_pen(rule, width=1.5, style=Qt.PenStyle.DashLine)
        # One point per step: aliased 1 px pens (an antialiased wider pen goes through Qt's
        # general stroker, several ms per repaint and curve: style.DENSE_CURVE).
        thin = {"pen": style.rule_pen(rule, width=1), **style.DENSE_CURVE}
        self.rule = rule
        self.curves = {
            "train_loss": pg.PlotDataItem(connect="finite", **thin),
            "eval_loss": style.rule_curve(rule, symbol_size=6, pen=dashed),
            "accuracy": pg.PlotDataItem(connect="finite", pen=pen),
            "grad_norm": pg.PlotDataItem(connect="finite", **thin),
            "entropy": pg.PlotDataItem(connect="finite", pen=pen),
        }
        for series, curve in self.curves.items():  # both losses share the loss plot
            plots["loss" if series.endswith("_loss") else series].addItem(curve)
        self.marker = pg.PlotDataItem(pen=None, symbol="x", symbolSize=18,
                                      symbolPen=style.rule_pen(rule, width=3),
                                      symbolBrush=style.rule_brush(rule))
        self.marker.setZValue(20)
        plots["loss"].addItem(self.marker)
        self.label = style.make_text_item(anchor=(0.0, 1.0))
        self.label.setColor(style.rule_color(rule))
        self.label.setZValue(21)
        self.label.setVisible(False)
        plots["loss"].addItem(self.label, ignoreBounds=True)

    def clear(self) -> None:
        """Empty every curve and hide the divergence."""
        for curve in self.curves.values():
            curve.setData([], [])
        self._hide_divergence()

    def show(self, st: Any, training_loss: np.ndarray, done: bool) -> None:
        """Draw the rule's state ``st`` (a ``RuleState``) with ``training_loss`` as shown.

        Markers go on the held-out loss only once the run is ``done``: scatter symbols cost as
        much as all the lines together in every 30 Hz repaint.
        """
        eval_steps = np.asarray(st.eval_steps, dtype=np.float64)
        curves = self.curves
        curves["train_loss"].setData(np.arange(1, training_loss.size + 1), training_loss)
        curves["eval_loss"].setData(eval_steps, positive_or_nan(st.eval_loss_history))
        curves["accuracy"].setData(eval_steps, finite_or_nan(st.eval_accuracy_history))
        entropy = np.asarray(st.entropy_history, dtype=np.float64)
        mean_h = entropy.mean(axis=1) if entropy.size else np.zeros(0)
        curves["entropy"].setData(eval_steps[: mean_h.size], finite_or_nan(mean_h))
        style.set_markers(curves["eval_loss"], self.rule, eval_steps.size if done else math.inf)
        grads = st.grad_norm_history
        curves["grad_norm"].setData(np.arange(1, grads.size + 1), positive_or_nan(grads))

    def show_divergence(self, st: Any, index: int, y_coordinate: Callable[[float], float]) -> None:
        """Mark where the rule diverged (hide the mark if it did not); ``index`` stacks the
        labels of rules that diverge at nearly the same place, ``y_coordinate`` places a loss
        on the plot's y axis."""
        if st.diverged_at is None:
            if self.label.isVisible():
                self._hide_divergence()
            return
        k = int(st.diverged_at)
        y = divergence_y(st)
        self.marker.setData([max(k, 0)], [y])
        self.label.setText(translate("TrainCurvesView", "diverged at step {0}").format(k))
        # On a log-y plot, items other than PlotDataItems are placed in log10 coordinates.
        self.label.setPos(max(k, 0), y_coordinate(y))
        self.label.setAnchor((0.0, 1.0 + 1.15 * index))
        self.label.setVisible(True)

    def divergence_text(self) -> str:
        """The visible divergence label ("" when none is shown)."""
        return self.label.toPlainText() if self.label.isVisible() else ""

    def _hide_divergence(self) -> None:
        self.marker.setData([], [])
        self.label.setVisible(False)
