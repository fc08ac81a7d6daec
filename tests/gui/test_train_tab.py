"""The Train tab: live curves equal the engine's histories, divergence, Pause/Resume/Stop,
responsiveness, the lr-sweep view, shutdown, export. Waits use GUI-thread signals only."""

from __future__ import annotations

import multiprocessing
import time

import numpy as np
import pytest
from PySide6.QtCore import QElapsedTimer, QTimer

from engine.config import ScalingRule
from engine.config.train import TrainConfig
from engine.training.lr_sweep import run_lr_sweep
from gui.headless.train_demo import wait_for
from gui.kit.field_widgets import LogSpinBox
from gui.kit.style import rule_name
from gui.train import TrainTab
from gui.train.state import TrainState

SMALL = TrainConfig(rules=("none", "sqrt"), d_k=16, d_model=32, n=8, vocab=16, batch=32,
                    steps=80, lr=0.01, eval_size=64)
LONG = SMALL.replace(steps=100_000)


@pytest.fixture
def tab(make_train_tab):
    return make_train_tab(SMALL)


def _step(tab: TrainTab) -> int:
    snap = tab.controller.results().snapshot
    return -1 if snap is None else snap.step


def _y(curve) -> np.ndarray:
    return np.asarray(curve.getOriginalDataset()[1], dtype=float)


def test_curves_equal_snapshot_histories_and_legend_lists_rules(tab):
    assert tab.start_training()
    assert tab.wait_until_idle(20_000)
    snap = tab.controller.results().snapshot
    assert snap.done and snap.step == SMALL.steps
    view = tab.curves
    for rule, st in snap.rules.items():
        np.testing.assert_array_equal(_y(view.curve("train_loss", rule)), st.loss_history)
        x_eval, y_eval = view.curve("eval_loss", rule).getOriginalDataset()
        np.testing.assert_array_equal(x_eval, st.eval_steps)
        np.testing.assert_array_equal(y_eval, st.eval_loss_history)
        np.testing.assert_array_equal(_y(view.curve("accuracy", rule)), st.eval_accuracy_history)
        np.testing.assert_allclose(_y(view.curve("entropy", rule)),
                                   np.asarray(st.entropy_history).mean(axis=1))
        grads = _y(view.curve("grad_norm", rule))
        assert grads.size >= SMALL.steps // SMALL.snapshot_every and np.all(grads > 0)
        assert grads[-1] == pytest.approx(st.grad_norm)
    # The probe view was hidden (another sub-tab): it catches up when shown.
    assert tab.show_view("train_probe")
    for rule, st in snap.rules.items():
        # One query row (retrieval): drawn as bars of p per key.
        np.testing.assert_array_equal(tab.probe.bars(rule).opts["height"],
                                      st.probe_weights[:, 0, :].reshape(-1))
    labels = view.legend_labels()
    assert labels[:2] == [rule_name("none"), rule_name("sqrt")]
    assert rule_name("linear") not in labels
    assert view.divergence_text("none") == "" and view.divergence_text("sqrt") == ""
    header, rows = view.data_table()
    assert header == ["rule", "series", "step", "value"] and len(rows) > 2 * SMALL.steps


def test_huge_learning_rate_marks_divergence(tab):
    tab.panel.set_config(SMALL.replace(lr=100.0, optimizer="sgd", steps=20))
    assert tab.start_training()
    assert tab.wait_until_idle(20_000)
    snap = tab.controller.results().snapshot
    for rule, st in snap.rules.items():
        assert st.diverged_at is not None
        assert tab.curves.divergence_text(rule) == f"diverged at step {st.diverged_at}"
        x, _y_marker = tab.curves.divergence_marker(rule).getOriginalDataset()
        assert list(x) == [st.diverged_at]


def test_invalid_combination_shows_the_engine_message_and_does_not_start(tab):
    tab.panel.n.setValue(40)  # retrieval needs vocab (16) >= n
    assert "vocab (16) must be >= n (40)" in tab.panel.error_text()
    tab.panel.start_button.click()
    assert tab.controller.state() == TrainState.IDLE
    assert tab.controller.results().snapshot is None
    tab.panel.n.setValue(8)
    assert tab.panel.error_text() == ""
    for box in tab.panel.rule_boxes.values():
        box.setChecked(False)
    assert "rules must name at least one" in tab.panel.error_text()
    box.setChecked(True)
    for text, message in (("0.01, abc", "'abc' is not a number"),
                          ("0.01, 0.01", "learning rates must not repeat a value"),
                          ("0.01 5000", "learning rates must be in [1e-08, 100], got 5000")):
        tab.panel.lrs.setText(text)
        assert not tab.start_lr_sweep()
        assert message in tab.panel.error_text()
        assert tab.controller.job() is None


def test_pause_holds_resume_continues_stop_is_prompt(tab):
    tab.panel.set_config(LONG)
    tab.panel.start_button.click()
    assert wait_for(tab, lambda: _step(tab) >= 20, 20_000)
    tab.panel.pause_button.click()
    assert tab.controller.state() == TrainState.PAUSED
    wait_for(tab, None, 100)  # a snapshot already in flight may still arrive
    held = _step(tab)
    wait_for(tab, None, 300)
    assert _step(tab) == held, "training advanced while paused"
    assert tab.controller.job().running.is_set() is False  # the worker blocks on the event
    tab.panel.resume_button.click()
    assert wait_for(tab, lambda: _step(tab) > held + 10, 20_000)
    t0 = time.perf_counter()
    tab.panel.stop_button.click()
    assert tab.wait_until_idle(5_000)
    elapsed = time.perf_counter() - t0
    print(f"\nStop -> worker finished and GUI idle: {1000 * elapsed:.1f} ms")
    assert elapsed < 0.5, elapsed
    stopped_at = _step(tab)
    assert 0 < stopped_at < LONG.steps and not tab.controller.results().snapshot.done
    # Stop while paused wakes the worker as well.
    tab.panel.start_button.click()
    assert wait_for(tab, lambda: _step(tab) >= 5, 20_000)
    tab.panel.pause_button.click()
    t0 = time.perf_counter()
    tab.panel.stop_button.click()
    assert tab.wait_until_idle(5_000)
    print(f"Stop while paused: {1000 * (time.perf_counter() - t0):.1f} ms")
    assert time.perf_counter() - t0 < 0.5
    tab.panel.reset_button.click()
    assert tab.controller.results().snapshot is None
    assert tab.curves.curve("train_loss", "none").getOriginalDataset()[1] is None or \
        _y(tab.curves.curve("train_loss", "none")).size == 0


def test_gui_stays_responsive_while_training(tab, qtbot):
    tab.panel.set_config(LONG.replace(rules=("none", "sqrt", "linear")))
    tab.panel.start_button.click()
    assert wait_for(tab, lambda: _step(tab) >= 1, 20_000)
    worst_runs = []
    # Two 1 s windows: a spike from another process on the shared machine can spoil one.
    for _ in range(2):
        lateness: list[float] = []
        clock = QElapsedTimer()
        timer = QTimer()
        timer.setTimerType(timer.timerType().PreciseTimer)
        timer.setInterval(5)
        last = [0.0]

        def beat(lateness=lateness, clock=clock, last=last) -> None:
            now = clock.nsecsElapsed() / 1e6
            lateness.append(now - last[0] - 5.0)
            last[0] = now

        timer.timeout.connect(beat)
        clock.start()
        timer.start()
        wait_for(tab, None, 1000)
        timer.stop()
        worst_runs.append(max(lateness[1:]))
        print(f"\nheartbeat: {len(lateness)} beats, worst lateness {worst_runs[-1]:.1f} ms, "
              f"median {np.median(lateness):.2f} ms, {tab.controller.pushes} pushes so far")
        if worst_runs[-1] <= 30.0:
            break
    tab.controller.stop()
    assert tab.wait_until_idle(5_000)
    # The target is 30 ms (idle machine: ~20 ms measured); 60 ms leaves room for a loaded
    # 2-core machine. Before the split paint: 33-57 ms on an idle one.
    assert min(worst_runs) <= 60.0, worst_runs
    assert _step(tab) > 20


def test_no_viewport_is_left_frozen_by_a_push_pause_or_stop(tab):
    """A push holds the viewports it changed until its paint: never longer, whether the run
    goes on, is paused or stopped."""
    tab.panel.set_config(LONG)
    assert tab.start_training()
    assert wait_for(tab, lambda: tab.controller.pushes >= 3, 20_000)
    viewport = tab.curves.export_item().viewport()
    tab.controller.pause()
    wait_for(tab, None, 150)  # the snapshot in flight arrives and is pushed
    assert viewport.updatesEnabled()
    paused_at = _step(tab)
    tab.controller.resume()
    assert wait_for(tab, lambda: _step(tab) > paused_at, 10_000)
    tab.controller.stop()
    assert tab.wait_until_idle(5_000)
    wait_for(tab, None, 50)
    assert viewport.updatesEnabled()


def _training_processes() -> list[multiprocessing.Process]:
    return [p for p in multiprocessing.active_children() if p.name == "attention-training"]


def test_training_runs_in_a_child_process_that_ends_with_the_controller(tab):
    tab.panel.set_config(LONG)
    assert tab.start_training()
    assert wait_for(tab, lambda: _step(tab) > 0, 20_000)
    assert len(_training_processes()) == 1
    assert tab.controller.shutdown(5000)
    assert _training_processes() == []


def test_lr_sweep_view_shows_the_engine_result(tab):
    cfg = SMALL.replace(steps=30)
    lrs, seeds = (0.003, 0.03, 3.0), 2
    tab.panel.set_config(cfg)
    tab.panel.set_sweep_settings(lrs, seeds)
    assert tab.start_lr_sweep()
    assert tab.wait_until_idle(30_000)
    assert tab.controller.last_error() == ""
    result = tab.controller.results().sweep_result
    # The sweep ran the panel's configuration.
    assert result.config == tab.panel.config()
    expected = run_lr_sweep(result.config, lrs, seeds)
    view = tab.lr_sweep
    assert view.legend_labels()[:2] == [rule_name("none"), rule_name("sqrt")]
    for rule in cfg.rules:
        rows = [r for r in expected.rows if r.rule is rule]
        x, y = view.mean_curve(rule).getOriginalDataset()
        np.testing.assert_array_equal(x, [r.lr for r in rows])
        np.testing.assert_array_equal(y, [r.final_loss_mean for r in rows])
        assert [r.final_loss_mean for r in result.rows if r.rule is rule] == pytest.approx(
            [r.final_loss_mean for r in rows], nan_ok=True)
        runs_x, _ = view.run_points(rule).getOriginalDataset()
        assert len(runs_x) == len(lrs) * seeds
        best = expected.largest_stable_lr[rule]
        sx, _sy = view.stable_marker(rule).getOriginalDataset()
        assert (list(sx) if sx is not None else []) == ([best] if best is not None else [])
    assert expected.row(ScalingRule.SQRT, 3.0).diverged == seeds
    header, rows = view.data_table()
    assert "largest_stable_lr" in header and len(rows) == len(lrs) * len(cfg.rules)


def test_lr_sweep_view_draws_the_band_ranges_to_the_data_and_labels_the_threshold(tab):
    """The caption promises a min…max band: it is drawn; the x axis ends at the data (it ran
    to lr = 1); the dashed threshold is labelled in English too (it was only in Chinese)."""
    from math import log10

    from PySide6.QtCore import QPointF

    from gui.kit import i18n

    lrs, seeds = (0.001, 0.003, 0.01, 0.03), 2
    tab.panel.set_config(SMALL.replace(steps=30))
    tab.panel.set_sweep_settings(lrs, seeds)
    assert tab.start_lr_sweep()
    assert tab.wait_until_idle(30_000)
    result = tab.controller.results().sweep_result
    view = tab.lr_sweep
    tab.show_view(view.key)
    tab.refresh_views()
    assert "Band: min…max over seeds" in view._note.text
    spread = 0
    for rule in result.config.rules:
        rows = [r for r in result.rows if r.rule is rule]
        band = view._items[rule].band
        bounds = band.path().boundingRect()
        assert not bounds.isEmpty(), rule
        assert bounds.left() == pytest.approx(log10(min(lrs)))
        assert bounds.right() == pytest.approx(log10(max(lrs)))
        assert bounds.top() == pytest.approx(log10(min(r.final_loss_min for r in rows)))
        assert bounds.bottom() == pytest.approx(log10(max(r.final_loss_max for r in rows)))
        for r in rows[1:-1]:  # the filled polygon covers each seed spread (inner lrs)
            if r.final_loss_max > r.final_loss_min * 1.01:
                spread += 1
                mid = 0.5 * (log10(r.final_loss_min) + log10(r.final_loss_max))
                assert band.path().contains(QPointF(log10(r.lr), mid)), (rule, r.lr)
    assert spread > 0  # the check above ran on real bands
    view.reset_view()
    (x_low, x_high), _ = view.plot().vb.viewRange()
    span = log10(max(lrs)) - log10(min(lrs))
    assert log10(min(lrs)) - 0.2 * span <= x_low <= log10(min(lrs))
    assert log10(max(lrs)) <= x_high <= log10(max(lrs)) + 0.2 * span
    assert view.threshold_label() == "stable threshold"
    try:
        i18n.set_language("zh_CN")
        assert view.threshold_label() == "稳定阈值"
        i18n.set_language("en")
        assert view.threshold_label() == "stable threshold"
    finally:
        i18n.set_language("en")


def _tick_texts(axis) -> list[tuple[object, str]]:
    """The (rectangle, text) of every tick label the axis draws now (pyqtgraph's own specs)."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        painter.setFont(axis.style["tickFont"] or axis.font())
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [] if specs is None else [(rect, text) for rect, _flags, text in specs[2]]


def _assert_no_overlap(texts) -> None:
    rects = [rect for rect, _ in texts]
    for index, a in enumerate(rects):
        for b in rects[index + 1:]:
            assert not a.intersects(b), (texts, a, b)


def test_probe_draws_one_query_row_as_bars_with_readable_ticks(tab, qtbot):
    """Retrieval has one query row: bars of p per key (not a stretched one-row image), a p
    axis, the answering key outlined, key labels that never overlap."""
    from gui.train.probe import probe_targets

    cfg = SMALL.replace(steps=40, rules=("none", "sqrt", "linear"), n=16, vocab=32)
    tab.panel.set_config(cfg)
    assert tab.start_training() and tab.wait_until_idle(30_000)
    view = tab.probe
    tab.show_view(view.key)
    tab.refresh_views()
    qtbot.wait(50)
    snap = tab.controller.results().snapshot
    assert len(snap.target_positions) == 1
    answer = {j for _r, j in probe_targets(snap)}
    for rule, st in snap.rules.items():
        bars = view.bars(rule)
        assert bars.isVisible() and not view.image(rule).isVisible()
        np.testing.assert_allclose(bars.opts["height"], np.asarray(st.probe_weights)[0, 0])
        np.testing.assert_allclose(np.asarray(bars.opts["x"]) - 0.5, np.arange(cfg.n + 1),
                                   atol=1e-9)
        assert [x - 0.5 for x in view.target_bars(rule).opts["x"]] == sorted(answer)
        plot = view.plot(rule)
        assert not plot.vb.yInverted()
        (_x0, _x1), (y0, y1) = plot.vb.viewRange()
        assert y0 <= 0.0 and 1.0 <= y1 <= 1.1
        left = [float(text) for _, text in _tick_texts(plot.getAxis("left"))]
        assert len(left) >= 3 and min(left) == 0.0 and max(left) == 1.0, left
        bottom = _tick_texts(plot.getAxis("bottom"))
        assert len(bottom) >= 3
        assert all(text.isdigit() and int(text) <= cfg.n for _, text in bottom)
        _assert_no_overlap(bottom)
    assert view.plot(cfg.rules[0]).getAxis("left").labelText.endswith(">p</span>")
    # Narrow panels: labels are thinned (never run together), and there are still some.
    tab.resize(700, 600)
    qtbot.wait(50)
    for rule in cfg.rules:
        bottom = _tick_texts(view.plot(rule).getAxis("bottom"))
        assert 2 <= len(bottom) < cfg.n + 1
        _assert_no_overlap(bottom)


def test_probe_map_of_several_rows_keeps_rows_and_thins_labels(tab, qtbot):
    cfg = SMALL.replace(task="copy_back", steps=20, n=48, vocab=16, offset=2,
                        rules=("none", "sqrt", "linear"))
    tab.panel.set_config(cfg)
    assert tab.start_training() and tab.wait_until_idle(30_000)
    view = tab.probe
    tab.show_view(view.key)
    tab.refresh_views()
    qtbot.wait(50)
    snap = tab.controller.results().snapshot
    rows = len(snap.target_positions)
    assert rows > 1
    for rule, st in snap.rules.items():
        assert view.image(rule).isVisible() and not view.bars(rule).isVisible()
        np.testing.assert_allclose(view.image(rule).image,
                                   np.asarray(st.probe_weights).reshape(-1, cfg.n))
        plot = view.plot(rule)
        assert plot.vb.yInverted()
        for name in ("left", "bottom"):
            texts = _tick_texts(plot.getAxis(name))
            assert len(texts) >= 2, name
            _assert_no_overlap(texts)
        left = [int(text) for _, text in _tick_texts(plot.getAxis("left"))]
        assert set(left) <= {int(t) for t in snap.target_positions}


def test_init_std_clip_norm_and_eval_size_reach_the_trainer(tab):
    """The CLI's --init-std, --clip-norm and --eval-size (and the divergence factor), as
    Train-panel controls with the engine's limits and defaults; what is set is what the
    trainer runs."""
    from engine.config.train import TRAIN_FIELDS

    panel = tab.panel
    panel.set_config(SMALL.replace(steps=10))
    # Defaults shown as the engine's: None = auto / off, eval size as configured.
    assert panel.init_std.text() == "auto (1/√d_model)" and panel.init_std.optional_value() is None
    assert panel.clip_norm.text() == "off" and panel.clip_norm.optional_value() is None
    assert panel.config().init_std is None and panel.config().clip_norm is None
    assert TrainConfig().eval_size == TrainPanelDefaults.eval_size()
    assert panel.eval_size.minimum() == TRAIN_FIELDS["eval_size"].low
    assert panel.eval_size.maximum() == TRAIN_FIELDS["eval_size"].high
    assert panel.init_std.maximum() == TRAIN_FIELDS["init_std"].high
    assert panel.clip_norm.maximum() == TRAIN_FIELDS["clip_norm"].high
    for box in (panel.init_std, panel.clip_norm, panel.eval_size):
        assert box.toolTip()
    # Stepping up from the word gives a value, stepping down past the engine's minimum the
    # word again; a value below the engine's minimum is not accepted as typed.
    panel.clip_norm.stepBy(1)
    assert panel.clip_norm.optional_value() == 1.0
    panel.clip_norm.stepBy(-1)
    assert panel.clip_norm.optional_value() == pytest.approx(0.5)
    from PySide6.QtGui import QValidator

    assert panel.init_std.validate("1e-9", 0)[0] != QValidator.State.Acceptable
    assert panel.init_std.validate("0.05", 0)[0] == QValidator.State.Acceptable
    assert panel.init_std.validate("auto (1/√d_model)", 0)[0] == QValidator.State.Acceptable

    panel.init_std.setValue(0.05)
    panel.clip_norm.setValue(0.5)
    panel.eval_size.setValue(40)
    panel.divergence_factor.setValue(50.0)  # a row generated from its declaration alone
    assert panel.error_text() == ""
    assert tab.start_training() and tab.wait_until_idle(30_000)
    assert tab.controller.last_error() == ""
    ran = tab.controller.results().snapshot.config
    assert (ran.init_std, ran.clip_norm, ran.eval_size) == (0.05, 0.5, 40)
    assert ran.divergence_factor == 50.0
    # set_config shows a configuration's values (tour steps, sessions) and None as the word.
    panel.set_config(SMALL.replace(init_std=0.2, clip_norm=None, eval_size=128))
    assert panel.init_std.optional_value() == pytest.approx(0.2)
    assert panel.clip_norm.text() == "off"
    assert panel.config().eval_size == 128


class TrainPanelDefaults:
    """The panel's defaults without a configuration (what a fresh Train tab shows)."""

    @staticmethod
    def eval_size() -> int:
        from gui.train.panel import TrainPanel

        panel = TrainPanel()
        try:
            return panel.eval_size.value()
        finally:
            panel.deleteLater()


def test_log_spin_box_steps_through_1_2_3_5():
    box = LogSpinBox(1e-8, 100.0, 0.01)
    seen = []
    for _ in range(4):
        box.stepBy(1)
        seen.append(box.value())
    assert seen == pytest.approx([0.02, 0.03, 0.05, 0.1])
    box.setValue(0.01)
    box.stepBy(-1)
    assert box.value() == pytest.approx(0.005)
    assert box.textFromValue(0.003) == "0.003"


def test_window_train_tab_exports_and_closing_mid_training_leaves_no_thread(make_window, tmp_path):
    window = make_window()
    window.mode_tabs.setCurrentWidget(window.train_tab)
    assert not window.parameter_dock.isVisible()  # the explorer's dock is hidden here
    assert window.current_view() is window.train_tab.curves
    assert window.show_view("train_lr_sweep") and window.current_view().key == "train_lr_sweep"
    assert window.show_view("laws") and window.parameter_dock.isVisible()
    tab = window.train_tab
    assert window.show_view("train_curves")
    tab.panel.set_config(LONG)
    tab.panel.start_button.click()
    assert wait_for(tab, lambda: _step(tab) >= 10, 20_000)
    png = window.files.export_current(tmp_path / "curves.png", 600, 400)
    assert png.stat().st_size > 0
    written = window.files.export_everything(tmp_path / "all", 500, 350)
    assert {"train_curves", "train_probe", "train_lr_sweep"} <= {p.stem for p in written}
    t0 = time.perf_counter()
    window.close()
    elapsed = time.perf_counter() - t0
    print(f"\nclose mid-training: {1000 * elapsed:.1f} ms")
    assert not tab.controller.is_running()
    assert elapsed < 1.0, elapsed


def test_curves_y_ranges_cover_the_data_and_respect_a_manual_zoom(tab):
    assert tab.start_training()
    assert tab.wait_until_idle(20_000)
    results = tab.controller.results()
    loss = tab.curves.plot("loss")
    lo, hi = loss.getViewBox().viewRange()[1]  # log10 units
    for st in results.snapshot.rules.values():
        history = np.asarray(st.loss_history)
        assert lo <= np.log10(history.min()) and np.log10(history.max()) <= hi
    loss.setYRange(-0.5, 0.2, padding=0)  # the user zooms in
    tab.curves._forget()  # make the next show_results draw the same results again
    tab.curves.show_results(results)
    assert np.allclose(loss.getViewBox().viewRange()[1], (-0.5, 0.2))
    tab.curves.reset_view()  # fitted to the data again
    assert np.allclose(loss.getViewBox().viewRange()[1], (lo, hi))


def test_a_run_that_ended_behind_another_tab_shows_when_the_train_tab_returns(make_window):
    window = make_window()
    assert window.show_view("laws")
    tab = window.train_tab
    assert tab.start_training()  # Ctrl+T works from any tab
    assert tab.wait_until_idle(60_000)
    snap = tab.controller.results().snapshot
    assert snap.done
    assert window.show_view("train_curves")
    for rule, st in snap.rules.items():
        np.testing.assert_array_equal(_y(tab.curves.curve("train_loss", rule)), st.loss_history)
