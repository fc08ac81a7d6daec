"""The explorer's plot views (one module per plot family) and their display order.

Every view subclasses :class:`gui.explorer.views.base.ExplorerView`; the main window creates one
of each class in :data:`ALL_VIEWS`, in this order.
"""

from __future__ import annotations

from gui.explorer.views.base import ExplorerView
from gui.explorer.views.correlation import CorrelationView
from gui.explorer.views.gradients import GradientView
from gui.explorer.views.heatmap import HeatmapView
from gui.explorer.views.histogram import HistogramView
from gui.explorer.views.laws import LawsView
from gui.explorer.views.length import LengthView
from gui.explorer.views.precision import PrecisionView
from gui.explorer.views.softmax import SoftmaxView
from gui.explorer.views.temperature import TemperatureView

__all__ = [
    "ALL_VIEWS",
    "CorrelationView",
    "ExplorerView",
    "GradientView",
    "HeatmapView",
    "HistogramView",
    "LawsView",
    "LengthView",
    "PrecisionView",
    "SoftmaxView",
    "TemperatureView",
    "view_class",
]

#: View classes in display order (tabs, docks and the View menu follow it).
ALL_VIEWS: tuple[type[ExplorerView], ...] = (
    HeatmapView,
    SoftmaxView,
    HistogramView,
    LawsView,
    GradientView,
    TemperatureView,
    CorrelationView,
    PrecisionView,
    LengthView,
)


def view_class(key: str) -> type[ExplorerView]:
    """Return the view class whose :attr:`~ExplorerView.key` is ``key``."""
    for cls in ALL_VIEWS:
        if cls.key == key:
            return cls
    keys = ", ".join(cls.key for cls in ALL_VIEWS)
    raise ValueError(f"unknown view key {key!r}; expected one of {keys}")
