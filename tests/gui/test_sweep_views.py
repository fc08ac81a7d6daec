"""The views of the streamed d_k sweep (laws, gradients, precision) and of the correlation RMS
show exactly the engine's numbers on log axes, grow while the sweep streams without moving an
axis, and reflow to their width."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtWidgets import QApplication

from engine.config import ScalingRule
from gui.explorer.views import CorrelationView, GradientView, LawsView, PrecisionView
from gui.kit import style
from tests.gui.view_results import (
    CONFIG,
    CORR_D_K,
    SWEEP,
    build,
    engine_parts,
    legend_texts,
    make_results,
    notes,
    reference_lines,
    sweep_values,
)


# -- laws -------------------------------------------------------------------------------------
def test_laws_curves_are_the_sweep_points_on_log_axes(qtbot):
    view = build(qtbot, LawsView)
    results = make_results()
    view.show_results(results)
    assert view.plot("logit_var").ctrl.logXCheck.isChecked()
    assert view.plot("logit_var").ctrl.logYCheck.isChecked()
    assert view.plot("entropy_mean").ctrl.logXCheck.isChecked()
    assert not view.plot("entropy_mean").ctrl.logYCheck.isChecked()
    for rule in SWEEP.rules:
        for field, _ in LawsView.PANELS:
            x, y = sweep_values(results.sweep_points, rule, field)
            curve = view.curve(field, rule)
            np.testing.assert_array_equal(curve.xData, x)
            np.testing.assert_allclose(curve.yData, y)
        _, theory = sweep_values(results.sweep_points, rule, "logit_var_theory")
        np.testing.assert_allclose(view.theory_curve(rule).yData, theory)
    assert reference_lines(view.plot("entropy_mean")) == [pytest.approx(math.log(CONFIG.n_tokens))]
    _header, rows = view.data_table()
    assert len(rows) == len(results.sweep_points)


def test_laws_grow_while_the_sweep_streams(qtbot):
    view = build(qtbot, LawsView)
    results = make_results()
    view.show_results(results.replace(sweep_points=results.sweep_points[:4], sweep_done=False))
    assert view.curve("logit_var", ScalingRule.NONE).xData.size == 2  # values 1 and 4
    assert view.curve("logit_var", ScalingRule.LINEAR).xData.size == 1
    assert any("Sweep running: 4 of" in note for note in notes(view))
    view.show_results(results)
    assert view.curve("logit_var", ScalingRule.NONE).xData.size == len(SWEEP.values)
    assert not any("running" in note for note in notes(view))
    # A sweep without 1/d_k empties its curves and drops it from the legend.
    no_linear = tuple(p for p in results.sweep_points if p.rule != ScalingRule.LINEAR)
    view.show_results(results.replace(sweep_points=no_linear))
    emptied = view.curve("logit_var", ScalingRule.LINEAR).xData
    assert emptied is None or emptied.size == 0
    assert style.rule_name(ScalingRule.LINEAR) not in legend_texts(view)
    assert style.rule_name(ScalingRule.SQRT) in legend_texts(view)


@pytest.mark.parametrize("cls", [LawsView, GradientView, PrecisionView])
def test_a_new_sweep_streams_in_without_moving_an_axis_or_a_panel(qtbot, cls):
    view = build(qtbot, cls)
    view.show()
    qtbot.waitExposed(view)
    planned = make_results(sweep_plan=SWEEP)
    view.show_results(planned)  # an earlier sweep, complete
    qtbot.wait(30)
    span = (math.log10(min(SWEEP.values)), math.log10(max(SWEEP.values)))

    def shown() -> list[tuple[object, ...]]:
        QApplication.processEvents()
        view.export_item().grab()  # paint: lays the tick text out
        return [(plot.viewRange()[0], plot.vb.sceneBoundingRect()) for plot in view.plots()]

    before = shown()
    for (low, high), _ in before:
        assert low < span[0] and high > span[1]  # the planned d_k span, padded
    points = planned.sweep_points
    for count in range(1, len(points)):
        view.show_results(planned.replace(sweep_points=points[:count],
                                          sweep_done=False))
        assert shown() == before, f"moved after {count} points"
    view.show_results(planned.replace())
    assert shown() == before


# -- gradients --------------------------------------------------------------------------------
def test_gradient_medians_and_bands_are_the_sweep_quantiles(qtbot):
    view = build(qtbot, GradientView)
    results = make_results()
    view.show_results(results)
    for key in ("jac", "raw"):
        assert view.plot(key).ctrl.logXCheck.isChecked()
        assert view.plot(key).ctrl.logYCheck.isChecked()
    for rule in SWEEP.rules:
        for key, prefix in (("jac", "jac_fro"), ("raw", "jac_raw")):
            x, median = sweep_values(results.sweep_points, rule, f"{prefix}_median")
            curve = view.median_curve(key, rule)
            np.testing.assert_array_equal(curve.xData, x)
            np.testing.assert_allclose(curve.yData, np.where(median > 0, median, np.nan))
            _, q10 = sweep_values(results.sweep_points, rule, f"{prefix}_q10")
            _, q90 = sweep_values(results.sweep_points, rule, f"{prefix}_q90")
            low, high = view.band_curves(key, rule)
            keep = (q10 > 0) & (q90 > 0)
            np.testing.assert_allclose(low.yData, q10[keep])
            np.testing.assert_allclose(high.yData, q90[keep])
        _, share = sweep_values(results.sweep_points, rule, "saturated_share")
        np.testing.assert_allclose(view.saturated_curve(rule).yData, share)
    # ‖∂p/∂S_raw‖ = c‖J‖: at d_k = 1 every rule has c = 1, so the two panels agree there.
    _, jac = sweep_values(results.sweep_points, ScalingRule.SQRT, "jac_fro_median")
    _, raw = sweep_values(results.sweep_points, ScalingRule.SQRT, "jac_raw_median")
    assert raw[0] == pytest.approx(jac[0])
    titles = view.panel_title("jac") + view.panel_title("raw")
    assert "scaled logits" in titles and "raw q·k" in titles
    header, rows = view.data_table()
    assert len(rows) == len(results.sweep_points) and header[2] == "jac_fro_median"


def test_gradient_view_reflows_to_its_width(qtbot):
    """Three columns when wide, two, then one: the panels always fit the view's width."""
    view = build(qtbot, GradientView)
    view.show()
    qtbot.waitExposed(view)
    results = make_results()
    view.show_results(results)
    widget = view.export_item()
    for width, columns in ((1000, 3), (700, 2), (345, 1), (1000, 3), (600, 2)):
        view.resize(width, 700)
        qtbot.waitUntil(lambda w=width: widget.viewport().width() == w)
        assert view.columns() == columns, width
        viewport = widget.viewport().rect()
        for key in ("jac", "raw", "saturated"):
            rect = widget.mapFromScene(view.plot(key).sceneBoundingRect()).boundingRect()
            assert viewport.adjusted(-1, -1, 1, 1).contains(rect), (width, key, rect)
        if columns == 2:  # the two gradient panels share the row equally (whatever came before)
            widths = [view.plot(key).sceneBoundingRect().width() for key in ("jac", "raw")]
            assert abs(widths[0] - widths[1]) <= 2, widths
        # The same curves whatever the arrangement.
        x, _ = sweep_values(results.sweep_points, ScalingRule.SQRT, "jac_fro_median")
        np.testing.assert_array_equal(view.median_curve("jac", ScalingRule.SQRT).xData, x)
    assert "scaled logits" in view.panel_title("jac")


# -- correlation ------------------------------------------------------------------------------
def test_correlation_points_and_lines_are_the_engine_rms(qtbot):
    view = build(qtbot, CorrelationView)
    results = make_results()
    view.show_results(results)
    data, data_rho = engine_parts()["correlation"], engine_parts()["correlation_rho"]
    (plot,) = view.plots()
    assert plot.ctrl.logXCheck.isChecked() and plot.ctrl.logYCheck.isChecked()
    for rule, suffix in ((ScalingRule.SQRT, "sqrt"), (ScalingRule.LINEAR, "linear")):
        np.testing.assert_array_equal(view.points(rule).xData, np.asarray(CORR_D_K, float))
        np.testing.assert_allclose(view.points(rule).yData, data[f"rms_{suffix}"])
        np.testing.assert_allclose(view.theory_line(rule).yData, data[f"theory_{suffix}"])
    assert any("At ρ = 0" in note for note in notes(view))
    view.show_results(results.replace(config=CONFIG.replace(rho=0.6), correlation=data_rho))
    np.testing.assert_allclose(view.points(ScalingRule.LINEAR).yData, data_rho["rms_linear"])
    assert any("→ |ρ| = 0.6" in note for note in notes(view))
    _header, rows = view.data_table()
    assert len(rows) == 2 * len(CORR_D_K) and rows[0][0] == 0.6
