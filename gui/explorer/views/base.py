"""The base class of the explorer's views: plot views fed with :class:`ExplorerResults`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import pyqtgraph as pg
from PySide6.QtWidgets import QHBoxLayout, QWidget

from gui.explorer.results import ExplorerResults
from gui.kit import style
from gui.kit.cell_items import WrappingLabel
from gui.kit.plot_view import PlotView
from gui.kit.steady_range import SteadyViewBox

__all__ = ["ExplorerView"]

#: Padding (fraction of the span) around a planned sweep's values on a held x axis.
HELD_X_PADDING = 0.05


class ExplorerView(PlotView):
    """A plot family of the explorer: receives :class:`ExplorerResults`, shows part of them.

    The explorer controller pushes the latest results from a ~30 Hz GUI timer to the visible
    views (hidden ones catch up when shown). A view whose plot sets the comparison temperature
    also has a ``temperatureChanged(float)`` signal, which the window connects to the
    controller.
    """

    _held_x: tuple[tuple[pg.PlotItem, ...], float, float] | None = None
    #: The widget of the view's plots (:meth:`_add_plot_widget`).
    _widget: pg.GraphicsLayoutWidget
    _note: WrappingLabel

    def export_item(self) -> pg.GraphicsLayoutWidget:
        return self._widget

    def show_results(self, results: ExplorerResults) -> None:
        """Show ``results`` (cheap; skips work when the shown part did not change)."""
        raise NotImplementedError

    def note_text(self) -> str:
        """Return the note under the plots (the view's ``_note`` label) as displayed (for tests)."""
        return str(self._note.text)

    def _add_plot_widget(self, stretch: int = 0, legend_columns: int = 0,
                         legend_colspan: int = 1) -> None:
        """Add the view's plot widget, with a legend of ``legend_columns`` across its first row."""
        self._widget = style.make_layout_widget()
        self._layout.addWidget(self._widget, stretch)
        if legend_columns:
            self._legend = style.make_legend(col_count=legend_columns)
            self._widget.addItem(self._legend, row=0, col=0, colspan=legend_colspan)

    def _add_log_plot(self, row: int | None, col: int, log_y: bool, link: pg.PlotItem | None = None,
                      bottom: str = "d<sub>k</sub>") -> pg.PlotItem:
        """Return a plot in the shared style with steady ranges, a log x axis (and log y with
        ``log_y``), in cell (``row``, ``col``) of the view's widget (``row`` None: not placed)
        and with its x axis linked to ``link`` when given."""
        plot = pg.PlotItem(viewBox=SteadyViewBox(), axisItems=style.log_axis_items())
        if row is not None:
            self._widget.addItem(plot, row=row, col=col)
        style.style_plot(plot, bottom=bottom)
        style.set_log_mode(plot, x=True, y=log_y)
        if link is not None:
            plot.setXLink(link)
        return plot

    def _add_controls(self, *widgets: QWidget) -> None:
        """Lay ``widgets`` out in a row above the plots, from the left."""
        row = QHBoxLayout()
        row.setContentsMargins(6, 2, 6, 0)
        for widget in widgets:
            row.addWidget(widget)
        row.addStretch(1)
        self._layout.insertLayout(0, row)

    def reset_view(self) -> None:
        super().reset_view()
        if self._held_x is not None:
            self._apply_held_x()

    def hold_x(self, plots: Sequence[pg.PlotItem], values: Iterable[float]) -> None:
        """Show the span of ``values`` (a planned sweep's, before its points arrive) on the
        log x axes of ``plots``.

        Points that stream in then never move the x axes: each move re-generates the text of
        every axis of the view, the largest part of a repaint while a sweep streams. Applied
        only when the span changes, so a zoom by hand stays; *Reset view* comes back to it.
        """
        positive = [float(v) for v in values if float(v) > 0]
        if not positive:
            return
        span = (math.log10(min(positive)), math.log10(max(positive)))
        if self._held_x is not None and self._held_x[1:] == span:
            return
        self._held_x = (tuple(plots), *span)
        self._apply_held_x()

    def _apply_held_x(self) -> None:
        assert self._held_x is not None
        plots, low, high = self._held_x
        for plot in plots:
            plot.setXRange(low, high, padding=HELD_X_PADDING)
