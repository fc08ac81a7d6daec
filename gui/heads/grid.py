"""The Heads view's plots: the layers × heads grid and the replayed head under every rule.

One ``GraphicsLayoutWidget`` (what PNG/SVG export renders): row 0 the grid (one cell per head,
coloured by the chosen diagnostic, flagged heads marked, the selected head outlined) with its
colour bar; row 1 a title; row 2 the selected head's attention weights under each rule, side
by side, each titled with its mean entropy and p_max.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Signal
from PySide6.QtWidgets import QGraphicsRectItem

from engine.analysis.head_scan import HeadRecord, RuleReplay
from engine.config import ScalingRule
from gui.heads.metrics import Metric
from gui.kit import style
from gui.kit.i18n import translate

__all__ = ["HeadsGrid"]

#: Flag -> the letter marking it in a grid cell.
_FLAG_LETTER = {"saturated": "S", "sharp": "P", "sink": "K", "near-uniform": "U"}
#: Pixels between two replay panels, and between a title and the image above it.
_REPLAY_MARGIN_PX = 8.0
#: Largest grid for which every cell gets its letters (beyond, only the table lists flags).
_MAX_MARKED_CELLS = 48 * 48


class HeadsGrid(pg.GraphicsLayoutWidget):
    """The grid and the replay row; emits :attr:`cellClicked` (layer index, head)."""

    cellClicked = Signal(int, int)

    def __init__(self) -> None:
        super().__init__()
        self.setBackground(style.BACKGROUND)
        self.grid_plot = self.addPlot(row=0, col=0)
        style.style_plot(self.grid_plot, grid=False)
        self.grid_plot.setMenuEnabled(False)
        self.grid_plot.hideButtons()
        self.grid_plot.invertY(True)  # layer 0 at the top, as in a model's code
        self.grid_image = pg.ImageItem(axisOrder="row-major")
        self.grid_plot.addItem(self.grid_image)
        self._colormap = pg.colormap.get(style.HEATMAP_COLORMAP)
        self.grid_image.setColorMap(self._colormap)
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=self._colormap,
                                        interactive=False, width=18, colorMapMenu=False)
        style.style_plot(self.colorbar, grid=False)
        self.colorbar.setImageItem(self.grid_image)
        self.addItem(self.colorbar, row=0, col=1)
        self._selection = QGraphicsRectItem()
        pen = pg.mkPen(style.HIGHLIGHT_COLOR, width=3)
        pen.setCosmetic(True)
        self._selection.setPen(pen)
        self._selection.setZValue(10)
        self._selection.setVisible(False)
        self.grid_plot.addItem(self._selection)
        self._markers: list[pg.TextItem] = []
        self.replay_title = style.make_label()
        self.addItem(self.replay_title, row=1, col=0, colspan=2)
        self.replay_plot = self.addPlot(row=2, col=0, colspan=2)
        self._replay_images: list[pg.ImageItem] = []
        self._replay_titles: list[pg.TextItem] = []
        self._build_replay()
        self._layers: tuple[int, ...] = ()
        self._values = np.zeros((0, 0))
        self.scene().sigMouseClicked.connect(self._on_clicked)

    # ------------------------------------------------------------------------------- grid
    def show_grid(self, layers: tuple[int, ...], heads: int, records: tuple[HeadRecord, ...],
                  metric: Metric) -> None:
        """Colour the (layers × heads) grid by ``metric``; heads not diagnosed yet are blank."""
        self._layers = layers
        values = np.full((len(layers), heads), np.nan)
        row_of = {layer: row for row, layer in enumerate(layers)}
        flagged: list[tuple[int, int, str]] = []
        for record in records:
            row = row_of[record.layer]
            values[row, record.head] = metric.value(record.diagnostics)
            letters = "".join(_FLAG_LETTER[f] for f in record.diagnostics.flags)
            if letters:
                flagged.append((row, record.head, letters))
        self._values = values
        finite = values[np.isfinite(values)]
        levels = metric.levels
        if levels is None:
            # From 0: heads of nearly equal value must not look different.
            low, high = ((min(0.0, float(finite.min())), float(finite.max())) if finite.size
                         else (0.0, 1.0))
            levels = (low, high if high > low else low + 1.0)
        self.grid_image.setImage(values, autoLevels=False, levels=levels)
        self.colorbar.setLevels(levels)
        self.colorbar.getAxis("left").setLabel(style.axis_label_html(metric.text()))
        self._show_markers(flagged if values.size <= _MAX_MARKED_CELLS else [])
        self.grid_plot.setRange(xRange=(0, max(heads, 1)), yRange=(0, max(len(layers), 1)),
                                padding=0)
        self._label_ticks(layers, heads)

    def grid_values(self) -> np.ndarray:
        """The grid's values (rows: layers in file order; NaN: not diagnosed yet)."""
        return self._values.copy()

    def marker_texts(self) -> list[tuple[float, float, str]]:
        """The flag letters drawn in the grid: (x, y, text) per flagged cell."""
        return [(m.pos().x(), m.pos().y(), m.toPlainText()) for m in self._markers]

    def set_selection(self, row: int | None, head: int | None) -> None:
        """Outline the cell (row, head), or nothing."""
        if row is None or head is None:
            self._selection.setVisible(False)
            return
        self._selection.setRect(QRectF(float(head), float(row), 1.0, 1.0))
        self._selection.setVisible(True)

    def label_axes(self) -> None:
        """Set the grid's axis labels in the current language."""
        style.label_plot(self.grid_plot, left=translate("HeadsView", "layer"),
                         bottom=translate("HeadsView", "head"))

    def _label_ticks(self, layers: tuple[int, ...], heads: int) -> None:
        # Integer ticks at cell centres; every k-th label once there are many.
        step_y = max(1, math.ceil(len(layers) / 24))
        step_x = max(1, math.ceil(heads / 24))
        self.grid_plot.getAxis("left").setTicks(
            [[(row + 0.5, str(layer)) for row, layer in enumerate(layers)][::step_y]])
        self.grid_plot.getAxis("bottom").setTicks(
            [[(head + 0.5, str(head)) for head in range(heads)][::step_x]])

    def _show_markers(self, flagged: list[tuple[int, int, str]]) -> None:
        for marker in self._markers:
            self.grid_plot.removeItem(marker)
        self._markers = []
        for row, head, letters in flagged:
            marker = pg.TextItem(letters, color="#ffffff", anchor=(0.5, 0.5),
                                 fill=pg.mkBrush(0, 0, 0, 140))
            marker.setFont(style.font(style.TEXT_PT, bold=True))
            marker.setPos(head + 0.5, row + 0.5)
            self.grid_plot.addItem(marker)
            self._markers.append(marker)

    def _on_clicked(self, event: object) -> None:
        pos = event.scenePos()  # type: ignore[attr-defined]
        if not self.grid_plot.vb.sceneBoundingRect().contains(pos):
            return
        point: QPointF = self.grid_plot.vb.mapSceneToView(pos)
        row, head = math.floor(point.y()), math.floor(point.x())
        if 0 <= row < self._values.shape[0] and 0 <= head < self._values.shape[1]:
            self.cellClicked.emit(self._layers[row], head)

    # ----------------------------------------------------------------------------- replay
    def show_replay(self, replays: tuple[RuleReplay, ...], title: str) -> None:
        """Show the weights of each replayed rule side by side under ``title``."""
        for index, (image, label) in enumerate(zip(self._replay_images, self._replay_titles,
                                                   strict=True)):
            shown = index < len(replays)
            image.setVisible(shown)
            label.setVisible(shown)
            if shown:
                image.setImage(np.asarray(replays[index].weights), autoLevels=False,
                               levels=(0.0, 1.0))
                self._title_replay(label, replays[index])
        self._layout_replay()
        self.replay_title.setText(title)

    def _layout_replay(self) -> None:
        """Place the shown panels in the replay plot's current size, titles clear of images.

        The titles are text of a fixed pixel size while the images scale with the plot, so the
        layout is made in pixels (the largest image side for which every panel and its two
        title lines fit) and converted to the images' units; it is redone when the plot is
        resized. A fixed room in image units let the titles overlap the row above once nine
        rules made the panels small.
        """
        images = self.replay_images()
        shown = len(images)
        width, height = self.replay_plot.vb.width(), self.replay_plot.vb.height()
        if not shown or width <= 0 or height <= 0:
            return
        labels = self._replay_titles[:shown]
        title_width = max(label.boundingRect().width() for label in labels)
        title_height = max(label.boundingRect().height() for label in labels)

        def image_side(columns: int) -> float:
            rows = math.ceil(shown / columns)
            return min(width / columns, height / rows - title_height) - _REPLAY_MARGIN_PX

        # The number of columns that gives the largest images among those whose titles fit
        # side by side (one column if none does).
        fitting = [c for c in range(1, shown + 1) if c * (title_width + _REPLAY_MARGIN_PX) <= width]
        columns = max(fitting or [1], key=image_side)
        rows = math.ceil(shown / columns)
        side = max(8.0, image_side(columns))
        # Panels as wide as their image or title, the block of them centred.
        pitch_x = min(width / columns, max(side, title_width) + _REPLAY_MARGIN_PX)
        left = (width - columns * pitch_x + _REPLAY_MARGIN_PX) / 2
        pitch_y = side + title_height + _REPLAY_MARGIN_PX
        n = images[0].image.shape[-1]
        units = n / side  # image units per pixel
        for index in range(shown):
            row, column = divmod(index, columns)
            x = (left + column * pitch_x) * units
            y = (row * pitch_y + title_height) * units
            images[index].setRect(QRectF(x, y, n, n))
            labels[index].setPos(x, y)
        self.replay_plot.setRange(xRange=(0.0, width * units),
                                  yRange=(0.0, max(height, rows * pitch_y) * units), padding=0.0)

    def clear_replay(self, title: str) -> None:
        """Hide the replay panels and show ``title`` instead."""
        for item in (*self._replay_images, *self._replay_titles):
            item.setVisible(False)
        self.replay_title.setText(title)

    def replay_images(self) -> list[pg.ImageItem]:
        """The replay images shown, in rule order."""
        return [image for image in self._replay_images if image.isVisible()]

    def replay_rects(self) -> list[tuple[QRectF, QRectF]]:
        """Where each shown panel's title and image are drawn (scene coordinates), in order."""
        return [(label.sceneBoundingRect(), image.sceneBoundingRect())
                for label, image in zip(self._replay_titles, self._replay_images, strict=True)
                if image.isVisible()]

    def retitle_replay(self, replays: tuple[RuleReplay, ...]) -> None:
        """Re-title the replay panels in the current language."""
        for label, replay in zip(self._replay_titles, replays, strict=False):
            self._title_replay(label, replay)
        self._layout_replay()  # the titles' height may differ in another language

    def _title_replay(self, label: pg.TextItem, replay: RuleReplay) -> None:
        diag = replay.diagnostics
        color = style.RULE_COLORS[ScalingRule(replay.rule)]
        stats = translate("HeadsView", "H {0} · p̄max {1}").format(
            f"{diag.entropy_mean:.2f}", f"{diag.p_max_mean:.2f}")
        label.setHtml(f'<span style="color:{color}"><b>{style.rule_name(replay.rule)}</b>'
                      f'</span><br><span style="color:{style.FOREGROUND}">{stats}</span>')

    def _build_replay(self) -> None:
        # One plot holding every rule's image (placed by setRect) and title: built once, as six
        # plots took ~90 ms to create, a GUI-thread stall on the first click.
        plot = self.replay_plot
        style.style_plot(plot, grid=False)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.invertY(True)
        plot.setAspectLocked(True)
        plot.hideAxis("left")
        plot.hideAxis("bottom")
        plot.vb.sigResized.connect(self._layout_replay)
        for _rule in ScalingRule:
            image = pg.ImageItem(axisOrder="row-major")
            image.setColorMap(self._colormap)
            label = pg.TextItem(anchor=(0.0, 1.0))
            label.setFont(style.font(style.TEXT_PT))
            for item in (image, label):
                item.setVisible(False)
                plot.addItem(item)
            self._replay_images.append(image)
            self._replay_titles.append(label)
