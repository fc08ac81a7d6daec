"""The precision view shows the engine's precision grid of the explorer's d_k sweep."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QApplication

from engine.analysis.explorer import sweep_config_for
from engine.analysis.sweep import run_sweep
from engine.config import AttentionConfig, Rounding, ScalingRule, SoftmaxForm
from gui.explorer.results import ExplorerResults
from gui.explorer.views import PrecisionView

CONFIG = AttentionConfig(n_tokens=64, d_k=64, samples=1000)


@pytest.fixture(scope="module")
def points():
    return tuple(run_sweep(sweep_config_for(CONFIG, values=(1, 8, 64, 512))))


def _stat(point, precision, softmax, rounding):
    (stat,) = [s for s in point.precision
               if (s.precision, s.softmax, s.rounding) == (precision, softmax, rounding)]
    return stat


def _build(qtbot, points, config: AttentionConfig = CONFIG) -> PrecisionView:
    view = PrecisionView()
    qtbot.addWidget(view)
    view.resize(1100, 600)
    view.show_results(ExplorerResults(config=config, sweep_points=points,
                                      sweep_done=True))
    return view


@pytest.mark.parametrize("precision, softmax", [("float16", "naive"), ("bfloat16", "stable"),
                                                ("float8_e4m3", "naive")])
def test_curves_are_the_engine_grid(qtbot, points, precision, softmax):
    view = _build(qtbot, points)
    view.set_choice(precision, softmax)
    for rule in (ScalingRule.NONE, ScalingRule.SQRT):
        pts = [p for p in points if p.rule == rule]
        curve = view.curve("overflow", rule)
        x, over = curve.xData, curve.yData
        np.testing.assert_array_equal(x, [1, 8, 64, 512])
        expected = [_stat(p, precision, softmax, Rounding.ALL) for p in pts]
        np.testing.assert_allclose(over, [s.overflow_share for s in expected])
        err = view.curve("error", rule).yData
        # Drawn where the error averages at least half of the point's rows.
        want = [s.weight_err_mean if s.weight_err_mean > 0 and 2 * s.error_rows >= s.rows
                else math.nan for s in expected]
        np.testing.assert_allclose(err, want, equal_nan=True)
        err_logits = view.curve("error_logits", rule).yData
        np.testing.assert_allclose(err_logits, [
            _stat(p, precision, SoftmaxForm.STABLE, Rounding.LOGITS).weight_err_mean
            for p in pts])
        zmax = view.curve("logit", rule).yData
        np.testing.assert_allclose(zmax, [p.logit_absmax_mean for p in pts])
    top = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float8_e4m3": 448.0}[precision]
    largest, exp_limit = view.limit_lines()
    assert largest == pytest.approx(top, rel=1e-9)
    assert exp_limit == pytest.approx(math.log(top), rel=1e-9)


def test_fp16_naive_overflows_unscaled_not_scaled_and_stable_removes_it(qtbot, points):
    view = _build(qtbot, points)
    view.set_choice("float16", "naive")
    none = view.curve("overflow", ScalingRule.NONE).yData
    sqrt = view.curve("overflow", ScalingRule.SQRT).yData
    assert none[2] > 0.97 and sqrt[2] == 0.0  # d_k = 64
    view.set_choice("float16", "stable")
    none = view.curve("overflow", ScalingRule.NONE).yData
    assert (none == 0).all()
    err = view.curve("error", ScalingRule.NONE).yData
    assert err[2] > 1e-4  # the rounding error stays
    view.set_choice("bfloat16", "stable")
    none = view.curve("error_logits", ScalingRule.NONE).yData
    sqrt = view.curve("error_logits", ScalingRule.SQRT).yData
    assert none[2] == pytest.approx(3.8e-3, rel=0.15)
    assert sqrt[2] == pytest.approx(4.0e-4, rel=0.15)


def test_data_table_lists_every_grid_entry(qtbot, points):
    view = _build(qtbot, points)
    header, rows = view.data_table()
    assert header[:5] == ["rule", "d_k", "format", "softmax", "rounding"]
    assert len(rows) == 2 * 4 * 9
    first = next(p for p in points if p.rule == ScalingRule.NONE).precision[0]
    assert rows[0][2:7] == [first.precision.value, first.softmax.value, first.rounding.value,
                            first.overflow_share, first.weight_err_mean]
    # How many rows each error averages is in the table.
    assert header[-2:] == ["grid_rows", "weight_err_rows"]
    assert rows[0][-2:] == [first.rows, first.error_rows]


def test_the_error_curve_stops_with_a_word_where_most_rows_overflow(qtbot, points):
    """fp16 without the max subtracted: at d_k = 64 almost every unscaled row overflows, so
    its mean error over the few rows left is not drawn; a label says why the curve stops."""
    view = _build(qtbot, points)
    view.set_choice("float16", "naive")
    none_points = [p for p in points if p.rule == ScalingRule.NONE]
    at_64 = _stat(none_points[2], "float16", SoftmaxForm.NAIVE, Rounding.ALL)
    assert at_64.rows > 0 and at_64.error_rows < 0.05 * at_64.rows  # few rows, if any, left
    err = view.curve("error", ScalingRule.NONE).yData
    assert math.isfinite(err[1]) and math.isnan(err[2]) and math.isnan(err[3])
    label = view.stop_label(ScalingRule.NONE)
    assert label.startswith("The error curve of none stops at d<sub>k</sub> = 64, where ")
    assert label in _notes(view)
    # 1/√d_k keeps every row: no word; the stable softmax: nothing overflows, no word.
    assert view.stop_label(ScalingRule.SQRT) == ""
    view.set_choice("float16", "stable")
    assert view.stop_label(ScalingRule.NONE) == ""
    assert np.isfinite(view.curve("error", ScalingRule.NONE).yData).all()


CORRELATED = AttentionConfig(n_tokens=17, d_k=64, rho=0.5, samples=600)


@pytest.fixture(scope="module")
def correlated_points():
    """ρ = 0.5, as the self-test sets it: under fp16 without the max subtracted both rules'
    error curves stop (none at d_k = 16, 1/√d_k at 256)."""
    return tuple(run_sweep(sweep_config_for(CORRELATED, values=(1, 4, 16, 64, 256, 1024))))


@pytest.mark.parametrize("size", [(1000, 600), (640, 480)])
def test_both_stops_are_said_below_the_plots_not_over_the_curves(qtbot, correlated_points,
                                                                  size):
    """Two labels inside the error panel overlapped each other, and at the 1024×768 window's
    panel width the curves: the note under the plots, which wraps to its width, says it."""
    view = _build(qtbot, correlated_points, CORRELATED)
    view.resize(*size)
    view.show()
    view.set_choice("float16", "naive")
    qtbot.wait(20)
    none, sqrt = view.stop_label(ScalingRule.NONE), view.stop_label(ScalingRule.SQRT)
    assert "of none stops at d<sub>k</sub> = 16, where " in none
    assert "of 1/√d_k stops at d<sub>k</sub> = 256, where " in sqrt
    notes = _notes(view)
    assert notes.index(none) < notes.index(sqrt)
    panel = view.curve("error", ScalingRule.NONE).getViewBox().sceneBoundingRect()
    texts = [item for item in view.export_item().scene().items()
             if isinstance(item, pg.LabelItem | pg.TextItem) and item.isVisible()]
    assert not [item for item in texts
                if panel.intersects(item.mapRectToScene(item.boundingRect()))]


def test_the_note_counts_the_rows_it_averages_and_names_the_correlation(qtbot,
                                                                          correlated_points):
    text = _notes(_build(qtbot, correlated_points, CORRELATED))
    assert "over the first 600 of 600 rows per point" in text  # fewer rows than the grid's
    assert "k = ρq + √(1−ρ²)ξ with ρ = 0.5" in text
    independent = _notes(_build(qtbot, ()))  # CONFIG: ρ = 0
    assert "n = 64, q and k ~ N(0, 1)" in independent and "ρq" not in independent


def _notes(view: PrecisionView) -> str:
    """Every text label of the exported picture, one per line."""
    return "\n".join(item.text for item in view.export_item().scene().items()
                     if isinstance(item, pg.LabelItem))


@pytest.mark.parametrize("size", [(1000, 600), (640, 480)])
def test_the_stops_arriving_at_the_end_of_a_sweep_move_no_panel(qtbot, correlated_points,
                                                                 size):
    """The note keeps the room its stop sentences may need while the points stream in."""
    plan = sweep_config_for(CORRELATED, values=(1, 4, 16, 64, 256, 1024))
    view = _build(qtbot, (), CORRELATED)
    view.resize(*size)
    view.show()
    qtbot.waitExposed(view)

    def panels() -> list[tuple[float, float]]:
        """Each panel's top and height (the note below them sets those)."""
        QApplication.processEvents()
        return [(plot.vb.sceneBoundingRect().top(), plot.vb.sceneBoundingRect().height())
                for plot in view.plots()]

    shown = []
    for count in range(1, len(correlated_points) + 1):
        view.show_results(ExplorerResults(config=CORRELATED, sweep_plan=plan,
                                          sweep_points=correlated_points[:count],
                                          sweep_done=count == len(correlated_points)))
        shown.append(panels())
    assert view.stop_label(ScalingRule.SQRT)  # both sentences are in by the end
    assert [i for i, rects in enumerate(shown) if rects != shown[0]] == [], (shown[0], shown[-1])
