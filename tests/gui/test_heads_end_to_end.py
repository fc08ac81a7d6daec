"""End to end, as a user would: open the shipped sample, pick the flagged head, replay QK-norm
on it in the explorer, export everything, and reopen the saved session."""

from __future__ import annotations

import csv
import json

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from engine.analysis.experiment import run_experiment
from engine.analysis.explorer import ALL_RULES
from engine.analysis.real_head import HeadRef, load_head
from engine.config import ScalingRule
from engine.io.tensors import load_tensors
from gui.kit.export import image_stats
from gui.kit.resources import sample_tensors_path
from tests.gui.conftest import HANG_MS

#: A session's logits choice when the heads are diagnosed at the file's own scale.
OWN_SCALE = {"rule": None, "temperature": 8.0, "gain": None, "cap": 50.0}


def _click_table_row(view, row: int) -> None:
    table = view.table
    rect = table.visualRect(table.model().index(row, 0))
    QTest.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_sample_flagged_head_replayed_with_qk_norm_and_exported(window, make_window,
                                                                 tmp_path) -> None:
    window.menu_actions["open_sample"].trigger()
    heads = window.heads.view
    assert heads.wait_idle()
    model = heads.table.model()
    keys = model.sourceModel().column_keys()
    flagged_rows = [row for row in range(model.rowCount())
                    if model.index(row, keys.index("flags")).data()]
    assert flagged_rows, heads.flagged_text()
    row = flagged_rows[0]
    layer = int(model.index(row, keys.index("layer")).data().split(" ")[0])
    head = int(model.index(row, keys.index("head")).data())

    _click_table_row(heads, row)  # the user clicks the flagged head
    assert heads.wait_idle()
    assert window.wait_until_settled(HANG_MS)
    tf = load_tensors(sample_tensors_path())
    ref = HeadRef(tf, layer, head, 0)
    assert window.controller.real_head() == ref
    # Every rule is replayed on that head; the maps of the four default rules show.
    assert [r.rule for r in heads.replays()] == list(ScalingRule)
    assert len(heads.replay.panel.replay_images()) == 4
    # Back on the explorer page (a tab click), the heatmap in front already shows the head:
    # it was hidden when the head arrived and catches up when its page is shown.
    heatmap = next(view for view in window.views if view.key == "heatmap")
    window.mode_tabs.setCurrentIndex(0)
    assert window.wait_until_settled(HANG_MS)
    head_weights = window.controller.results().snapshot.rules[ScalingRule.NONE].weights[0]
    # "none" is on the right of the rule chosen, or on the left when it is the rule chosen.
    column = 0 if window.controller.config().rule == ScalingRule.NONE else 1
    np.testing.assert_array_equal(heatmap.panel_images()[column].image,
                                  heatmap.shown_values(head_weights))
    assert window.source_bar.isVisible()

    # In the explorer, the user replays QK-norm on the real q and k.
    window.show_view("heatmap")
    window.panel.rule.setCurrentIndex(window.panel.rule.findData("qk_norm"))
    assert window.wait_until_settled(HANG_MS)
    results = window.controller.results()
    assert results.config.rule is ScalingRule.QK_NORM and results.real_head.ref == ref
    expected = run_experiment(results.config, ALL_RULES, real_head=load_head(ref))
    shown = heatmap.panel_images()
    np.testing.assert_array_equal(
        shown[0].image, heatmap.shown_values(expected.rules[ScalingRule.QK_NORM].weights[0]))
    np.testing.assert_array_equal(
        shown[1].image, heatmap.shown_values(expected.rules[ScalingRule.NONE].weights[0]))
    # QK-norm bounds the logits by the gain √d_k: the saturated head spreads out.
    qk_norm = expected.rules[ScalingRule.QK_NORM]
    assert np.nanmax(np.abs(qk_norm.logits[np.isfinite(qk_norm.logits)])) <= np.sqrt(tf.d_k)
    assert qk_norm.p_max.mean() < expected.rules[ScalingRule.NONE].p_max.mean()

    written = {p.name: p for p in window.files.export_everything(tmp_path / "out", 800, 600)}
    for name in ("heads.png", "heatmap.png"):
        assert image_stats(written[name])["colors"] > 50, name
    assert "<svg" in written["heads.svg"].read_text(encoding="utf-8")
    rows = list(csv.DictReader(written["heads.csv"].open(encoding="utf-8")))
    chosen = [r for r in rows if r["table"] == "heads" and r["selected"] == "1"]
    assert [(int(r["layer"]), int(r["head"])) for r in chosen] == [(layer, head)]
    assert "saturated" in chosen[0]["flags"]
    replayed = {r["rule"] for r in rows if r["table"].startswith("replay")}
    assert replayed == {rule.value for rule in ScalingRule}
    heatmap_rows = list(csv.DictReader(written["heatmap.csv"].open(encoding="utf-8")))
    assert {r["rule"] for r in heatmap_rows} == {"qk_norm", "none"}
    session = json.loads(written["session.json"].read_text(encoding="utf-8"))
    assert session["tensors"] == {"path": str(sample_tensors_path()), "layer": layer,
                                  "head": head, "batch_entry": 0, "logits": OWN_SCALE}

    # Reopening the session brings back the file, the head and the explorer's real q and k.
    other = make_window()
    assert other.files.open_session(written["session.json"])
    assert other.heads.view.wait_idle()
    assert other.wait_until_settled(HANG_MS)
    assert other.heads.view.controller.selected() == (layer, head, 0)
    assert other.controller.real_head() == ref
    # ... with the rule that was replayed on it when the session was saved.
    assert other.controller.results().config.rule is ScalingRule.QK_NORM
    assert other.panel.config().rule is ScalingRule.QK_NORM


def test_a_tour_step_brings_back_random_q_and_k(window) -> None:
    tf = load_tensors(sample_tensors_path())
    window.controller.set_real_head(HeadRef(tf, 1, 0))
    assert window.wait_until_settled(HANG_MS)
    assert window.controller.results().real_head is not None
    config = window.controller.config().replace(n_tokens=24, d_k=16)
    window.apply_explorer_config(config)  # what a tour step does (gui.tour.host.TourHost)
    assert window.wait_until_settled(HANG_MS)
    results = window.controller.results()
    assert results.real_head is None and window.controller.real_head() is None
    assert (results.config.n_tokens, results.config.d_k) == (24, 16)
    assert not window.source_bar.isVisible()
