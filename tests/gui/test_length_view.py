"""The length view: its curves are the engine's n sweep and SSMax toy, synchronously and
through the explorer's worker thread; it exports and lists its numbers."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from engine.analysis.length import length_sweep_config, ssmax_toy
from engine.analysis.sweep import run_sweep
from engine.config import AttentionConfig, ScalingRule, rules_where
from gui.explorer.results import ExplorerResults
from gui.explorer.views import LengthView, view_class
from gui.kit import export

CONFIG = AttentionConfig(n_tokens=16, d_k=16, d_model=16, samples=200, rule="ssmax")
VALUES = (16, 256, 4096)


@pytest.fixture(scope="module")
def points():
    return tuple(run_sweep(length_sweep_config(CONFIG, VALUES)))


def _assert_curves_are_the_engines(view, points, config):
    rules = {p.rule for p in points}
    assert rules == set(rules_where("in_length_view"))
    assert {ScalingRule.SQRT, ScalingRule.LOG_N, ScalingRule.SSMAX, ScalingRule.YARN} <= rules
    for rule in rules:
        pts = sorted((p for p in points if p.rule == rule), key=lambda p: p.value)
        for field in ("entropy_mean", "p_max_mean", "entropy_ratio"):
            x, y = view.curve(field, rule).getOriginalDataset()
            np.testing.assert_array_equal(x, [p.value for p in pts])
            np.testing.assert_array_equal(y, [getattr(p, field) for p in pts])
    toy = ssmax_toy(s=config.ssmax_s)
    for name, want in (("softmax", toy.p_max_softmax), ("ssmax", toy.p_max_ssmax)):
        x, y = view.toy_curve(name).getOriginalDataset()
        np.testing.assert_array_equal(x, toy.n)
        np.testing.assert_array_equal(y, want)


def test_curves_and_table_are_the_engines_numbers(qtbot, points):
    view = LengthView()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    assert view_class("length") is LengthView and view.title() == "Length"
    view.show_results(ExplorerResults(CONFIG, length_points=points, length_done=True))
    _assert_curves_are_the_engines(view, points, CONFIG)
    header, rows = view.data_table()
    assert header[:3] == ["rule", "n", "entropy_mean"]
    assert len(rows) == len(points) + 2 * len(ssmax_toy().n)
    # Fixed scale: p_max falls with n; ln n/√d_k keeps it; the toy shows SSMax near 1.
    _, sqrt = view.curve("p_max_mean", ScalingRule.SQRT).getOriginalDataset()
    _, log_n = view.curve("p_max_mean", ScalingRule.LOG_N).getOriginalDataset()
    assert sqrt[-1] < sqrt[0] / 10 and log_n.min() > 0.5
    assert view.toy_curve("ssmax").getOriginalDataset()[1].min() > 0.96
    assert view.toy_curve("softmax").getOriginalDataset()[1][-1] < 2e-4
    # Another s redraws the toy from the engine.
    other = CONFIG.replace(ssmax_s=0.2)
    view.show_results(ExplorerResults(other, length_points=points, length_done=True))
    np.testing.assert_array_equal(view.toy_curve("ssmax").getOriginalDataset()[1],
                                  ssmax_toy(s=0.2).p_max_ssmax)
    assert "SSMax" in view.export_item().toolTip()


def test_error_bars_are_the_engines_standard_errors(qtbot, points):
    view = LengthView()
    qtbot.addWidget(view)
    view.show_results(ExplorerResults(CONFIG, length_points=points, length_done=True))
    pts = sorted((p for p in points if p.rule is ScalingRule.LOG_N), key=lambda p: p.value)
    for field, half in (
        ("entropy_mean", [1.96 * p.entropy_sem for p in pts]),
        ("p_max_mean", [1.96 * p.p_max_sem for p in pts]),
        ("entropy_ratio", [1.96 * p.entropy_sem / np.log(p.value) for p in pts]),
    ):
        bars = view.error_bars(field, ScalingRule.LOG_N)
        np.testing.assert_allclose(bars.opts["x"], np.log10([p.value for p in pts]))
        np.testing.assert_allclose(bars.opts["y"], [getattr(p, field) for p in pts])
        np.testing.assert_allclose(bars.opts["height"], 2 * np.asarray(half), rtol=1e-12)
        assert min(half) > 0
    # A rule that leaves the sweep takes its bars along (and the next sweep can bring them).
    fewer = tuple(p for p in points if p.rule is not ScalingRule.LOG_N)
    view.show_results(ExplorerResults(CONFIG.replace(seed=1), length_points=fewer,
                                      length_done=True))
    assert len(view.error_bars("entropy_mean", ScalingRule.LOG_N).opts["x"]) == 0
    view.show_results(ExplorerResults(CONFIG, length_points=points, length_done=True))
    assert len(view.error_bars("entropy_mean", ScalingRule.LOG_N).opts["x"]) == len(pts)
    notes = [item.text for item in view.export_item().scene().items()
             if isinstance(item, pg.LabelItem)]
    assert any("95 % intervals" in text for text in notes)


def test_export_writes_a_picture(qtbot, points, tmp_path):
    view = LengthView()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    view.show_results(ExplorerResults(CONFIG, length_points=points, length_done=True))
    path = export.export_png(view.export_item(), tmp_path / "length.png", 800, 600)
    stats = export.image_stats(path)
    assert (stats["width"], stats["height"]) == (800, 600)
    assert stats["colors"] > 20 and stats["non_background"] > 0.03


def test_the_worker_thread_gives_the_synchronous_numbers(make_window, points):
    window = make_window(CONFIG, controller_options={"length_values": VALUES})
    results = window.controller.results()
    assert results.length_done
    _assert_curves_are_the_engines(window.view("length"), results.length_points, CONFIG)
    for got, want in zip(sorted(results.length_points, key=lambda p: (p.value, p.rule)),
                         sorted(points, key=lambda p: (p.value, p.rule)), strict=True):
        assert (got.rule, got.value, got.entropy_mean, got.p_max_mean) == (
            want.rule, want.value, want.entropy_mean, want.p_max_mean)


def test_every_legend_text_is_dark_enough_to_read(qtbot, points):
    """The SSMax toy's legend was pyqtgraph's light grey default; every legend of the view
    now writes its labels in the shared dark text colour."""
    view = LengthView()
    qtbot.addWidget(view)
    view.show_results(ExplorerResults(CONFIG, length_points=points, length_done=True))
    legends = [item for item in view.export_item().scene().items()
               if isinstance(item, pg.LegendItem)]
    assert len(legends) == 2  # the rules' legend and the toy's
    for legend in legends:
        labels = [label for _sample, label in legend.items]
        assert labels
        for label in labels:
            colour = pg.mkColor(label.opts["color"])
            assert colour.lightnessF() < 0.3, (label.text, colour.name())
