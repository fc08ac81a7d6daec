"""The explorer's plot views (one module per plot family) and their display order.

Every view subclasses :class:`gui.views.base.ExplorerView`; the main window creates one of each
class in :data:`ALL_VIEWS`, in this order.
"""

from __future__ import annotations

from gui.views.base import ExplorerView
from gui.views.correlation import CorrelationView
from gui.views.gradients import GradientView
from gui.views.heatmap import HeatmapView
from gui.views.histogram import HistogramView
from gui.views.laws import LawsView
from gui.views.softmax import SoftmaxView
from gui.views.temperature import TemperatureView

__all__ = [
    "ALL_VIEWS",
    "CorrelationView",
    "ExplorerView",
    "GradientView",
    "HeatmapView",
    "HistogramView",
    "LawsView",
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
)


def view_class(key: str) -> type[ExplorerView]:
    """Return the view class whose :attr:`~ExplorerView.key` is ``key``."""
    for cls in ALL_VIEWS:
        if cls.key == key:
            return cls
    keys = ", ".join(cls.key for cls in ALL_VIEWS)
    raise ValueError(f"unknown view key {key!r}; expected one of {keys}")
