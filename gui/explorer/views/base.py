"""The base class of the explorer's views: plot views fed with :class:`ExplorerResults`."""

from __future__ import annotations

from gui.explorer.results import ExplorerResults
from gui.kit.plot_view import PlotView

__all__ = ["ExplorerView"]


class ExplorerView(PlotView):
    """A plot family of the explorer: receives :class:`ExplorerResults`, shows part of them.

    The explorer controller pushes the latest results from a ~30 Hz GUI timer to the visible
    views (hidden ones catch up when shown). A view whose plot sets the comparison temperature
    also has a ``temperatureChanged(float)`` signal, which the window connects to the
    controller.
    """

    def show_results(self, results: ExplorerResults) -> None:
        """Show ``results`` (cheap; skips work when the shown part did not change)."""
        raise NotImplementedError
