"""Export views to PNG, SVG, PDF, CSV and the clipboard (always on the GUI thread).

Everything here needs only the :class:`~gui.kit.plot_view.PlotView` interface of a view
(``key``, ``export_item()``, ``data_table()``), so explorer and training views export alike.
Rendering is :mod:`gui.kit.render` (raster), :mod:`gui.kit.svg_export` and
:mod:`gui.kit.pdf_export` (vector).
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyqtgraph as pg
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from engine.analysis.sweep import csv_cell
from engine.io.files import describe_os_error, write_output
from gui.kit.choices import FORMATS, check_formats
from gui.kit.pdf_export import export_pdf
from gui.kit.plot_view import PlotView
from gui.kit.render import render_image
from gui.kit.svg_export import export_svg
from gui.kit.svg_images import png_bytes

__all__ = [
    "IMAGE_WRITERS",
    "copy_to_clipboard",
    "export_all",
    "export_csv",
    "export_png",
    "export_view",
    "image_stats",
]


def export_png(item: Any, path: str | os.PathLike[str], width: int, height: int) -> Path:
    """Write ``item`` as a ``width × height`` PNG to ``path`` and return the path.

    The file appears whole or not at all; an ``OSError`` names ``path`` and the system's reason.
    """
    path = Path(path)
    image = render_image(item, width, height)
    write_output(path, png_bytes(image, f"could not encode the PNG for {path}"))
    return path


def export_csv(header: Sequence[str], rows: Iterable[Sequence[Any]],
               path: str | os.PathLike[str]) -> Path:
    """Write a CSV file with ``header`` and ``rows``, cells as the engine's sweep CSV writes them
    (:func:`engine.analysis.sweep.csv_cell`: NaN as ``nan``).

    The file appears whole or not at all; an ``OSError`` names ``path``.
    """
    path = Path(path)
    handle = io.StringIO(newline="")
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(list(header))
    for row in rows:
        writer.writerow([csv_cell(value) for value in row])
    write_output(path, handle.getvalue().encode("utf-8"))
    return path


def copy_to_clipboard(item: Any, width: int, height: int) -> QImage:
    """Put a ``width × height`` rendering of ``item`` on the clipboard; return the image."""
    image = render_image(item, width, height)
    QApplication.clipboard().setImage(image)
    return image


#: The image writers by file suffix, in the order an export writes them.
IMAGE_WRITERS = {"png": export_png, "svg": export_svg, "pdf": export_pdf}


def export_view(view: PlotView, folder: str | os.PathLike[str], width: int, height: int,
                formats: Sequence[str] = FORMATS) -> list[Path]:
    """Export one view as ``<key>.<format>`` for each of ``formats`` into ``folder``."""
    formats = check_formats(formats)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = [IMAGE_WRITERS[suffix](view.export_item(), folder / f"{view.key}.{suffix}", width,
                                     height) for suffix in IMAGE_WRITERS if suffix in formats]
    if "csv" in formats:
        header, rows = view.data_table()
        written.append(export_csv(header, rows, folder / f"{view.key}.csv"))
    return written


def export_all(views: Iterable[PlotView], folder: str | os.PathLike[str], session: Any = None,
               width: int = 1200, height: int = 800,
               formats: Sequence[str] = FORMATS) -> list[Path]:
    """Export every view (``formats`` of :data:`FORMATS`) and ``session`` (a
    :class:`gui.kit.session.Session` or ``None``) as ``session.json`` into ``folder``; return
    every file written.

    All files are written to a hidden folder first and moved into place once complete, so a
    failed export (``OSError``) changes no file in ``folder`` and leaves nothing behind.
    """
    from gui.kit.session import save_session

    formats = check_formats(formats)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        staging = Path(tempfile.mkdtemp(dir=folder, prefix=".export-", suffix=".part"))
    except OSError as exc:
        raise OSError(f"could not write into {folder}: {describe_os_error(exc)}") from exc
    try:
        staged: list[Path] = []
        try:
            for view in views:
                staged.extend(export_view(view, staging, width, height, formats))
            if session is not None:
                save_session(staging / "session.json", session)
                staged.append(staging / "session.json")
        except OSError as exc:  # name the file the user asked for, not its staged copy
            raise OSError(str(exc).replace(str(staging), str(folder))) from exc
        written = []
        for path in staged:
            target = folder / path.name
            os.replace(path, target)  # a rename within one folder: needs no free space
            written.append(target)
        return written
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)


def image_stats(image: QImage | str | os.PathLike[str]) -> dict[str, float]:
    """Return ``width``, ``height``, ``colors`` (distinct RGB values) and ``non_background``
    (share of pixels unlike the most common colour) of an image, to spot blank exports."""
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
