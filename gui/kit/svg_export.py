"""SVG export drawn by the same painter code as the PNG, for the File menu and the plots' menu.

pyqtgraph's own ``SVGExporter`` is replaced (:func:`install_svg_exporter`): the SVG is painted
by :func:`gui.kit.render.paint_scene` into Qt's ``QSvgGenerator``, so it shows what the PNG
shows, with the fonts Qt really painted with and heatmap cells sharp in every viewer.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from pyqtgraph.exporters.Exporter import Exporter
from PySide6.QtCore import QBuffer, QIODevice, QRectF, QSize
from PySide6.QtGui import QFont, QFontInfo, QGuiApplication, QImage, QRawFont
from PySide6.QtSvg import QSvgGenerator

from engine.io.files import write_bytes_atomic, write_output
from gui.kit.choices import MAX_SIZE, MIN_SIZE, check_size
from gui.kit.render import laid_out_for_export, paint_export
from gui.kit.svg_images import enlarge_images

__all__ = ["SceneSvgExporter", "export_svg", "install_svg_exporter", "render_svg"]


#: Ask SVG viewers to scale embedded images (heatmaps) without smoothing. Qt's renderer and
#: Inkscape honour this SVG 1.1 keyword (a CSS ``image-rendering:pixelated`` style would
#: override it and Qt would then smooth); librsvg and Chromium do not, hence
#: :func:`gui.kit.svg_images.enlarge_images`.
_PIXELATED = 'image-rendering="optimizeSpeed"'
_IMAGE_TAG = re.compile(r"<image\b[^>]*>")
_RENDERING_ATTRIBUTE = re.compile(r'\s(?:image-rendering|style)="[^"]*"')


def _pixelated(tag: re.Match[str]) -> str:
    return _RENDERING_ATTRIBUTE.sub("", tag.group(0)).replace("<image", f"<image {_PIXELATED}", 1)


_FONT = re.compile(r'font-family="([^"]*)" font-size="([0-9.]+)"')


# A style group of QSvgGenerator's output: its opening tag (with a matrix) and its body, up
# to the next closing tag (the generator does not nest style groups).
_MATRIX_GROUP = re.compile(
    r'(<g\b[^>]*?)\stransform="matrix\(([^)]*)\)"([^>]*>)((?:(?!<g\b).)*?)(</g>)', re.DOTALL)
_PATH = re.compile(r'<(?:path|polyline|polygon)\b[^>]*\b(?:d|points)="([^"]*)"[^>]*/>')
_RECT = re.compile(r'<rect\b([^>]*)/>')
_RECT_NUMBERS = re.compile(r'\b(x|y|width|height)="(-?[0-9.]+(?:e[-+]?[0-9]+)?)"')
_NUMBER_PAIR = re.compile(r"(-?[0-9.]+(?:e[-+]?[0-9]+)?),(-?[0-9.]+(?:e[-+]?[0-9]+)?)")


def _flatten_group(match: re.Match[str]) -> str:
    """Write a style group's paths in final coordinates, its transform dropped.

    ``QSvgGenerator`` writes a curve in data coordinates under the view's scaling matrix (e.g.
    ``matrix(114.8,0,0,-30.3,…)``) with ``vector-effect="non-scaling-stroke"``, so that its pen
    keeps its width. librsvg ignores that vector effect and strokes with the scaled pen: every
    curve becomes a band tens of pixels wide, markers get outlines eight times too thick. In final
    coordinates the transform is the identity and every viewer strokes the same line. Groups
    that hold anything but paths, polylines and (under an axis-aligned matrix) rectangles, such
    as text and images, keep their transform.
    """
    start, matrix, end, body, close = match.groups()
    try:
        a, b, c, d, e, f = (float(v) for v in matrix.split(","))
    except ValueError:
        return match.group(0)
    if (a, b, c, d, e, f) == (1.0, 0.0, 0.0, 1.0, 0.0, 0.0):
        return match.group(0)
    shapes = _PATH.sub("", body)
    if b == 0.0 and c == 0.0:  # an axis-aligned rectangle stays one under this matrix
        shapes = _RECT.sub("", shapes)
    if shapes.strip() or not (_PATH.search(body) or _RECT.search(body)):
        return match.group(0)  # not only paths, polylines and rectangles
    if re.search(r'\bd="[^"]*[HVSTAmlhvcsqtaz]', body):
        return match.group(0)  # a command whose numbers are not plain x,y pairs

    def point(pair: re.Match[str]) -> str:
        x, y = float(pair.group(1)), float(pair.group(2))
        return f"{a * x + c * y + e:.6g},{b * x + d * y + f:.6g}"

    def path(tag: re.Match[str]) -> str:
        whole = tag.group(0)
        return whole.replace(f'="{tag.group(1)}"', f'="{_NUMBER_PAIR.sub(point, tag.group(1))}"',
                             1)

    def rect(tag: re.Match[str]) -> str:
        box = {key: float(value) for key, value in _RECT_NUMBERS.findall(tag.group(1))}
        x0, y0 = a * box.get("x", 0.0) + e, d * box.get("y", 0.0) + f
        x1 = x0 + a * box.get("width", 0.0)
        y1 = y0 + d * box.get("height", 0.0)
        placed = {"x": min(x0, x1), "y": min(y0, y1), "width": abs(x1 - x0),
                  "height": abs(y1 - y0)}
        others = _RECT_NUMBERS.sub("", tag.group(1)).rstrip()
        numbers = " ".join(f'{key}="{value:.6g}"' for key, value in placed.items())
        return f"<rect{others} {numbers}/>"

    body = _PATH.sub(path, body)
    if b == 0.0 and c == 0.0:
        body = _RECT.sub(rect, body)
    return f"{start}{end}{body}{close}"


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
    """Return ``view.export_item()`` as an SVG document (UTF-8) titled ``title``, laid out like a
    ``width × height`` PNG (user units = its pixels).

    Painted by the same code as :func:`render_image`, into ``QSvgGenerator``; why not pyqtgraph's
    ``SVGExporter``: docs/design-notes.md. The item's caption is drawn below the plots (as
    ``<text>``) and is the document's ``<desc>``.
    """
    width, height = check_size(width, height)
    with laid_out_for_export(item, width, height) as (target, plots, caption):
        return _svg_document(target, width, height, title, plots, caption)


def _svg_document(target: Any, width: int, height: int, title: str = "",
                  plots: int | None = None, caption: str = "") -> bytes:
    """Paint ``target`` as laid out now into an SVG document of ``width × height`` units (the
    plots in the top ``plots``, ``caption`` below)."""
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
    if caption:
        generator.setDescription(caption)
    paint_export(target, generator, width, height, plots, caption, explicit_clips=True)
    buffer.close()
    text = bytes(buffer.data().data()).decode("utf-8")
    text = enlarge_images(_IMAGE_TAG.sub(_pixelated, text))
    text = _MATRIX_GROUP.sub(_flatten_group, text)
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
        width = min(max(round(rect.width()), MIN_SIZE), MAX_SIZE)
        height = min(max(round(rect.height()), MIN_SIZE), MAX_SIZE)
        data = _svg_document(self.item, width, height)
        if toBytes:
            return data
        write_bytes_atomic(fileName, data)  # type: ignore[arg-type]
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
    write_output(path, data)
    return path
