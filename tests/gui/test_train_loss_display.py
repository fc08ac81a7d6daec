"""The Train curves before a run, and the training loss smoothed or on a linear axis."""

from __future__ import annotations

import numpy as np
import pytest

from engine.config.train import TrainConfig
from engine.training.smoothing import trailing_mean
from gui.train.curves import LOSS_SMOOTHING_STEPS, TrainCurvesView

SMALL = TrainConfig(rules=("none", "sqrt"), d_k=16, d_model=32, n=8, vocab=16, batch=32,
                    steps=120, lr=0.01, eval_size=64)


def _y(curve) -> np.ndarray:
    return np.asarray(curve.getOriginalDataset()[1], dtype=float)


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
    view.set_loss_axis_log(False)
    assert not view.plot("loss").getAxis("left").logMode
    assert view.plot("loss").getViewBox().viewRange()[1][0] <= 0.0
    assert not view.legend_is_shown()
    with pytest.raises(ValueError):
        view.set_loss_smoothing(7)


def test_smoothed_and_linear_training_loss_leave_the_data_alone(make_train_tab):
    tab = make_train_tab(SMALL)
    assert tab.start_training()
    assert tab.wait_until_idle(20_000)
    view = tab.curves
    snap = tab.controller.results().snapshot
    assert view.legend_is_shown() and view.loss_smoothing() == 1 and view.loss_axis_is_log()
    table_before = view.data_table()

    view.set_loss_smoothing(LOSS_SMOOTHING_STEPS)
    for rule, st in snap.rules.items():
        smoothed = _y(view.curve("train_loss", rule))
        np.testing.assert_allclose(smoothed, trailing_mean(st.loss_history, LOSS_SMOOTHING_STEPS))
        # Smoothing calms the curve: its step-to-step changes are far smaller than the raw ones.
        raw_jumps = np.abs(np.diff(np.log(st.loss_history))).mean()
        assert np.abs(np.diff(np.log(smoothed))).mean() < 0.5 * raw_jumps
    assert f"training loss, mean of {LOSS_SMOOTHING_STEPS} steps" in view.legend_labels()

    view.set_loss_axis_log(False)
    loss_plot = view.plot("loss")
    assert not loss_plot.getAxis("left").logMode
    low, high = loss_plot.getViewBox().viewRange()[1]  # plain nats now, not log10
    assert low <= 0.0
    for st in snap.rules.values():
        assert high >= trailing_mean(st.loss_history, LOSS_SMOOTHING_STEPS).max()
    assert view.chance_loss_line().value() == pytest.approx(float(snap.chance_loss))
    # The CSV keeps every recorded step whatever the display shows.
    assert view.data_table() == table_before

    view.set_loss_smoothing(1)
    view.set_loss_axis_log(True)
    for rule, st in snap.rules.items():
        np.testing.assert_array_equal(_y(view.curve("train_loss", rule)), st.loss_history)
    assert "training loss" in view.legend_labels()
    assert view.chance_loss_line().value() == pytest.approx(np.log10(float(snap.chance_loss)))
