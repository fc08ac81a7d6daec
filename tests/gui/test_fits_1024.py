"""At 1024×768, in both languages, with the parameter dock or the tour open: every view's tab is
on screen, no view needs a sideways scroll bar, and no plot text is cut at its plot's edge."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRect, QRectF
from PySide6.QtWidgets import QLabel, QScrollArea, QTabBar, QToolButton, QWidget

from gui.kit import i18n
from tests.gui.conftest import HANG_MS

SMALL_SCREEN = (1024, 768)


@pytest.fixture
def english_after():
    yield
    i18n.set_language("en")


def _in_window(widget: QWidget, window: QWidget) -> QRect:
    return QRect(widget.mapTo(window, widget.rect().topLeft()), widget.size())


def cut_texts(window: QWidget) -> list[str]:
    """What the user cannot read whole on the current page of ``window``."""
    problems = []
    bounds = window.rect().adjusted(-1, -1, 1, 1)
    for button in window.findChildren(QToolButton):
        if button.isVisible() and button.parentWidget().objectName() == "wrappingTabBar":
            if not bounds.contains(_in_window(button, window)):
                problems.append(f"tab {button.text()!r} outside the window")
            if button.width() < button.sizeHint().width():
                problems.append(f"tab {button.text()!r} narrower than its text")
    for bar in window.findChildren(QTabBar):
        if bar.isVisible():
            for index in range(bar.count()):
                if not bar.rect().contains(bar.tabRect(index)):
                    problems.append(f"tab {bar.tabText(index)!r} behind the tab bar's arrows")
    for area in window.findChildren(QScrollArea):
        name = area.objectName()
        if area.isVisible() and name.lower().endswith("viewscroll") and (
                area.horizontalScrollBar().maximum() > 0):
            problems.append(f"{name} scrolls sideways by {area.horizontalScrollBar().maximum()} px")
    for graphics in window.findChildren(pg.GraphicsView):
        if not graphics.isVisible():
            continue
        viewport = QRectF(graphics.viewport().rect()).adjusted(-2, -2, 2, 2)
        for item in graphics.scene().items():
            if not item.isVisible() or not isinstance(item, pg.TextItem | pg.LabelItem):
                continue
            text = item.toPlainText() if isinstance(item, pg.TextItem) else item.text
            if not str(text).strip():
                continue
            shown = graphics.mapFromScene(item.sceneBoundingRect()).boundingRect()
            if not viewport.contains(QRectF(shown)):
                problems.append(f"{text!r} cut by the edge of its view")
                continue
            box = item.getViewBox() if isinstance(item, pg.TextItem) else None
            if box is not None:
                frame = box.sceneBoundingRect().adjusted(-2, -2, 2, 2)
                if not frame.contains(item.sceneBoundingRect()):
                    problems.append(f"{text!r} drawn past the edge of its plot")
    for label in window.findChildren(QLabel):
        if not label.isVisible() or not label.text() or _scrolled(label):
            continue
        if label.wordWrap():
            needed = label.heightForWidth(label.width())
            if needed > label.height() + 1:
                problems.append(f"label {label.text()[:40]!r} cut below "
                                f"({label.height()} < {needed} px)")
        elif label.width() + 1 < label.minimumSizeHint().width():
            problems.append(f"label {label.text()[:40]!r} cut at the side")
    return problems


def _scrolled(widget: QWidget) -> bool:
    """Inside a scroll area: reachable by scrolling, judged by the scroll-area check."""
    parent = widget.parentWidget()
    while parent is not None:
        name = parent.objectName().lower()
        if isinstance(parent, QScrollArea) and not name.endswith("viewscroll"):
            return True
        parent = parent.parentWidget()
    return False


def _check_every_page(window, qtbot, label: str) -> None:
    keys = [view.key for view in window.views] + [view.key for view in window.train_tab.views]
    for key in [*keys, "heads", "model"]:
        assert window.show_view(key), key
        assert window.wait_until_settled(HANG_MS), key
        assert (window.width(), window.height()) == SMALL_SCREEN
        try:
            qtbot.waitUntil(lambda: cut_texts(window) == [], timeout=HANG_MS)
        except qtbot.TimeoutError:
            pass  # the assertion below names what is cut
        assert cut_texts(window) == [], (label, key)


@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_every_page_fits_1024x768(make_window, qtbot, english_after, language):
    window = make_window()
    window.resize(*SMALL_SCREEN)
    assert window.language.set_language(language)
    # Legends and notes of the Train curves are longest after a run.
    assert window.train_tab.start_training()
    assert window.train_tab.wait_until_idle(60_000)
    window.train_tab.curves.loss_display.set_smoothing(50)
    qtbot.wait(30)
    _check_every_page(window, qtbot, f"{language}, parameters")
    # The nine explorer views stand in two rows of tabs, none behind a scroll arrow.
    tabs = window.view_tabs.tabs
    rows = {tabs.tab_button(i).y() for i in range(tabs.count())}
    if language == "en":
        assert len(rows) >= 2
    # Opened at 1024×768, the tour's dock is tabbed with the parameters' (not a second column).
    window.tour_action.trigger()
    assert window.tour_dock.isVisible()
    _check_every_page(window, qtbot, f"{language}, tour")


def _chance_labels(window) -> list[pg.InfLineLabel]:
    """The labels of the dotted chance lines on the Train curves' loss and accuracy plots."""
    view = window.train_tab.curves
    return [item.label for name in ("loss", "accuracy") for item in view.plot(name).items
            if isinstance(item, pg.InfiniteLine)]


def test_chance_labels_read_whole_inside_their_plots_in_either_language(
        make_window, qtbot, english_after):
    window = make_window()
    window.resize(*SMALL_SCREEN)
    assert window.language.set_language("zh_CN")
    assert window.show_view("train_curves")
    assert all(not label.isVisible() for label in _chance_labels(window))  # before a run
    assert window.train_tab.start_training()
    assert window.train_tab.wait_until_idle(60_000)
    for language in (None, "en", "zh_CN"):  # as the run left them, then after each switch
        if language is not None:
            assert window.language.set_language(language)
        qtbot.wait(30)
        for label in _chance_labels(window):
            assert label.isVisible()
            assert label.toPlainText() == i18n.translate("TrainCurvesView", "chance")
            frame = label.getViewBox().sceneBoundingRect()
            assert frame.contains(label.sceneBoundingRect()), (language, frame,
                                                               label.sceneBoundingRect())
        assert cut_texts(window) == [], language
