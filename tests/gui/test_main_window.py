"""The main window: every control reaches the views, menus, settings, shutdown."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QApplication

from engine.analysis.experiment import run_experiment, temperature_comparison
from engine.analysis.explorer import ALL_RULES
from engine.config import AttentionConfig, MaskKind, ScalingRule
from tests.gui.conftest import HANG_MS, SMALL_CONFIG, back_to_start


def _heatmap_matches(window) -> None:
    results = window.controller.results()
    snapshot = results.snapshot
    expected = run_experiment(results.config, rules=ALL_RULES)
    heatmap = window.view("heatmap")
    images = heatmap.panel_images()
    # Panels: the compared rule first, then "none" (head 1).
    np.testing.assert_array_equal(
        images[0].image, heatmap.shown_values(expected.rules[results.config.rule].weights[0]))
    np.testing.assert_array_equal(
        images[1].image, heatmap.shown_values(expected.rules[ScalingRule.NONE].weights[0]))
    np.testing.assert_array_equal(snapshot.rules[ScalingRule.NONE].weights,
                                  expected.rules[ScalingRule.NONE].weights)


def _softmax_matches(window) -> None:
    config = window.controller.results().config
    expected = run_experiment(config, rules=ALL_RULES)
    x, y = window.view("softmax").curve(config.rule).getData()
    np.testing.assert_array_equal(y, expected.rules[config.rule].weights[0, config.query_row])
    assert x.size == config.n_tokens


# (control name, how to change it, what the resulting config must say)
CONTROL_CASES = [
    ("n_tokens", lambda p: p.n_tokens.spin.setValue(40), lambda c: c.n_tokens == 40),
    ("d_k", lambda p: p.d_k.spin.setValue(32), lambda c: c.d_k == 32),
    ("heads+d_model", lambda p: (p.d_model.setValue(32), p.heads.setValue(2)),
     lambda c: (c.heads, c.d_model) == (2, 32)),
    ("link_heads", lambda p: (p.d_model.setValue(48), p.heads.setValue(3),
                              p.link_heads.setChecked(True)), lambda c: c.d_k == 16),
    ("init_std", lambda p: p.init_std.spin.setValue(0.5), lambda c: c.init_std == 0.5),
    ("use_projection", lambda p: p.use_projection.setChecked(True), lambda c: c.use_projection),
    ("projection_std", lambda p: (p.use_projection.setChecked(True),
                                  p.projection_std.spin.setValue(0.2)),
     lambda c: c.projection_std == 0.2),
    ("rule", lambda p: p.rule.setCurrentIndex(p.rule.findData("linear")),
     lambda c: c.rule is ScalingRule.LINEAR),
    ("temperature", lambda p: (p.rule.setCurrentIndex(p.rule.findData("temperature")),
                               p.temperature.spin.setValue(2.5)),
     lambda c: c.rule is ScalingRule.TEMPERATURE and c.temperature == 2.5),
    ("gain", lambda p: (p.rule.setCurrentIndex(p.rule.findData("qk_norm")),
                        p.gain_default.setChecked(False), p.gain.spin.setValue(2.0)),
     lambda c: c.gain == 2.0),
    ("cap", lambda p: (p.rule.setCurrentIndex(p.rule.findData("softcap")),
                       p.cap.spin.setValue(3.0)), lambda c: c.cap == 3.0),
    ("rho", lambda p: p.rho.spin.setValue(0.7), lambda c: c.rho == 0.7),
    ("mask", lambda p: p.mask.setCurrentIndex(1), lambda c: c.mask is MaskKind.CAUSAL),
    ("query_row", lambda p: p.query_row.spin.setValue(5), lambda c: c.query_row == 5),
    ("seed", lambda p: p.seed.setValue(11), lambda c: c.seed == 11),
    ("samples", lambda p: p.samples.setValue(500), lambda c: c.samples == 500),
]


@pytest.mark.parametrize(("name", "change", "check"), CONTROL_CASES,
                         ids=[case[0] for case in CONTROL_CASES])
def test_each_control_reaches_the_views(shared_window, settle, name, change, check):
    window = shared_window
    assert window.controller.results().config == SMALL_CONFIG
    change(window.panel)
    settle(window)
    results = window.controller.results()
    assert check(results.config), results.config
    assert results.config == window.panel.config()
    _heatmap_matches(window)
    _softmax_matches(window)
    back_to_start(window, settle)


def test_histogram_label_shows_the_variance(shared_window, settle):
    window = shared_window
    window.panel.d_k.spin.setValue(64)
    settle(window)
    snapshot = window.controller.results().snapshot
    labels = window.view("histogram").variance_labels()
    var_none = snapshot.rules[ScalingRule.NONE].logit_var_empirical
    assert any(f"{var_none:.3g}" in label or f"{var_none:.2f}" in label for label in labels), (
        labels, var_none)
    back_to_start(window, settle)


def test_temperature_slider_recomputes_only_the_comparison(shared_window, settle):
    window = shared_window
    before = window.controller.results()
    view = window.view("temperature")
    view.set_temperature(2.0)
    settle(window)
    after = window.controller.results()
    assert after.temperature == 2.0
    assert after.snapshot is before.snapshot  # the fast path did not redo the experiment
    p_t, _p_s, _diff = temperature_comparison(after.config, 2.0)
    np.testing.assert_array_equal(after.temperature_comparison[0], p_t)
    _x, y = window.view("temperature").curves()[0].getData()  # view() refreshes hidden views
    np.testing.assert_array_equal(y, p_t)
    view.set_temperature(before.temperature)
    settle(window)


def test_invalid_combination_shows_message_and_does_not_emit(shared_window, settle):
    window = shared_window
    emitted = []
    window.panel.configChanged.connect(emitted.append)
    window.panel.heads.setValue(3)  # 16 is not divisible by 3
    assert "divisible" in window.panel.error_text()
    assert window.panel.error_label.isVisibleTo(window.panel)
    assert emitted == []
    window.panel.heads.setValue(4)
    assert window.panel.error_text() == ""
    assert emitted[-1].heads == 4
    back_to_start(window, settle)


def test_hidden_views_catch_up_when_shown(shared_window, settle):
    window = shared_window
    window.show_view("heatmap")
    softmax = window.views[1]
    window.panel.query_row.spin.setValue(3)
    settle(window)
    config = window.controller.results().config
    assert window.controller.is_stale(softmax)  # hidden: skipped by the push
    window.show_view("softmax")  # the tab change brings it up to date
    assert not window.controller.is_stale(softmax)
    expected = run_experiment(config, rules=ALL_RULES).rules[config.rule].weights[0, 3]
    np.testing.assert_array_equal(softmax.curve(config.rule).getData()[1], expected)
    window.show_view("heatmap")
    back_to_start(window, settle)


class PaintCounter(QObject):
    """Counts the paint events of a plot's viewport."""

    def __init__(self, widget) -> None:
        super().__init__()
        self.paints = 0
        self.viewport = widget.viewport()
        self.viewport.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # Qt override
        self.paints += event.type() == QEvent.Type.Paint
        return False

    def quiet(self) -> bool:
        """Deliver every posted event (layouts, update requests); True if none painted."""
        before = self.paints
        QApplication.sendPostedEvents()
        QApplication.processEvents()
        return self.paints == before


@pytest.mark.parametrize(("key", "repaints"), [("laws", False), ("heatmap", True)])
def test_an_edit_repaints_only_the_views_it_changed(shared_window, settle, qtbot, key,
                                                   repaints):
    # σ leaves the d_k sweep as it was: the laws plot keeps its picture (no paint), while the
    # heatmap shows the new weights; either way the window reports the push painted.
    window = shared_window
    window.show_view(key)
    settle(window)
    counter = PaintCounter(window.view(key).export_item())
    # The tab's own first paints, however late a loaded machine delivers them: counted from the
    # edit on only.
    qtbot.waitUntil(counter.quiet, timeout=HANG_MS)
    counter.paints = 0
    painted = []

    def on_painted() -> None:
        painted.append(counter.paints)

    window.controller.resultsPainted.connect(on_painted)
    window.panel.init_std.spin.setValue(0.6)
    settle(window)
    window.controller.resultsPainted.disconnect(on_painted)
    assert painted and window.controller.results().config.init_std == 0.6
    assert (counter.paints > 0) is repaints, counter.paints
    counter.viewport.removeEventFilter(counter)
    window.show_view("heatmap")
    back_to_start(window, settle)


def test_menus_and_shortcuts(shared_window):
    window = shared_window
    expected = {"open": "Ctrl+O", "save": "Ctrl+S", "export_png": "Ctrl+E",
                "export_svg": "Ctrl+Shift+E", "export_all": "Ctrl+Shift+A",
                "copy": "Ctrl+Shift+C", "quit": "Ctrl+Q", "reset": "Ctrl+R"}
    for name, text in expected.items():
        action = window.menu_actions[name]
        assert action.shortcut().toString() == text, action.text()
    assert [a.shortcut().toString() for a in window.view_actions] == [
        f"Ctrl+{i + 1}" for i in range(len(window.views))]
    window.view_actions[2].trigger()
    assert window.current_view() is window.views[2]
    assert window.view_tabs.tabs.count() == len(window.views) == 9  # seven, Precision, Length
    window.view_actions[0].trigger()


def test_menus_are_built_and_translated_from_the_action_table(shared_window):
    window = shared_window
    from gui import actions as table
    from gui.kit import i18n

    def entries(menu):
        return [None if a.isSeparator() else a for a in menu.actions()]

    file_menu = entries(window.menus["file"])
    assert [None if a is None else a.text() for a in file_menu] == [
        None if spec is None else spec.text for spec in table.FILE_MENU]
    view_head = entries(window.menus["view"])[: len(table.VIEW_MENU)]
    assert view_head == [window.menu_actions[s.name] for s in table.VIEW_MENU]
    assert entries(window.menus["help"])[-1] is window.menu_actions["about"]
    assert window.menu_actions["side"].isCheckable()
    assert window.menu_actions["export_all"].statusTip().startswith("PNG, SVG, PDF and CSV")
    try:
        assert window.language.set_language("zh_CN")
        assert window.menus["file"].title() == "文件(&F)"
        for spec in (*table.FILE_MENU, *table.VIEW_MENU, *table.HELP_MENU):
            if spec is not None:
                text = window.menu_actions[spec.name].text()
                assert text == i18n.translate("MainWindow", spec.text) != spec.text
    finally:
        window.language.set_language("en")
    assert window.menu_actions["open"].text() == "&Open session…"


def test_side_by_side_moves_current_view_and_back(shared_window):
    window = shared_window
    window.show_view("laws")
    window.menu_actions["side"].setChecked(True)
    assert window.view_tabs.side_tabs.indexOf(window.view("laws")) == 0
    window.menu_actions["side"].setChecked(False)
    assert window.view_tabs.tabs.indexOf(window.view("laws")) == 3
    assert window.view_tabs.side_tabs.count() == 0
    window.show_view("heatmap")


def test_escape_cancels_a_running_sweep(make_window, qtbot):
    window = make_window(AttentionConfig(n_tokens=64, samples=5000), settle=False,
                         controller_options={"sweep_values": (1, 2, 4, 8, 16, 32, 64, 128,
                                                              256, 512, 1024),
                                             "sweep_samples_cap": 5000})
    with qtbot.waitSignal(window.controller.progressChanged, timeout=HANG_MS,
                          check_params_cb=lambda done, total: done >= 1):
        pass
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert window.wait_until_settled(HANG_MS, require_sweep=False)
    results = window.controller.results()
    assert not results.sweep_done
    assert 0 < len(results.sweep_points) < results.sweep_points[0].total


def test_closing_mid_sweep_stops_it_at_once_and_leaves_no_thread(make_window, qtbot):
    window = make_window(AttentionConfig(n_tokens=128, samples=20_000), settle=False,
                         controller_options={"sweep_values": tuple(2**i for i in range(11)),
                                             "sweep_samples_cap": 20_000})
    with qtbot.waitSignal(window.controller.progressChanged, timeout=HANG_MS,
                          check_params_cb=lambda done, total: done >= 1):
        pass
    assert window.controller.is_busy()
    window.close()
    # The engine yields every <= 50 ms of its own work, so on a quiet machine the sweep stops
    # within the close's short wait and the window closes at once. On a loaded one those 50 ms
    # of work can take longer than the wait: the window then stays, disabled, and closes itself
    # when the computation ends. Either way no thread is left.
    if window.isVisible():
        assert not window.isEnabled()
    qtbot.waitUntil(lambda: not window.isVisible() and not window.controller.is_running(),
                    timeout=HANG_MS)


def test_settings_persist_config_and_view(make_window, settle):
    first = make_window(restore=True, config=None)
    first.panel.n_tokens.spin.setValue(33)
    first.show_view("correlation")
    settle(first)
    first.close()
    second = make_window(restore=True, config=None)
    assert second.panel.config().n_tokens == 33
    assert second.controller.results().config.n_tokens == 33
    assert second.current_view().key == "correlation"
    assert second.settings.get("session/restore_last") is True


def test_worker_error_is_shown_and_keeps_old_results(shared_window, settle, qtbot):
    window = shared_window
    before = window.controller.results()
    huge = AttentionConfig(n_tokens=4096, heads=64, d_k=64, d_model=64 * 64)
    with qtbot.waitSignal(window.controller.errorOccurred, timeout=HANG_MS) as blocker:
        window.controller.set_config(huge)
    assert "GiB" in blocker.args[0] or "MiB" in blocker.args[0]
    assert window.wait_until_settled(HANG_MS, require_sweep=False)
    assert window.controller.results() is before
    assert "Error" in window.status.label.text()
    assert SMALL_CONFIG == before.config
    back_to_start(window, settle)


def test_a_config_over_the_memory_budget_is_refused_next_to_the_controls(shared_window, settle):
    # The controller decides (the request's door); the panel shows its reason at once and keeps
    # the configuration in force, as when it decided itself.
    window = shared_window
    window.panel.heads.setValue(16)
    applied = window.controller.config()
    assert applied.heads == 16
    window.panel.n_tokens.spin.setValue(2048)
    assert "more than the memory budget" in window.panel.error_text()
    assert window.panel.error_label.isVisibleTo(window.panel)
    assert window.panel.config() == window.controller.config() == applied
    back_to_start(window, settle)
    assert window.panel.error_text() == ""


def test_train_and_heads_have_menu_entries_and_shortcuts(shared_window):
    # Like the explorer views (Ctrl+1…9): Alt+1 … Alt+4 bring each top-level tab forward.
    from PySide6.QtGui import QKeySequence

    window = shared_window
    pages = [window.explorer_page, window.train_tab, window.heads.view, window.model_view]
    view_menu = window.menus["view"].actions()
    for index, page in enumerate(pages):
        action = window.mode_actions[index]
        assert action in view_menu
        assert action.shortcut() == QKeySequence(f"Alt+{index + 1}")
        assert action.text() == window.mode_tabs.tabText(index)
        action.trigger()
        assert window.mode_tabs.currentWidget() is page
    assert [a.text() for a in window.mode_actions] == ["Explorer", "Train", "Heads",
                                                      "Model"]
    window.mode_actions[0].trigger()


def test_the_train_tab_offers_every_rule_the_command_line_accepts(shared_window):
    panel = shared_window.train_tab.panel
    offered = panel.config()
    boxes = panel.rule_boxes
    assert list(boxes) == list(ScalingRule)
    assert all(box.text() and box.toolTip() for box in boxes.values())
    for box in boxes.values():
        box.setChecked(True)
    assert panel.config().rules == tuple(ScalingRule)
    panel.set_config(offered)
