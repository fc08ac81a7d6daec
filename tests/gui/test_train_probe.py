"""The Train tab's probe view: the attention of one held-out example, as bars or as a map, with
tick labels that never run together."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage, QPainter

from gui.train.probe import probe_targets
from tests.gui.train_runs import SMALL


@pytest.fixture
def tab(make_train_tab):
    return make_train_tab(SMALL)


def _train_and_show_probe(tab, qtbot, config):
    tab.panel.set_config(config)
    assert tab.start_training() and tab.wait_until_idle(30_000)
    tab.show_view(tab.probe.key)
    tab.controller.refresh_views()
    qtbot.wait(50)
    return tab.controller.results().snapshot


def _tick_texts(axis) -> list[tuple[object, str]]:
    """The (rectangle, text) of every tick label the axis draws now (pyqtgraph's own specs)."""
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
    cfg = SMALL.replace(steps=40, rules=("none", "sqrt", "linear"), n=16, vocab=32)
    snap = _train_and_show_probe(tab, qtbot, cfg)
    assert len(snap.target_positions) == 1
    answer = {j for _r, j in probe_targets(snap)}
    for rule, st in snap.rules.items():
        panel = tab.probe.panel(rule)
        assert panel.bars.isVisible() and not panel.image.isVisible()
        np.testing.assert_allclose(panel.bars.opts["height"], np.asarray(st.probe_weights)[0, 0])
        np.testing.assert_allclose(np.asarray(panel.bars.opts["x"]) - 0.5, np.arange(cfg.n + 1),
                                   atol=1e-9)
        assert [x - 0.5 for x in panel.target_bars.opts["x"]] == sorted(answer)
        assert not panel.plot.vb.yInverted()
        (_x0, _x1), (y0, y1) = panel.plot.vb.viewRange()
        assert y0 <= 0.0 and 1.0 <= y1 <= 1.1
        left = [float(text) for _, text in _tick_texts(panel.plot.getAxis("left"))]
        assert len(left) >= 3 and min(left) == 0.0 and max(left) == 1.0, left
        bottom = _tick_texts(panel.plot.getAxis("bottom"))
        assert len(bottom) >= 3
        assert all(text.isdigit() and int(text) <= cfg.n for _, text in bottom)
        _assert_no_overlap(bottom)
    assert tab.probe.panel(cfg.rules[0]).plot.getAxis("left").labelText.endswith(">p</span>")
    # Narrow panels: labels are thinned (never run together), and there are still some.
    tab.resize(700, 600)
    qtbot.wait(50)
    for rule in cfg.rules:
        bottom = _tick_texts(tab.probe.panel(rule).plot.getAxis("bottom"))
        assert 2 <= len(bottom) < cfg.n + 1
        _assert_no_overlap(bottom)


def test_probe_map_of_several_rows_keeps_rows_and_thins_labels(tab, qtbot):
    cfg = SMALL.replace(task="copy_back", steps=20, n=48, vocab=16, offset=2,
                        rules=("none", "sqrt", "linear"))
    snap = _train_and_show_probe(tab, qtbot, cfg)
    assert len(snap.target_positions) > 1
    for rule, st in snap.rules.items():
        panel = tab.probe.panel(rule)
        assert panel.image.isVisible() and not panel.bars.isVisible()
        np.testing.assert_allclose(panel.image.image,
                                   np.asarray(st.probe_weights).reshape(-1, cfg.n))
        assert panel.plot.vb.yInverted()
        for name in ("left", "bottom"):
            texts = _tick_texts(panel.plot.getAxis(name))
            assert len(texts) >= 2, name
            _assert_no_overlap(texts)
        left = [int(text) for _, text in _tick_texts(panel.plot.getAxis("left"))]
        assert set(left) <= {int(t) for t in snap.target_positions}
