"""Export a view as a one-page vector PDF (curves, text and axes stay vectors).

The page is the export size at the resolution the PNG is painted at (Qt's logical 96 dpi:
1200 × 800 px is 900 × 600 pt), with the PNG's proportions and font sizes. It is painted by the
same :func:`gui.kit.render.paint_scene` as PNG and SVG. The resolution must be that of a
``QPicture``: pyqtgraph's axes record their drawing in one and a picture replayed on a device
of another resolution is scaled (at 72 dpi the axes came out at three quarters of their size).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QBuffer, QIODevice, QMarginsF, QSizeF
from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter, QPicture

from engine.io.files import write_output
from gui.kit.choices import check_size
from gui.kit.render import laid_out_for_export, paint_export

__all__ = ["export_pdf", "render_pdf"]

_POINTS_PER_INCH = 72


def render_pdf(item: Any, width: int, height: int, title: str = "") -> bytes:
    """The PDF bytes of ``item`` (a view's export item) laid out at ``width × height``."""
    width, height = check_size(width, height)
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buffer)
    dpi = QPicture().logicalDpiX()
    writer.setResolution(dpi)
    points = QSizeF(width * _POINTS_PER_INCH / dpi, height * _POINTS_PER_INCH / dpi)
    writer.setPageLayout(QPageLayout(
        QPageSize(points, QPageSize.Unit.Point, "", QPageSize.SizeMatchPolicy.ExactMatch),
        QPageLayout.Orientation.Portrait, QMarginsF(0, 0, 0, 0)))
    writer.setCreator("Attention Scale Explorer")
    writer.setTitle(title)
    with laid_out_for_export(item, width, height) as (target, plots, caption):
        paint_export(target, writer, width, height, plots, caption, explicit_clips=True)
    buffer.close()
    return bytes(buffer.data().data())


def export_pdf(item: Any, path: str | os.PathLike[str], width: int = 1200,
               height: int = 800) -> Path:
    """Write ``item`` as a one-page PDF (laid out at ``width × height``) to ``path``.

    The file appears whole or not at all; an ``OSError`` names ``path`` and the reason.
    """
    path = Path(path)
    data = render_pdf(item, width, height, title=path.stem)
    write_output(path, data)
    return path
