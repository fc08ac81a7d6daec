"""What a weight's colour means in the heatmap: the colour scale and the colour map.

The scale is log₁₀ p (the default: a row spread over n keys sits at log₁₀(1/n), far from the
one-hot rows of no scaling, at any n), linear p, or p divided by each map's largest weight. The
maps are viridis and cividis (which reads the same under red–green colour-vision deficiency).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from gui.kit import style
from gui.kit.i18n import translate

__all__ = ["COLOUR_MAPS", "LOG_DECADES_BELOW_UNIFORM", "MASKED_RGBA", "ColourChoice",
           "ColourScale", "colour_bar_label", "colour_levels", "colour_note", "masked_overlays",
           "shown_values"]

#: The log scale spans [log₁₀(1/n) − this, 0]: a uniform row (p = 1/n) sits in the upper
#: half of the bar, weights 100× below uniform and less share the darkest colour.
LOG_DECADES_BELOW_UNIFORM = 2.0
#: RGBA of a masked cell of a real head (its weight is 0 because the key is masked, not
#: because attention chose 0).
MASKED_RGBA = (200, 200, 200, 255)
#: The colour maps offered (pyqtgraph names), both perceptually uniform.
COLOUR_MAPS = (style.HEATMAP_COLORMAP, "cividis")


class ColourScale(StrEnum):
    """How a weight p becomes a colour."""

    LOG = "log"  #: log₁₀ p on [log₁₀(1/n) − 2, 0], shared by every map
    LINEAR = "linear"  #: p on [0, 1], shared by every map
    PER_MAP = "per_map"  #: p ÷ the largest p of its own map, on [0, 1]


def colour_levels(scale: ColourScale, n: int) -> tuple[float, float]:
    """The values at the two ends of the colour bar for maps of ``n`` keys."""
    if scale is ColourScale.LOG:
        return (-math.log10(n) - LOG_DECADES_BELOW_UNIFORM, 0.0)
    return (0.0, 1.0)


def shown_values(scale: ColourScale, weights: np.ndarray, n: int) -> np.ndarray:
    """The values one map's weights are drawn with (what the colour bar's axis reads)."""
    if scale is ColourScale.LOG:
        # float32 is exact enough for colours and keeps n = 2048 maps cheap; weights below
        # the bar's floor (and masked zeros) take the darkest colour.
        floor = np.float32(10.0 ** colour_levels(scale, n)[0])
        return np.log10(np.maximum(np.asarray(weights, dtype=np.float32), floor))
    if scale is ColourScale.PER_MAP:
        largest = float(np.max(weights))
        return np.asarray(weights) / largest if largest > 0 else np.asarray(weights)
    return np.asarray(weights)


def colour_bar_label(scale: ColourScale) -> str:
    """The colour bar's axis label (plain text), naming the scale."""
    if scale is ColourScale.LOG:
        return translate("HeatmapView", "log₁₀ p")
    if scale is ColourScale.PER_MAP:
        return translate("HeatmapView", "p ÷ largest p of its map")
    return "p"


def colour_note(scale: ColourScale, n: int) -> str:
    """The sentence of the heatmap's note that says what a colour means."""
    if scale is ColourScale.LOG:
        low = colour_levels(scale, n)[0]
        return translate(
            "HeatmapView", "Colour: log₁₀ p of the softmax weight p; a uniform row is at "
            "log₁₀(1/n) = {0}; weights 100× below uniform (p ≤ {1}) share the darkest "
            "colour.",
        ).format(f"{low + LOG_DECADES_BELOW_UNIFORM:.2f}", f"{10.0 ** low:.2g}")
    if scale is ColourScale.PER_MAP:
        return translate("HeatmapView", "Colour: softmax weight p ÷ the largest p of its own map.")
    return translate("HeatmapView", "Colour: p = softmax weight.")


class ColourChoice(QWidget):
    """The colour scale and colour map selectors above the maps."""

    scaleChanged = Signal()
    mapChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self._scale_label, self._scale = QLabel(), QComboBox()
        for scale in ColourScale:
            self._scale.addItem("", scale.value)
        self._map_label, self._map = QLabel(), QComboBox()
        for name in COLOUR_MAPS:
            self._map.addItem("", name)
        for widget in (self._scale_label, self._scale, self._map_label, self._map):
            row.addWidget(widget)
        self._scale.currentIndexChanged.connect(self.scaleChanged)
        self._map.currentIndexChanged.connect(self.mapChanged)

    def retranslate_ui(self) -> None:
        """Set the selectors' texts in the current language."""
        self._scale_label.setText(translate("HeatmapView", "Colour scale:"))
        self._scale.setItemText(0, translate("HeatmapView", "log₁₀ p"))
        self._scale.setItemText(1, translate("HeatmapView", "linear p"))
        self._scale.setItemText(2, translate("HeatmapView", "p ÷ largest p of each map"))
        self._scale.setToolTip(translate(
            "HeatmapView", "log₁₀ p shows how spread a row is at any n; linear p shows only "
            "weights near 1; per map stretches each map to its own largest weight"))
        self._map_label.setText(translate("HeatmapView", "Colours:"))
        self._map.setItemText(0, "viridis")
        self._map.setItemText(1, translate("HeatmapView", "cividis (colour-blind safe)"))
        self._map.setToolTip(translate(
            "HeatmapView", "Both maps are perceptually uniform; cividis also reads the same "
            "under red–green colour-vision deficiency"))

    def scale(self) -> ColourScale:
        """The selected colour scale."""
        return ColourScale(self._scale.currentData())

    def set_scale(self, scale: ColourScale | str) -> None:
        """Select the colour scale (as the selector does)."""
        self._scale.setCurrentIndex(self._scale.findData(ColourScale(scale).value))

    def map_name(self) -> str:
        """The selected colour map's pyqtgraph name."""
        return str(self._map.currentData())

    def set_map(self, name: str) -> None:
        """Select a colour map of :data:`COLOUR_MAPS` (as the selector does)."""
        index = self._map.findData(name)
        if index < 0:
            raise ValueError(f"unknown colour map {name!r}; choose one of {COLOUR_MAPS}")
        self._map.setCurrentIndex(index)


def masked_overlays(snapshot: Any, rules: Sequence[Any]) -> list[np.ndarray | None]:
    """RGBA overlays of the masked (−∞) logits of head 0 per rule (an ``AttentionSnapshot``'s),
    for a real head only; ``None`` where nothing is masked."""
    if snapshot.real_head is None:
        return [None] * len(rules)
    out: list[np.ndarray | None] = []
    for rule in rules:
        blocked = np.isneginf(snapshot.rules[rule].logits[0])
        if not blocked.any():
            out.append(None)
            continue
        rgba = np.zeros((*blocked.shape, 4), dtype=np.uint8)
        rgba[blocked] = MASKED_RGBA
        out.append(rgba)
    return out
