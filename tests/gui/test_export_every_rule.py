"""Every explorer view renders for export under every scaling rule, for random q, k and for a
real head (the PNG, SVG and PDF writers paint what this rendering paints).

The suite turns RuntimeWarnings into errors: a view that hands pyqtgraph an all-NaN curve
(QK-norm has no c, hence no ∂p/∂S_raw) makes numpy warn inside a boundingRect that Qt calls
during the export, and that exception would crash the process in PySide's virtual-call path.
"""

from __future__ import annotations

import pytest

from engine.analysis.real_head import HeadRef
from engine.config import ScalingRule
from engine.io.tensors import load_tensors
from gui.kit.export import image_stats
from gui.kit.render import render_image
from gui.kit.resources import sample_tensors_path
from tests.gui.conftest import HANG_MS


@pytest.mark.parametrize("source", ["random", "real head"])
def test_every_view_exports_under_every_rule(shared_window, source) -> None:
    window = shared_window
    start_rule = window.panel.rule.currentData()
    if source == "real head":
        window.controller.set_real_head(HeadRef(load_tensors(sample_tensors_path()), 0, 0))
        assert window.wait_until_settled(HANG_MS)
    for rule in ScalingRule:
        window.panel.rule.setCurrentIndex(window.panel.rule.findData(rule.value))
        assert window.wait_until_settled(HANG_MS)
        assert window.controller.results().config.rule is rule
        for view in window.views:
            window.controller.refresh_view(view)
            image = render_image(view.export_item(), 640, 480)
            assert image_stats(image)["non_background"] > 0.01, (view.key, rule)
    window.panel.rule.setCurrentIndex(window.panel.rule.findData(start_rule))
    if source == "real head":
        window.source_bar.back_button.click()
    assert window.wait_until_settled(HANG_MS)
