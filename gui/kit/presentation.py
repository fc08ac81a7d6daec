"""Draw a view's plots larger for a projector: fonts, lines and markers × a scale factor.

Two parts, because pyqtgraph draws in two ways. Layout widgets (axes, titles, legends) are laid
out at the viewport's size ÷ the scale and the view magnifies them (:class:`ScalableLayoutWidget`).
Curves and markers keep device-pixel sizes under any view transform (cosmetic pens,
pixel-mode symbols), so :func:`scale_plot_items` widens their pens and symbols in place and
:func:`restore_plot_items` puts them back. An export
lays the widget out at the export size ÷ the scale too, so it keeps the enlarged look.
"""

from __future__ import annotations

import weakref
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QPen, QResizeEvent, QTransform

__all__ = ["PRESENTATION_SCALE", "ScalableLayoutWidget", "restore_plot_items",
           "scale_plot_items"]

#: Fonts, lines and markers in presentation mode, relative to the normal view.
PRESENTATION_SCALE = 1.6


class ScalableLayoutWidget(pg.GraphicsLayoutWidget):
    """A ``GraphicsLayoutWidget`` that can show its scene magnified by :meth:`set_scale`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._scale = 1.0
        super().__init__(*args, **kwargs)

    def scale_factor(self) -> float:
        """The magnification (1: the scene's units are the widget's pixels)."""
        return self._scale

    def set_scale(self, scale: float) -> None:
        """Lay the scene out at the widget's size ÷ ``scale`` and draw it ``scale`` × larger."""
        self._scale = float(scale)
        self.autoPixelRange = self._scale == 1.0
        size = self.size()
        self.resizeEvent(QResizeEvent(size, size))
        self.updateGeometry()

    def resizeEvent(self, ev: QResizeEvent) -> None:  # pyqtgraph/Qt override
        """Keep the scene range at the widget's size ÷ the scale."""
        if self._scale != 1.0 and not self.closed:
            self.range = QRectF(0, 0, self.width() / self._scale, self.height() / self._scale)
        super().resizeEvent(ev)

    def updateMatrix(self, propagate: bool = True) -> None:  # pyqtgraph override
        """A uniform magnification (pyqtgraph's ``fitInView`` leaves a margin)."""
        if self._scale == 1.0:
            super().updateMatrix(propagate)
            return
        self.setSceneRect(self.range)
        self.setTransform(QTransform.fromScale(self._scale, self._scale))
        self.sigDeviceRangeChanged.emit(self, self.range)
        self.sigDeviceTransformChanged.emit(self)


# item -> (the attributes as the view set them, the scaled values this module set)
_ORIGINALS: weakref.WeakKeyDictionary[Any, tuple[dict[str, Any], dict[str, Any]]] = (
    weakref.WeakKeyDictionary())


def _scaled_pen(pen: Any, factor: float) -> QPen | None:
    if pen is None:
        return None
    pen = QPen(pg.mkPen(pen))
    pen.setWidthF(max(pen.widthF(), 1.0) * factor)
    return pen


def _current(item: Any) -> dict[str, Any]:
    """The drawing attributes of ``item`` that do not follow the view's magnification."""
    if isinstance(item, pg.PlotDataItem):
        return {"pen": item.opts["pen"], "symbolPen": item.opts["symbolPen"],
                "symbolSize": item.opts["symbolSize"]}
    if isinstance(item, pg.InfiniteLine):
        return {"pen": item.pen}
    if isinstance(item, pg.ErrorBarItem):
        return {"pen": item.opts.get("pen")}
    return {}


def _apply(item: Any, values: dict[str, Any]) -> None:
    if isinstance(item, pg.PlotDataItem):
        item.setPen(values["pen"])
        item.setSymbolPen(values["symbolPen"])
        item.setSymbolSize(values["symbolSize"])
    elif isinstance(item, pg.InfiniteLine):
        item.setPen(values["pen"])
    elif isinstance(item, pg.ErrorBarItem):
        item.setData(pen=values["pen"])


def _scaled(values: dict[str, Any], factor: float) -> dict[str, Any]:
    out = dict(values)
    for key in ("pen", "symbolPen"):
        if key in out:
            out[key] = _scaled_pen(out[key], factor)
    if "symbolSize" in out and out["symbolSize"] is not None:
        out["symbolSize"] = out["symbolSize"] * factor
    return out


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return all(a[key] is b[key] or a[key] == b[key] for key in a)


def scale_plot_items(scene: Any, factor: float) -> int:
    """Widen the pens and symbols of every curve and line in ``scene``.

    Items already scaled are left alone, unless the view has set new attributes since (a
    redraw): those become the new originals. Returns how many items were (re)scaled.
    """
    changed = 0
    for item in scene.items():
        values = _current(item)
        if not values:
            continue
        known = _ORIGINALS.get(item)
        if known is not None and _same(values, known[1]):
            continue
        scaled = _scaled(values, factor)
        _apply(item, scaled)
        _ORIGINALS[item] = (values, _current(item))
        changed += 1
    return changed


def restore_plot_items(scene: Any) -> None:
    """Give every item scaled by :func:`scale_plot_items` its own attributes back."""
    for item in scene.items():
        known = _ORIGINALS.pop(item, None)
        if known is not None and _same(_current(item), known[1]):
            _apply(item, known[0])
