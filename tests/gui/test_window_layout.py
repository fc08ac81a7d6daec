"""First-start size, every view fitting the 1280×800 window, every plot reachable at 1024×768,
and the fast update path."""

from __future__ import annotations

from contextlib import contextmanager

import pyqtgraph as pg
from PySide6.QtCore import QRect
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QScrollArea, QWidget

from gui.kit.cell_items import WrappingLabel
from gui.window_settings import DEFAULT_SIZE, save_window
from tests.gui.conftest import HANG_MS, back_to_start


def test_first_start_uses_default_size_clamped_to_the_screen(make_window) -> None:
    # restore=True with empty (isolated) settings: nothing saved yet.
    window = make_window(restore=True, show=False, settle=False)
    available = QGuiApplication.primaryScreen().availableGeometry()
    expected = (min(DEFAULT_SIZE[0], available.width()), min(DEFAULT_SIZE[1], available.height()))
    assert (window.width(), window.height()) == expected
    assert available.contains(window.frameGeometry().topLeft())


def test_saved_geometry_wins_over_the_default(make_window) -> None:
    first = make_window(show=False, settle=False)
    first.resize(700, 500)
    save_window(first, first.settings)
    first.close()
    second = make_window(restore=True, show=False, settle=False)
    assert (second.width(), second.height()) == (700, 500)


@contextmanager
def resized(window, width: int, height: int):
    """The shared window at ``width × height``; its size and view put back afterwards."""
    size, view = window.size(), window.current_view().key
    window.resize(width, height)
    try:
        yield window
    finally:
        window.show_view(view)
        window.resize(size)


def test_every_view_fits_the_window_at_1280x800_with_the_dock_open(shared_window,
                                                                   qtbot) -> None:
    with resized(shared_window, 1280, 800) as window:
        assert window.parameter_dock.isVisible()
        for view in window.views:
            window.show_view(view.key)
            qtbot.wait(20)  # let the layouts settle (a bounded wait, no computation pending)
            graphics = view.findChildren(pg.GraphicsView)
            assert graphics, view.key
            for widget in graphics:
                central = widget.centralWidget
                # A layout wider than its view is drawn cut off at the right edge: the scene
                # content must fit the viewport.
                assert central.size().width() <= widget.viewport().width() + 1, view.key
                assert central.size().height() <= widget.viewport().height() + 1, view.key


def test_long_notes_wrap_instead_of_widening_the_layout(shared_window, qtbot) -> None:
    with resized(shared_window, 1280, 800) as window:
        window.show_view("gradients")
        qtbot.wait(20)
        view = window.view("gradients")
        notes = [item for item in view.export_item().scene().items()
                 if isinstance(item, WrappingLabel) and item.text]
        assert notes
        for note in notes:
            assert note.item.textWidth() > 0  # wrapped to the cell
            assert note.item.boundingRect().width() <= view.export_item().viewport().width()


def test_sigma_change_keeps_correlation_and_sweep_objects(shared_window, settle) -> None:
    window = shared_window
    before = window.controller.results()
    window.panel.init_std.spin.setValue(0.7)
    settle(window)
    after = window.controller.results()
    assert after.config.init_std == 0.7 and after.snapshot is not before.snapshot
    # Neither depends on σ: the same objects, so their views skip re-plotting.
    assert after.correlation is before.correlation
    assert after.sweep_points == before.sweep_points
    window.panel.rho.spin.setValue(0.5)
    settle(window)
    assert window.controller.results().correlation is not after.correlation
    back_to_start(window, settle)


# -- 1024×768: every plot inside the window or reachable by scrolling (issue 8, §4) ----------
SMALL_SCREEN = (1024, 768)


def _scroll_area_of(widget: QWidget) -> QScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QScrollArea):
            return parent
        parent = parent.parentWidget()
    return None


def _window_rect(widget: QWidget, rect: QRect, window: QWidget) -> QRect:
    return QRect(widget.mapTo(window, rect.topLeft()), rect.size())


def unreachable_plots(window: QWidget) -> list[str]:
    """Plots (PlotItems, colour bars included) of the shown views that the user cannot see.

    A plot must lie inside its GraphicsView's viewport (a scene layout wider than the view is
    drawn cut off). If the view sits in a scroll area, the scroll area must lie inside the
    window and, scrolled to the plot, show it (all of it when it fits the scroll area);
    otherwise the plot itself must lie inside the window.
    """
    problems = []
    window_rect = window.rect()
    for graphics in window.findChildren(pg.GraphicsView):
        if not graphics.isVisible():
            continue
        viewport = graphics.viewport()
        for item in graphics.scene().items():
            if not isinstance(item, pg.PlotItem) or not item.isVisible():
                continue
            where = f"{type(graphics.parentWidget()).__name__}: {type(item).__name__}"
            rect = graphics.mapFromScene(item.sceneBoundingRect()).boundingRect()
            if not viewport.rect().adjusted(-1, -1, 1, 1).contains(rect):
                problems.append(f"{where} cut off by its view: {rect.getRect()} in "
                                f"{viewport.rect().getRect()}")
                continue
            area = _scroll_area_of(graphics)
            if area is None:
                if not window_rect.contains(_window_rect(viewport, rect, window)):
                    problems.append(f"{where} outside the window")
                continue
            area_rect = _window_rect(area.viewport(), area.viewport().rect(), window)
            if not window_rect.contains(area_rect):
                problems.append(f"{where}: scroll area {area_rect.getRect()} outside the window")
                continue
            content = area.widget()
            in_content = _window_rect(viewport, rect, content)
            if not content.rect().adjusted(-1, -1, 1, 1).contains(in_content):
                problems.append(f"{where} outside the scroll area's content: "
                                f"{in_content.getRect()} in {content.rect().getRect()}")
                continue
            centre = in_content.center()
            area.ensureVisible(centre.x(), centre.y(), in_content.width() // 2,
                               in_content.height() // 2)
            shown = _window_rect(viewport, rect, window)
            fits = (rect.width() <= area.viewport().width()
                    and rect.height() <= area.viewport().height())
            visible = area_rect.adjusted(-1, -1, 1, 1)
            if (fits and not visible.contains(shown)) or not visible.intersects(shown):
                problems.append(f"{where} not reachable by scrolling: {shown.getRect()} vs "
                                f"{area_rect.getRect()}")
            area.horizontalScrollBar().setValue(0)
            area.verticalScrollBar().setValue(0)
    return problems


def _assert_reachable(window, qtbot, label: object) -> None:
    """Every plot reachable once the layouts settle (size changes travel up the widget tree
    as posted LayoutRequest events, one level per event-loop pass)."""
    assert (window.width(), window.height()) == SMALL_SCREEN, label
    try:
        qtbot.waitUntil(lambda: unreachable_plots(window) == [], timeout=HANG_MS)
    except AssertionError:
        pass
    assert unreachable_plots(window) == [], label


def _every_view_reachable(window, qtbot, label: str) -> None:
    keys = [view.key for view in window.views] + [view.key for view in window.train_tab.views]
    for key in keys:
        assert window.show_view(key)
        _assert_reachable(window, qtbot, (label, key))


def _resize_small(window, qtbot) -> None:
    window.resize(*SMALL_SCREEN)
    qtbot.wait(30)


def test_every_plot_is_reachable_at_1024x768_with_the_parameter_dock(shared_window, qtbot):
    with resized(shared_window, *SMALL_SCREEN) as window:
        qtbot.wait(30)
        assert window.parameter_dock.isVisible()
        _every_view_reachable(window, qtbot, "parameter dock")
        # The gradient view reflows into two columns instead of needing the scroll bar.
        window.show_view("gradients")
        qtbot.wait(30)
        gradients = window.view("gradients")
        assert gradients.columns() == 2
        area = _scroll_area_of(gradients)
        assert area.horizontalScrollBar().maximum() == 0


def test_every_plot_is_reachable_at_1024x768_with_the_tour_open(make_window, qtbot):
    window = make_window()
    _resize_small(window, qtbot)
    window.tour_action.trigger()
    qtbot.wait(30)
    assert window.tour_dock.isVisible()
    _every_view_reachable(window, qtbot, "tour")
    # The steps named in the issue (6, 7, 10, 11): the view each step brings forward.
    panel = window.tour_dock.panel
    for index in (5, 6, 9, 10):
        panel.go_to(index)
        assert window.wait_until_settled(HANG_MS), index
        assert window.tour_dock.isVisible(), index
        _assert_reachable(window, qtbot, (index, window.current_view().key))


def test_every_plot_is_reachable_at_1024x768_side_by_side(make_window, qtbot):
    window = make_window()
    _resize_small(window, qtbot)
    window.show_view("gradients")
    window.menu_actions["side"].setChecked(True)
    qtbot.wait(30)
    assert window.view_tabs.side_tabs.isVisible()
    _every_view_reachable(window, qtbot, "side by side")
    # Both tab widgets show a view at once; the side one is the gradient view.
    assert window.view_tabs.side_tabs.currentWidget().key == "gradients"
    window.show_view("laws")
    _assert_reachable(window, qtbot, "laws beside gradients")
    # With the tour open as well.
    window.tour_action.trigger()
    _assert_reachable(window, qtbot, "side by side with the tour")


# -- View › Language and the status bar (issue 8, §4) ------------------------------------------
def test_language_menu_checks_exactly_the_current_language(shared_window):
    from gui.kit import i18n

    window = shared_window
    actions = window.language.actions
    try:
        for code in ("zh_CN", "en", "zh_CN"):
            actions[code].trigger()  # what a click in View › Language does
            assert i18n.current_language() == code
            assert [c for c, action in actions.items() if action.isChecked()] == [code]
        # A programmatic switch (settings, tests) keeps the menu right.
        window.language.set_language("en")
        assert [c for c, action in actions.items() if action.isChecked()] == ["en"]
        assert window.language.group.isExclusive()
    finally:
        i18n.set_language("en")


def test_status_bar_leaves_computing_once_idle(shared_window, settle):
    window = shared_window
    expected = "n = 24, d_k = 16, h = 1, rule 1/√d_k"
    assert window.status.label.text() == expected
    # σ does not enter the sweep: the job ends without a later push, which once left the
    # status bar on "Computing…" with the worker idle.
    window.panel.init_std.spin.setValue(0.7)
    settle(window)
    assert not window.controller.is_busy()
    assert window.status.label.text() == expected
    window.panel.n_tokens.spin.setValue(32)
    settle(window)
    assert window.status.label.text() == "n = 32, d_k = 16, h = 1, rule 1/√d_k"
    temperature = window.controller.temperature()
    window.controller.set_temperature(3.0)  # a temperature-only job
    settle(window)
    assert window.status.label.text() == "n = 32, d_k = 16, h = 1, rule 1/√d_k"
    window.controller.set_temperature(temperature)
    back_to_start(window, settle)
