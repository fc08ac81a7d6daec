"""Paint a view's export item at a requested size: the one renderer behind PNG, SVG and copy.

A view's export item is laid out at the requested size before rendering, so an export has
the requested pixel size and a proper layout even when the widget was never shown (pyqtgraph
would otherwise lay a never-shown widget out at 640×480). Always runs on the GUI thread.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyqtgraph as pg
from pyqtgraph.exporters.Exporter import Exporter
from PySide6.QtCore import QCoreApplication, QEvent, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPainterPath, QResizeEvent, QTransform
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsView,
    QGraphicsWidget,
    QStyleOptionGraphicsItem,
    QWidget,
)

from gui.kit.caption import caption_height, caption_of, draw_caption
from gui.kit.choices import check_size

__all__ = ["laid_out_at", "laid_out_for_export",
           "paint_export", "paint_scene", "render_image"]

def _export_target(item: Any) -> Any:
    """The graphics item an exporter should render for a view's export item."""
    if isinstance(item, pg.PlotWidget):
        return item.getPlotItem()
    if isinstance(item, pg.GraphicsLayoutWidget):
        return item.ci
    if isinstance(item, pg.GraphicsView):
        return item.scene()
    return item


def _send_resize(widget: QWidget, size: QSize, old: QSize) -> None:
    # A hidden widget only records a pending resize and QAbstractScrollArea does not forward a
    # sent Resize event to pyqtgraph's handler, so call the handler itself: it resizes the
    # scene's central item to the widget's new size.
    widget.resizeEvent(QResizeEvent(size, old))
    _deliver_layout(widget)


def _deliver_layout(widget: QWidget) -> None:
    # QGraphicsLayouts re-arrange their items on a posted LayoutRequest; deliver those now
    # (targeted delivery, not an event-loop spin), then activate every layout, innermost
    # first (a nested layout activated after its parent leaves the parent's stale geometry).
    # Only the scene's own items get theirs: a request pending for the widgets around the
    # view (a label of the view changed) would let their layout give the view back its
    # on-screen size in the middle of the export.
    scene = widget.scene() if isinstance(widget, QGraphicsView) else None
    if scene is not None:
        for item in scene.items():
            if isinstance(item, QGraphicsWidget):
                QCoreApplication.sendPostedEvents(item, QEvent.Type.LayoutRequest)
    if isinstance(widget, pg.GraphicsView):
        from gui.kit.style import relayout

        relayout(widget)
    target = _export_target(widget)
    layout = getattr(target, "layout", None)
    if layout is not None and not callable(layout) and hasattr(layout, "activate"):
        layout.activate()


@contextlib.contextmanager
def laid_out_at(item: Any, width: int, height: int) -> Iterator[Any]:
    """Temporarily give the export widget the size ``width × height``; yield the target."""
    widget = item if isinstance(item, QWidget) else None
    if widget is None:
        yield _export_target(item)
        return
    old = widget.size()
    new = QSize(width, height)
    widget.resize(new)
    _send_resize(widget, new, old)
    try:
        target = _export_target(item)
        _settle_layout(widget, target, width, height)
        yield target
    finally:
        widget.resize(old)
        _send_resize(widget, old, new)


@contextlib.contextmanager
def laid_out_for_export(item: Any, width: int, height: int) -> Iterator[tuple[Any, int, str]]:
    """:func:`laid_out_at` with room for the item's caption (:mod:`gui.kit.caption`) below
    the plots: yield the target, the height the plots get and the caption."""
    caption = caption_of(item)
    plots = height - caption_height(caption, width, height)
    with laid_out_at(item, width, plots) as target:
        yield target, plots, caption


def paint_export(target: Any, device: Any, width: int, height: int, plots: int | None = None,
                 caption: str = "", explicit_clips: bool = False) -> None:
    """Paint ``target`` onto ``device`` (an image, or with ``explicit_clips`` a vector device:
    SVG generator, PDF writer) into the top ``plots`` units (default all) and ``caption`` in
    the strip below.

    The painter is ended even when painting fails, so the device's output stays closed."""
    painter = QPainter(device)
    try:
        plots = height if plots is None else plots
        paint_scene(target, painter, width, plots, explicit_clips)
        draw_caption(painter, caption, width, plots, height,
                     _background(Exporter(target).getScene()))
    finally:
        painter.end()


def _geometry(target: Any) -> list[tuple[float, float, float, float]]:
    rects = [i.sceneBoundingRect() for i in Exporter(target).getPaintItems()
             if isinstance(i, QGraphicsWidget)]
    return [(r.x(), r.y(), r.width(), r.height()) for r in rects]


def _settle_layout(widget: QWidget, target: Any, width: int, height: int) -> None:
    """Paint (clipped to one pixel) until the layout stops changing.

    An axis measures its tick labels only while it paints and then asks for more room, so
    the first paint at a new size uses a stale layout: without this, the first export of a
    view never shown at the export size would have its plots shifted by the later width of
    the axes (and PNG and SVG of one view would differ).
    """
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    for _attempt in range(4):
        before = _geometry(target)
        painter = QPainter(image)
        painter.setClipRect(0, 0, 1, 1)  # only the measuring matters, not the pixels
        try:
            paint_scene(target, painter, width, height)
        finally:
            painter.end()
        _deliver_layout(widget)
        if _geometry(target) == before:
            return


def _background(scene: Any) -> QColor:
    """The colour the scene's view paints behind the items (transparent for no brush)."""
    brush = scene.views()[0].backgroundBrush()
    colour = QColor(brush.color())
    if brush.style() == Qt.BrushStyle.NoBrush:
        colour.setAlpha(0)
    return colour


def paint_scene(target: Any, painter: QPainter, width: int, height: int,
                 explicit_clips: bool = False) -> None:
    """Paint ``target`` (a laid-out graphics item) into ``(0, 0, width, height)``.

    This is what pyqtgraph's ``ImageExporter.export`` does, minus its ``Parameter`` tree:
    tell every painted item that an export is running (scatter symbols are then drawn as
    paths, not cached pixmaps; the plot hides its auto-range button), then let the scene
    paint the item's rectangle. PNG and SVG both go through this one function, so an SVG
    shows exactly what the PNG shows. With ``explicit_clips`` (SVG) the items are painted
    one by one by :func:`_paint_items` instead of ``QGraphicsScene.render``.

    pyqtgraph's ``ImageExporter`` is not used because each instance builds a ``Parameter``
    tree (7 objects in reference cycles, alive until Python's cyclic GC runs, possibly in a
    worker thread, where freeing Qt objects crashes). The plain ``Exporter`` base class used
    here only holds the item: it dies by reference counting when this function returns.
    """
    helper = Exporter(target)
    scene = helper.getScene()
    source = QRectF(helper.getSourceRect())
    background = _background(scene)
    if background.alpha() > 0:
        painter.fillRect(QRectF(0, 0, width, height), background)
    device_width = helper.getTargetRect().width()
    options = {
        "antialias": True,
        "background": background,
        "painter": painter,
        "resolutionScale": width / device_width if device_width > 0 else 1.0,
    }
    items = helper.getPaintItems()
    # Items with a pixmap cache (the styled axes, gui/kit/style.py) would be painted from it:
    # as raster images in an SVG. Paint them directly while exporting.
    cached = [(i, i.cacheMode()) for i in items
              if i.cacheMode() != QGraphicsItem.CacheMode.NoCache]
    try:
        for cached_item, _mode in cached:
            cached_item.setCacheMode(QGraphicsItem.CacheMode.NoCache)
        helper.setExportMode(True, options)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        if explicit_clips:
            _paint_items(items, painter, source, width, height)
        else:
            scene.render(painter, QRectF(0, 0, width, height), source)
    finally:
        helper.setExportMode(False)
        for cached_item, mode in cached:
            cached_item.setCacheMode(mode)


def _scene_clip(item: QGraphicsItem) -> QPainterPath | None:
    """The clip Qt applies to ``item`` (its own and its ancestors' shapes), in scene units."""
    clip: QPainterPath | None = None
    flags = QGraphicsItem.GraphicsItemFlag
    node: QGraphicsItem | None = item
    own = True
    while node is not None:
        if node.flags() & (flags.ItemClipsToShape if own else flags.ItemClipsChildrenToShape):
            shape = node.sceneTransform().map(node.shape())
            clip = shape if clip is None else clip.intersected(shape)
        own = False
        node = node.parentItem()
    return clip


def _paint_items(items: list[Any], painter: QPainter, source: QRectF, width: int,
                 height: int) -> None:
    """Paint ``items`` (in paint order) like ``QGraphicsScene.render``, setting every clip.

    ``QSvgGenerator`` does not restore a clip on ``QPainter.restore()`` (Qt 6.10): after a
    text item clips itself to its box, every later curve of the plot would be written with
    that box as its clip path, and browsers and Inkscape would show the curves cut away. Each
    item gets its full clip (plot area, export rectangle) set explicitly before it paints.
    """
    to_target = QTransform.fromTranslate(-source.x(), -source.y()) * QTransform.fromScale(
        width / source.width(), height / source.height())
    page = QPainterPath()
    page.addRect(QRectF(0, 0, width, height))
    for item in items:
        if (not item.isVisible()
                or item.flags() & QGraphicsItem.GraphicsItemFlag.ItemHasNoContents):
            continue
        opacity = item.effectiveOpacity()
        if opacity <= 0.0:
            continue
        clip = _scene_clip(item)
        painter.save()
        try:
            painter.resetTransform()
            painter.setClipPath(page if clip is None else to_target.map(clip).intersected(page))
            painter.setTransform(item.deviceTransform(to_target))
            painter.setOpacity(opacity)
            option = QStyleOptionGraphicsItem()
            option.exposedRect = item.boundingRect()
            item.paint(painter, option, None)
        finally:
            painter.restore()


def render_image(item: Any, width: int, height: int) -> QImage:
    """Return ``view.export_item()`` (a plot widget or graphics item) rendered to a
    ``width × height`` ARGB32 image, its caption under the plots and as the image's
    ``Description`` text (which a saved PNG keeps)."""
    width, height = check_size(width, height)
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    with laid_out_for_export(item, width, height) as (target, plots, caption):
        paint_export(target, image, width, height, plots, caption, explicit_clips=False)
    if caption:
        image.setText("Description", caption)
    return image
