"""A real head in the explorer: every view shows its q, k; replay, back to random, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.experiment import run_experiment
from engine.analysis.explorer import ALL_RULES
from engine.analysis.real_head import HeadRef, explorer_config_for, load_head, with_own_rule
from engine.config import MaskKind, ScalingRule
from engine.io.tensors import load_tensors, write_tensors
from gui.explorer.panel import FIXED_BY_HEAD
from tests.gui.conftest import HANG_MS, back_to_start

N, D_K = 12, 8
TOKENS = [f"w{i}" for i in range(N)]


@pytest.fixture
def tensor_file(tmp_path):
    """A two-layer causal file with tokens; layer 1 has its own scale 0.2 (a temperature)."""
    rng = np.random.default_rng(3)
    arrays = {f"layer{layer}.{part}": (rng.standard_normal((2, N, D_K)) * 2).astype(np.float32)
              for layer in (0, 1) for part in "qk"}
    meta = {"causal": True, "layers": {"1": {"scale": 0.2}}}
    path = write_tensors(tmp_path / "model.npz", arrays, tokens=TOKENS, meta=meta)
    return load_tensors(path), arrays


def _expected(window, ref, base):
    config = explorer_config_for(ref, base)
    return config, run_experiment(config, ALL_RULES, real_head=load_head(ref))


def _axis_labels(axis, low, high, size=2000.0):
    """The tick labels the axis draws for the range [low, high] over ``size`` pixels."""
    levels = axis.tickValues(low, high, size)
    return [s for spacing, values in levels for s in axis.tickStrings(values, 1.0, spacing)]


def _show_head(window, ref):
    window.controller.set_real_head(ref)
    assert window.wait_until_settled(HANG_MS)
    assert not window.controller.last_error()


def _back_to_random(window):
    window.source_bar.back_button.click()
    assert window.wait_until_settled(HANG_MS)


def test_a_real_head_fills_every_view_and_back_to_random_restores(shared_window, tensor_file):
    tf, _ = tensor_file
    window = shared_window
    random_config = window.controller.config()
    random_weights = np.array(window.view("heatmap").panel_images()[0].image)
    ref = HeadRef(tf, 1, 1)
    seen: list[object] = []
    window.controller.realHeadChanged.connect(seen.append)
    _show_head(window, ref)
    assert seen == [ref] and window.controller.real_head() == ref

    # The model's own scale 0.2 becomes the temperature rule with T = 5.
    base = with_own_rule(ref, random_config)
    assert base.rule is ScalingRule.TEMPERATURE and base.temperature == pytest.approx(5.0)
    config, snap = _expected(window, ref, base)
    assert window.controller.results().config == config == window.panel.config()
    assert config.mask is MaskKind.CAUSAL and (config.n_tokens, config.d_k) == (N, D_K)

    heatmap = window.view("heatmap")
    images = heatmap.panel_images()
    assert len(images) == 2
    np.testing.assert_array_equal(
        images[0].image, heatmap.shown_values(snap.rules[ScalingRule.TEMPERATURE].weights[0]))
    np.testing.assert_array_equal(
        images[1].image, heatmap.shown_values(snap.rules[ScalingRule.NONE].weights[0]))
    # Masked (future) keys are drawn grey: the overlay covers exactly the upper triangle.
    overlay = heatmap.masked_cells()[0]
    assert overlay is not None
    np.testing.assert_array_equal(overlay[..., 3] > 0, ~np.tri(N, dtype=bool))
    plot = images[0].getViewBox().parentItem()
    assert _axis_labels(plot.getAxis("bottom"), 0, N) == TOKENS
    assert _axis_labels(plot.getAxis("left"), 0, N) == TOKENS
    assert "layer 1 · head 1" in plot.titleLabel.text and "head 2" not in plot.titleLabel.text

    softmax = window.view("softmax")
    assert _axis_labels(softmax.curve(ScalingRule.NONE).getViewBox().parentItem()
                        .getAxis("bottom"), 0, N - 1) == TOKENS
    # A causal head opens at its last row (row 0 sees one key: p_max = 1 under every rule).
    assert f"i = {N - 1} “w{N - 1}”" in softmax.title_text()
    assert "layer 1 · head 1" in softmax.title_text()
    assert min(float(label.split("p_max=")[1]) for label in softmax.legend_labels().values()) < 1

    histogram = window.view("histogram")
    view = snap.rules[ScalingRule.NONE]
    assert histogram.variance_labels()[0] == (
        f"none: mean = {view.logit_mean_empirical:.4g}, Var = {view.logit_var_empirical:.4g} "
        "(empirical)")
    assert "same mean and variance" in histogram.note_text()
    x, y = histogram.density_curves()[0].getData()
    peak = x[np.argmax(y)]
    assert abs(peak - view.logit_mean_empirical) < (x[1] - x[0]) * 1.01
    assert y.max() == pytest.approx(1 / math.sqrt(2 * math.pi * view.logit_var_empirical),
                                    rel=1e-3)

    gradients = window.view("gradients")
    star, bar = gradients.head_marks("jac", ScalingRule.SQRT)
    g = snap.gradients[ScalingRule.SQRT]
    # The data given to the plot (its log axes draw log10 of it).
    assert list(star.xData) == [D_K] and list(star.yData) == [g.jac_fro_median]
    assert list(bar.yData) == [g.jac_fro_q10, g.jac_fro_q90]
    assert "layer 1 · head 1" in gradients.note_text()
    header, rows = gradients.data_table()
    assert header[-1] == "source" and rows[-1][-1] == "head"

    # The bar above the views names the head; the panel rows it fixes are disabled.
    assert window.source_bar.isVisible()
    assert window.source_bar.label.text() == "Real q, k: model.npz · layer 1 · head 1"
    controls = window.panel.controls()
    for name in FIXED_BY_HEAD:
        assert not controls[name].isEnabled(), name
        assert "Fixed by the loaded head" in controls[name].toolTip()
    for name in ("rule", "temperature", "mask", "query_row"):
        assert controls[name].isEnabled(), name

    # Back to random q, k: the previous configuration and pictures return.
    window.source_bar.back_button.click()
    assert window.wait_until_settled(HANG_MS)
    assert window.controller.real_head() is None and seen == [ref, None]
    assert window.controller.results().config == random_config == window.panel.config()
    assert window.controller.results().real_head is None
    np.testing.assert_array_equal(window.view("heatmap").panel_images()[0].image, random_weights)
    assert not window.source_bar.isVisible()
    assert all(controls[name].isEnabled() for name in ("n_tokens", "seed", "samples"))
    assert window.view("heatmap").masked_cells() == [None, None]
    assert _axis_labels(plot.getAxis("bottom"), 0, 24, 400.0) != TOKENS
    assert "Fixed" not in controls["n_tokens"].toolTip()
    window.controller.realHeadChanged.disconnect(seen.append)


@pytest.mark.parametrize("rule", list(ScalingRule))
def test_every_rule_of_the_combo_replays_on_the_real_head(shared_window, tensor_file, rule):
    tf, _ = tensor_file
    window = shared_window
    ref = HeadRef(tf, 0, 0)
    _show_head(window, ref)
    combo = window.panel.rule
    combo.setCurrentIndex(combo.findData(rule.value))
    assert window.wait_until_settled(HANG_MS)
    results = window.controller.results()
    assert results.config.rule is rule and results.real_head.ref == ref
    expected = run_experiment(results.config, ALL_RULES, real_head=load_head(ref))
    heatmap = window.view("heatmap")
    np.testing.assert_array_equal(heatmap.panel_images()[0].image,
                                  heatmap.shown_values(expected.rules[rule].weights[0]))
    assert (results.config.n_tokens, results.config.d_k) == (N, D_K)
    _back_to_random(window)


def test_mask_and_query_row_stay_live_on_the_real_head(shared_window, tensor_file):
    tf, _ = tensor_file
    window = shared_window
    _show_head(window, HeadRef(tf, 0, 1))
    window.panel.mask.setCurrentIndex(window.panel.mask.findData("none"))
    assert window.wait_until_settled(HANG_MS)
    assert window.controller.results().config.mask is MaskKind.NONE
    assert window.view("heatmap").masked_cells() == [None, None]
    window.panel.query_row.spin.setValue(N - 1)
    assert window.wait_until_settled(HANG_MS)
    assert window.controller.results().config.query_row == N - 1
    assert "“w11”" in window.view("softmax").title_text()
    _back_to_random(window)


def test_switching_heads_of_one_file_keeps_the_replayed_rule(shared_window, tensor_file):
    tf, _ = tensor_file
    window = shared_window
    _show_head(window, HeadRef(tf, 0, 0))
    assert window.controller.config().rule is ScalingRule.SQRT  # the default 1/√d_k
    window.panel.rule.setCurrentIndex(window.panel.rule.findData("qk_norm"))
    assert window.wait_until_settled(HANG_MS)
    _show_head(window, HeadRef(tf, 1, 0))
    assert window.controller.results().config.rule is ScalingRule.QK_NORM
    assert window.source_bar.label.text().endswith("layer 1 · head 0")
    _back_to_random(window)


def test_an_unreadable_head_keeps_the_previous_results(shared_window, tensor_file, settle):
    tf, arrays = tensor_file
    window = shared_window
    before = window.controller.results()
    arrays["layer0.q"][1, 0, 0] = np.nan
    write_tensors(tf.path, arrays, tokens=TOKENS)  # the file changed after it was opened
    errors: list[str] = []
    window.controller.errorOccurred.connect(errors.append)
    window.controller.set_real_head(HeadRef(tf, 0, 1))
    assert window.wait_until_settled(HANG_MS)
    assert errors and errors[-1].startswith("model.npz · layer 0 · head 1: ")
    assert "NaN/inf" in errors[-1]
    assert window.controller.results() is before
    assert window.controller.real_head() is None and not window.source_bar.isVisible()
    assert window.panel.config() == before.config
    assert window.panel.controls()["n_tokens"].isEnabled()
    # The window still works: the next edit computes random q, k as before.
    window.panel.seed.setValue(9)
    assert window.wait_until_settled(HANG_MS)
    assert window.controller.results().config.seed == 9 and not window.controller.last_error()
    window.controller.errorOccurred.disconnect(errors.append)
    back_to_start(window, settle)


def test_a_head_over_the_memory_budget_is_refused_at_once(shared_window, tmp_path, settle):
    path = write_tensors(tmp_path / "big.npz", {"layer0.q": np.zeros((1, 3200, 2), np.float16),
                                                "layer0.k": np.zeros((1, 3200, 2), np.float16)})
    window = shared_window
    before = window.controller.results()
    errors: list[str] = []
    window.controller.errorOccurred.connect(errors.append)
    window.controller.set_real_head(HeadRef(load_tensors(path), 0, 0))
    assert errors and errors[0].startswith("big.npz · layer 0 · head 0: ")
    assert "budget" in errors[0]
    assert window.controller.real_head() is None and window.controller.results() is before
    assert window.wait_until_settled(HANG_MS) and window.controller.results() is before
    window.controller.errorOccurred.disconnect(errors.append)
    back_to_start(window, settle)


def test_a_head_without_tokens_keeps_numbered_axes(shared_window, tmp_path):
    rng = np.random.default_rng(8)
    arrays = {f"layer0.{part}": rng.standard_normal((2, 1, 6, 4)) for part in "qk"}
    tf = load_tensors(write_tensors(tmp_path / "plain.npz", arrays))
    window = shared_window
    _show_head(window, HeadRef(tf, 0, 0, 1))
    assert window.source_bar.label.text() == "Real q, k: plain.npz · layer 0 · head 0 · batch 1"
    plot = window.view("heatmap").panel_images()[0].getViewBox().parentItem()
    labels = _axis_labels(plot.getAxis("bottom"), 0, 6, 600.0)
    assert labels and all(label.replace(".", "").isdigit() for label in labels)
    assert window.view("heatmap").masked_cells() == [None, None]  # no causal mask in the file
    assert "“" not in window.view("softmax").title_text()
    _back_to_random(window)
