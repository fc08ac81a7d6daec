"""Plot ranges hold still for small data changes, follow big ones, and still fit on reset."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np
import pyqtgraph as pg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.analysis.experiment import run_experiment
from engine.config import AttentionConfig, ScalingRule
from gui.explorer.results import ExplorerResults
from gui.explorer.views import HistogramView
from gui.kit.steady_range import KEEP_FRACTION, MARGIN, SteadyViewBox, steady_range

CONFIG = AttentionConfig(n_tokens=32, d_k=16, heads=2, d_model=32, samples=200)


# -- the rule -----------------------------------------------------------------------------------
def test_a_fit_inside_the_shown_range_keeps_it():
    assert steady_range((-1.0, 1.0), (-0.95, 0.9)) == (-1.0, 1.0)


def test_data_leaving_the_range_move_it_with_a_margin():
    low, high = steady_range((-1.0, 1.0), (-1.0, 1.2))
    assert (low, high) == pytest.approx((-1.0 - MARGIN * 2.2, 1.2 + MARGIN * 2.2))


def test_data_shrinking_well_inside_move_it():
    low, high = steady_range((-1.0, 1.0), (-0.5, 0.5))
    assert (low, high) == pytest.approx((-0.5 - MARGIN, 0.5 + MARGIN))


def test_a_zero_width_fit_is_left_to_pyqtgraph():
    assert steady_range((0.0, 1.0), (3.0, 3.0)) == (3.0, 3.0)


finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(finite, finite, finite, finite)
def test_the_data_always_fill_most_of_the_range(a, b, c, d):
    shown = tuple(sorted((a, b)))
    fitted = tuple(sorted((c, d)))
    span = fitted[1] - fitted[0]
    if span <= 1e-6 or shown[1] - shown[0] <= 1e-6:
        return
    low, high = steady_range(shown, fitted)
    assert low <= fitted[0] and fitted[1] <= high
    assert span >= min(KEEP_FRACTION, 1 / (1 + 2 * MARGIN)) * (high - low) * (1 - 1e-12)


# -- in a plot ----------------------------------------------------------------------------------
def rendered_range(widget: pg.PlotWidget) -> list[list[float]]:
    """The range as painted: auto-range is applied when the view is drawn."""
    widget.grab()
    return widget.getPlotItem().vb.viewRange()


@pytest.fixture
def plot(qtbot):
    widget = pg.PlotWidget(viewBox=SteadyViewBox())
    qtbot.addWidget(widget)
    widget.resize(400, 300)
    return widget


def test_a_plot_holds_still_for_a_small_change_and_follows_a_big_one(plot):
    x = np.linspace(0.0, 10.0, 50)
    curve = plot.plot(x, np.sin(x))
    first = rendered_range(plot)
    curve.setData(x, 0.97 * np.sin(x))
    assert rendered_range(plot) == first
    curve.setData(x, 3.0 * np.sin(x))
    (_, _), (y_low, y_high) = rendered_range(plot)
    assert y_low <= -2.99 and 2.99 <= y_high


def test_reset_fits_exactly_and_a_manual_zoom_stays(plot):
    x = np.linspace(0.0, 10.0, 50)
    curve = plot.plot(x, np.sin(x))
    steady = rendered_range(plot)
    reference = pg.PlotWidget()
    reference.plot(x, np.sin(x))
    reference.resize(400, 300)
    plot.getPlotItem().autoRange()
    assert np.allclose(rendered_range(plot), rendered_range(reference))
    assert not np.allclose(steady, rendered_range(reference))  # the margin was there before
    plot.setXRange(2.0, 3.0, padding=0.0)
    curve.setData(x, 5.0 * np.sin(x))
    assert rendered_range(plot)[0] == pytest.approx([2.0, 3.0])


def test_the_auto_button_fits_exactly_after_a_small_zoom_out(plot):
    x = np.linspace(0.0, 10.0, 50)
    plot.plot(x, np.sin(x))
    reference = pg.PlotWidget()
    reference.plot(x, np.sin(x))
    reference.resize(400, 300)
    exact = rendered_range(reference)
    rendered_range(plot)
    # Zoomed out by hand so that the data still fill more than KEEP_FRACTION of each axis.
    (x0, x1), (y0, y1) = exact
    plot.setRange(xRange=(x0 - 0.05 * (x1 - x0), x1), yRange=(y0, y1 + 0.05 * (y1 - y0)),
                  padding=0.0)
    assert not any(plot.getPlotItem().vb.autoRangeEnabled())
    plot.getPlotItem().autoBtnClicked()
    assert np.allclose(rendered_range(plot), exact)


def test_the_histogram_axes_hold_still_when_sigma_moves_by_one_percent(qtbot):
    view = HistogramView()
    qtbot.addWidget(view)
    view.resize(1000, 700)

    def show(config: AttentionConfig) -> list[list[list[float]]]:
        snapshot = run_experiment(config, rules=(ScalingRule.SQRT,))
        view.show_results(ExplorerResults(config=config, snapshot=snapshot))
        view.export_item().grab()
        return [panel.vb.viewRange() for panel in plots]

    plots = [item for item in view.export_item().ci.items if isinstance(item, pg.PlotItem)]
    first = show(CONFIG)
    assert show(CONFIG.replace(init_std=1.01)) == first
    wider = show(CONFIG.replace(init_std=2.0))
    assert wider != first
    _header, rows = view.data_table()
    for (x_range, _), rule in zip(wider, view.panel_rules(), strict=True):
        edges = [edge for row in rows if row[0] == rule.value for edge in row[1:3]]
        assert x_range[0] <= min(edges) and max(edges) <= x_range[1]
