"""Pinned curves: a view's curves frozen as a faded, labelled reference the live ones draw over.

A :class:`Pin` holds plain numbers (the curves' x and y, their colour, which plot), so it is
saved in a session and drawn again after loading. :class:`PinBoard` draws the pins of every
view: faded copies of the curves behind the live ones (dashed, dotted, dash-dotted for the
first, second and third pin) and one label in the view's first plot naming each pin's
parameters. Pins are scene items, so every image export shows them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from gui.kit.i18n import translate

__all__ = ["MAX_PINS", "Pin", "PinBoard", "PinnedCurve", "capture_pin", "pin_from_dict"]

#: Pins per view: more faded copies make a plot unreadable.
MAX_PINS = 3
#: Points per pinned curve kept (a session file stays small).
MAX_POINTS = 100_000
_STYLES = (Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
_STYLE_MARKS = ("– –", "···", "–·–")
_FADED_ALPHA = 110
_PIN_Z = -5.0  # behind the live curves


@dataclasses.dataclass(frozen=True)
class PinnedCurve:
    """One frozen curve: plot ``plot`` of the view (layout order), its points and colour."""

    plot: int
    x: tuple[float, ...]
    y: tuple[float, ...]
    color: str


@dataclasses.dataclass(frozen=True)
class Pin:
    """A view's curves at one moment, with a label naming the parameters they came from."""

    view: str
    label: str
    curves: tuple[PinnedCurve, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (non-finite values as null)."""
        def listed(values: tuple[float, ...]) -> list[float | None]:
            return [v if math.isfinite(v) else None for v in values]

        return {"view": self.view, "label": self.label,
                "curves": [{"plot": c.plot, "x": listed(c.x), "y": listed(c.y),
                            "color": c.color} for c in self.curves]}


def pin_from_dict(data: Any, view_keys: Iterable[str]) -> Pin:
    """Validate a :meth:`Pin.to_dict` dictionary; ``ValueError`` naming what is wrong."""
    keys = tuple(view_keys)
    if not isinstance(data, Mapping):
        raise ValueError("a pin must be an object")
    view, label, curves = data.get("view"), data.get("label"), data.get("curves")
    if view not in keys:
        raise ValueError(f"pin view must be one of {', '.join(keys)}, got {view!r}"[:300])
    if not isinstance(label, str) or len(label) > 500:
        raise ValueError("pin label must be a string of at most 500 characters")
    if not isinstance(curves, list) or not 1 <= len(curves) <= 200:
        raise ValueError("pin curves must be a list of 1 to 200 curves")
    out = []
    for curve in curves:
        if not isinstance(curve, Mapping):
            raise ValueError("a pinned curve must be an object")
        plot, color = curve.get("plot"), curve.get("color")
        if isinstance(plot, bool) or not isinstance(plot, int) or not 0 <= plot < 100:
            raise ValueError(f"pinned curve plot must be an integer in [0, 100), got {plot!r}"
                             [:200])
        if not isinstance(color, str) or not QColor.isValidColorName(color):
            raise ValueError(f"pinned curve color must be a colour name, got {color!r}"[:200])
        x, y = _numbers(curve.get("x"), "x"), _numbers(curve.get("y"), "y")
        if len(x) != len(y):
            raise ValueError(f"pinned curve x and y differ in length ({len(x)} vs {len(y)})")
        out.append(PinnedCurve(plot=plot, x=x, y=y, color=color))
    return Pin(view=view, label=label, curves=tuple(out))


def _numbers(values: Any, name: str) -> tuple[float, ...]:
    if not isinstance(values, list) or len(values) > MAX_POINTS:
        raise ValueError(f"pinned curve {name} must be a list of at most {MAX_POINTS} numbers")
    out = []
    for v in values:
        if v is None:
            out.append(math.nan)
        elif isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError(f"pinned curve {name} holds a non-number: {v!r}"[:200])
        else:
            out.append(float(v))
    return tuple(out)


def _is_pin(item: Any) -> bool:
    return getattr(item, "_ase_pin", False)


def capture_pin(view: Any, label: str) -> Pin | None:
    """The visible curves of ``view`` as a pin, or None when it draws no curves (a heatmap)."""
    curves = []
    for index, plot in enumerate(view.plots()):
        for item in plot.listDataItems():
            if not isinstance(item, pg.PlotDataItem) or _is_pin(item) or not item.isVisible():
                continue
            x, y = item.getOriginalDataset()
            if x is None or y is None or len(x) == 0:
                continue
            pen = item.opts.get("pen")
            color = pg.mkPen(pen).color() if pen is not None else QColor("#666666")
            if color.alpha() == 0:  # markers only: their fill colour
                brush = item.opts.get("symbolBrush")
                color = pg.mkBrush(brush).color() if brush is not None else QColor("#666666")
            step = max(1, math.ceil(len(x) / MAX_POINTS))
            curves.append(PinnedCurve(
                plot=index, x=tuple(float(v) for v in np.asarray(x, float)[::step]),
                y=tuple(float(v) for v in np.asarray(y, float)[::step]),
                color=color.name()))
    return Pin(view=view.key, label=label, curves=tuple(curves)) if curves else None


class PinBoard:
    """The pins of every view, drawn into the views.

    Parameters
    ----------
    views
        The views pins may belong to, by key.
    """

    def __init__(self, views: Mapping[str, Any]) -> None:
        self._views = dict(views)
        self._pins: dict[str, list[Pin]] = {}
        self._items: dict[str, list[Any]] = {}

    def pins(self) -> tuple[Pin, ...]:
        """Every pin, view by view, oldest first."""
        return tuple(pin for pins in self._pins.values() for pin in pins)

    def add(self, pin: Pin) -> None:
        """Draw ``pin`` in its view; ``ValueError`` when the view has :data:`MAX_PINS` already."""
        pins = self._pins.setdefault(pin.view, [])
        if len(pins) >= MAX_PINS:
            raise ValueError(translate(
                "MainWindow", "A view holds at most {0} pins: clear them first.").format(MAX_PINS))
        pins.append(pin)
        self._redraw(pin.view)

    def clear(self, key: str | None = None) -> None:
        """Remove the pins of view ``key`` (every view's when None)."""
        for view in [key] if key is not None else list(self._pins):
            self._pins.pop(view, None)
            self._redraw(view)

    def set_pins(self, pins: Iterable[Pin]) -> None:
        """Replace every pin (a session was loaded)."""
        self.clear()
        for pin in pins:
            if len(self._pins.get(pin.view, ())) < MAX_PINS:
                self._pins.setdefault(pin.view, []).append(pin)
        for view in self._pins:
            self._redraw(view)

    def relabel(self) -> None:
        """Re-word the labels in the current language."""
        for view in self._pins:
            self._redraw(view)

    def label_text(self, key: str) -> str:
        """The label the pins of view ``key`` show ("" without pins)."""
        line = translate("MainWindow", "{0} pin {1}: {2}")
        lines = [line.format(_STYLE_MARKS[i], i + 1, pin.label)
                 for i, pin in enumerate(self._pins.get(key, ()))]
        return "\n".join(lines)

    def _redraw(self, key: str) -> None:
        for item in self._items.pop(key, []):
            if isinstance(item, pg.PlotDataItem):
                item._ase_plot.removeItem(item)
            elif item.scene() is not None:
                item.scene().removeItem(item)
        view = self._views.get(key)
        pins = self._pins.get(key, [])
        if view is None or not pins:
            return
        plots = view.plots()
        items: list[Any] = []
        for number, pin in enumerate(pins):
            for curve in pin.curves:
                if curve.plot >= len(plots):
                    continue
                color = QColor(curve.color)
                color.setAlpha(_FADED_ALPHA)
                pen = pg.mkPen(color, width=2.0, style=_STYLES[number % len(_STYLES)])
                item = pg.PlotDataItem(np.asarray(curve.x), np.asarray(curve.y), pen=pen,
                                       connect="finite")
                item._ase_pin = True
                item._ase_plot = plots[curve.plot]
                item.setZValue(_PIN_Z)
                plots[curve.plot].addItem(item, ignoreBounds=True)
                items.append(item)
        if plots:
            label = pg.TextItem(self.label_text(key), color="#444444", anchor=(0, 0),
                                fill=pg.mkBrush(255, 255, 255, 200))
            label.setParentItem(plots[0].getViewBox())
            label.setPos(4, 4)
            label.setZValue(50)
            label._ase_pin = True
            items.append(label)
        self._items[key] = items
