"""Live attention maps of the fixed probe example (held-out example 0), one panel per rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule
from engine.config.train import TaskKind
from gui.kit import style
from gui.kit.axes import PlotAxis
from gui.kit.i18n import translate
from gui.kit.plot_view import LEGEND_MARGIN
from gui.train.results import TrainResults
from gui.train.view import TrainView

__all__ = ["ProbePanel", "ProbeView", "probe_targets"]


def probe_targets(snap: Any) -> list[tuple[int, int]]:
    """``(row, key)`` cells a perfect model attends to in the probe map of one head.

    Rows are the target positions. Retrieval: the key position whose key id equals the query's
    (the first id channel); copy-back: position t − offset. Read from the task's token ids,
    not computed from the model.
    """
    config = snap.config
    ids = np.asarray(snap.probe_ids)
    cells = []
    for row, t in enumerate(snap.target_positions):
        if config.task is TaskKind.RETRIEVAL:
            match = np.flatnonzero(ids[: config.n, 0] == ids[t, 0])
            cells.extend((row, int(j)) for j in match[:1])
        else:
            cells.append((row, int(t) - config.offset))
    return cells


# Label steps tried when thinning tick labels (cells between two labels).
_NICE_STEPS = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000)


class CellAxis(PlotAxis):
    """An axis that labels whole cells (keys, query rows) at their centres ``i + 0.5``.

    pyqtgraph draws every label of its top tick level, which run together in a narrow panel;
    here only every k-th shows, k the smallest of 1, 2, 5, 10, … that keeps the labels apart
    at the axis's length in pixels. Without labels it is an ordinary numeric axis.
    """

    GAP_PX = 8.0

    def __init__(self, orientation: str, **kwargs: object) -> None:
        super().__init__(orientation, **kwargs)
        self._labels: list[str] | None = None

    def set_labels(self, labels: list[str] | None) -> None:
        """Label cell ``i`` (centre ``i + 0.5``) with ``labels[i]``; None: numeric ticks."""
        self._labels = None if labels is None else list(labels)
        self.picture = None
        self.update()

    def label_step(self, length_px: float, span: float) -> int:
        """Cells between two shown labels for ``length_px`` pixels showing ``span`` cells."""
        labels = self._labels or []
        if not labels or length_px <= 0 or span <= 0:
            return 1
        metrics = QFontMetricsF(self.style.get("tickFont") or self.font())
        if self.orientation in ("left", "right"):
            extent = metrics.height()
        else:
            extent = max(metrics.horizontalAdvance(text) for text in labels)
        cell_px = length_px / span
        for step in _NICE_STEPS:
            if step * cell_px >= extent + self.GAP_PX:
                return step
        return max(len(labels), 1)

    def tickValues(self, minVal, maxVal, size):  # pyqtgraph override
        labels = self._labels
        if labels is None:
            return super().tickValues(minVal, maxVal, size)
        minVal, maxVal = sorted((minVal, maxVal))  # an inverted axis passes them reversed
        step = self.label_step(size, maxVal - minVal)
        values = [i + 0.5 for i in range(0, len(labels), step) if minVal <= i + 0.5 <= maxVal]
        return [(float(step), values)]

    def tickStrings(self, values, scale, spacing):  # pyqtgraph override
        labels = self._labels
        if labels is None:
            return super().tickStrings(values, scale, spacing)
        return [labels[int(v)] if 0 <= int(v) < len(labels) else "" for v in values]


class ProbePanel:
    """One rule's plot: the heatmap (several query rows) or the bar chart (one row).

    Attributes
    ----------
    plot
        The rule's plot.
    image, targets
        The map of several query rows, and the magenta squares on the answering keys.
    bars, target_bars
        The bar chart of a single query row, and the magenta outlines of the answering key.
    """

    def __init__(self, plot: pg.PlotItem, colormap: pg.ColorMap) -> None:
        self.plot = plot
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(colormap)
        plot.addItem(self.image)
        pen = pg.mkPen(style.HIGHLIGHT_COLOR, width=2)
        self.targets = pg.ScatterPlotItem(symbol="s", size=1.0, pxMode=False, pen=pen,
                                          brush=None)
        self.targets.setZValue(10)
        plot.addItem(self.targets)
        self.bars = pg.BarGraphItem(x=[0.5], height=[0.0], width=0.8, pen=None)
        plot.addItem(self.bars)
        self.target_bars = pg.BarGraphItem(x=[0.5], height=[0.0], width=0.96, pen=pen,
                                           brush=None)
        self.target_bars.setZValue(10)
        plot.addItem(self.target_bars)


class ProbeView(TrainView):
    """Attention weights of the probe example's target rows, per rule and head.

    Each panel stacks the heads vertically (rows: target positions of head 0, then head 1, …;
    columns: key positions) on a shared viridis scale p ∈ [0, 1]; magenta squares mark the key
    that solves the task. A single query row per head (the retrieval task) is drawn as bars of
    p per key instead (heads side by side within a key), the answering key outlined.
    """

    key = "train_probe"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._colormap = pg.colormap.get(style.HEATMAP_COLORMAP)
        self._colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=self._colormap,
                                         interactive=False, width=18, colorMapMenu=False)
        style.style_plot(self._colorbar, grid=False)
        self._colorbar.getAxis("left").setLabel(style.axis_label_html("p"))
        self._panels: dict[ScalingRule, ProbePanel] = {}
        self._rules: tuple[ScalingRule, ...] = ()
        self._snapshot: Any = None
        self._empty_plot: pg.PlotItem | None = None  # the axes shown before the first run
        # (image rows, key positions, bar chart) the axes are set up for
        self._extent: tuple[int, int, bool] = (0, 0, False)
        self._columns = 0  # panels side by side (see fit_to_width)
        self._room = 0.0  # scene width the window gives the panels
        self.retranslate_ui()
        self.clear()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("ProbeView", "Probe attention")

    def retranslate_ui(self) -> None:
        """Re-label the panels; the captions and the note follow with the next push (the base
        class drops the cache of what was shown)."""
        super().retranslate_ui()
        self._label_panels()

    def show_results(self, results: TrainResults) -> None:
        """Show the probe maps of the latest snapshot."""
        snap = results.snapshot
        if not self._is_new("snapshot", snap):
            return
        self._snapshot = snap
        if snap is None:
            self._build(())
            self._note.setText(translate("ProbeView", "The attention map of one fixed held-out "
                                         "example appears here while training runs."))
            return
        rules = tuple(snap.rules)
        if rules != self._rules:
            self._build(rules)
        cells = probe_targets(snap)
        heads = snap.config.heads
        bars = self._set_extent(snap)
        for rule, st in snap.rules.items():
            panel = self._panels[rule]
            plot = panel.plot
            w = np.asarray(st.probe_weights, dtype=np.float64)
            per_head = w.shape[1]
            panel.image.setVisible(not bars)
            panel.targets.setVisible(not bars)
            panel.bars.setVisible(bars)
            panel.target_bars.setVisible(bars)
            if bars:
                keys = w.shape[-1]
                width = 0.9 / heads
                x = [j + 0.05 + (h + 0.5) * width for h in range(heads) for j in range(keys)]
                p = w[:, 0, :].reshape(-1)
                brushes = [pg.mkBrush(c) for c in self._colormap.map(np.clip(p, 0.0, 1.0))]
                panel.bars.setOpts(x=x, height=p, width=width, brushes=brushes, pen=None)
                answer = sorted({j for _r, j in cells})
                panel.target_bars.setOpts(x=[j + 0.5 for j in answer],
                                          height=[1.0] * len(answer), width=0.96)
            else:
                rows = w.reshape(-1, w.shape[-1])
                panel.image.setImage(rows, autoLevels=False, levels=(0.0, 1.0))
                spots = [(j + 0.5, h * per_head + r + 0.5) for h in range(heads)
                         for r, j in cells]
                panel.targets.setData(pos=spots)
            entropy = float(np.mean(st.entropy)) if len(st.entropy) else float("nan")
            if st.diverged:
                caption = translate("ProbeView", "{0}: diverged at step {1}").format(
                    style.rule_name(rule), st.diverged_at)
            else:
                caption = translate("ProbeView", "{0}: H = {1:.2f} nats").format(
                    style.rule_name(rule), entropy)
            plot.setTitle(caption, color=style.FOREGROUND, size=f"{style.TITLE_PT}pt")
        last_key = int(np.asarray(snap.probe_ids).shape[0]) - 1
        if bars:
            several = translate("ProbeView", " (heads side by side within each key)")
            note = translate(
                "ProbeView",
                "Step {0}. Bars: attention weight p of the query at position {1} on each key "
                "position 0…{2}{3}. Magenta outline: the key that answers the probe.",
            ).format(snap.step, int(snap.target_positions[0]), last_key,
                     several if heads > 1 else "")
        else:
            several = translate("ProbeView", " of each head, heads stacked top to bottom")
            note = translate(
                "ProbeView",
                "Step {0}. Rows: target positions{1}; columns: key positions 0…{2}. "
                "Magenta squares: the key that answers the probe.",
            ).format(snap.step, several if heads > 1 else "", last_key)
        self._note.setText(note)
        self._fit_columns()  # the captions decide how wide a panel must be

    def fit_to_width(self, width: int) -> None:
        """Fewer panels side by side when the window is too narrow for one row of them."""
        super().fit_to_width(width)
        self._room = width / self._widget.scale_factor() - LEGEND_MARGIN
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Arrange the panels in the most columns whose least width fits the room (read off
        the panels as built: their captions and ticks decide it)."""
        if not self._panels or self._room <= 0:
            return
        minimum = Qt.SizeHint.MinimumSize
        style.relayout(self._widget)
        bar = self._colorbar.effectiveSizeHint(minimum).width()
        panel = max(p.plot.effectiveSizeHint(minimum).width() for p in self._panels.values())
        spacing = self._widget.ci.layout.horizontalSpacing()
        count = len(self._panels)
        columns = next((c for c in range(count, 0, -1)
                        if bar + c * (panel + spacing) <= self._room), 1)
        if columns != self._columns:
            self._arrange(columns)

    def _arrange(self, columns: int) -> None:
        """Panels row by row in ``columns`` columns, the colour bar beside, the note below."""
        ci = self._widget.ci
        plots = [p.plot for p in self._panels.values()]
        for item in [*plots, self._colorbar, self._note]:
            if item in ci.items:
                ci.removeItem(item)
        for index, plot in enumerate(plots):
            ci.addItem(plot, row=index // columns, col=index % columns)
        rows = -(-len(plots) // columns)
        ci.addItem(self._colorbar, row=0, col=columns, rowspan=rows)
        ci.addItem(self._note, row=rows, col=0, colspan=columns + 1)
        self._columns = columns
        self._label_panels()
        style.relayout(self._widget)
        # Re-adding items re-activates the top layout at its minimum size: give it the
        # viewport again (what pyqtgraph's resizeEvent does).
        ci.setGeometry(self._widget.range)

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "head", "query_position", "key_position", "p"]
        rows: list[list[float | str]] = []
        snap = self._snapshot
        if snap is None:
            return header, rows
        for rule, st in snap.rules.items():
            w = np.asarray(st.probe_weights, dtype=np.float64)
            for h in range(w.shape[0]):
                for r, t in enumerate(snap.target_positions):
                    for j in range(w.shape[2]):
                        rows.append([rule.value, h, int(t), j, float(w[h, r, j])])
        return header, rows

    def reset_view(self) -> None:
        rows, keys, bars = self._extent
        for panel in self._panels.values():
            if bars:
                panel.plot.setRange(xRange=(0, keys), yRange=(0, 1.0), padding=0.02)
            elif rows:
                panel.plot.setRange(xRange=(0, keys), yRange=(0, rows), padding=0)
            else:
                panel.plot.autoRange()

    # -- helpers ------------------------------------------------------------------------------
    def clear(self) -> None:
        """Remove every map (Reset)."""
        self._forget()
        self.show_results(TrainResults())

    def panel(self, rule: ScalingRule | str) -> ProbePanel:
        """The plot and items of ``rule``."""
        return self._panels[ScalingRule(rule)]

    def _set_extent(self, snap: Any) -> bool:
        """Label rows and keys, fit the axes to the map; return True for the bar chart."""
        positions = tuple(snap.target_positions)
        heads = snap.config.heads
        keys = int(np.asarray(snap.probe_ids).shape[0])
        bars = len(positions) == 1
        extent = (heads * len(positions), keys, bars)
        if extent == self._extent:
            return bars
        self._extent = extent
        rows = [f"{t}" if heads == 1 else f"h{h}·{t}" for h in range(heads) for t in positions]
        for panel in self._panels.values():
            panel.plot.getAxis("bottom").set_labels([str(j) for j in range(keys)])
            panel.plot.getAxis("left").set_labels(None if bars else rows)
            panel.plot.invertY(not bars)  # matrix convention: first target row at the top
        self._label_panels()
        self.reset_view()
        return bars

    def _build(self, rules: tuple[ScalingRule, ...]) -> None:
        self._widget.clear()
        self._panels = {}
        self._empty_plot = None
        self._rules = rules
        self._extent = (0, 0, False)
        for col, rule in enumerate(rules):
            plot = self._widget.addPlot(
                row=0, col=col, axisItems={"bottom": CellAxis("bottom"), "left": CellAxis("left")}
            )
            style.style_plot(plot, grid=False)
            plot.invertY(True)  # matrix convention: first target row at the top
            self._panels[rule] = ProbePanel(plot, self._colormap)
        if rules:
            self._colorbar.setImageItem([p.image for p in self._panels.values()])
            self._arrange(len(rules))
        else:
            # Before the first run: empty axes, so the tab (and an export) shows where maps go.
            self._empty_plot = self._widget.addPlot(row=0, col=0)
            style.style_plot(self._empty_plot)
            self._widget.addItem(self._note, row=1, col=0, colspan=2)
        self._label_panels()

    def _label_panels(self) -> None:
        """Axis labels of the panels (and the placeholder's title) in the current language."""
        keys = translate("ProbeView", "key position")
        queries = translate("ProbeView", "query position")
        left = "p" if self._extent[2] else queries
        for index, panel in enumerate(self._panels.values()):
            first = index % max(self._columns, 1) == 0  # the first column of the arrangement
            style.label_plot(panel.plot, bottom=keys, left=left if first else None)
            if not first:
                panel.plot.getAxis("left").showLabel(False)
        if not self._panels and self._empty_plot is not None:
            style.label_plot(self._empty_plot, title=translate("ProbeView", "No training run yet"),
                             bottom=keys, left=queries)
