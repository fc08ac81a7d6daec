"""The views of one snapshot's rows and logits (softmax, histogram, temperature) show exactly the
engine's numbers and follow the query row, the mask, the rule and the temperature controls."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtWidgets import QPushButton, QSlider

from engine.analysis.experiment import run_experiment
from engine.config import MaskKind, ScalingRule
from gui.explorer.views import HistogramView, SoftmaxView, TemperatureView
from gui.explorer.views.temperature import slider_to_temperature
from gui.kit import style
from tests.gui.view_results import (
    CONFIG,
    T_SQRT,
    build,
    engine_parts,
    make_results,
    notes,
    reference_lines,
)


# -- softmax ----------------------------------------------------------------------------------
def test_softmax_curves_and_legend_come_from_the_engine_row(qtbot):
    view = build(qtbot, SoftmaxView)
    results = make_results()
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


def test_softmax_follows_the_query_row_and_the_mask(qtbot):
    view = build(qtbot, SoftmaxView)
    results = make_results()
    view.show_results(results)
    view.show_results(results.replace(config=CONFIG.replace(query_row=9)))
    _, y = view.curve(ScalingRule.LINEAR).getData()
    np.testing.assert_array_equal(y, results.snapshot.rules[ScalingRule.LINEAR].weights[0, 9])
    assert reference_lines(view.plots()[0]) == [pytest.approx(1 / CONFIG.n_tokens)]
    # Under a causal mask row i attends to i + 1 keys: the uniform reference follows.
    causal = CONFIG.replace(mask=MaskKind.CAUSAL, query_row=3)
    view.show_results(results.replace(config=causal, snapshot=run_experiment(causal)))
    assert reference_lines(view.plots()[0]) == [pytest.approx(1 / 4)]
    _, y = view.curve(ScalingRule.NONE).getData()
    assert np.all(y[4:] == 0.0)


# -- histogram --------------------------------------------------------------------------------
def test_histogram_prints_engine_variances_and_overlays_theory(qtbot):
    view = build(qtbot, HistogramView)
    results = make_results()
    view.show_results(results)
    assert view.panel_rules() == [ScalingRule.NONE, ScalingRule.SQRT]
    for label, rule in zip(view.variance_labels(), (ScalingRule.NONE, ScalingRule.SQRT),
                           strict=True):
        rv = results.snapshot.rules[rule]
        assert f"{rv.logit_var_empirical:.4g}" in label
        assert f"{rv.logit_var_theory:.4g}" in label
    # The histogram is the density of the snapshot's own logits.
    bars = view.plots()[1].listDataItems()[0]
    edges, density = bars.xData, bars.yData
    logits = np.asarray(results.snapshot.rules[ScalingRule.SQRT].logits).ravel()
    expected, _ = np.histogram(logits, bins=edges, density=True)
    np.testing.assert_allclose(density, expected)
    # The overlay is N(0, Var_theory): its peak is 1/√(2π Var).
    theory = results.snapshot.rules[ScalingRule.SQRT].logit_var_theory
    peak = view.density_curves()[1].yData.max()
    assert peak == pytest.approx(1 / math.sqrt(2 * math.pi * theory), 1e-3)
    _header, rows = view.data_table()
    assert len(rows) == 2 * (edges.size - 1)
    assert rows[0][4] == results.snapshot.rules[ScalingRule.NONE].logit_var_empirical


def test_histogram_of_soft_cap_marks_plus_and_minus_cap(qtbot):
    view = build(qtbot, HistogramView)
    config = CONFIG.replace(rule=ScalingRule.SOFTCAP, cap=2.0)
    snapshot = run_experiment(config, rules=tuple(ScalingRule))
    view.show_results(make_results(config=config, snapshot=snapshot))
    assert view.panel_rules() == [ScalingRule.NONE, ScalingRule.SOFTCAP]
    assert [sorted(reference_lines(plot, angle=90)) for plot in view.plots()] == [[], [-2, 2]]
    logits = np.asarray(snapshot.rules[ScalingRule.SOFTCAP].logits)
    assert np.abs(logits).max() < 2.0  # what the lines bound
    view.show_results(make_results())  # back to 1/√d_k: no cap lines
    assert [reference_lines(plot, angle=90) for plot in view.plots()] == [[], []]


def test_histogram_with_causal_mask_ignores_masked_logits(qtbot):
    causal = CONFIG.replace(mask=MaskKind.CAUSAL)
    view = build(qtbot, HistogramView)
    view.show_results(make_results(config=causal.replace(rule="linear"),
                                   snapshot=run_experiment(causal, rules=tuple(ScalingRule))))
    assert view.panel_rules() == [ScalingRule.NONE, ScalingRule.LINEAR]
    assert np.isfinite(view.plots()[1].listDataItems()[0].yData).all()
    assert "n/a" not in view.variance_labels()[1]
    assert not any("ρ ≠ 0" in note for note in notes(view))
    rho = CONFIG.replace(rho=0.5)
    view.show_results(make_results(config=rho, snapshot=run_experiment(rho)))
    # The note is rich text: what the user reads must keep "ρ < 0" (a bare "<" opened a tag
    # and swallowed the end of the sentence).
    assert any("ρ ≠ 0" in note and note.endswith("left for ρ < 0).") for note in notes(view))


# -- temperature ------------------------------------------------------------------------------
def test_temperature_view_shows_zero_difference_at_sqrt_dk(qtbot):
    view = build(qtbot, TemperatureView)
    results = make_results()
    view.show_results(results)
    p_t, p_sqrt, max_diff = engine_parts()["temperature_sqrt"]
    assert max_diff == 0.0
    assert any(note.endswith("| = 0") for note in notes(view))
    t_curve, s_curve = view.curves()
    np.testing.assert_array_equal(t_curve.yData, p_t)
    np.testing.assert_array_equal(s_curve.yData, p_sqrt)
    assert view.temperature() == pytest.approx(T_SQRT)
    # Away from √d_k the engine's (non-zero) difference is printed.
    at_3 = engine_parts()["temperature_3"]
    view.show_results(results.replace(temperature=3.0, temperature_comparison=at_3))
    assert at_3[2] > 1e-3
    assert any(note.endswith(f"| = {at_3[2]:.3g}") for note in notes(view))
    _header, rows = view.data_table()
    assert len(rows) == CONFIG.n_tokens and rows[0][3] == 3.0


def test_temperature_controls_emit_on_a_log_scale_and_sqrt_button(qtbot):
    view = build(qtbot, TemperatureView)
    results = make_results()
    view.show_results(results.replace(temperature=2.0))
    assert view.temperature() == pytest.approx(2.0)
    slider, sqrt_button = view.findChild(QSlider), view.findChild(QPushButton)
    with qtbot.waitSignal(view.temperatureChanged) as blocker:
        view.set_temperature(12.5)
    assert blocker.args == [pytest.approx(12.5)]
    assert slider_to_temperature(slider.value()) == pytest.approx(12.5, rel=0.02)
    # The slider's ends are T = 0.1 and 100, its middle the geometric mean √10.
    for position, expected in ((slider.minimum(), 0.1), (slider.maximum(), 100.0),
                               ((slider.minimum() + slider.maximum()) // 2, math.sqrt(10))):
        with qtbot.waitSignal(view.temperatureChanged) as blocker:
            slider.setValue(position)
        assert blocker.args == [pytest.approx(expected, rel=0.01)]
    with qtbot.waitSignal(view.temperatureChanged) as blocker:
        sqrt_button.click()
    assert blocker.args == [math.sqrt(CONFIG.d_k)]  # exact, so the engine's diff is exactly 0
    # A stale result for an older T must not pull the controls back while ours is pending.
    view.show_results(results.replace(temperature=2.0))
    assert view.temperature() == pytest.approx(T_SQRT)
