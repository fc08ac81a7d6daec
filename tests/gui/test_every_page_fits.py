"""Every view, every tour step and presentation mode, at 1024×768 and 1280×800, in English and
Chinese: nothing scrolls sideways, every legend and colour bar lies inside its view, and no
plot text is cut (issue 56, Layout).

One window per language visits each page once and checks it at both sizes: resizing is cheap,
the engine work behind a page (a tour step's 20000 rows) is not.
"""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtWidgets import QScrollArea

from gui.kit import i18n
from tests.gui.test_fits_1024 import cut_texts

SIZES = ((1024, 768), (1280, 800))


@pytest.fixture
def english_after():
    yield
    i18n.set_language("en")


def sideways_scrolls(window) -> list[str]:
    """Every shown scroll area that the user would have to scroll sideways."""
    return [f"{area.objectName() or type(area.parentWidget()).__name__} scrolls sideways by "
            f"{area.horizontalScrollBar().maximum()} px"
            for area in window.findChildren(QScrollArea)
            if area.isVisible() and area.horizontalScrollBar().maximum() > 0]


def outside_their_view(window) -> list[str]:
    """Legends and colour bars not wholly inside their view, or their view not inside the
    window from left to right."""
    problems = []
    for graphics in window.findChildren(pg.GraphicsView):
        if not graphics.isVisible():
            continue
        viewport = graphics.viewport()
        left = viewport.mapTo(window, viewport.rect().topLeft()).x()
        if left < 0 or left + viewport.width() > window.width() + 1:
            problems.append(f"{type(graphics.parentWidget()).__name__} reaches past the window")
        frame = QRectF(viewport.rect()).adjusted(-1, -1, 1, 1)
        for item in graphics.scene().items():
            if not item.isVisible() or not isinstance(item, pg.LegendItem | pg.ColorBarItem):
                continue
            shown = QRectF(graphics.mapFromScene(item.sceneBoundingRect()).boundingRect())
            if not frame.contains(shown):
                problems.append(f"{type(item).__name__} of {type(graphics.parentWidget()).__name__}"
                                f" at {shown.getRect()} outside its view {frame.getRect()}")
    return problems


def problems(window) -> list[str]:
    return sideways_scrolls(window) + outside_their_view(window) + cut_texts(window)


def check_both_sizes(window, qtbot, label: object) -> None:
    """The page in front fits at each size, once the layouts have settled (size changes
    travel up the widget tree as posted events, one level per pass of the event loop)."""
    for size in SIZES:
        window.resize(*size)
        try:
            qtbot.waitUntil(lambda: problems(window) == [], timeout=3000)
        except qtbot.TimeoutError:
            pass  # the assertion names what does not fit
        assert (window.width(), window.height()) == size
        assert problems(window) == [], (label, size)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_every_view_tour_step_and_presentation_fit(make_window, qtbot, english_after, language):
    window = make_window()
    window.resize(*SIZES[0])
    assert window.language.set_language(language)
    # The Train views are widest with a run's results (a caption per rule's probe panel).
    assert window.train_tab.start_training()
    assert window.train_tab.wait_until_idle(60_000)
    keys = [view.key for view in window.views] + [view.key for view in window.train_tab.views]
    for key in [*keys, "heads", "model"]:
        assert window.show_view(key), key
        assert window.wait_until_settled(30_000), key
        check_both_sizes(window, qtbot, (language, key))

    window.show_view("heatmap")
    window.menu_actions["presentation"].setChecked(True)
    assert window.presentation.is_active()
    for key in keys:
        assert window.show_view(key), key
        check_both_sizes(window, qtbot, (language, "presentation", key))
    window.menu_actions["presentation"].setChecked(False)

    window.resize(*SIZES[0])
    window.tour_action.trigger()
    panel = window.tour_dock.panel
    for index in range(panel.step_count()):
        panel.go_to(index)
        assert window.wait_until_settled(60_000), index
        assert window.tour_dock.isVisible(), index
        check_both_sizes(window, qtbot, (language, f"tour step {index + 1}",
                                         window.current_view().key))
