"""Attention weights P per head: the compared rule next to "none" (or "none" next to 1/√d_k
when "none" is the rule chosen), one shared colour bar (see :mod:`heatmap_colours`).

For a real head (a tensor file's q, k) the panels are titled with the head, the axes carry
the file's tokens and masked cells (a causal model's future keys) are drawn grey.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt
from PySide6.QtWidgets import QGraphicsRectItem, QLabel, QWidget

from engine.analysis.explorer import heatmap_rules
from engine.config import ScalingRule
from gui.explorer.head_text import head_label
from gui.explorer.results import ExplorerResults
from gui.explorer.views.base import ExplorerView
from gui.explorer.views.heatmap_colours import (
    ColourChoice,
    colour_bar_label,
    colour_levels,
    colour_note,
    masked_overlays,
    shown_values,
)
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import LEGEND_MARGIN
from gui.kit.token_axis import TokenAxis, short_token

if TYPE_CHECKING:
    from engine.analysis.experiment import AttentionSnapshot

__all__ = ["MAX_HEADS_SHOWN", "HeatmapView"]

#: More heads than this would make every panel a few pixels wide; the rest are listed as hidden.
MAX_HEADS_SHOWN = 16
#: Least height (px) of a panel, title and axis included, in a grid of more than three rows.
MIN_PANEL_HEIGHT = 150


def _most_pair_cols(shown: int) -> int:
    # Heads go in pair-columns so that many heads fill the window instead of one tall strip.
    return 1 if shown <= 2 else 2 if shown <= 8 else 4


class _Panel:
    """One head × rule image with its plot, image item and query-row highlight."""

    def __init__(self, plot: pg.PlotItem, head: int, column: int) -> None:
        self.plot = plot
        self.head = head
        self.column = column  # 0: compared rule, 1: its partner ("none", or 1/√d_k)
        self.image = pg.ImageItem(axisOrder="row-major")
        plot.addItem(self.image)
        # Grey over masked cells (real heads only); transparent elsewhere.
        self.masked = pg.ImageItem(axisOrder="row-major")
        self.masked.setZValue(5)
        self.masked.setVisible(False)
        plot.addItem(self.masked)
        self.row_box = QGraphicsRectItem()
        pen = pg.mkPen(style.HIGHLIGHT_COLOR, width=2)
        pen.setCosmetic(True)
        self.row_box.setPen(pen)
        self.row_box.setZValue(10)
        plot.addItem(self.row_box)


class HeatmapView(ExplorerView):
    """Attention weights of every head under the compared rule (left) and "none" (right; 1/√d_k
    when the compared rule is "none").

    A shared colour bar maps log₁₀ p, p or p ÷ max p (see :mod:`heatmap_colours`); the selected
    query row is outlined; hovering shows (head, i, j, logit, p) read from the engine's
    snapshot.
    """

    key = "heatmap"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        #: The colour scale and map selectors.
        self.colours = ColourChoice()
        self._add_controls(self.colours)
        self._add_plot_widget(1)
        self._hover = QLabel()
        self._hover.setFont(style.font(style.TEXT_PT))
        self._hover.setMinimumHeight(self._hover.fontMetrics().height() + 6)
        self._layout.addWidget(self._hover)
        self._colorbar = pg.ColorBarItem(values=(0.0, 1.0), label="p", width=18,
                                         colorMap=pg.colormap.get(style.HEATMAP_COLORMAP),
                                         interactive=False, colorMapMenu=False)
        style.style_plot(self._colorbar, grid=False)
        self._panels: list[_Panel] = []
        self._shape = (0, 1)  # (heads shown, n) the grid was built for
        self._pair_cols = 0  # head pairs side by side in the grid (see fit_to_width)
        self._room = 0.0  # scene width the window gives the grid
        self._snapshot: AttentionSnapshot | None = None
        self._rules: tuple[ScalingRule, ScalingRule] = (ScalingRule.SQRT, ScalingRule.NONE)
        self._query_row = 0
        self._note = style.make_label()
        self._hover_pos: QPointF | None = None  # scene position of the last hover
        self._widget.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.colours.scaleChanged.connect(self._on_scale_changed)
        self.colours.mapChanged.connect(self._on_map_changed)
        self._apply_language()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("HeatmapView", "Attention weights")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        self.colours.retranslate_ui()
        self._label_axes()
        self._label_colour_bar()
        self._hover.setText(self._hover_hint())

    def show_results(self, results: ExplorerResults) -> None:
        snapshot = results.snapshot
        row = results.config.query_row
        if not self._is_new("snapshot", snapshot, results.config.rule, row):
            return
        if snapshot is None:
            return
        compare = ScalingRule(results.config.rule)
        if compare not in snapshot.rules:
            compare = ScalingRule(snapshot.config.rule)
        self._snapshot = snapshot
        self._rules = heatmap_rules(compare)
        weights = [snapshot.rules[rule].weights for rule in self._rules]
        shown, n = min(weights[0].shape[0], MAX_HEADS_SHOWN), weights[0].shape[-1]
        if self._shape != (shown, n):
            self._build_grid(shown, n, _most_pair_cols(shown))
        self._query_row = min(row, n - 1)
        self._draw_images()
        self._set_token_ticks()
        self._update_titles(snapshot)
        self._fit_grid()  # the titles decide how wide a pair must be
        # The read-out described the previous snapshot: read the cell under the pointer again
        # from the new one (or show the hint if the pointer is no longer over a cell).
        cell = "" if self._hover_pos is None else self._cell_text(snapshot, self._hover_pos)
        self._hover.setText(cell or self._hover_hint())

    def _draw_images(self) -> None:
        """Fill every panel from the snapshot under the chosen colour scale."""
        snapshot = self._snapshot
        if snapshot is None:
            return
        weights = [snapshot.rules[rule].weights for rule in self._rules]
        n = weights[0].shape[-1]
        levels = self.colour_levels()
        self._colorbar.setLevels(levels, update_items=False)  # setImage below sets them
        self._label_colour_bar()
        masks = masked_overlays(snapshot, self._rules)
        for panel in self._panels:
            panel.image.setImage(self.shown_values(weights[panel.column][panel.head]),
                                 autoLevels=False, levels=levels)
            panel.row_box.setRect(QRectF(0.0, float(self._query_row), float(n), 1.0))
            mask = masks[panel.column]
            if mask is not None:
                panel.masked.setImage(mask, autoLevels=False, levels=(0, 255))
            panel.masked.setVisible(mask is not None)

    # -- colour scale ---------------------------------------------------------------------------
    def colour_levels(self) -> tuple[float, float]:
        """The values at the two ends of the colour bar."""
        return colour_levels(self.colours.scale(), self._shape[1])

    def shown_values(self, weights: np.ndarray) -> np.ndarray:
        """The values one map's weights are drawn with (what the colour bar's axis reads)."""
        return shown_values(self.colours.scale(), weights, self._shape[1])

    def colour_bar_label(self) -> str:
        """The colour bar's axis label (plain text), naming the scale."""
        return colour_bar_label(self.colours.scale())

    def _label_colour_bar(self) -> None:
        self._colorbar.getAxis("left").setLabel(style.axis_label_html(self.colour_bar_label()))

    def _on_scale_changed(self) -> None:
        self._draw_images()
        if self._snapshot is not None:
            self._update_titles(self._snapshot)

    def _on_map_changed(self) -> None:
        self._colorbar.setColorMap(pg.colormap.get(self.colours.map_name()))

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "head", "query_i", "key_j", "logit", "p"]
        rows: list[list[float | str]] = []
        snapshot = self._snapshot
        if snapshot is None:
            return header, rows
        # The heads on screen (all of them up to MAX_HEADS_SHOWN), in grid order.
        heads = len(self._panels) // 2
        for rule in self._rules:
            view = snapshot.rules[rule]
            _, n_q, n_k = view.weights.shape
            h, i, j = (a.ravel().tolist() for a in np.indices((heads, n_q, n_k)))
            logits = np.asarray(view.logits[:heads], dtype=float).ravel().tolist()
            weights = np.asarray(view.weights[:heads], dtype=float).ravel().tolist()
            rows.extend(
                [rule.value, *cell] for cell in zip(h, i, j, logits, weights, strict=True)
            )
        return header, rows

    def reset_view(self) -> None:
        for panel in self._panels:
            panel.plot.enableAutoRange()
            panel.plot.autoRange(padding=0)

    # -- internals ----------------------------------------------------------------------------
    def panel_images(self) -> list[pg.ImageItem]:
        """Return the image items in grid order (head-major; compared rule before its partner)."""
        return [panel.image for panel in self._panels]

    def hover_text(self) -> str:
        """Return the current hover read-out (for tests and status bars)."""
        return self._hover.text()

    def masked_cells(self) -> list[np.ndarray | None]:
        """Per panel, the RGBA overlay drawn over masked cells (``None``: not drawn)."""
        return [p.masked.image if p.masked.isVisible() else None for p in self._panels]

    def _set_token_ticks(self) -> None:
        """The file's tokens on both axes of a real head; numbers otherwise."""
        real = self._snapshot.real_head if self._snapshot is not None else None
        tokens = None if real is None else real.tokens
        for panel in self._panels:
            for name in ("bottom", "left"):
                panel.plot.getAxis(name).set_tokens(tokens)

    def fit_to_width(self, width: int) -> None:
        """Fewer head pairs side by side when the window is too narrow for all of them."""
        super().fit_to_width(width)
        self._room = width / self._widget.scale_factor() - LEGEND_MARGIN
        self._fit_grid()

    def _fit_grid(self) -> None:
        """Rebuild the grid with the most pair-columns whose least width fits the room; a
        pair's least width is read off the grid as built (its titles and ticks decide it)."""
        shown, n = self._shape
        if not self._panels or self._room <= 0:
            return
        minimum = Qt.SizeHint.MinimumSize
        bar = self._colorbar.effectiveSizeHint(minimum).width()
        style.relayout(self._widget)
        pair = (self._widget.ci.effectiveSizeHint(minimum).width() - bar) / self._pair_cols
        fitting = [c for c in range(_most_pair_cols(shown), 0, -1)
                   if bar + c * pair <= self._room]
        pair_cols = fitting[0] if fitting else 1
        if pair_cols != self._pair_cols:
            self._build_grid(shown, n, pair_cols)
            self._draw_images()
            self._set_token_ticks()
            if self._snapshot is not None:
                self._update_titles(self._snapshot)

    def _build_grid(self, shown: int, n: int, pair_cols: int) -> None:
        """(Re)create the panels, ``pair_cols`` pairs a row (for new heads, n or room)."""
        self._widget.clear()
        self._panels = []
        self._pair_cols = pair_cols
        grid_rows = math.ceil(shown / pair_cols)
        view0: pg.ViewBox | None = None
        for head in range(shown):
            r, pc = divmod(head, pair_cols)
            for column in range(2):
                # Token axes: numbers for random q, k, a real head's tokens when it has them.
                # No context menu: built without one instead of building and dropping it.
                plot = self._widget.addPlot(row=r, col=2 * pc + column, axisItems={
                    "bottom": TokenAxis("bottom"), "left": TokenAxis("left")}, enableMenu=False)
                style.style_plot(plot, grid=False)
                plot.hideButtons()
                # No aspect lock: cells may be oblong, but every panel fills its grid cell.
                plot.invertY(True)  # matrix convention: query 0 at the top
                # Link every panel to the first so zooming one zooms all (same n everywhere).
                if view0 is None:
                    view0 = plot.vb
                else:
                    plot.setXLink(view0)
                    plot.setYLink(view0)
                # Many rows scroll rather than squeeze each panel to a strip.
                plot.setMinimumHeight(MIN_PANEL_HEIGHT if grid_rows > 3 else 0)
                panel = _Panel(plot, head, column)
                self._panels.append(panel)
        self._label_axes()
        self._shape = (shown, n)
        # Linking the images hands them the bar's levels, which an image without data keeps
        # and applies after its first setImage: give the bar this n's levels first.
        self._colorbar.setLevels(self.colour_levels(), update_items=False)
        self._colorbar.setImageItem([p.image for p in self._panels])
        self._widget.addItem(self._colorbar, row=0, col=2 * pair_cols, rowspan=grid_rows)
        self._widget.addItem(self._note, row=grid_rows, col=0, colspan=2 * pair_cols + 1)
        for panel in self._panels:
            panel.plot.setRange(xRange=(0, n), yRange=(0, n), padding=0)

    def _label_axes(self) -> None:
        # Labels on every panel keep all panels the same size; beyond 8 heads there is no room
        # for them and the note below names the axes instead.
        if not 0 < len(self._panels) <= 16:
            return
        bottom, left = translate("HeatmapView", "key j"), translate("HeatmapView", "query i")
        for panel in self._panels:
            style.label_plot(panel.plot, left=left, bottom=bottom)

    def _update_titles(self, snapshot: AttentionSnapshot) -> None:
        compare, _partner = self._rules
        real = snapshot.real_head
        names = tuple(style.rule_name(rule) + (" (c = 1)" if rule is ScalingRule.NONE else "")
                      for rule in self._rules)
        # Beyond two heads the rule goes under the head: a one-line title would make every
        # panel as wide as "head 10 · 1/√d_k", and twelve heads would not fit 1024 px.
        separator = "<br>" if len(self._panels) > 4 else " · "
        for panel in self._panels:
            rule = self._rules[panel.column]
            color = style.RULE_COLORS[rule]
            head_text = (translate("HeatmapView", "head {0}").format(panel.head + 1)
                         if real is None else head_label(real.ref, with_file=False))
            panel.plot.setTitle(
                f'{head_text}{separator}<span style="color:{color}"><b>'
                f'{style.rule_name(rule)}</b></span>',
                color=style.FOREGROUND,
                size=f"{style.TEXT_PT}pt",
            )
            # pyqtgraph gives a title one fixed 30 px row: two lines need their own height.
            height = max(30.0, panel.plot.titleLabel.item.boundingRect().height())
            panel.plot.titleLabel.setMaximumHeight(height)
            panel.plot.layout.setRowFixedHeight(0, height)
        note = translate(
            "HeatmapView",
            "Pairs: {0} | {1}. Rows: query i, columns: key j. Outlined: query row {2}.",
        ).format(names[0], names[1], self._query_row) + " " + colour_note(
            self.colours.scale(), self._shape[1])
        if real is not None and np.isneginf(snapshot.rules[compare].logits).any():
            note += " " + translate("HeatmapView", "Grey: masked keys (the model's mask).")
        hidden = snapshot.rules[compare].weights.shape[0] - len(self._panels) // 2
        if hidden > 0:
            # Worded without a plural: pyside6-lupdate cannot mark a numerus form whose count
            # is a variable, and Chinese has none.
            note += " " + translate("HeatmapView", "Heads not shown: {0}.").format(hidden)
        self._note.setText(note)

    def leaveEvent(self, event: QEvent) -> None:  # Qt override
        """Forget the hover position when the pointer leaves the view."""
        self._hover_pos = None
        self._hover.setText(self._hover_hint())
        super().leaveEvent(event)

    @staticmethod
    def _hover_hint() -> str:
        return translate("HeatmapView", "Hover over a cell to read head, i, j, logit, p.")

    def _on_mouse_moved(self, pos: QPointF) -> None:
        self._hover_pos = QPointF(pos)
        if self._snapshot is not None:
            self._hover.setText(self._cell_text(self._snapshot, pos) or self._hover_hint())

    def _cell_text(self, snapshot: AttentionSnapshot, pos: QPointF) -> str:
        """The read-out of the cell under the scene position ``pos`` ("" over no cell)."""
        for panel in self._panels:
            if not panel.plot.vb.sceneBoundingRect().contains(pos):
                continue
            point = panel.plot.vb.mapSceneToView(pos)
            i, j = math.floor(point.y()), math.floor(point.x())
            rule = self._rules[panel.column]
            view = snapshot.rules[rule]
            if not (0 <= i < view.weights.shape[-2] and 0 <= j < view.weights.shape[-1]):
                continue
            logit, p = float(view.logits[panel.head, i, j]), float(view.weights[panel.head, i, j])
            real = snapshot.real_head
            i_text, j_text = str(i), str(j)
            if real is not None and real.tokens is not None:
                i_text = f"{i} “{short_token(real.tokens[i])}”"
                j_text = f"{j} “{short_token(real.tokens[j])}”"
            # A real head is named by its index in the file (0-based, as `inspect` lists it).
            head_number = panel.head + 1 if real is None else real.ref.head
            logit_text = (f"{logit:.4g}" if math.isfinite(logit)
                          else translate("HeatmapView", "masked"))
            return translate(
                "HeatmapView", "{0}: head {1}, query i = {2}, key j = {3}, logit = {4}, p = {5}",
            ).format(style.rule_name(rule), head_number, i_text, j_text, logit_text, f"{p:.4g}")
        return ""
