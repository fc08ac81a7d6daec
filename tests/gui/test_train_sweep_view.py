"""The Train tab's learning-rate sweep: what its view draws is the engine's sweep result."""

from __future__ import annotations

from math import log10

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from engine.config import ScalingRule
from engine.training.lr_sweep import run_lr_sweep
from gui.kit import i18n
from gui.kit.style import rule_name
from tests.gui.train_runs import SMALL


@pytest.fixture
def tab(make_train_tab):
    return make_train_tab(SMALL)


def _sweep(tab, lrs: tuple[float, ...], seeds: int):
    tab.panel.set_config(SMALL.replace(steps=30))
    tab.panel.set_sweep_settings(lrs, seeds)
    assert tab.start_lr_sweep()
    assert tab.wait_until_idle(30_000)
    assert tab.controller.last_error() == ""
    return tab.controller.results().sweep_result


def test_lr_sweep_view_shows_the_engine_result(tab):
    lrs, seeds = (0.003, 0.03, 3.0), 2
    result = _sweep(tab, lrs, seeds)
    # The sweep ran the panel's configuration.
    assert result.config == tab.panel.config()
    expected = run_lr_sweep(result.config, lrs, seeds)
    view = tab.lr_sweep
    assert view.legend_labels()[:2] == [rule_name("none"), rule_name("sqrt")]
    for rule in result.config.rules:
        rows = [r for r in expected.rows if r.rule is rule]
        items = view.sweep_items(rule)
        x, y = items.mean.getOriginalDataset()
        np.testing.assert_array_equal(x, [r.lr for r in rows])
        np.testing.assert_array_equal(y, [r.final_loss_mean for r in rows])
        assert [r.final_loss_mean for r in result.rows if r.rule is rule] == pytest.approx(
            [r.final_loss_mean for r in rows], nan_ok=True)
        runs_x, _ = items.runs.getOriginalDataset()
        assert len(runs_x) == len(lrs) * seeds
        best = expected.largest_stable_lr[rule]
        sx, _sy = items.stable.getOriginalDataset()
        assert (list(sx) if sx is not None else []) == ([best] if best is not None else [])
    assert expected.row(ScalingRule.SQRT, 3.0).diverged == seeds
    header, rows = view.data_table()
    assert "largest_stable_lr" in header and len(rows) == len(lrs) * len(result.config.rules)


def test_lr_sweep_view_draws_the_band_ranges_to_the_data_and_labels_the_threshold(tab):
    """The note promises a min…max band: it is drawn; the x axis ends at the data (not at
    lr = 1); the dashed threshold is labelled in every language."""
    lrs = (0.001, 0.003, 0.01, 0.03)
    result = _sweep(tab, lrs, 2)
    view = tab.lr_sweep
    tab.show_view(view.key)
    tab.controller.refresh_views()
    assert "Band: min…max over seeds" in view.note_text()
    spread = 0
    for rule in result.config.rules:
        rows = [r for r in result.rows if r.rule is rule]
        band = view.sweep_items(rule).band
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
