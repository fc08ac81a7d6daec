"""View › Presentation (F11): one view fills the window with larger text and lines; Esc returns."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage, QKeySequence

from gui.kit.export import export_png
from gui.kit.render import render_image
from tests.gui.conftest import HANG_MS
from tests.gui.pixels import rgb

VERMILLION = np.array([0xD5, 0x5E, 0x00])  # rule "none"


def _vermillion_pixels(window, tmp_path, name: str) -> int:
    """Pixels of the unscaled rule's colour in a 1000×700 export of the view in front."""
    path = export_png(window.current_view().export_item(), tmp_path / f"{name}.png", 1000, 700)
    pixels = rgb(QImage(str(path)))
    return int((np.abs(pixels - VERMILLION).max(axis=-1) < 40).sum())


def _dark_pixels(window) -> int:
    """Pixels of text and axes (near black) in a 1000×700 rendering of the view in front."""
    image = rgb(render_image(window.current_view().export_item(), 1000, 700))
    return int((image.max(axis=-1) < 90).sum())


def test_presentation_enlarges_the_view_and_esc_restores_the_window(shared_window, qtbot,
                                                                   tmp_path):
    window = shared_window
    size, front = window.size(), window.current_view().key
    window.resize(1280, 800)
    window.show_view("laws")
    assert window.wait_until_settled(HANG_MS)
    action = window.menu_actions["presentation"]
    assert action.shortcut() == QKeySequence("F11")
    assert action in window.menus["view"].actions()
    normal_pixels = _vermillion_pixels(window, tmp_path, "normal")
    normal_text = _dark_pixels(window)
    tabs_bar = window.view_tabs.tabs.bar

    action.trigger()  # F11
    qtbot.wait(50)
    assert window.presentation.is_active()
    assert not window.parameter_dock.isVisible()
    assert not tabs_bar.isVisible() and not window.statusBar().isVisible()
    assert not window.mode_tabs.tabBar().isVisible()
    # The plots fill what the panels left: wider than beside the dock.
    assert window.current_view().width() >= window.width() - 20
    # Exports made now keep the look: thicker lines, larger markers, taller text.
    presented = _vermillion_pixels(window, tmp_path, "presented")
    assert presented > 1.5 * normal_pixels
    assert _dark_pixels(window) > 1.5 * normal_text

    # The Train tab in presentation: its panel folds away as well; leave from there.
    assert window.show_view("train_curves")
    qtbot.wait(50)
    assert not window.train_tab.panel_area().isVisible()
    window.on_escape()  # Esc
    qtbot.wait(50)
    assert not window.presentation.is_active()
    assert window.train_tab.panel_area().isVisible()
    assert window.statusBar().isVisible() and window.mode_tabs.tabBar().isVisible()
    # Back on the explorer: its dock and tab rows are there again, the lines as before.
    assert window.show_view("laws")
    assert window.wait_until_settled(HANG_MS)
    qtbot.wait(50)
    assert window.parameter_dock.isVisible() and tabs_bar.isVisible()
    after = _vermillion_pixels(window, tmp_path, "after")
    assert abs(after - normal_pixels) <= 0.02 * normal_pixels
    window.resize(size)
    window.show_view(front)


def test_esc_cancels_a_computation_when_not_presenting(shared_window):
    window = shared_window
    assert not window.presentation.is_active()
    cancel = window.menu_actions["cancel"]
    assert cancel.shortcut() == QKeySequence("Esc")
    cancel.trigger()  # nothing running: a no-op, and presentation stays off
    assert not window.presentation.is_active()
    window.presentation.set_active(True)
    cancel.trigger()
    assert not window.presentation.is_active()
