"""Pixel comparison of exports: where an image has coloured (and dark) ink, and how much of
it another rendering of the same export has within a few pixels; external renderers.

An exported PNG and the same view's SVG or PDF drawn back to pixels agree when their coloured
pixels (curves, markers, fills, heatmap cells; not the grey axes, grid and text) lie within
3 px of each other: a drawing in the wrong place, a filled outline or a shifted layout moves
coloured pixels by far more than that.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

from gui.kit.session import VIEW_KEYS
from tests.optional_tools import missing

WIDTH, HEIGHT = 1000, 700
#: A pixel is "coloured" when its channels spread by more than this (greys spread by ~0).
SATURATION = 60
#: A coloured pixel agrees when the other image has a coloured pixel within this distance.
RADIUS_PX = 3
MIN_AGREEMENT = 0.9
#: Every view the window exports (explorer and Train tab): the Heads and Model tabs need a
#: tensor file or a model first (tests/gui/test_heads_tab_tool.py, test_model_view.py).
ALL_KEYS = tuple(key for key in VIEW_KEYS if key not in ("heads", "model"))


def rgb(image: QImage) -> np.ndarray:
    """The image as an ``(h, w, 3)`` int array (R, G, B)."""
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    h, w = image.height(), image.width()
    raw = np.frombuffer(image.constBits(), np.uint8, count=image.bytesPerLine() * h)
    bgra = raw.reshape(h, image.bytesPerLine() // 4, 4)[:, :w]
    return bgra[..., 2::-1].astype(np.int16)


def coloured(pixels: np.ndarray) -> np.ndarray:
    return (pixels.max(axis=-1) - pixels.min(axis=-1)) > SATURATION


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """Every pixel within ``radius`` (Chebyshev distance) of a True pixel."""
    h, w = mask.shape
    padded = np.pad(mask, radius)
    out = np.zeros_like(mask)
    for dy in range(2 * radius + 1):
        for dx in range(2 * radius + 1):
            out |= padded[dy:dy + h, dx:dx + w]
    return out


def agreement(a: np.ndarray, b: np.ndarray, radius: int = RADIUS_PX) -> float:
    """Symmetric share of coloured pixels of one mask with a coloured pixel of the other
    within ``radius``: the smaller of the two directions."""
    a_in_b = (a & dilate(b, radius)).sum() / max(int(a.sum()), 1)
    b_in_a = (b & dilate(a, radius)).sum() / max(int(b.sum()), 1)
    return float(min(a_in_b, b_in_a))


def edge_mixing(png: np.ndarray, drawn: np.ndarray, flat: int = 3,
                jump: int = 80) -> np.ndarray:
    """How much each strong cell edge of the PNG is smeared in ``drawn`` (both ``(h, w, 3)``).

    An edge is a step of at least ``jump`` (in some channel) between two coloured pixels, each
    inside a run of ``flat`` equal pixels across it (a heatmap cell edge, horizontal or
    vertical). For each, the pixel one step further into each cell than the edge pixels
    themselves (which antialiasing of a fractional edge may mix) is read in ``drawn``: its
    distance from the PNG's colour there, as a share of the step. A sharp rendering gives
    ~0 (the step completes within 2 px); bilinear smoothing of an 8-px cell gives ~0.3-0.6.
    """
    found = []
    for a, r in ((png, drawn), (png.transpose(1, 0, 2), drawn.transpose(1, 0, 2))):
        span = a.shape[1] - 2 * flat + 1
        cols = [a[:, i:i + span] for i in range(2 * flat)]
        ok = np.ones(cols[0].shape[:2], bool)
        for i in range(flat - 1):
            ok &= np.abs(cols[i] - cols[i + 1]).max(axis=-1) <= 2
            ok &= np.abs(cols[flat + i] - cols[flat + i + 1]).max(axis=-1) <= 2
        low, high = cols[flat - 1], cols[flat]
        step = np.abs(low - high).max(axis=-1)
        ok &= (step >= jump) & coloured(low) & coloured(high)
        ys, xs = np.nonzero(ok)
        inside_low = np.abs(r[ys, xs + flat - 2] - low[ys, xs]).max(axis=-1)
        inside_high = np.abs(r[ys, xs + flat + 1] - high[ys, xs]).max(axis=-1)
        found.append(np.maximum(inside_low, inside_high) / step[ys, xs])
    return np.concatenate(found)


_SVG_TEXT = re.compile(r'<text\b[^>]*\sy="([0-9.]+)"[^>]*>([^<]*)</text>', re.S)


def svg_lines(text: str) -> list[str]:
    """The SVG's text runs joined into lines by baseline, top to bottom."""
    lines: dict[float, str] = {}
    for y, run in _SVG_TEXT.findall(text):
        lines[float(y)] = lines.get(float(y), "") + unescape(run).replace("\n", "")
    return [lines[y] for y in sorted(lines)]


def render_svg(data: bytes | str, width: int, height: int) -> QImage:
    """Render SVG text or a file with Qt's SVG renderer onto white at ``width × height``."""
    renderer = QSvgRenderer(data)
    assert renderer.isValid(), "Qt could not read the SVG"
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    renderer.render(painter, QRectF(0, 0, width, height))
    painter.end()
    return image


#: Set by .ci/run, which installs the renderers: there a missing one fails its tests.
REQUIRE_RENDERERS_ENV = "ASE_REQUIRE_SVG_RENDERERS"


def external_tool(name: str, package: str) -> str:
    """The path of the program ``name``; skip the test without it (fail under
    :data:`REQUIRE_RENDERERS_ENV`, where .ci/run has installed ``package``)."""
    tool = shutil.which(name)
    if tool is None:
        missing(REQUIRE_RENDERERS_ENV, name, f"apt-get install {package}")
    return tool


def rsvg_image(svg_path: Path, width: int, height: int) -> QImage:
    """The SVG at ``svg_path`` as librsvg (GNOME's viewers, LaTeX pipelines) draws it on white."""
    tool = external_tool("rsvg-convert", "librsvg2-bin")
    drawn = svg_path.with_name(svg_path.stem + "-rsvg.png")
    subprocess.run([tool, "-w", str(width), "-h", str(height), "-b", "white", str(svg_path),
                    "-o", str(drawn)], check=True, capture_output=True, timeout=60)
    return QImage(str(drawn))


def pdf_to_image(path: Path, width: int, height: int) -> QImage:
    """The first page of the PDF at ``path`` drawn by poppler's pdftoppm at ``width × height``."""
    tool = external_tool("pdftoppm", "poppler-utils")
    stem = path.with_name(path.stem + "-poppler")
    subprocess.run([tool, "-png", "-singlefile", "-scale-to-x", str(width), "-scale-to-y",
                    str(height), str(path), str(stem)], check=True, capture_output=True,
                   timeout=60)
    return QImage(str(stem) + ".png")


def chromium_images(svg_paths: list[Path], width: int, height: int) -> list[QImage]:
    """The SVGs at ``svg_paths`` as headless Chromium draws them at ``width × height`` each.

    One browser start for them all (each start costs about a second): the SVGs are stacked
    on one page, each as an ``<img>`` at the export size on white (the browser scales
    nothing and adds no margin), and the one screenshot is cut back into one image per SVG.
    """
    tool = shutil.which("chromium") or external_tool("chromium", "chromium")
    folder = svg_paths[0].parent
    page, shot = folder / "chromium-page.html", folder / "chromium-page.png"
    images = "".join(f'<img src="{path.as_uri()}" width="{width}" height="{height}"'
                     f' style="display:block">' for path in svg_paths)
    page.write_text(f'<html><body style="margin:0;background:white">{images}</body></html>',
                    encoding="utf-8")
    subprocess.run([tool, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--force-device-scale-factor=1",
                    f"--window-size={width},{height * len(svg_paths)}",
                    f"--screenshot={shot}", page.as_uri()], check=True, capture_output=True,
                   timeout=120)
    stacked = QImage(str(shot))
    assert (stacked.width(), stacked.height()) == (width, height * len(svg_paths))
    return [stacked.copy(0, index * height, width, height) for index in range(len(svg_paths))]
