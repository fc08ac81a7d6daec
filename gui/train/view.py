"""The base class of the Train tab's views: plot views fed with :class:`TrainResults`."""

from __future__ import annotations

from gui.kit.plot_view import PlotView
from gui.train.results import TrainResults

__all__ = ["TrainView"]


class TrainView(PlotView):
    """A training view: receives :class:`TrainResults` from the training controller.

    The controller pushes the latest results at most every ``push_interval_ms`` to the visible
    views and calls :meth:`clear` on Reset.
    """

    def show_results(self, results: TrainResults) -> None:
        """Show ``results`` (cheap; skips work when the shown part did not change)."""
        raise NotImplementedError

    def clear(self) -> None:
        """Remove everything shown (the Train tab's Reset)."""
        raise NotImplementedError
