"""The Train curves before a run, and the training loss smoothed or on a linear axis."""

from __future__ import annotations

import numpy as np
import pytest

from engine.training.smoothing import trailing_mean
from gui.train.curves import TrainCurvesView
from gui.train.loss_display import LOSS_SMOOTHING_STEPS
from tests.gui.train_runs import SMALL, curve_y


def _major_tick_labels(plot) -> list[str]:
    axis = plot.getAxis("left")
    low, high = plot.getViewBox().viewRange()[1]
    spacing, values = axis.tickValues(low, high, axis.height())[0]
    return axis.tickStrings(values, 1, spacing)


def test_empty_plots_span_the_planned_steps_show_decades_and_no_legend(qtbot):
    view = TrainCurvesView()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    qtbot.waitExposed(view)
    assert not view.legend_is_shown()
    view.set_planned_steps(2000)
    x_low, x_high = view.plot("loss").getViewBox().viewRange()[0]
    assert x_low <= 0 and 2000 <= x_high <= 2100
    # Log axes with whole decades labelled, not a lone 2…9 inside one decade.
    assert "1" in _major_tick_labels(view.plot("loss"))
    assert "1" in _major_tick_labels(view.plot("grad_norm"))
    view.loss_display.set_log_y(False)
    assert not view.plot("loss").getAxis("left").logMode
    assert view.plot("loss").getViewBox().viewRange()[1][0] <= 0.0
    assert not view.legend_is_shown()
    with pytest.raises(ValueError):
        view.loss_display.set_smoothing(7)


def test_smoothed_and_linear_training_loss_leave_the_data_alone(make_train_tab):
    tab = make_train_tab(SMALL.replace(steps=120))
    assert tab.start_training()
    assert tab.wait_until_idle(20_000)
    view, display = tab.curves, tab.curves.loss_display
    snap = tab.controller.results().snapshot
    assert view.legend_is_shown() and display.smoothing() == 1 and display.log_y()
    table_before = view.data_table()

    display.set_smoothing(LOSS_SMOOTHING_STEPS)
    for rule, st in snap.rules.items():
        smoothed = curve_y(view.rule_curves(rule).curves["train_loss"])
        np.testing.assert_allclose(smoothed, trailing_mean(st.loss_history, LOSS_SMOOTHING_STEPS))
        # Smoothing calms the curve: its step-to-step changes are far smaller than the raw ones.
        raw_jumps = np.abs(np.diff(np.log(st.loss_history))).mean()
        assert np.abs(np.diff(np.log(smoothed))).mean() < 0.5 * raw_jumps
    assert f"training loss, mean of {LOSS_SMOOTHING_STEPS} steps" in view.legend_labels()

    display.set_log_y(False)
    loss_plot = view.plot("loss")
    assert not loss_plot.getAxis("left").logMode
    low, high = loss_plot.getViewBox().viewRange()[1]  # plain nats now, not log10
    assert low <= 0.0
    for st in snap.rules.values():
        assert high >= trailing_mean(st.loss_history, LOSS_SMOOTHING_STEPS).max()
    assert view.chance_loss_line().value() == pytest.approx(float(snap.chance_loss))
    # The CSV keeps every recorded step whatever the display shows.
    assert view.data_table() == table_before

    display.set_smoothing(1)
    display.set_log_y(True)
    for rule, st in snap.rules.items():
        np.testing.assert_array_equal(curve_y(view.rule_curves(rule).curves["train_loss"]),
                                      st.loss_history)
    assert "training loss" in view.legend_labels()
    assert view.chance_loss_line().value() == pytest.approx(np.log10(float(snap.chance_loss)))
