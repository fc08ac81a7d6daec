"""Token axes: the labels drawn (pyqtgraph's draw specs, what the picture paints), token 0
among them however many are dropped, and an old capture's "�" tokens still shown."""

from __future__ import annotations

import itertools

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QPainter, QPicture

from gui.kit.token_axis import TokenAxis


def _label_specs(axis: TokenAxis) -> list:
    """The (rect, flags, text) of each label the axis paints."""
    picture = QPicture()
    painter = QPainter(picture)
    try:
        if axis.style["tickFont"]:
            painter.setFont(axis.style["tickFont"])
        _, _, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return texts


def _drawn(axis: TokenAxis) -> list[str]:
    """The label texts the axis paints, in order along it."""
    texts = _label_specs(axis)
    along = (lambda r: r.center().x()) if axis.orientation == "bottom" else (
        lambda r: r.center().y())
    return [text for rect, _, text in sorted(texts, key=lambda spec: along(spec[0]))]


def _heatmap(qtbot, tokens: list[str], size=(520, 400)) -> pg.PlotItem:
    """A heatmap as the Heads tab and the explorer draw one: keys along the bottom, queries
    down the left, token i in cell i."""
    plot = pg.PlotItem(axisItems={"bottom": TokenAxis("bottom"), "left": TokenAxis("left")})
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    widget.addItem(plot)
    n = len(tokens)
    plot.addItem(pg.ImageItem(np.random.default_rng(0).random((n, n))))
    plot.invertY(True)
    plot.setRange(xRange=(0, n), yRange=(0, n), padding=0)
    for name in ("bottom", "left"):
        plot.getAxis(name).set_tokens(tokens)
    widget.resize(*size)
    widget.show()
    qtbot.waitExposed(widget)
    for _ in range(3):  # the left axis widens to its labels after a draw, then draws again
        widget.grab()
        qtbot.wait(1)
    plot.keep_alive = widget  # the plot's C++ object lives as long as its widget
    return plot


@pytest.mark.parametrize("n", [12, 60, 195])
def test_the_key_axis_always_labels_token_0(qtbot, n):
    # A long first token, as chat templates start (<|im_start|>): centred on its cell it
    # sticks out of the axis, and pyqtgraph dropped it.
    tokens = ["<|im_start|>", *(f"word{i}" for i in range(1, n))]
    plot = _heatmap(qtbot, tokens)
    for name in ("bottom", "left"):
        drawn = _drawn(plot.getAxis(name))
        assert drawn[0] == "<|im_start|>", (name, drawn[:3])
        assert len(drawn) == len(set(drawn)) and len(drawn) >= 2
    # Zoomed past token 0: it is not on the axis, and is not drawn.
    plot.setRange(xRange=(n // 2, n), padding=0)
    assert "<|im_start|>" not in _drawn(plot.getAxis("bottom"))


def test_labels_never_overlap_once_token_0_moved_in(qtbot):
    tokens = ["<|im_start|>", *(f"w{i}" for i in range(1, 40))]
    axis = _heatmap(qtbot, tokens, size=(900, 400)).getAxis("bottom")
    rects = sorted((rect for rect, _, _ in _label_specs(axis)), key=lambda r: r.left())
    assert rects[0].left() >= 0 and len(rects) >= 3
    assert all(a.right() <= b.left() for a, b in itertools.pairwise(rects))


def test_an_old_capture_with_replacement_characters_still_shows(qtbot):
    # Files captured before tokens showed their bytes hold "�" for a part of a character.
    tokens = ["猫", "\ufffd", "\ufffd", "坐"]
    plot = _heatmap(qtbot, tokens)
    assert _drawn(plot.getAxis("bottom")) == tokens
