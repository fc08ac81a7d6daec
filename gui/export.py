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
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyqtgraph as pg
import pyqtgraph.exporters as pg_exporters
from PySide6.QtCore import QCoreApplication, QEvent, QSize
from PySide6.QtGui import QImage, QResizeEvent
from PySide6.QtWidgets import QApplication, QWidget

__all__ = [
    "copy_to_clipboard",
    "export_all",
    "export_csv",
    "export_png",
    "export_svg",
    "export_view",
    "image_stats",
    "render_image",
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
    # QGraphicsLayouts re-arrange their items on a posted LayoutRequest; deliver those now
    # (targeted delivery, not an event-loop spin), then activate the top layout explicitly.
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
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
        yield _export_target(item)
    finally:
        widget.resize(old)
        _send_resize(widget, old, new)


def _set_exact_size(exporter: Any, width: int, height: int) -> None:
    # Setting one side makes pyqtgraph recompute the other from the aspect ratio; block that.
    params = exporter.parameters()
    params.param("width").setValue(width, blockSignal=exporter.widthChanged)
    params.param("height").setValue(height, blockSignal=exporter.heightChanged)


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
    with _laid_out_at(item, width, height) as target:
        exporter = pg_exporters.ImageExporter(target)
        _set_exact_size(exporter, width, height)
        image = exporter.export(toBytes=True)
    return image


def export_png(item: Any, path: str | os.PathLike[str], width: int, height: int) -> Path:
    """Write ``item`` as a ``width × height`` PNG to ``path`` and return the path."""
    path = Path(path)
    image = render_image(item, width, height)
    if not image.save(str(path), "PNG"):
        raise OSError(f"could not write PNG to {path}")
    return path


def export_svg(item: Any, path: str | os.PathLike[str], width: int = 1200,
               height: int = 800) -> Path:
    """Write ``item`` as an SVG (laid out at ``width × height``) to ``path``."""
    path = Path(path)
    width, height = _check_size(width, height)
    with _laid_out_at(item, width, height) as target:
        exporter = pg_exporters.SVGExporter(target)
        _set_exact_size(exporter, width, height)
        exporter.export(fileName=str(path))
    if not path.exists():
        raise OSError(f"could not write SVG to {path}")
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
