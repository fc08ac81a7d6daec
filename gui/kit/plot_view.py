"""The base class of every plot view (explorer and Train tab): what tabs, menus and export use.

A view is a widget showing one plot family. The window, the tab widgets and the exporters use
only this interface: :attr:`PlotView.key`, :meth:`~PlotView.title`,
:meth:`~PlotView.export_item`, :meth:`~PlotView.data_table` and :meth:`~PlotView.reset_view`.
Each feature subclasses it once for the results it feeds its views
(``gui.explorer.views.base.ExplorerView``, ``gui.train.view.TrainView``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gui.kit.cell_items import CellLegend
from gui.kit.i18n import Retranslating
from gui.kit.layout_fit import WidthFollower, fit_legend_columns

__all__ = ["PlotView", "finite_or_nan", "positive_or_nan"]

# Values compared by equality rather than identity in PlotView._is_new: small immutable
# scalars (a query row, a rule) arrive as new-but-equal objects on every push.
_SCALARS = (bool, int, float, str, Enum, type(None))
#: Scene units around a legend's cell: the layout's margins and the view's frame.
LEGEND_MARGIN = 24


class PlotView(Retranslating, QWidget):
    """A plot family: receives immutable results, shows part of them, exports what it shows.

    Subclasses set :attr:`key` and implement the four methods below that raise
    ``NotImplementedError``. ``show_results`` is called from a GUI timer with the latest
    results; it must be cheap (``setData`` / ``setImage`` / ``setText`` on items built once)
    and skip work when the part of the results it shows is the same object as last time (see
    :meth:`_is_new`). Views never compute statistics: every number they show comes from the
    engine objects in the results.
    """

    key: ClassVar[str] = ""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._seen: dict[str, tuple[object, ...]] = {}
        self._changed = False
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(2)
        #: Reflows the view (:meth:`fit_to_width`) to the width the window gives it.
        self.width_follower = WidthFollower(self, self.fit_to_width)

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        """Return the translated title used for tabs, docks and menus."""
        raise NotImplementedError

    def show_results(self, results: Any) -> None:
        """Show ``results`` (cheap; skips work when the shown part did not change)."""
        raise NotImplementedError

    def export_item(self) -> pg.GraphicsLayoutWidget | pg.PlotWidget:
        """Return the widget that PNG/SVG export renders."""
        raise NotImplementedError

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        """Return the CSV header and rows of the data currently plotted."""
        raise NotImplementedError

    def plots(self) -> list[pg.PlotItem]:
        """Every plot of the view, in layout order (the order pins refer to them by)."""
        item = self.export_item()
        if isinstance(item, pg.PlotWidget):
            return [item.getPlotItem()]

        def walk(layout: pg.GraphicsLayout) -> list[pg.PlotItem]:
            found: list[pg.PlotItem] = []
            for child in layout.items:
                if isinstance(child, pg.PlotItem):
                    found.append(child)
                elif isinstance(child, pg.GraphicsLayout):
                    found += walk(child)
            return found

        return walk(item.ci)

    def reset_view(self) -> None:
        """Auto-range every plot of the view (views with fixed ranges extend this)."""
        for plot in self.plots():
            plot.enableAutoRange()
            plot.autoRange()

    def fit_to_width(self, width: int) -> None:
        """Re-arrange for ``width`` px (the room the window gives the view) so that nothing
        needs a sideways scroll bar: here every legend takes as many of its columns as fit.

        Views that can reflow more (a grid of heads, a row of panels) extend it.
        """
        try:
            item = self.export_item()
        except NotImplementedError:  # a view not built yet (or without plots): nothing to fit
            return
        scale = getattr(item, "scale_factor", lambda: 1.0)()
        room = width / scale - LEGEND_MARGIN
        for legend in item.scene().items():
            if isinstance(legend, CellLegend):
                fit_legend_columns(legend, room, legend.most_columns)

    # -- translation ----------------------------------------------------------------------------
    def retranslate_ui(self) -> None:
        """Set every static text (axis labels, plot titles, legends, tooltips) in the current
        language; subclasses extend it and call it at the end of ``__init__``.

        Texts that depend on results are rebuilt by the next :meth:`show_results`: the cache of
        :meth:`_is_new` is dropped here so that the main window's re-push after a language
        change redraws them.
        """
        self._forget()

    def _apply_language(self) -> None:
        """Run :meth:`retranslate_ui` and lay the plots out for the new texts at once."""
        self.retranslate_ui()
        from gui.kit import style

        style.relayout(self.export_item())

    # -- helpers for subclasses ---------------------------------------------------------------
    def _is_new(self, part: str, *objects: object) -> bool:
        """Return True (and remember ``objects``) unless they are what ``part`` showed last.

        Engine objects are compared by identity (the controller shares unchanged parts between
        successive results); small scalars such as a query row are compared by value.
        """
        previous = self._seen.get(part)
        if previous is not None and len(previous) == len(objects):
            if all(_same(a, b) for a, b in zip(previous, objects, strict=True)):
                return False
        self._seen[part] = objects
        self._changed = True
        return True

    def take_change(self) -> bool:
        """Whether :meth:`show_results` has changed what the view shows since the last call.

        A push that changed nothing (a σ edit leaves every sweep view as it was) needs no paint.
        """
        changed, self._changed = self._changed, False
        return changed

    def _forget(self, part: str | None = None) -> None:
        """Make the next :meth:`_is_new` for ``part`` (or every part) return True."""
        if part is None:
            self._seen.clear()
        else:
            self._seen.pop(part, None)


def _same(a: object, b: object) -> bool:
    if a is b:
        return True
    if isinstance(a, _SCALARS) and isinstance(b, _SCALARS):
        return type(a) is type(b) and a == b
    return False


def positive_or_nan(values: object) -> np.ndarray:
    """Return ``values`` as floats with non-finite and non-positive entries replaced by NaN.

    Log axes cannot show zeros; NaN leaves a gap instead of a bogus point at -∞.
    """
    a = np.array(values, dtype=np.float64)
    a[~(np.isfinite(a) & (a > 0))] = np.nan
    return a


def finite_or_nan(values: object) -> np.ndarray:
    """Return ``values`` as floats with non-finite entries replaced by NaN."""
    a = np.array(values, dtype=np.float64)
    a[~np.isfinite(a)] = np.nan
    return a
