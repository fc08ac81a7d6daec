"""The base class of the Train tab's views: plot views fed with :class:`TrainResults`."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from gui.kit import style
from gui.kit.plot_view import PlotView

__all__ = ["TrainView"]


class TrainView(PlotView):
    """A training view: receives :class:`~gui.train.results.TrainResults` from the controller.

    The controller pushes the latest results at most every ``push_interval_ms`` to the visible
    views and calls :meth:`clear` on Reset. Every training view draws into one graphics layout
    (what export renders) and says in a note under its plots what they show.
    """

    _legend: pg.LegendItem

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._widget = style.make_layout_widget()
        self._layout.addWidget(self._widget, 1)
        self._note = style.make_label()

    def export_item(self) -> pg.GraphicsLayoutWidget:
        return self._widget

    def note_text(self) -> str:
        """The note under the plots, as shown."""
        return self._note.text

    def legend_labels(self) -> list[str]:
        """The legend's labels in order (of a view with a ``_legend``)."""
        return [label.text for _sample, label in self._legend.items]

    def clear(self) -> None:
        """Remove everything shown (the Train tab's Reset)."""
        raise NotImplementedError
