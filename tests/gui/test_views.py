"""The explorer views show exactly the engine's numbers, rebuild when they must, and export.

Every view gets an ExplorerResults built from real engine output for a small configuration
(run_experiment, run_sweep, temperature_comparison, correlation_rms); the assertions are about
what a user sees: image pixels, curve data, legend and label text, log axes, PNG pixels.
"""

from __future__ import annotations

import dataclasses
import math
import os

# Before Qt is imported (tests/gui/conftest.py does the same; this keeps the module runnable
# on its own).
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QEvent, QPointF
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from engine.analysis.correlation import correlation_rms
from engine.analysis.experiment import run_experiment, temperature_comparison
from engine.analysis.sweep import run_sweep
from engine.config import AttentionConfig, MaskKind, ScalingRule, SweepConfig
from gui.explorer.results import ExplorerResults
from gui.explorer.views import (
    ALL_VIEWS,
    CorrelationView,
    ExplorerView,
    GradientView,
    HeatmapView,
    HistogramView,
    LawsView,
    PrecisionView,
    SoftmaxView,
    TemperatureView,
    view_class,
)
from gui.explorer.views.temperature import slider_to_temperature, temperature_to_slider
from gui.kit import export, style
from gui.kit.plot_view import PlotView
from gui.kit.session import VIEW_KEYS
from gui.train.results import TrainResults
from gui.train.view import TrainView

pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)

CONFIG = AttentionConfig(n_tokens=16, d_k=16, heads=2, d_model=32, query_row=5, samples=200)
SWEEP = SweepConfig(
    values=(1, 4, 16, 64, 256),
    rules=(ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR),
    n_tokens=16,
    samples=200,
)
CORR_D_K = (1, 4, 16, 64, 256)
T_SQRT = math.sqrt(CONFIG.d_k)


@pytest.fixture(scope="module")
def engine_parts():
    """Real engine output for CONFIG (pure numpy, shared by the module's tests)."""
    return {
        "snapshot": run_experiment(CONFIG, rules=tuple(ScalingRule)),
        "sweep": tuple(run_sweep(SWEEP)),
        "temperature_sqrt": temperature_comparison(CONFIG, T_SQRT),
        "temperature_3": temperature_comparison(CONFIG, 3.0),
        "correlation": correlation_rms(CORR_D_K, CONFIG.rho, 2000, CONFIG.seed),
        "correlation_rho": correlation_rms(CORR_D_K, 0.6, 2000, CONFIG.seed),
    }


def make_results(parts, **changes) -> ExplorerResults:
    base = ExplorerResults(
        request_id=1,
        config=CONFIG,
        snapshot=parts["snapshot"],
        temperature=T_SQRT,
        temperature_comparison=parts["temperature_sqrt"],
        sweep_points=parts["sweep"],
        sweep_done=True,
        correlation=parts["correlation"],
    )
    return base.replace(**changes) if changes else base


@pytest.fixture
def results(engine_parts):
    return make_results(engine_parts)


def build(qtbot, cls: type[ExplorerView]) -> ExplorerView:
    view = cls()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    return view


def sweep_values(points, rule: ScalingRule, field: str) -> tuple[np.ndarray, np.ndarray]:
    pts = sorted((p for p in points if p.rule == rule), key=lambda p: p.value)
    return (np.array([p.value for p in pts], dtype=float),
            np.array([getattr(p, field) for p in pts], dtype=float))


# -- registry ---------------------------------------------------------------------------------
def test_registry_lists_every_view_once_in_display_order(qtbot):
    keys = [cls.key for cls in ALL_VIEWS]
    # The session's registry of view keys lists the explorer's first, in display order.
    assert keys == list(VIEW_KEYS[:len(keys)]) and len(set(keys)) == len(keys)
    assert view_class("laws") is LawsView
    with pytest.raises(ValueError, match="unknown view key"):
        view_class("nope")
    for cls in ALL_VIEWS:
        view = build(qtbot, cls)
        assert isinstance(view, ExplorerView) and not isinstance(view, TrainView)
        assert view.title().strip()
        # Before any results: no data, but the contract calls work.
        header, rows = view.data_table()
        assert header and rows == []
        view.reset_view()



def test_train_views_are_train_plot_views(qtbot):
    from gui.train.curves import TrainCurvesView
    from gui.train.lr_sweep_view import LrSweepView
    from gui.train.probe import ProbeView

    for cls in (TrainCurvesView, ProbeView, LrSweepView):
        view = cls()
        qtbot.addWidget(view)
        assert isinstance(view, TrainView) and isinstance(view, PlotView)
        assert not isinstance(view, ExplorerView)
        view.show_results(TrainResults())  # nothing trained yet: empty plots
        header, rows = view.data_table()
        assert header and rows == []

def test_every_rule_has_its_own_colour_and_symbol():
    colours = {style.RULE_COLORS[r] for r in ScalingRule}
    symbols = {style.rule_symbol(r) for r in ScalingRule}
    assert len(colours) == len(ScalingRule) and len(symbols) == len(ScalingRule)


# -- heatmap ----------------------------------------------------------------------------------
def test_heatmap_images_are_the_snapshot_weights(qtbot, results):
    view = build(qtbot, HeatmapView)
    view.show_results(results)
    snap = results.snapshot
    images = view.panel_images()
    assert len(images) == 2 * CONFIG.heads
    for head in range(CONFIG.heads):
        compared, none = images[2 * head], images[2 * head + 1]
        np.testing.assert_array_equal(compared.image,
                                      view.shown_values(snap.rules[ScalingRule.SQRT].weights[head]))
        np.testing.assert_array_equal(none.image,
                                      view.shown_values(snap.rules[ScalingRule.NONE].weights[head]))
        assert tuple(compared.levels) == view.colour_levels()
    # The selected query row is outlined.
    rect = view._panels[0].row_box.rect()
    assert (rect.top(), rect.height(), rect.width()) == (CONFIG.query_row, 1.0, CONFIG.n_tokens)


def test_heatmap_with_rule_none_compares_it_with_sqrt_not_with_itself(qtbot, engine_parts):
    view = build(qtbot, HeatmapView)
    results = make_results(engine_parts, config=CONFIG.replace(rule=ScalingRule.NONE))
    view.show_results(results)
    snap = results.snapshot
    images = view.panel_images()
    for head in range(CONFIG.heads):
        chosen, partner = images[2 * head], images[2 * head + 1]
        np.testing.assert_array_equal(chosen.image,
                                      view.shown_values(snap.rules[ScalingRule.NONE].weights[head]))
        np.testing.assert_array_equal(partner.image,
                                      view.shown_values(snap.rules[ScalingRule.SQRT].weights[head]))
    titles = [image.getViewBox().parentItem().titleLabel.text for image in images]
    assert style.rule_name(ScalingRule.SQRT) in titles[1]
    assert style.rule_name(ScalingRule.NONE) in titles[0]
    rules_in_table = {row[0] for row in view.data_table()[1]}
    assert rules_in_table == {"none", "sqrt"}


def test_heatmap_rebuilds_grid_only_when_heads_change(qtbot, engine_parts, results):
    view = build(qtbot, HeatmapView)
    view.show_results(results)
    first_images = view.panel_images()
    # Same heads, another rule compared: images reused and refilled.
    view.show_results(results.replace(config=CONFIG.replace(rule=ScalingRule.LINEAR)))
    assert view.panel_images() == first_images
    np.testing.assert_array_equal(
        first_images[0].image,
        view.shown_values(results.snapshot.rules[ScalingRule.LINEAR].weights[0]))
    four = CONFIG.replace(heads=4, d_model=64)
    snap4 = run_experiment(four, rules=(ScalingRule.SQRT,))
    view.show_results(results.replace(config=four, snapshot=snap4))
    images = view.panel_images()
    assert len(images) == 8
    np.testing.assert_array_equal(images[6].image,
                                  view.shown_values(snap4.rules[ScalingRule.SQRT].weights[3]))
    one = CONFIG.replace(heads=1, d_model=16)
    view.show_results(results.replace(config=one, snapshot=run_experiment(one)))
    assert len(view.panel_images()) == 2


def test_heatmap_hover_reads_logit_and_weight(qtbot, results):
    view = build(qtbot, HeatmapView)
    view.show()
    qtbot.waitExposed(view)
    view.show_results(results)
    panel = view._panels[1]  # head 1, rule "none"
    i, j = 3, 7
    scene_pos = panel.plot.vb.mapViewToScene(QPointF(j + 0.5, i + 0.5))
    view._widget.scene().sigMouseMoved.emit(scene_pos)
    none = results.snapshot.rules[ScalingRule.NONE]
    text = view.hover_text()
    assert f"query i = {i}, key j = {j}" in text
    assert f"logit = {float(none.logits[0, i, j]):.4g}" in text
    assert f"p = {float(none.weights[0, i, j]):.4g}" in text


def test_heatmap_hover_follows_new_results(qtbot, engine_parts, results):
    """After a parameter change the read-out shows the new numbers (or the hint), never the
    previous snapshot's."""
    view = build(qtbot, HeatmapView)
    view.show()
    qtbot.waitExposed(view)
    view.show_results(results)
    i, j = 3, 7
    scene_pos = view._panels[1].plot.vb.mapViewToScene(QPointF(j + 0.5, i + 0.5))
    view._widget.scene().sigMouseMoved.emit(scene_pos)
    old = results.snapshot.rules[ScalingRule.NONE]
    assert f"p = {float(old.weights[0, i, j]):.4g}" in view.hover_text()
    # New results (another seed): the pointer has not moved, the cell under it is re-read.
    changed = run_experiment(CONFIG.replace(seed=CONFIG.seed + 1), rules=tuple(ScalingRule))
    view.show_results(results.replace(request_id=2, snapshot=changed))
    new = changed.rules[ScalingRule.NONE]
    assert float(new.weights[0, i, j]) != float(old.weights[0, i, j])
    text = view.hover_text()
    assert f"query i = {i}, key j = {j}" in text
    assert f"logit = {float(new.logits[0, i, j]):.4g}" in text
    assert f"p = {float(new.weights[0, i, j]):.4g}" in text
    # Fewer tokens: the grid is rebuilt; the read-out is re-read there or shows the hint.
    small = run_experiment(CONFIG.replace(n_tokens=4, query_row=1), rules=tuple(ScalingRule))
    view.show_results(results.replace(request_id=3, snapshot=small,
                                      config=CONFIG.replace(n_tokens=4, query_row=1)))
    text = view.hover_text()
    assert text.startswith("Hover over a cell") or "logit" in text
    if "logit" in text:
        head_i_j = [int(x.split(" = ")[1]) for x in text.split(", ")[1:3]]
        assert all(0 <= x < 4 for x in head_i_j)
    # The pointer leaves the view: the hint comes back and new results keep it.
    qtbot.mouseMove(view, view.rect().center())
    view.leaveEvent(QEvent(QEvent.Type.Leave))
    view.show_results(results.replace(request_id=4))
    assert view.hover_text().startswith("Hover over a cell")


def test_heatmap_data_table_matches_snapshot(qtbot, results):
    view = build(qtbot, HeatmapView)
    view.show_results(results)
    header, rows = view.data_table()
    assert header == ["rule", "head", "query_i", "key_j", "logit", "p"]
    n = CONFIG.n_tokens
    assert len(rows) == 2 * CONFIG.heads * n * n
    rule, head, i, j, logit, p = rows[n * n + 2 * n + 5]  # sqrt, head 1, i 2, j 5
    assert (rule, head, i, j) == ("sqrt", 1, 2, 5)
    assert p == results.snapshot.rules[ScalingRule.SQRT].weights[1, 2, 5]
    assert logit == results.snapshot.rules[ScalingRule.SQRT].logits[1, 2, 5]


def test_heatmap_skips_unchanged_snapshot(qtbot, results, monkeypatch):
    view = build(qtbot, HeatmapView)
    view.show_results(results)
    calls = []
    image = view.panel_images()[0]
    monkeypatch.setattr(image, "setImage", lambda *a, **k: calls.append(a))
    view.show_results(results.replace(request_id=2, sweep_points=()))
    assert calls == []
    view.show_results(results.replace(request_id=3, config=CONFIG.replace(query_row=2)))
    assert len(calls) == 1


# -- softmax ----------------------------------------------------------------------------------
def test_softmax_curves_and_legend_come_from_the_engine_row(qtbot, results):
    view = build(qtbot, SoftmaxView)
    view.show_results(results)
    snap, row = results.snapshot, CONFIG.query_row
    labels = view.legend_labels()
    assert set(labels) == set(ScalingRule)
    for rule in ScalingRule:
        rv = snap.rules[rule]
        x, y = view.curve(rule).getData()
        np.testing.assert_array_equal(x, np.arange(CONFIG.n_tokens))
        np.testing.assert_array_equal(y, rv.weights[0, row])
        assert f"H={float(rv.entropy[0, row]):.2f}" in labels[rule]
        assert f"p_max={float(rv.p_max[0, row]):.3f}" in labels[rule]
        assert style.rule_name(rule) in labels[rule]
    _header, rows = view.data_table()
    assert len(rows) == len(ScalingRule) * CONFIG.n_tokens
    first_p = float(snap.rules[ScalingRule.NONE].weights[0, row, 0])
    assert rows[0][:5] == ["none", 0, row, 0, first_p]


def test_softmax_follows_the_query_row(qtbot, results):
    view = build(qtbot, SoftmaxView)
    view.show_results(results)
    moved = results.replace(config=CONFIG.replace(query_row=9))
    view.show_results(moved)
    _, y = view.curve(ScalingRule.LINEAR).getData()
    np.testing.assert_array_equal(y, results.snapshot.rules[ScalingRule.LINEAR].weights[0, 9])
    assert view._uniform.value() == pytest.approx(1 / CONFIG.n_tokens)
    # Under a causal mask row i attends to i + 1 keys: the uniform reference follows.
    causal = CONFIG.replace(mask=MaskKind.CAUSAL, query_row=3)
    view.show_results(results.replace(config=causal, snapshot=run_experiment(causal)))
    assert view._uniform.value() == pytest.approx(1 / 4)
    _, y = view.curve(ScalingRule.NONE).getData()
    assert np.all(y[4:] == 0.0)


# -- histogram --------------------------------------------------------------------------------
def test_histogram_prints_engine_variances_and_overlays_theory(qtbot, results):
    view = build(qtbot, HistogramView)
    view.show_results(results)
    assert view.panel_rules() == [ScalingRule.NONE, ScalingRule.SQRT]
    labels = view.variance_labels()
    for label, rule in zip(labels, (ScalingRule.NONE, ScalingRule.SQRT), strict=True):
        rv = results.snapshot.rules[rule]
        assert f"{rv.logit_var_empirical:.4g}" in label
        assert f"{rv.logit_var_theory:.4g}" in label
    # The histogram is the density of the snapshot's own logits.
    panel = view._panels[1]
    edges, density = panel.hist.xData, panel.hist.yData
    logits = np.asarray(results.snapshot.rules[ScalingRule.SQRT].logits).ravel()
    expected, _ = np.histogram(logits, bins=edges, density=True)
    np.testing.assert_allclose(density, expected)
    # The overlay is N(0, Var_theory): its peak is 1/√(2π Var).
    theory = results.snapshot.rules[ScalingRule.SQRT].logit_var_theory
    assert panel.density.yData.max() == pytest.approx(1 / math.sqrt(2 * math.pi * theory), 1e-3)
    _header, rows = view.data_table()
    assert len(rows) == 2 * (edges.size - 1)
    assert rows[0][4] == results.snapshot.rules[ScalingRule.NONE].logit_var_empirical


def test_histogram_of_soft_cap_marks_plus_and_minus_cap(qtbot, engine_parts):
    view = build(qtbot, HistogramView)
    config = CONFIG.replace(rule=ScalingRule.SOFTCAP, cap=2.0)
    snapshot = run_experiment(config, rules=tuple(ScalingRule))
    view.show_results(make_results(engine_parts, config=config, snapshot=snapshot))
    assert view.panel_rules() == [ScalingRule.NONE, ScalingRule.SOFTCAP]
    assert view.cap_markers() == [[], [-2.0, 2.0]]
    logits = np.asarray(snapshot.rules[ScalingRule.SOFTCAP].logits)
    assert np.abs(logits).max() < 2.0  # what the lines bound
    view.show_results(make_results(engine_parts))  # back to 1/√d_k: no cap lines
    assert view.cap_markers() == [[], []]


def test_histogram_with_causal_mask_ignores_masked_logits(qtbot, results):
    causal = CONFIG.replace(mask=MaskKind.CAUSAL)
    snap = run_experiment(causal, rules=tuple(ScalingRule))
    view = build(qtbot, HistogramView)
    view.show_results(results.replace(config=causal.replace(rule="linear"), snapshot=snap))
    assert view.panel_rules() == [ScalingRule.NONE, ScalingRule.LINEAR]
    assert np.isfinite(view._panels[1].hist.yData).all()
    assert "n/a" not in view.variance_labels()[1]
    assert "ρ ≠ 0" not in view._formula.text
    rho = CONFIG.replace(rho=0.5)
    view.show_results(results.replace(config=rho, snapshot=run_experiment(rho)))
    assert "ρ ≠ 0" in view._formula.text
    # The note is rich text: what the user reads must keep "ρ < 0" (a bare "<" opened a tag
    # and swallowed the end of the sentence).
    assert view._formula.item.toPlainText().endswith("left for ρ < 0).")


# -- laws -------------------------------------------------------------------------------------
def test_laws_curves_are_the_sweep_points_on_log_axes(qtbot, results):
    view = build(qtbot, LawsView)
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
    assert view._ln_n.value() == pytest.approx(math.log(CONFIG.n_tokens))
    _header, rows = view.data_table()
    assert len(rows) == len(results.sweep_points)


def test_laws_grow_while_the_sweep_streams(qtbot, results):
    view = build(qtbot, LawsView)
    partial = results.sweep_points[:4]
    view.show_results(results.replace(sweep_points=partial, sweep_done=False))
    assert view.curve("logit_var", ScalingRule.NONE).xData.size == 2  # values 1 and 4
    assert view.curve("logit_var", ScalingRule.LINEAR).xData.size == 1
    assert "4 of" in view._note.text
    view.show_results(results)
    assert view.curve("logit_var", ScalingRule.NONE).xData.size == len(SWEEP.values)
    assert "running" not in view._note.text
    # A sweep without 1/d_k empties its curves and drops it from the legend.
    no_linear = tuple(p for p in results.sweep_points if p.rule != ScalingRule.LINEAR)
    view.show_results(results.replace(sweep_points=no_linear))
    emptied = view.curve("logit_var", ScalingRule.LINEAR).xData
    assert emptied is None or emptied.size == 0
    legend = [label.text for _, label in view._legend.items]
    assert style.rule_name(ScalingRule.LINEAR) not in legend
    assert style.rule_name(ScalingRule.SQRT) in legend


@pytest.mark.parametrize("cls", [LawsView, GradientView, PrecisionView])
def test_a_new_sweep_streams_in_without_moving_an_axis_or_a_panel(qtbot, results, cls):
    view = build(qtbot, cls)
    view.show()
    qtbot.waitExposed(view)
    planned = results.replace(sweep_plan=SWEEP)
    view.show_results(planned)  # an earlier sweep, complete
    qtbot.wait(30)
    span = (math.log10(min(SWEEP.values)), math.log10(max(SWEEP.values)))

    def shown() -> list[tuple[object, ...]]:
        QApplication.processEvents()
        view.export_item().grab()  # paint: lays the tick text out
        return [(plot.viewRange()[0], plot.vb.sceneBoundingRect())
                for plot in view.plots()]

    before = shown()
    for (low, high), _ in before:
        assert low < span[0] and high > span[1]  # the planned d_k span, padded
    points = planned.sweep_points
    for count in range(1, len(points)):
        view.show_results(planned.replace(request_id=2, sweep_points=points[:count],
                                          sweep_done=False))
        assert shown() == before, f"moved after {count} points"
    view.show_results(planned.replace(request_id=2))
    assert shown() == before


# -- gradients --------------------------------------------------------------------------------
def test_gradient_medians_and_bands_are_the_sweep_quantiles(qtbot, results):
    view = build(qtbot, GradientView)
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


def test_gradient_view_reflows_to_its_width(qtbot, results):
    """Three columns when wide, two, then one: the panels always fit the view's width (the
    right-hand panels were cut off at 1024×768 with a dock open)."""
    view = build(qtbot, GradientView)
    view.show()
    qtbot.waitExposed(view)
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


# -- temperature ------------------------------------------------------------------------------
def test_temperature_view_shows_zero_difference_at_sqrt_dk(qtbot, engine_parts, results):
    view = build(qtbot, TemperatureView)
    view.show_results(results)
    p_t, p_sqrt, max_diff = engine_parts["temperature_sqrt"]
    assert max_diff == 0.0
    assert "= 0" in view.readout_text()
    t_curve, s_curve = view.curves()
    np.testing.assert_array_equal(t_curve.yData, p_t)
    np.testing.assert_array_equal(s_curve.yData, p_sqrt)
    assert view.temperature() == pytest.approx(T_SQRT)
    # Away from √d_k the engine's (non-zero) difference is printed.
    other = results.replace(temperature=3.0, temperature_comparison=engine_parts["temperature_3"])
    view.show_results(other)
    diff = engine_parts["temperature_3"][2]
    assert diff > 1e-3
    assert f"{diff:.3g}" in view.readout_text()
    _header, rows = view.data_table()
    assert len(rows) == CONFIG.n_tokens and rows[0][3] == 3.0


def test_temperature_controls_emit_and_sqrt_button(qtbot, results):
    view = build(qtbot, TemperatureView)
    view.show_results(results.replace(temperature=2.0))
    assert view.temperature() == pytest.approx(2.0)
    with qtbot.waitSignal(view.temperatureChanged) as blocker:
        view.set_temperature(12.5)
    assert blocker.args == [pytest.approx(12.5)]
    assert slider_to_temperature(view._slider.value()) == pytest.approx(12.5, rel=0.02)
    with qtbot.waitSignal(view.temperatureChanged) as blocker:
        view._slider.setValue(temperature_to_slider(0.5))
    assert blocker.args[0] == pytest.approx(0.5, rel=0.02)
    with qtbot.waitSignal(view.temperatureChanged) as blocker:
        view._sqrt_button.click()
    assert blocker.args == [math.sqrt(CONFIG.d_k)]  # exact, so the engine's diff is exactly 0
    # A stale result for an older T must not pull the controls back while ours is pending.
    view.show_results(results.replace(request_id=5, temperature=2.0))
    assert view.temperature() == pytest.approx(T_SQRT)


def test_temperature_slider_mapping_is_logarithmic():
    assert slider_to_temperature(0) == pytest.approx(0.1)
    assert slider_to_temperature(temperature_to_slider(100.0)) == pytest.approx(100.0)
    assert slider_to_temperature(temperature_to_slider(1.0)) == pytest.approx(1.0)


# -- correlation ------------------------------------------------------------------------------
def test_correlation_points_and_lines_are_the_engine_rms(qtbot, engine_parts, results):
    view = build(qtbot, CorrelationView)
    view.show_results(results)
    data = engine_parts["correlation"]
    assert view._plot.ctrl.logXCheck.isChecked() and view._plot.ctrl.logYCheck.isChecked()
    for rule, suffix in ((ScalingRule.SQRT, "sqrt"), (ScalingRule.LINEAR, "linear")):
        np.testing.assert_array_equal(view.points(rule).xData, np.asarray(CORR_D_K, float))
        np.testing.assert_allclose(view.points(rule).yData, data[f"rms_{suffix}"])
        np.testing.assert_allclose(view.theory_line(rule).yData, data[f"theory_{suffix}"])
    assert "ρ = 0" in view.note_text()
    rho_config = CONFIG.replace(rho=0.6)
    view.show_results(results.replace(config=rho_config,
                                      correlation=engine_parts["correlation_rho"]))
    np.testing.assert_allclose(view.points(ScalingRule.LINEAR).yData,
                               engine_parts["correlation_rho"]["rms_linear"])
    assert "0.6" in view.note_text()
    _header, rows = view.data_table()
    assert len(rows) == 2 * len(CORR_D_K) and rows[0][0] == 0.6


# -- export -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALL_VIEWS, ids=[cls.key for cls in ALL_VIEWS])
def test_export_item_renders_non_blank_png_of_requested_width(qtbot, results, cls, tmp_path):
    view = build(qtbot, cls)
    view.show_results(results)
    path = export.export_png(view.export_item(), tmp_path / f"{cls.key}.png", 900, 600)
    image = QImage(str(path))
    assert image.width() == 900 and image.height() > 100
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    ptr = image.constBits()
    pixels = np.frombuffer(ptr, dtype=np.uint32, count=image.width() * image.height())
    colours = np.unique(pixels)
    # Far more than background + text: curves, fills or images in the rule colours.
    assert colours.size > 20
    rgb = {f"#{int(c) & 0xFFFFFF:06x}" for c in colours}
    if cls is not HeatmapView:
        assert rgb & {style.RULE_COLORS[ScalingRule.SQRT].lower()}


@pytest.mark.parametrize("cls", [SoftmaxView, HistogramView, CorrelationView, LawsView])
def test_reset_view_undoes_a_zoom_on_every_plot(qtbot, results, cls):
    view = build(qtbot, cls)
    view.show_results(results)
    layout = view.export_item().ci
    plots = [item for item in layout.items if isinstance(item, pg.PlotItem)]
    assert plots
    for plot in plots:
        plot.setRange(xRange=(1e-3, 2e-3), yRange=(1e-3, 2e-3), padding=0)
        assert not any(plot.vb.autoRangeEnabled())
    view.reset_view()
    for plot in plots:
        x_range = plot.vb.viewRange()[0]
        assert x_range[1] - x_range[0] > 2e-3  # no longer the tiny zoom window


def _frame_edges(image: QImage, top_px: int = 140, run_px: int = 150) -> tuple[int, int]:
    """First row and column, in the image's top band, crossed by a long line of frame grey.

    The legends' frame (pen #999999, 1 px) is a neutral grey line, or two lighter ones where
    it is antialiased across pixels; the band above the plots holds nothing else that long and
    grey. -1 when there is none.
    """
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    width = image.width()
    pixels = np.frombuffer(image.constBits(), dtype=np.uint8,
                           count=width * image.height() * 4).reshape(-1, width, 4)
    band = pixels[:top_px, :, :3].astype(int)
    grey = ((band >= 140) & (band <= 230)).all(axis=-1) & (np.ptp(band, axis=-1) <= 4)

    def lines(mask: np.ndarray, length: int) -> np.ndarray:
        sums = np.cumsum(np.pad(mask, ((0, 0), (1, 0))), axis=1)
        return np.nonzero((sums[:, length:] - sums[:, :-length] == length).any(axis=1))[0]

    rows, cols = lines(grey, run_px), lines(grey.T, 20)
    return (int(rows[0]) if rows.size else -1), (int(cols[0]) if cols.size else -1)


@pytest.mark.parametrize("cls", [SoftmaxView, TemperatureView, CorrelationView, LawsView,
                                 GradientView], ids=lambda cls: cls.key)
def test_a_relabelled_legend_keeps_its_place_on_screen_and_in_the_png(qtbot, results, cls,
                                                                      tmp_path):
    # Results relabel the legend; pyqtgraph then moved it to its parent's corner, where its
    # frame's top and left lines fell outside the picture, until a resize laid the view out.
    view = build(qtbot, cls)
    view.show()
    qtbot.waitExposed(view)
    view.show_results(results)
    qtbot.wait(50)  # a few frames: the screen shows the layout that the events leave
    screen = view.export_item().grab().toImage()
    path = export.export_png(view.export_item(), tmp_path / f"{cls.key}.png", 1000, 700)
    for name, image in (("screen", screen), ("png", QImage(str(path)))):
        top, left = _frame_edges(image)
        assert top >= 2 and left >= 2, f"{name}: legend frame starts at row {top}, col {left}"


def test_a_view_csv_writes_sweep_numbers_as_the_engine_sweep_csv_does(qtbot, results, tmp_path):
    import csv
    import io

    from engine.analysis.sweep import SWEEP_CSV_COLUMNS, write_sweep_csv

    point = results.sweep_points[0]
    missing = dataclasses.replace(point, logit_var=math.nan)
    view = build(qtbot, LawsView)
    view.show_results(results.replace(sweep_points=(missing, *results.sweep_points[1:])))
    header, rows = view.data_table()
    path = export.export_csv(header, rows, tmp_path / "laws.csv")
    text = path.read_text(encoding="utf-8")
    assert "\r" not in text
    ours = next(row for row in csv.DictReader(io.StringIO(text)) if row["logit_var"] == "nan")
    engine_csv = io.StringIO()
    write_sweep_csv([missing], engine_csv)
    theirs = next(csv.DictReader(io.StringIO(engine_csv.getvalue())))
    assert set(SWEEP_CSV_COLUMNS) >= {"rule", "logit_var", "entropy_mean", "p_max_mean"}
    for column in ("rule", "logit_var", "entropy_mean", "p_max_mean", "saturated_share"):
        assert ours[column] == theirs[column], column
