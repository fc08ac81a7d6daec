"""The heatmap's colour scale: under the default, the 1/√d_k maps visibly show spread rows next
to the one-hot rows of no scaling, at n = 64 and at n = 2048; exports name the scale.

"Visibly" is read from the pixels the user sees: the share of a map's pixels whose colour is
clearly lighter than the colour bar's darkest colour.
"""

from __future__ import annotations

import math
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage

from engine.analysis.experiment import run_experiment
from engine.config import AttentionConfig, ScalingRule
from gui.explorer.results import ExplorerResults
from gui.explorer.views import HeatmapView
from gui.explorer.views.heatmap_colours import COLOUR_MAPS, ColourScale
from gui.kit import export

#: A colour at least this far along the bar from its darkest end counts as "lit".
LIT_POSITION = 0.25


def results_for(n: int, rule: ScalingRule = ScalingRule.SQRT) -> ExplorerResults:
    config = AttentionConfig(n_tokens=n, d_k=64, heads=1, d_model=64, rule=rule)
    snapshot = run_experiment(config, rules=(ScalingRule.NONE, ScalingRule.SQRT))
    return ExplorerResults(config=config, snapshot=snapshot)


def shown_view(qtbot, results: ExplorerResults, scale: ColourScale | None = None) -> HeatmapView:
    view = HeatmapView()
    qtbot.addWidget(view)
    view.resize(1000, 600)
    if scale is not None:
        view.colours.set_scale(scale)
    view.show()
    qtbot.waitExposed(view)
    view.show_results(results)
    qtbot.wait(20)
    return view


def lit_shares(view: HeatmapView) -> list[float]:
    """Per panel, the share of its on-screen pixels lit (see :data:`LIT_POSITION`)."""
    widget = view.export_item()
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    width, height = image.width(), image.height()
    pixels = np.frombuffer(image.constBits(), np.uint8).reshape(height, image.bytesPerLine())
    pixels = pixels[:, : 3 * width].reshape(height, width, 3).astype(float)
    colour_map = pg.colormap.get(view.colours.map_name())
    darkest = np.array(colour_map.map(0.0, mode="byte")[:3], dtype=float)
    lit_distance = np.abs(np.array(colour_map.map(LIT_POSITION, mode="byte")[:3]) - darkest).sum()
    shares = []
    for image_item in view.panel_images():
        rect = widget.mapFromScene(image_item.getViewBox().sceneBoundingRect()).boundingRect()
        # Inside the plot area, away from the outline of the query row.
        box = pixels[rect.top() + 3: rect.bottom() - 3, rect.left() + 3: rect.right() - 3]
        distance = np.abs(box - darkest).sum(axis=-1)
        shares.append(float(np.mean(distance >= lit_distance)))
    return shares


@pytest.mark.parametrize("n", [64, 2048])
def test_by_default_sqrt_rows_are_visibly_spread_and_none_rows_one_hot(qtbot, n):
    view = shown_view(qtbot, results_for(n))
    assert view.colours.scale() is ColourScale.LOG
    sqrt_share, none_share = lit_shares(view)
    assert sqrt_share >= 0.8, (n, sqrt_share)
    assert none_share <= 0.3, (n, none_share)
    # The colour bar names the scale and spans log₁₀(1/n) − 2 … 0.
    assert view.colour_bar_label() == "log₁₀ p"
    for image in view.panel_images():
        assert tuple(image.levels) == pytest.approx((-math.log10(n) - 2.0, 0.0))


def test_a_linear_scale_shows_the_sqrt_map_dark_at_n_64(qtbot):
    """The picture the default replaces: on a linear bar the spread row is near-black."""
    view = shown_view(qtbot, results_for(64), ColourScale.LINEAR)
    sqrt_share, _none_share = lit_shares(view)
    assert sqrt_share <= 0.1
    assert tuple(view.panel_images()[0].levels) == (0.0, 1.0)


def test_per_map_scale_divides_by_each_maps_largest_weight(qtbot):
    results = results_for(64)
    view = shown_view(qtbot, results, ColourScale.PER_MAP)
    sqrt_weights = results.snapshot.rules[ScalingRule.SQRT].weights[0]
    np.testing.assert_allclose(view.panel_images()[0].image, sqrt_weights / sqrt_weights.max())
    assert float(view.panel_images()[0].image.max()) == 1.0
    assert "largest p" in view.colour_bar_label()


def test_the_log_image_is_log10_of_the_weights_above_the_floor(qtbot):
    results = results_for(64)
    view = shown_view(qtbot, results)
    low = -math.log10(64) - 2.0
    for image, rule in zip(view.panel_images(), (ScalingRule.SQRT, ScalingRule.NONE),
                           strict=True):
        weights = results.snapshot.rules[rule].weights[0]
        np.testing.assert_allclose(image.image, np.log10(np.maximum(weights, 10.0 ** low)),
                                   rtol=1e-6, atol=1e-6)
        assert tuple(image.levels) == pytest.approx((low, 0.0))


def test_rule_none_is_compared_with_sqrt_under_the_log_scale(qtbot):
    view = shown_view(qtbot, results_for(64, ScalingRule.NONE))
    none_share, sqrt_share = lit_shares(view)
    assert sqrt_share >= 0.8 and none_share <= 0.3


def test_cividis_recolours_every_map_and_the_bar(qtbot):
    view = shown_view(qtbot, results_for(64))
    view.colours.set_map("cividis")
    qtbot.wait(20)
    assert view.colours.map_name() == "cividis" and "cividis" in COLOUR_MAPS
    sqrt_share, none_share = lit_shares(view)  # measured against cividis' own darkest colour
    assert sqrt_share >= 0.8 and none_share <= 0.3
    with pytest.raises(ValueError, match="unknown colour map"):
        view.colours.set_map("jet")


@pytest.mark.parametrize("scale", list(ColourScale))
def test_exports_carry_the_scale_in_the_colour_bar_label(qtbot, tmp_path, scale):
    view = shown_view(qtbot, results_for(64), scale)
    written = export.export_view(view, tmp_path, 1000, 600, formats=("svg",))
    svg = next(p for p in written if p.suffix == ".svg").read_text(encoding="utf-8")
    assert view.colour_bar_label() in svg
