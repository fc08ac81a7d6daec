"""An axis that labels positions with a real head's tokens, as many as fit without overlap."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

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

    def tokens(self) -> tuple[str, ...] | None:
        """The (shortened) tokens shown, or ``None``."""
        return self._tokens

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
        return [(float(step), [i + self._offset for i in range(start, high + 1, step)])]

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        """The tokens at ``values`` (numbers without tokens)."""  # pyqtgraph override
        if self._tokens is None:
            return super().tickStrings(values, scale, spacing)
        return [self._tokens[round(v - self._offset)] for v in values]
