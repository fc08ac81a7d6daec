"""The caption line under an exported figure: what it shows (source, rule, settings).

A figure pasted into slides or a paper loses the window around it: which q, k (random with
which n, d_k, σ, ρ and seed, or which file, layer and head), which rule, which learning rate.
The window keeps each view's caption up to date on its export widget (:func:`set_caption`, a Qt
property: no Python reference to the window, so no reference cycle); the PNG, SVG and PDF
exports draw it in a strip below the plots (:func:`caption_height`, :func:`draw_caption`) and
the PNG also carries it as its ``Description`` text.
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter
from PySide6.QtWidgets import QWidget

from gui.kit import style

__all__ = ["CAPTION_PROPERTY", "caption_height", "caption_of", "draw_caption", "set_caption"]

#: The Qt property of an export widget that holds its caption ("" or missing: none).
CAPTION_PROPERTY = "exportCaption"
#: Left and right margin (the notes' under the plots) and top and bottom margin, in pixels.
_SIDE, _MARGIN = 12, 6
_FLAGS = Qt.TextFlag.TextWordWrap | Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter


def set_caption(widget: QWidget, text: str) -> None:
    """Make ``text`` the caption of every export of ``widget`` ("" for none)."""
    widget.setProperty(CAPTION_PROPERTY, text)


def caption_of(item: Any) -> str:
    """The caption of the export item ``item`` ("" when it has none or is not a widget)."""
    if not isinstance(item, QWidget):
        return ""
    text = item.property(CAPTION_PROPERTY)
    return text if isinstance(text, str) else ""


def _font() -> Any:
    return style.font(style.TEXT_PT)


def caption_height(text: str, width: int, height: int) -> int:
    """Pixels the caption ``text`` takes at the bottom of a ``width × height`` export, wrapped
    to the width; 0 for no caption. At most a quarter of the height: a tiny export keeps its
    plots and shows what of the caption fits."""
    if not text:
        return 0
    metrics = QFontMetricsF(_font())
    box = metrics.boundingRect(QRectF(0, 0, max(width - 2 * _SIDE, 1), 10_000),
                               int(_FLAGS), text)
    return min(math.ceil(box.height()) + 2 * _MARGIN, height // 4)


def draw_caption(painter: QPainter, text: str, width: int, top: int, bottom: int,
                 background: QColor) -> None:
    """Paint ``text`` wrapped in the strip from ``top`` to ``bottom`` on ``background``."""
    if not text or bottom <= top:
        return
    painter.save()
    try:
        painter.resetTransform()
        painter.setClipRect(QRectF(0, top, width, bottom - top))
        if background.alpha() > 0:
            painter.fillRect(QRectF(0, top, width, bottom - top), background)
        painter.setFont(_font())
        painter.setPen(QColor(style.FOREGROUND))
        painter.drawText(QRectF(_SIDE, top, width - 2 * _SIDE, bottom - top), int(_FLAGS),
                         text)
    finally:
        painter.restore()
