"""Heatmap images in an SVG are embedded enlarged by whole pixels, exactly, and only when their
cells are larger than an output pixel (file sizes stay sane for n = 1024)."""

from __future__ import annotations

import base64
import re

import numpy as np
from PySide6.QtCore import QBuffer, QIODevice
from PySide6.QtGui import QImage

from gui.kit.svg_images import MAX_EMBEDDED_SIDE, enlarge_images
from tests.gui.pixels import rgb


def _svg_with_image(pixels: np.ndarray, matrix: str) -> str:
    h, w = pixels.shape[:2]
    argb = np.dstack([pixels[..., 2], pixels[..., 1], pixels[..., 0],
                      np.full((h, w), 255, np.uint8)]).astype(np.uint8)
    image = QImage(np.ascontiguousarray(argb).data, w, h, 4 * w,
                   QImage.Format.Format_ARGB32).copy()
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    assert image.save(buffer, "PNG")
    data = base64.b64encode(bytes(buffer.data().data())).decode("ascii")
    return (f'<svg><g fill="none" transform="matrix({matrix})" font-size="12">\n'
            f'<image x="0" y="0" width="{w}" height="{h}" preserveAspectRatio="none" '
            f'xlink:href="data:image/png;base64,{data}" />\n</g></svg>')


def _embedded(text: str) -> QImage:
    data = re.search(r'base64,([^"]*)"', text).group(1)
    return QImage.fromData(base64.b64decode(data), "PNG")


def test_cells_become_blocks_of_identical_pixels():
    rng = np.random.default_rng(1)
    cells = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    # 7 × 5 cells shown 30 × 12 output pixels each (flipped vertically, as a colour bar is).
    text = enlarge_images(_svg_with_image(cells, "30,0,0,-12,50,400"))
    image = _embedded(text)
    assert (image.width(), image.height()) == (7 * 60, 5 * 24)
    expected = np.repeat(np.repeat(cells, 24, axis=0), 60, axis=1)
    assert np.array_equal(rgb(image), expected.astype(np.int16))
    assert 'width="7" height="5"' in text  # still drawn at the same place and size


def test_cells_smaller_than_an_output_pixel_stay_as_they_are():
    cells = np.zeros((1024, 1024, 3), np.uint8)
    cells[::2, ::3] = (200, 30, 90)
    svg = _svg_with_image(cells, "0.6,0,0,0.6,10,10")
    assert enlarge_images(svg) == svg


def test_enlargement_stops_at_the_largest_side():
    cells = np.full((300, 300, 3), 90, np.uint8)
    image = _embedded(enlarge_images(_svg_with_image(cells, "40,0,0,40,0,0")))
    assert image.width() == image.height() == 300 * (MAX_EMBEDDED_SIDE // 300)
