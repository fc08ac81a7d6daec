"""The heatmap view: its maps are the snapshot's weights, its grid follows the heads, its
read-out follows the pointer and new results, its table is the snapshot's."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QGraphicsRectItem

from engine.analysis.experiment import run_experiment
from engine.config import ScalingRule
from gui.explorer.views import HeatmapView
from gui.kit import style
from tests.gui.view_results import CONFIG, build, make_results, point_at_cell


def assert_maps_show(view: HeatmapView, snapshot, rules: tuple[ScalingRule, ScalingRule]):
    """Each head's pair of maps shows the weights of ``rules`` (the compared rule first)."""
    images = view.panel_images()
    assert len(images) == 2 * CONFIG.heads
    for head in range(CONFIG.heads):
        for image, rule in zip(images[2 * head: 2 * head + 2], rules, strict=True):
            np.testing.assert_array_equal(
                image.image, view.shown_values(snapshot.rules[rule].weights[head]))
            assert tuple(image.levels) == view.colour_levels()


def test_the_images_are_the_snapshot_weights_and_the_query_row_is_outlined(qtbot):
    view = build(qtbot, HeatmapView)
    results = make_results()
    view.show_results(results)
    assert_maps_show(view, results.snapshot, (ScalingRule.SQRT, ScalingRule.NONE))
    images = view.panel_images()
    plot = images[0].getViewBox().parentItem()
    (outline,) = [item for item in plot.items if isinstance(item, QGraphicsRectItem)]
    rect = outline.rect()
    assert (rect.top(), rect.height(), rect.width()) == (CONFIG.query_row, 1.0, CONFIG.n_tokens)


def test_rule_none_is_compared_with_sqrt_not_with_itself(qtbot):
    view = build(qtbot, HeatmapView)
    results = make_results(config=CONFIG.replace(rule=ScalingRule.NONE))
    view.show_results(results)
    assert_maps_show(view, results.snapshot, (ScalingRule.NONE, ScalingRule.SQRT))
    titles = [image.getViewBox().parentItem().titleLabel.text for image in view.panel_images()]
    assert style.rule_name(ScalingRule.SQRT) in titles[1]
    assert style.rule_name(ScalingRule.NONE) in titles[0]
    assert {row[0] for row in view.data_table()[1]} == {"none", "sqrt"}


def test_the_grid_is_rebuilt_only_when_the_heads_change(qtbot):
    view = build(qtbot, HeatmapView)
    results = make_results()
    view.show_results(results)
    first_images = view.panel_images()
    # Same heads, another rule compared: images reused and refilled.
    view.show_results(results.replace(config=CONFIG.replace(rule=ScalingRule.LINEAR)))
    assert view.panel_images() == first_images
    np.testing.assert_array_equal(
        first_images[0].image,
        view.shown_values(results.snapshot.rules[ScalingRule.LINEAR].weights[0]))
    four = CONFIG.replace(heads=4, d_model=64)
    snap4 = run_experiment(four, rules=(ScalingRule.SQRT,))
    view.show_results(results.replace(config=four, snapshot=snap4))
    images = view.panel_images()
    assert len(images) == 8
    np.testing.assert_array_equal(images[6].image,
                                  view.shown_values(snap4.rules[ScalingRule.SQRT].weights[3]))
    one = CONFIG.replace(heads=1, d_model=16)
    view.show_results(results.replace(config=one, snapshot=run_experiment(one)))
    assert len(view.panel_images()) == 2


def test_the_read_out_follows_the_pointer_and_new_results(qtbot):
    """After a parameter change the read-out shows the new numbers (or the hint), never the
    previous snapshot's."""
    view = build(qtbot, HeatmapView)
    view.show()
    qtbot.waitExposed(view)
    results = make_results()
    view.show_results(results)
    i, j = 3, 7
    point_at_cell(view, 1, i, j)  # head 1, rule "none"
    old = results.snapshot.rules[ScalingRule.NONE]
    text = view.hover_text()
    assert f"query i = {i}, key j = {j}" in text
    assert f"logit = {float(old.logits[0, i, j]):.4g}" in text
    assert f"p = {float(old.weights[0, i, j]):.4g}" in text
    # New results (another seed): the pointer has not moved, the cell under it is re-read.
    changed = run_experiment(CONFIG.replace(seed=CONFIG.seed + 1), rules=tuple(ScalingRule))
    view.show_results(results.replace(snapshot=changed))
    new = changed.rules[ScalingRule.NONE]
    assert float(new.weights[0, i, j]) != float(old.weights[0, i, j])
    text = view.hover_text()
    assert f"query i = {i}, key j = {j}" in text
    assert f"logit = {float(new.logits[0, i, j]):.4g}" in text
    assert f"p = {float(new.weights[0, i, j]):.4g}" in text
    # Fewer tokens: the grid is rebuilt; the read-out is re-read there or shows the hint.
    small = run_experiment(CONFIG.replace(n_tokens=4, query_row=1), rules=tuple(ScalingRule))
    view.show_results(results.replace(snapshot=small,
                                      config=CONFIG.replace(n_tokens=4, query_row=1)))
    text = view.hover_text()
    assert text.startswith("Hover over a cell") or "logit" in text
    if "logit" in text:
        head_i_j = [int(x.split(" = ")[1]) for x in text.split(", ")[1:3]]
        assert all(0 <= x < 4 for x in head_i_j)
    # The pointer leaves the view: the hint comes back and new results keep it.
    qtbot.mouseMove(view, view.rect().center())
    view.leaveEvent(QEvent(QEvent.Type.Leave))
    view.show_results(results.replace())
    assert view.hover_text().startswith("Hover over a cell")


def test_the_table_is_the_snapshot(qtbot):
    view = build(qtbot, HeatmapView)
    results = make_results()
    view.show_results(results)
    header, rows = view.data_table()
    assert header == ["rule", "head", "query_i", "key_j", "logit", "p"]
    n = CONFIG.n_tokens
    assert len(rows) == 2 * CONFIG.heads * n * n
    rule, head, i, j, logit, p = rows[n * n + 2 * n + 5]  # sqrt, head 1, i 2, j 5
    assert (rule, head, i, j) == ("sqrt", 1, 2, 5)
    assert p == results.snapshot.rules[ScalingRule.SQRT].weights[1, 2, 5]
    assert logit == results.snapshot.rules[ScalingRule.SQRT].logits[1, 2, 5]


def test_an_unchanged_snapshot_is_not_drawn_again(qtbot, monkeypatch):
    view = build(qtbot, HeatmapView)
    results = make_results()
    view.show_results(results)
    calls = []
    image = view.panel_images()[0]
    monkeypatch.setattr(image, "setImage", lambda *a, **k: calls.append(a))
    view.show_results(results.replace(sweep_points=()))
    assert calls == []
    view.show_results(results.replace(config=CONFIG.replace(query_row=2)))
    assert len(calls) == 1


def test_twelve_heads_reflow_to_the_width_with_whole_two_line_titles(qtbot):
    view = build(qtbot, HeatmapView)
    twelve = CONFIG.replace(heads=12, d_model=12 * CONFIG.d_k)
    view.show_results(make_results(config=twelve, snapshot=run_experiment(
        twelve, rules=(ScalingRule.SQRT, ScalingRule.NONE))))
    widget = view.export_item()

    def pair_columns() -> int:
        return len({image.getViewBox().parentItem().vb.sceneBoundingRect().left()
                    for image in view.panel_images()}) // 2

    view.fit_to_width(1600)
    assert pair_columns() == 4
    view.fit_to_width(620)  # beside the tour at 1024×768: two pairs a row, the page scrolls
    assert pair_columns() == 2
    minimum = widget.ci.effectiveSizeHint(Qt.SizeHint.MinimumSize).width()
    assert minimum <= 620 - 24
    assert len(view.panel_images()) == 24  # every head still shown
    for image in view.panel_images():
        plot = image.getViewBox().parentItem()
        title = plot.titleLabel
        assert "<br>" in title.text  # head above rule
        # The title row is as tall as its two lines (pyqtgraph's fixed 30 px cut them).
        assert title.item.boundingRect().height() <= plot.layout.rowMinimumHeight(0) + 0.5
