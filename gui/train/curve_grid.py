"""The arrangement of the training curves: legend, four panels and note, two by two or stacked."""

from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QScrollArea, QWidget

from gui.kit import style
from gui.kit.layout_fit import fit_legend_columns

__all__ = ["TWO_COLUMNS_FROM", "PanelGrid"]

#: Width (px) from which the panels stand two by two; narrower, they stack. It lies above the
#: two-column layout's minimum, so the choice cannot flip as a scroll area resizes it.
TWO_COLUMNS_FROM = 560
#: Least height (px) of a stacked panel, its title and axis included.
STACKED_PLOT_HEIGHT = 200


class PanelGrid(QObject):
    """Lays the panels out in two columns or one, following the width the window gives the view.

    That width is the viewport of the scroll area around the view, not the view's own width,
    which never falls below the minimum of the current arrangement (two columns and a
    seven-column legend would otherwise keep themselves too wide for good).

    Parameters
    ----------
    view
        The view whose scroll area is followed; it calls :meth:`follow_scroll_area` when shown
        and :meth:`reflow` when resized.
    """

    def __init__(self, view: QWidget, widget: pg.GraphicsLayoutWidget, legend: pg.LegendItem,
                 plots: Sequence[pg.PlotItem], note: pg.LabelItem) -> None:
        super().__init__(view)
        self._view, self._widget = view, widget
        self._legend, self._plots, self._note = legend, list(plots), note
        self._columns = 0
        self._area: QScrollArea | None = None
        self._arrange(2)

    def follow_scroll_area(self) -> None:
        """Re-flow whenever the viewport of the scroll area around the view changes width."""
        area = self._view.parentWidget()
        while area is not None and not isinstance(area, QScrollArea):
            area = area.parentWidget()
        if area is not None and area is not self._area:
            self._area = area
            area.viewport().installEventFilter(self)
        self.reflow()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """Re-flow when the scroll area's viewport changes width."""
        if event.type() == QEvent.Type.Resize and self._view.isVisible():
            self.reflow()
        return False

    def reflow(self) -> None:
        """Stack the panels in one column when two would be squeezed or cut off."""
        columns = 2 if self._available_width() >= TWO_COLUMNS_FROM else 1
        if columns != self._columns:
            self._arrange(columns)
        else:
            self.fit_legend()

    def fit_legend(self) -> None:
        """As many legend columns as fit the width (one entry per row in a narrow window)."""
        room = self._available_width() - 40  # the layout's margins and the view's frame
        fit_legend_columns(self._legend, room, self._legend.most_columns)

    def _available_width(self) -> int:
        if self._area is None:
            return self._view.width()
        return self._area.viewport().width() - 2 * self._view.layout().contentsMargins().left()

    def _arrange(self, columns: int) -> None:
        ci = self._widget.ci
        for item in [self._legend, self._note, *self._plots]:
            if item in ci.items:
                ci.removeItem(item)
        ci.addItem(self._legend, row=0, col=0, colspan=columns)
        for index, plot in enumerate(self._plots):
            row, col = divmod(index, columns)
            ci.addItem(plot, row=1 + row, col=col)
            # Stacked, the panels keep a readable height and the page scrolls instead.
            plot.setMinimumHeight(STACKED_PLOT_HEIGHT if columns == 1 else 0)
        plot_rows = range(1, 1 + len(self._plots) // columns)
        ci.addItem(self._note, row=1 + len(plot_rows), col=0, colspan=columns)
        for row in range(max(ci.layout.rowCount(), 8)):
            ci.layout.setRowStretchFactor(row, 1 if row in plot_rows else 0)
        for col in range(2):
            ci.layout.setColumnStretchFactor(col, 1 if col < columns else 0)
        self._columns = columns
        self.fit_legend()
        style.relayout(self._widget)
        # Re-adding items re-activates the top layout at its minimum size: give it the
        # viewport again (what pyqtgraph's resizeEvent does).
        ci.setGeometry(self._widget.range)
