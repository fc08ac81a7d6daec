"""An axis that labels positions with a real head's tokens, as many as fit without overlap."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFontMetricsF

from gui.kit.axes import PlotAxis

__all__ = ["MAX_TOKEN_CHARS", "TokenAxis", "short_token"]

#: Pixels between two neighbouring token labels.
_GAP_PX = 8.0
#: Tokens longer than this are cut (with "…") so that one long token cannot eat the axis.
MAX_TOKEN_CHARS = 12


def short_token(token: str) -> str:
    """``token`` made printable on an axis: whitespace shown, cut to MAX_TOKEN_CHARS."""
    shown = token.replace("\n", "↵").replace("\t", "⇥")
    if not shown.strip():
        shown = "␣" * max(len(shown), 1)
    return shown if len(shown) <= MAX_TOKEN_CHARS else shown[:MAX_TOKEN_CHARS - 1] + "…"


class TokenAxis(PlotAxis):
    """A pyqtgraph axis that shows token strings at ``i + offset`` while tokens are set.

    Without tokens it is a plain :class:`pyqtgraph.AxisItem` (numbers, same drawing). With
    tokens it labels every k-th visible token, k chosen from the axis length in pixels and the
    widest label, so the labels never overlap at any zoom or export size.

    Parameters
    ----------
    orientation
        ``"bottom"``, ``"left"``, ...
    offset
        Where token i sits on the axis: 0.5 for the centre of heatmap cell i, 0 for sample i.
    """

    def __init__(self, orientation: str, offset: float = 0.5, **kwargs: Any) -> None:
        super().__init__(orientation, **kwargs)
        self._offset = float(offset)
        self._tokens: tuple[str, ...] | None = None
        self._label_px = 1.0
        self._first_tick = False  # the ticks drawn last start at token 0

    def set_tokens(self, tokens: Sequence[str] | None) -> None:
        """Label the axis with ``tokens`` (``None``: numbers again)."""
        tokens = None if tokens is None else tuple(short_token(t) for t in tokens)
        if tokens == self._tokens:
            return
        self._tokens = tokens
        if tokens:
            font = self.style["tickFont"] or self.font()
            metrics = QFontMetricsF(font)
            if self.orientation in ("bottom", "top"):
                self._label_px = max(metrics.horizontalAdvance(t) for t in tokens) + _GAP_PX
            else:
                self._label_px = metrics.height() + 2.0
        self.picture = None  # pyqtgraph caches the drawn axis
        self.update()

    def tickValues(self, minVal: float, maxVal: float, size: float) -> list:  # pyqtgraph override
        """Every k-th visible token position, k such that the labels fit in ``size`` pixels."""
        if self._tokens is None:
            return super().tickValues(minVal, maxVal, size)
        n = len(self._tokens)
        low = max(0, math.ceil(min(minVal, maxVal) - self._offset))
        high = min(n - 1, math.floor(max(minVal, maxVal) - self._offset))
        if high < low or size <= 0:
            return []
        fit = max(1, int(size // self._label_px))
        step = max(1, math.ceil((high - low + 1) / fit))
        start = math.ceil(low / step) * step
        self._first_tick = start == 0
        return [(float(step), [i + self._offset for i in range(start, high + 1, step)])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        """The tokens at ``values`` (numbers without tokens)."""  # pyqtgraph override
        if self._tokens is None:
            return super().tickStrings(values, scale, spacing)
        return [self._tokens[round(v - self._offset)] for v in values]

    def generateDrawSpecs(self, p: Any) -> Any:  # pyqtgraph override
        """pyqtgraph's ticks and labels, with token 0's label kept inside the axis.

        pyqtgraph drops every label that would stick out of the axis's ends, and token 0
        sits half a cell from the end: its label was never drawn, though attention sinks
        live there. It is moved inward until it fits, and a neighbour it now overlaps gives
        way.
        """
        specs = super().generateDrawSpecs(p)
        if specs is None or self._tokens is None or not self._first_tick:
            return specs
        axis_spec, tick_specs, text_specs = specs
        if not tick_specs:
            return specs
        along = 0 if self.orientation in ("bottom", "top") else 1
        first = tick_specs[0][1]  # pen, start, end of token 0's tick line
        x = first.x() if along == 0 else first.y()

        def centre(rect: QRectF) -> float:
            return rect.center().x() if along == 0 else rect.center().y()

        if any(abs(centre(rect) - x) < 0.5 for rect, _, _ in text_specs):
            return specs  # drawn where it belongs
        label = self._tokens[0]
        rect, flags = self._first_rect(p, x, text_specs)
        if rect is None or (self.boundingRect() & rect) != rect:
            return specs  # too wide for the axis (it widens to its labels on the next draw)
        gap = _GAP_PX / 2 if along == 0 else 1.0
        grown = rect.adjusted(-gap, -gap, gap, gap)
        kept = [spec for spec in text_specs if not spec[0].intersects(grown)]
        return axis_spec, tick_specs, [(rect, flags, label), *kept]

    def _first_rect(self, p: Any, x: float, text_specs: list) -> tuple[QRectF | None, Any]:
        """Where token 0's label fits inside the axis, as near its tick at ``x`` as it can."""
        bounds = self.boundingRect()  # what pyqtgraph lets labels reach
        size = p.boundingRect(QRectF(0, 0, 1000, 1000), Qt.AlignmentFlag.AlignCenter,
                              self._tokens[0]).size()
        width, height = size.width(), size.height() * 0.8  # pyqtgraph's measure of text
        own = self.mapRectFromParent(self.geometry())
        # Across the axis: where the other labels are, or where pyqtgraph puts them.
        offset = max(0, self.style["tickLength"]) + self.style["tickTextOffset"][
            0 if self.orientation in ("left", "right") else 1]
        if self.orientation == "bottom":
            left = min(max(x - width / 2, bounds.left()), bounds.right() - width)
            top = text_specs[0][0].top() if text_specs else own.top() + offset
            flags = Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
            return QRectF(left, top, width, height), flags | Qt.TextFlag.TextDontClip
        if self.orientation == "left":
            top = min(max(x - height / 2, bounds.top()), bounds.bottom() - height)
            right = text_specs[0][0].right() if text_specs else own.right() - offset
            flags = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
            return QRectF(right - width, top, width, height), flags | Qt.TextFlag.TextDontClip
        return None, None  # top and right axes never carry tokens here
