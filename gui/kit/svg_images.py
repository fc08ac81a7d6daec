"""Embed an SVG's heatmap images enlarged by whole pixels, so that every viewer shows sharp cells.

``QSvgGenerator`` embeds a heatmap as its n × n source image, stretched by the group's matrix
to the plot's size. librsvg and Chromium ignore ``image-rendering="optimizeSpeed"`` and scale
it with bilinear smoothing: each cell becomes a blur spread over the whole cell. Enlarged here
with nearest neighbour (k × k identical pixels per cell) until one embedded pixel covers at most
half an output pixel, the same smoothing only softens each cell edge by less than one output
pixel. Cells already smaller than an output pixel (n = 1024 in a 1000-pixel export) have no
edge to keep, so those images stay as they are and the file stays its size.
"""

from __future__ import annotations

import base64
import math
import re

import numpy as np
from PySide6.QtCore import QBuffer, QIODevice
from PySide6.QtGui import QImage

__all__ = ["MAX_EMBEDDED_SIDE", "OVERSAMPLE", "enlarge_images", "png_bytes"]

#: Embedded pixels per output pixel wanted along each axis (2: still sharp on a HiDPI screen).
OVERSAMPLE = 2
#: Longest side of an enlarged image, in pixels: keeps a 256 × 256 map's file in the megabytes.
MAX_EMBEDDED_SIDE = 4096

# A style group of QSvgGenerator's output (never nested) holding images under a matrix.
_GROUP = re.compile(
    r'(<g\b[^>]*?\stransform="matrix\(([^)]*)\)"[^>]*>)((?:(?!<g\b).)*?)(</g>)', re.DOTALL)
_IMAGE = re.compile(r"<image\b[^>]*>")
_SIZE = re.compile(r'\s(width|height)="([0-9.eE+-]+)"')
_PNG_DATA = re.compile(r'(href="data:image/png;base64,)([^"]*)(")')


def enlarge_images(text: str) -> str:
    """Return the SVG ``text`` with every embedded PNG enlarged by whole pixels (see module)."""
    def group(match: re.Match[str]) -> str:
        opening, matrix, body, close = match.groups()
        if "<image" not in body:
            return match.group(0)
        try:
            a, b, c, d, _e, _f = (float(v) for v in matrix.split(","))
        except ValueError:
            return match.group(0)
        scale = (math.hypot(a, b), math.hypot(c, d))
        return opening + _IMAGE.sub(lambda tag: _enlarged(tag.group(0), scale), body) + close

    return _GROUP.sub(group, text)


def _factor(shown: float, pixels: int) -> int:
    """Whole enlargement of an axis whose source pixels are ``shown`` output pixels long."""
    if shown <= 1.0:
        return 1
    return max(1, min(math.ceil(OVERSAMPLE * shown), MAX_EMBEDDED_SIDE // max(pixels, 1)))


def _enlarged(tag: str, scale: tuple[float, float]) -> str:
    sizes = dict(_SIZE.findall(tag))
    data = _PNG_DATA.search(tag)
    if data is None or "width" not in sizes or "height" not in sizes:
        return tag
    image = QImage.fromData(base64.b64decode(data.group(2)), "PNG")
    if image.isNull() or image.width() == 0 or image.height() == 0:
        return tag
    kx = _factor(scale[0] * float(sizes["width"]) / image.width(), image.width())
    ky = _factor(scale[1] * float(sizes["height"]) / image.height(), image.height())
    if kx == 1 and ky == 1:
        return tag
    png = png_bytes(_repeat(image, kx, ky), "could not encode an enlarged heatmap image as PNG")
    encoded = base64.b64encode(png).decode("ascii")
    return tag[:data.start(2)] + encoded + tag[data.end(2):]


def _repeat(image: QImage, kx: int, ky: int) -> QImage:
    """``image`` with each pixel as a ``kx × ky`` block (exact nearest neighbour)."""
    image = image.convertToFormat(QImage.Format.Format_ARGB32)
    h, w = image.height(), image.width()
    raw = np.frombuffer(image.constBits(), np.uint8, count=image.bytesPerLine() * h)
    pixels = raw.reshape(h, image.bytesPerLine() // 4, 4)[:, :w]
    big = np.ascontiguousarray(np.repeat(np.repeat(pixels, ky, axis=0), kx, axis=1))
    # QImage does not own the numpy buffer: copy() before ``big`` goes away.
    return QImage(big.data, w * kx, h * ky, w * kx * 4, QImage.Format.Format_ARGB32).copy()


def png_bytes(image: QImage, error: str) -> bytes:
    """``image`` encoded as PNG; raises ``OSError(error)`` when Qt cannot encode it."""
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise OSError(error)
    return bytes(buffer.data().data())
