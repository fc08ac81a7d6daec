"""Export views to PNG, SVG, CSV and the clipboard (always on the GUI thread).

A view's export item is laid out at the requested size before rendering, so an export has
the requested pixel size and a proper layout even when the widget was never shown (pyqtgraph
would otherwise use a 640×480 layout, ENVIRONMENT.md trap 4).
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pyqtgraph as pg
from pyqtgraph.exporters.Exporter import Exporter
from PySide6.QtCore import QBuffer, QCoreApplication, QEvent, QIODevice, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontInfo,
    QGuiApplication,
    QImage,
    QPainter,
    QPainterPath,
    QRawFont,
    QResizeEvent,
    QTransform,
)
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import (
    QApplication,
    QGraphicsItem,
    QGraphicsWidget,
    QStyleOptionGraphicsItem,
    QWidget,
)

__all__ = [
    "SceneSvgExporter",
    "copy_to_clipboard",
    "export_all",
    "export_csv",
    "export_png",
    "export_svg",
    "export_view",
    "image_stats",
    "install_svg_exporter",
    "render_image",
    "render_svg",
]

_MIN_SIZE, _MAX_SIZE = 16, 8192


def _check_size(width: int, height: int) -> tuple[int, int]:
    width, height = int(width), int(height)
    for name, value in (("width", width), ("height", height)):
        if not _MIN_SIZE <= value <= _MAX_SIZE:
            raise ValueError(f"{name} must be in [{_MIN_SIZE}, {_MAX_SIZE}] pixels, got {value}")
    return width, height


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
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
    if isinstance(widget, pg.GraphicsView):
        from gui.kit.style import relayout

        relayout(widget)
    target = _export_target(widget)
    layout = getattr(target, "layout", None)
    if layout is not None and not callable(layout) and hasattr(layout, "activate"):
        layout.activate()


@contextlib.contextmanager
def _laid_out_at(item: Any, width: int, height: int) -> Iterator[Any]:
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


def _geometry(target: Any) -> list[tuple[float, float, float, float]]:
    rects = [i.sceneBoundingRect() for i in Exporter(target).getPaintItems()
             if isinstance(i, QGraphicsWidget)]
    return [(r.x(), r.y(), r.width(), r.height()) for r in rects]


def _settle_layout(widget: QWidget, target: Any, width: int, height: int) -> None:
    """Paint (clipped to one pixel) until the layout stops changing.

    An axis measures its tick labels only while it paints and then asks for more room, so
    the first paint at a new size uses a stale layout: without this, the first export of a
    view that was never shown at the export size had its plots shifted by the later width
    of the axes (and PNG and SVG of one view differed).
    """
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    for _attempt in range(4):
        before = _geometry(target)
        painter = QPainter(image)
        painter.setClipRect(0, 0, 1, 1)  # only the measuring matters, not the pixels
        try:
            _paint_scene(target, painter, width, height)
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


def _paint_scene(target: Any, painter: QPainter, width: int, height: int,
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
    worker thread; issue 8 section 1). The plain ``Exporter`` base class used here only
    holds the item: it dies by reference counting when this function returns.
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
    text item clipped itself to its box, every later curve of the plot was written with that
    box as its clip path, so browsers and Inkscape showed the curves cut away. Here each
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
    """Render a view's export item to a ``width × height`` image.

    Parameters
    ----------
    item
        ``view.export_item()``: a ``PlotWidget``, ``GraphicsLayoutWidget`` or graphics item.
    width, height
        Image size in pixels.

    Returns
    -------
    QImage
        The rendered image (ARGB32).
    """
    width, height = _check_size(width, height)
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    with _laid_out_at(item, width, height) as target:
        painter = QPainter(image)
        try:
            _paint_scene(target, painter, width, height)
        finally:
            painter.end()
    return image


def export_png(item: Any, path: str | os.PathLike[str], width: int, height: int) -> Path:
    """Write ``item`` as a ``width × height`` PNG to ``path`` and return the path."""
    path = Path(path)
    image = render_image(item, width, height)
    if not image.save(str(path), "PNG"):
        raise OSError(f"could not write PNG to {path}")
    return path


#: Ask every SVG viewer to scale embedded images (heatmaps) without smoothing. The SVG 1.1
#: keyword is the one Qt's renderer, Inkscape and the browsers all honour; a CSS
#: ``image-rendering:pixelated`` style would override it and Qt would then smooth.
_PIXELATED = 'image-rendering="optimizeSpeed"'
_IMAGE_TAG = re.compile(r"<image\b[^>]*>")
_RENDERING_ATTRIBUTE = re.compile(r'\s(?:image-rendering|style)="[^"]*"')


def _pixelated(tag: re.Match[str]) -> str:
    return _RENDERING_ATTRIBUTE.sub("", tag.group(0)).replace("<image", f"<image {_PIXELATED}", 1)


_FONT = re.compile(r'font-family="([^"]*)" font-size="([0-9.]+)"')


def _font_as_painted(match: re.Match[str], cache: dict[tuple[str, str], str]) -> str:
    """Write the family and pixel size Qt really painted with, not the ones requested.

    ``QSvgGenerator`` writes the requested family (often the alias "Sans Serif", unknown to
    other SVG viewers) and the requested size in pixels (11 pt = 14.67 px), while Qt's font
    engine drew the PNG with a concrete family at a size rounded to whole pixels (15 px) and
    laid the text out with those advances: with the requested size, the pieces of a rich-text
    label (a subscript after its base letter) drift apart.
    """
    key = (match.group(1), match.group(2))
    if key not in cache:
        font = QFont(key[0])
        dpi = QGuiApplication.primaryScreen().logicalDotsPerInch() if (
            QGuiApplication.primaryScreen() is not None) else 96.0
        font.setPointSizeF(float(key[1]) * 72.0 / dpi)
        family = QFontInfo(font).family().replace('"', "")
        size = QRawFont.fromFont(font).pixelSize() or float(key[1])
        cache[key] = f'font-family="{escape(family)}" font-size="{size:g}"'
    return cache[key]


def render_svg(item: Any, width: int, height: int, title: str = "") -> bytes:
    """Render a view's export item as SVG (vector) with the layout of a ``width × height`` PNG.

    The scene is painted by the same code as :func:`render_image`, into Qt's
    ``QSvgGenerator`` instead of a ``QImage``. pyqtgraph's ``SVGExporter`` is not used: it
    re-creates every item's path from its own transform and misplaces data on log axes,
    draws markers and ticks from a different layout, flattens rich-text subscripts and
    smooths images (issue 8 section 3).

    Parameters
    ----------
    item
        ``view.export_item()``.
    width, height
        Size of the drawing (SVG user units = pixels of the equivalent PNG).
    title
        Written as the SVG's ``<title>``.

    Returns
    -------
    bytes
        The SVG document (UTF-8).
    """
    width, height = _check_size(width, height)
    with _laid_out_at(item, width, height) as target:
        return _svg_document(target, width, height, title)


def _svg_document(target: Any, width: int, height: int, title: str = "") -> bytes:
    """Paint ``target`` as laid out now into an SVG document of ``width × height`` units."""
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # SVG 1.1 (not the default SVG Tiny 1.2) so that the plots' clipping is written as
    # <clipPath>; the resolution of a QImage so that point-sized fonts get the PNG's pixel size.
    generator = QSvgGenerator(QSvgGenerator.SvgVersion.Svg11)
    generator.setOutputDevice(buffer)
    generator.setSize(QSize(width, height))
    generator.setViewBox(QRectF(0, 0, width, height))
    generator.setResolution(QImage(1, 1, QImage.Format.Format_ARGB32).logicalDpiX())
    if title:
        generator.setTitle(title)
    painter = QPainter(generator)
    try:
        _paint_scene(target, painter, width, height, explicit_clips=True)
    finally:
        painter.end()
    buffer.close()
    text = bytes(buffer.data().data()).decode("utf-8")
    text = _IMAGE_TAG.sub(_pixelated, text)
    fonts: dict[tuple[str, str], str] = {}
    text = _FONT.sub(lambda m: _font_as_painted(m, fonts), text)
    return text.encode("utf-8")


class SceneSvgExporter(Exporter):
    """pyqtgraph's right-click *Export…* dialog's SVG format, drawn like :func:`render_svg`.

    Installed in place of pyqtgraph's ``SVGExporter`` by :func:`install_svg_exporter`, so
    that the plots' context menu writes the same SVG as the File menu (for the clicked item,
    at its size on screen). It has no options, hence no ``Parameter`` tree.
    """

    Name = "Scalable Vector Graphics (SVG)"
    allowCopy = False

    def parameters(self) -> None:
        return None

    def export(self, fileName: str | None = None, toBytes: bool = False,
               copy: bool = False) -> bytes | None:
        if fileName is None and not toBytes:
            self.fileSaveDialog(filter=f"{self.Name} (*.svg)")
            return None
        rect = self.getTargetRect()
        width = min(max(round(rect.width()), _MIN_SIZE), _MAX_SIZE)
        height = min(max(round(rect.height()), _MIN_SIZE), _MAX_SIZE)
        data = _svg_document(self.item, width, height)
        if toBytes:
            return data
        Path(fileName).write_bytes(data)  # type: ignore[arg-type]
        return None


def install_svg_exporter() -> None:
    """Make pyqtgraph's export dialog use :class:`SceneSvgExporter` for SVG (idempotent)."""
    from pyqtgraph.exporters.SVGExporter import SVGExporter

    registry = Exporter.Exporters
    for index, cls in enumerate(registry):
        if cls is SVGExporter:
            registry[index] = SceneSvgExporter
    if SceneSvgExporter not in registry:
        registry.append(SceneSvgExporter)


def export_svg(item: Any, path: str | os.PathLike[str], width: int = 1200,
               height: int = 800) -> Path:
    """Write ``item`` as an SVG (laid out at ``width × height``) to ``path``."""
    path = Path(path)
    data = render_svg(item, width, height)
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise OSError(f"could not write SVG to {path}: {exc}") from exc
    return path


def export_csv(header: Sequence[str], rows: Iterable[Sequence[Any]],
               path: str | os.PathLike[str]) -> Path:
    """Write a CSV file with ``header`` and ``rows`` (NaN written as an empty cell)."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(list(header))
        for row in rows:
            writer.writerow(
                ["" if isinstance(v, float) and math.isnan(v) else v for v in row]
            )
    return path


def copy_to_clipboard(item: Any, width: int, height: int) -> QImage:
    """Put a ``width × height`` rendering of ``item`` on the clipboard; return the image."""
    image = render_image(item, width, height)
    QApplication.clipboard().setImage(image)
    return image


def export_view(view: Any, folder: str | os.PathLike[str], width: int, height: int,
                formats: Sequence[str] = ("png", "svg", "csv")) -> list[Path]:
    """Export one view as ``<key>.png``, ``<key>.svg`` and ``<key>.csv`` into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if "png" in formats:
        written.append(export_png(view.export_item(), folder / f"{view.key}.png", width, height))
    if "svg" in formats:
        written.append(export_svg(view.export_item(), folder / f"{view.key}.svg", width, height))
    if "csv" in formats:
        header, rows = view.data_table()
        written.append(export_csv(header, rows, folder / f"{view.key}.csv"))
    return written


def export_all(views: Iterable[Any], folder: str | os.PathLike[str], session: Any = None,
               width: int = 1200, height: int = 800) -> list[Path]:
    """Export every view (PNG, SVG, CSV) and the session JSON into ``folder``.

    Parameters
    ----------
    views
        The explorer views.
    folder
        Destination folder (created if missing).
    session
        A :class:`gui.session.Session` written as ``session.json``, or ``None``.
    width, height
        Image size in pixels.

    Returns
    -------
    list of Path
        Every file written.
    """
    from gui.session import save_session

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for view in views:
        written.extend(export_view(view, folder, width, height))
    if session is not None:
        path = folder / "session.json"
        save_session(path, session)
        written.append(path)
    return written


def image_stats(image: QImage | str | os.PathLike[str]) -> dict[str, float]:
    """Return size and blankness measures of an image (used by the self-test and tests).

    Returns
    -------
    dict
        ``width``, ``height``, ``colors`` (distinct RGB values) and ``non_background``
        (share of pixels that differ from the most common colour).
    """
    import numpy as np

    if not isinstance(image, QImage):
        image = QImage(str(image))
    if image.isNull():
        raise ValueError("the image could not be read")
    img = image.convertToFormat(QImage.Format.Format_RGB32)
    arr = pg.functions.ndarray_from_qimage(img)
    rgb = np.ascontiguousarray(arr[..., :3]).reshape(-1, 3).astype(np.uint32)
    packed = (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2]
    values, counts = np.unique(packed, return_counts=True)
    return {
        "width": float(img.width()),
        "height": float(img.height()),
        "colors": float(values.size),
        "non_background": float(1.0 - counts.max() / packed.size),
    }
