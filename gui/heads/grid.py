"""The Heads view's grid: one cell per (layer, head), coloured by the chosen diagnostic.

:class:`GridPanel` is a graphics layout (the grid plot, its colour bar; flagged heads marked with
their letters, the selected head outlined) placed both in the tab's :class:`HeadsGrid` widget
and in the exported figure (:mod:`gui.heads.figure`), so the two draw alike.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QPainter
from PySide6.QtWidgets import QGraphicsRectItem

from engine.analysis.head_scan import HeadRecord
from gui.heads.metrics import Metric
from gui.kit import style
from gui.kit.i18n import translate

__all__ = ["FLAG_LETTER", "FlagLetters", "GridPanel", "HeadsGrid"]

#: Flag -> the letter marking it in a grid cell.
FLAG_LETTER = {"saturated": "S", "sharp": "P", "sink": "K", "near-uniform": "U"}
#: Largest grid for which every cell gets its letters (beyond, only the table lists flags).
_MAX_MARKED_CELLS = 48 * 48


class FlagLetters(pg.GraphicsObject):
    """The flag letters of every flagged cell, painted by one item at a fixed pixel size.

    One text item per cell cost 3–5 ms each to create: a 270-head model, 200 of them flagged,
    held the GUI thread for half a second while its diagnostics streamed in.
    """

    def __init__(self) -> None:
        super().__init__()
        self._cells: list[tuple[int, int, str]] = []
        self._rect = QRectF()
        self._font = style.font(style.TEXT_PT, bold=True)

    def set_cells(self, cells: list[tuple[int, int, str]], heads: int, rows: int) -> None:
        """Draw ``letters`` in each (row, head, letters) of a grid of ``rows`` × ``heads``."""
        self.prepareGeometryChange()
        self._cells = list(cells)
        self._rect = QRectF(0.0, 0.0, float(max(heads, 1)), float(max(rows, 1)))
        self.update()

    def cells(self) -> list[tuple[int, int, str]]:
        """The (row, head, letters) drawn."""
        return list(self._cells)

    def boundingRect(self) -> QRectF:  # Qt override
        return QRectF(self._rect)

    def paint(self, painter: QPainter, *_args: object) -> None:  # Qt override
        if not self._cells:
            return
        to_device = painter.transform()
        metrics = QFontMetricsF(self._font)
        height = metrics.height()
        painter.save()
        painter.resetTransform()  # letters keep their size however the grid is scaled
        painter.setFont(self._font)
        painter.setPen(QColor("#ffffff"))
        fill = QColor(0, 0, 0, 140)
        cell = to_device.mapRect(QRectF(0.0, 0.0, 1.0, 1.0))
        widest = max(metrics.horizontalAdvance(letters) for _r, _h, letters in self._cells)
        fits = cell.height() >= height and cell.width() >= widest + 4.0
        # Cells too small for letters (30 layers in 200 px) get a dot: letters would overlap
        # their neighbours and hide the colours; the table names the flags.
        dot = max(2.0, min(cell.width(), cell.height()) / 3.0)
        for row, head, letters in self._cells:
            centre = to_device.map(QPointF(head + 0.5, row + 0.5))
            if not fits:  # white on a dark rim: seen on the yellow and the purple cells
                rim = dot + 2.0
                painter.fillRect(QRectF(centre.x() - rim / 2, centre.y() - rim / 2, rim, rim),
                                 QColor(0, 0, 0))
                painter.fillRect(QRectF(centre.x() - dot / 2, centre.y() - dot / 2, dot, dot),
                                 QColor("#ffffff"))
                continue
            width = metrics.horizontalAdvance(letters) + 4.0
            box = QRectF(centre.x() - width / 2, centre.y() - height / 2, width, height)
            painter.fillRect(box, fill)
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, letters)
        painter.restore()


class GridPanel(pg.GraphicsLayout):
    """The (layers × heads) grid plot and its colour bar."""

    def __init__(self) -> None:
        super().__init__()
        # Built without the context menus (made and then thrown away otherwise).
        self.grid_plot = self.addPlot(row=0, col=0, enableMenu=False)
        style.style_plot(self.grid_plot, grid=False)
        self.grid_plot.hideButtons()
        self.grid_plot.setMouseEnabled(x=False, y=False)
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
        self._letters = FlagLetters()
        self._letters.setZValue(5)
        self.grid_plot.addItem(self._letters)
        self._layers: tuple[int, ...] = ()
        self._values = np.zeros((0, 0))
        self._axes_shown: tuple[object, ...] = ()  # (layers, heads, metric text) last labelled
        self.label_axes()

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
            letters = "".join(FLAG_LETTER[f] for f in record.diagnostics.flags)
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
        if tuple(levels) != tuple(self.colorbar.levels()):
            self.colorbar.setLevels(levels)
        self._letters.set_cells(flagged if values.size <= _MAX_MARKED_CELLS else [], heads,
                                len(layers))
        # Streamed diagnostics call this several times a second with the same geometry, and
        # an axis given its label, range or ticks again redraws itself.
        axes = (layers, heads, metric.text())
        if axes != self._axes_shown:
            self._axes_shown = axes
            self.colorbar.getAxis("left").setLabel(style.axis_label_html(metric.text()))
            self.grid_plot.setRange(xRange=(0, max(heads, 1)),
                                    yRange=(0, max(len(layers), 1)), padding=0)
            self._label_ticks(layers, heads)

    def grid_values(self) -> np.ndarray:
        """The grid's values (rows: layers in file order; NaN: not diagnosed yet)."""
        return self._values.copy()

    def marker_texts(self) -> list[tuple[float, float, str]]:
        """The flag letters drawn in the grid: (x, y, text) per flagged cell."""
        return [(head + 0.5, row + 0.5, letters) for row, head, letters in self._letters.cells()]

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

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        """The (layer, head) drawn at ``scene_pos``, or None."""
        if not self.grid_plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        point: QPointF = self.grid_plot.vb.mapSceneToView(scene_pos)
        row, head = math.floor(point.y()), math.floor(point.x())
        if 0 <= row < self._values.shape[0] and 0 <= head < self._values.shape[1]:
            return self._layers[row], head
        return None


class HeadsGrid(pg.GraphicsLayoutWidget):
    """The tab's grid widget (a :class:`GridPanel`); emits :attr:`cellClicked` (layer, head)."""

    cellClicked = Signal(int, int)

    def __init__(self) -> None:
        super().__init__()
        self.setBackground(style.BACKGROUND)
        self.panel = GridPanel()
        self.ci.addItem(self.panel, row=0, col=0)
        # The panel's methods under the names the tab calls (see :class:`GridPanel`).
        self.show_grid = self.panel.show_grid
        self.grid_values = self.panel.grid_values
        self.marker_texts = self.panel.marker_texts
        self.set_selection = self.panel.set_selection
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def label_axes(self) -> None:
        """See :meth:`GridPanel.label_axes`; also the tooltip (the tab calls this when built)."""
        self.panel.label_axes()
        self.setToolTip(translate("HeadsView", "Click a head to replay it under every rule"))

    def _on_clicked(self, event: object) -> None:
        cell = self.panel.cell_at(event.scenePos())  # type: ignore[attr-defined]
        if cell is not None:
            self.cellClicked.emit(*cell)
