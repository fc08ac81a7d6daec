"""A plot range that holds still while the data move a little.

pyqtgraph's auto-range fits every change of the data exactly, so a slider drag moves the axes
on every step: the tick labels jitter, and each move re-generates the axes' text, the largest
part of a repaint in the explorer (``benchmarks/bench_gui.py`` prints the paint times).
:class:`SteadyViewBox` keeps auto-range on, but moves the shown
range only when the data leave it or shrink well inside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyqtgraph as pg

__all__ = ["KEEP_FRACTION", "MARGIN", "SteadyViewBox", "steady_range"]

#: The shown range is kept while the fitted one lies inside it and spans at least this
#: fraction of it: data never sit in less than 80 % of an axis.
KEEP_FRACTION = 0.8
#: A range that has to move is widened by this fraction of the fitted span on each side, so
#: that the next small changes fit in it.
MARGIN = 0.04


def steady_range(
    shown: Sequence[float], fitted: Sequence[float],
    keep_fraction: float = KEEP_FRACTION, margin: float = MARGIN,
) -> tuple[float, float]:
    """Return the ``(low, high)`` to show on one axis: ``shown`` when the auto-range ``fitted``
    lies inside it and spans at least ``keep_fraction`` of it, else ``fitted`` widened by
    ``margin`` of its span on each side. A zero-width ``fitted`` is returned as is (pyqtgraph
    widens it itself)."""
    low, high = float(fitted[0]), float(fitted[1])
    span = high - low
    if not span > 0:
        return low, high
    shown_low, shown_high = float(shown[0]), float(shown[1])
    if shown_low <= low and high <= shown_high and span >= keep_fraction * (shown_high - shown_low):
        return shown_low, shown_high
    return low - margin * span, high + margin * span


class SteadyViewBox(pg.ViewBox):
    """A ``ViewBox`` whose automatic range moves only when the data need it (:func:`steady_range`).

    Everything else is pyqtgraph's: a zoom or pan by hand turns auto-range off, and the "A"
    button or :meth:`autoRange` (the views' *Reset view*) fit the data exactly again: the first
    fit after auto-range is turned back on is pyqtgraph's own, without the rule or its margin.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._auto_ranging = False
        # Per axis: auto-range was just turned back on, so the next fit is exact.
        self._fit_exactly = [False, False]

    def enableAutoRange(self, axis: Any = None, enable: Any = True,  # pyqtgraph override
                        x: Any = None, y: Any = None) -> None:
        """pyqtgraph's ``enableAutoRange``; an axis turned back on is fitted exactly next."""
        was_off = [value is False for value in self.state["autoRange"]]
        super().enableAutoRange(axis, enable, x, y)
        for index, value in enumerate(self.state["autoRange"]):
            if was_off[index] and value is not False:
                self._fit_exactly[index] = True

    def updateAutoRange(self) -> None:  # pyqtgraph override
        """Run pyqtgraph's auto-range; :meth:`setRange` steadies the range it asks for."""
        self._auto_ranging = True
        try:
            super().updateAutoRange()
        finally:
            self._auto_ranging = False

    def setRange(self, rect: Any = None, xRange: Any = None, yRange: Any = None,
                 *args: Any, **kwargs: Any) -> None:  # pyqtgraph override
        """pyqtgraph's ``setRange``; during auto-range each axis keeps its range if it can."""
        if self._auto_ranging and rect is None:
            shown = self.viewRange()
            wanted = [xRange, yRange]
            for index, fitted in enumerate(wanted):
                if fitted is None:
                    continue
                if self._fit_exactly[index]:
                    self._fit_exactly[index] = False
                else:
                    wanted[index] = steady_range(shown[index], fitted)
            xRange, yRange = wanted
        super().setRange(rect, xRange, yRange, *args, **kwargs)
