"""Exports say what they show, and a head picked in the Heads tab is shown openly in the
Explorer and left in one click.

The caption line is read back from what a viewer sees: the SVG's ``<text>`` runs on the
caption's baseline (Qt splits a line into runs where the font changes, as for σ and ρ), the
PNG's ``Description`` text and its dark ink in the strip under the plots.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest

from engine.config import ScalingRule
from gui.kit import export, svg_export
from tests.gui.conftest import HANG_MS
from tests.gui.pixels import rgb, svg_lines


def exported_caption(view, folder, width=1200, height=800) -> tuple[str, str, np.ndarray]:
    """The last SVG text line, the PNG's Description and the PNG's bottom 40 rows."""
    svg = svg_export.export_svg(view.export_item(), folder / f"{view.key}.svg", width, height)
    png = QImage(str(export.export_png(view.export_item(), folder / f"{view.key}.png", width,
                                       height)))
    return (svg_lines(svg.read_text(encoding="utf-8"))[-1], png.text("Description"),
            rgb(png)[-40:])


def _random_caption(config) -> str:
    return (f"Random q, k: n = {config.n_tokens}, d_k = {config.d_k}, σ = {config.init_std:g}, "
            f"ρ = {config.rho:g}, seed {config.seed} · rule 1/√d_k")


def test_explorer_export_names_random_q_k_and_its_settings(window, tmp_path):
    window.panel.seed.setValue(7)
    assert window.wait_until_settled(HANG_MS)
    config = window.controller.results().config
    assert config.seed == 7 and config.rule is ScalingRule.SQRT
    svg_line, description, strip = exported_caption(window.view("heatmap"), tmp_path)
    assert svg_line == description == _random_caption(config)
    assert (strip.max(axis=-1) < 100).sum() > 200  # the caption is drawn, not only stored


def _click_table_row(view, row: int) -> None:
    table = view.table
    rect = table.visualRect(table.model().index(row, 0))
    QTest.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_a_head_picked_in_the_heads_tab_is_announced_and_left_in_one_click(window, tmp_path):
    heatmap = window.view("heatmap")
    random_config = window.controller.results().config
    random_weights = np.array(heatmap.panel_images()[0].image)
    back = window.menu_actions["back_to_random"]
    assert not back.isEnabled()

    window.menu_actions["open_sample"].trigger()
    heads = window.heads.view
    assert heads.wait_idle()
    model = heads.table.model()
    keys = model.sourceModel().column_keys()
    layer = int(model.index(0, keys.index("layer")).data().split(" ")[0])
    head = int(model.index(0, keys.index("head")).data())
    _click_table_row(heads, 0)
    assert heads.wait_idle() and window.wait_until_settled(HANG_MS)
    ref = window.controller.real_head()
    assert (ref.layer, ref.head) == (layer, head)
    where = f"{ref.file.path.name} · layer {layer}"
    # Said where the user is (the Heads tab), in the banner and the menu, and in exports.
    assert window.statusBar().currentMessage().startswith(f"The Explorer now shows {where}")
    window.mode_tabs.setCurrentIndex(0)
    assert window.wait_until_settled(HANG_MS)
    assert window.source_bar.isVisible() and where in window.source_bar.label.text()
    assert back.isEnabled()
    assert not window.panel.controls()["n_tokens"].isEnabled()
    config = window.controller.results().config
    svg_line, description, _strip = exported_caption(heatmap, tmp_path)
    assert svg_line == description
    assert svg_line.startswith(f"Real q, k of {where}")
    assert f"(n = {config.n_tokens}, d_k = {config.d_k})" in svg_line

    back.trigger()  # View › Back to random q, k
    assert window.wait_until_settled(HANG_MS)
    assert window.controller.real_head() is None and not window.source_bar.isVisible()
    assert not back.isEnabled()
    assert window.panel.controls()["n_tokens"].isEnabled()
    assert window.controller.results().config == random_config
    np.testing.assert_array_equal(heatmap.panel_images()[0].image, random_weights)
    svg_line, description, _strip = exported_caption(heatmap, tmp_path)
    assert svg_line == description == _random_caption(random_config)
