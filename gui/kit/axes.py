"""The plots' axis item: pyqtgraph's, with grid and tick lines that paint fast."""

from __future__ import annotations

import math
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPainter, QPen, QPicture

__all__ = ["PlotAxis", "axis_items"]


class PlotAxis(pg.AxisItem):
    """A :class:`pyqtgraph.AxisItem` that fills its translucent tick and grid lines as
    one-pixel rectangles instead of stroking them.

    pyqtgraph draws the grid as translucent cosmetic lines without antialiasing, the slowest
    way Qt's raster engine draws a line (``benchmarks/bench_gui.py`` states the ratio); the
    same pixels filled as rectangles cost a small fraction, and re-drawing an axis (its range
    or size changed) is most of a plot's repaint while a sweep streams in. The rectangles are
    one device pixel thick (the pen's width in pixels) at any export scale, as cosmetic lines
    are.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._device_scale = (1.0, 1.0)

    def paint(self, p: QPainter, *args: Any) -> None:  # pyqtgraph override
        transform = p.deviceTransform()
        scale = (math.hypot(transform.m11(), transform.m12()),
                 math.hypot(transform.m21(), transform.m22()))
        if scale != self._device_scale:
            # The cached picture holds rectangles sized for another scale (an export).
            self._device_scale = scale
            self.picture = None
        self.prepare_picture()
        self.picture.play(p)

    def prepare_picture(self) -> None:
        """Draw the axis's picture now if its range or size changed since the last paint.

        The paint would draw it; done beforehand (:class:`gui.kit.split_paint.SplitPaint`), the
        paint only replays it. The picture is drawn for the device scale of the last paint.
        """
        if self.picture is not None:
            return
        picture = QPicture()
        painter = QPainter(picture)
        try:
            if self.style["tickFont"]:
                painter.setFont(self.style["tickFont"])
            specs = self.generateDrawSpecs(painter)
            if specs is not None:
                self.drawPicture(painter, *specs)
        finally:
            painter.end()
        self.picture = picture

    def drawPicture(self, p: QPainter, axisSpec: Any, tickSpecs: Any,  # pyqtgraph override
                    textSpecs: Any) -> None:
        stroked = []
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        for pen, start, end in tickSpecs:
            rect = _line_rect(pen, start, end, self._device_scale)
            if rect is None:
                stroked.append((pen, start, end))
            else:
                p.fillRect(rect, pen.color())
        super().drawPicture(p, axisSpec, stroked, textSpecs)


def _line_rect(pen: QPen, start: QPointF, end: QPointF,
               scale: tuple[float, float]) -> QRectF | None:
    """The rectangle that covers the pixels of a translucent horizontal or vertical cosmetic
    line, or ``None`` for any other line (stroked as before)."""
    if (pen.color().alpha() == 255 or not pen.isCosmetic()
            or pen.style() != Qt.PenStyle.SolidLine or min(scale) <= 0):
        return None
    width = max(pen.widthF(), 1.0)
    sx, sy = scale
    if start.y() == end.y():
        left = min(start.x(), end.x())
        return QRectF(left, start.y() - width / (2 * sy),
                      abs(end.x() - start.x()) + 1 / sx, width / sy)
    if start.x() == end.x():
        top = min(start.y(), end.y())
        return QRectF(start.x() - width / (2 * sx), top,
                      width / sx, abs(end.y() - start.y()) + 1 / sy)
    return None


def axis_items() -> dict[str, pg.AxisItem]:
    """Return fresh bottom and left :class:`PlotAxis` items for a new plot."""
    return {"bottom": PlotAxis("bottom"), "left": PlotAxis("left")}
