"""The explorer's view tabs: one tab per view, and a second tab widget for "side by side"."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import QObject, QSignalBlocker, Qt, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QSplitter, QTabWidget

from gui.explorer.views.base import ExplorerView
from gui.kit.layout_fit import track_scene_minimums
from gui.kit.wrapping_tabs import WrappingTabWidget, tab_page

__all__ = ["ViewTabs"]


class ViewTabs(QObject):
    """The explorer views in a tab widget, with a second one beside it for side by side.

    Parameters
    ----------
    views
        The explorer views, in tab order.
    controller
        The explorer controller: a view brought to the front catches up through
        ``controller.refresh_view``.

    Attributes
    ----------
    tabs, side_tabs
        The main and the side tab widget (the side one is hidden until used).
    splitter
        The widget holding both, each in a scroll area.
    """

    def __init__(self, views: Sequence[ExplorerView], controller: Any,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.views = list(views)
        self.controller = controller
        self.side_action: QAction | None = None
        self._closing = False
        # Titles wrap onto a second row: at 1024×768 a single row would hide the last views.
        self.tabs = WrappingTabWidget()
        self.tabs.setObjectName("viewTabs")
        self.side_tabs = WrappingTabWidget()
        self.side_tabs.setObjectName("sideViewTabs")
        self.side_tabs.setVisible(False)
        for view in self.views:
            self.tabs.addTab(view, view.title())
        # Each tab widget sits in a scroll area and every plot view asks for its layout's
        # minimum: at 1024×768 with docks open a view scrolls instead of being cut off.
        for view in self.views:
            track_scene_minimums(view)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(tab_page(self.tabs, "viewScroll"))
        self._side_page = tab_page(self.side_tabs, "sideViewScroll")
        self._side_page.setVisible(False)
        self.splitter.addWidget(self._side_page)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.side_tabs.currentChanged.connect(self._on_tab_changed)

    def current_view(self) -> ExplorerView:
        """The view in front of the main tab widget."""
        widget = self.tabs.currentWidget()
        return widget if widget is not None else self.views[0]

    def show_view(self, key: str) -> bool:
        """Bring the view ``key`` to the front of its tab widget; False if there is none."""
        for view in self.views:
            if view.key == key:
                tabs = self.side_tabs if self.side_tabs.indexOf(view) >= 0 else self.tabs
                tabs.setCurrentWidget(view)
                return True
        return False

    @Slot()
    def refresh_shown(self) -> None:
        """Bring the views in front of both tab widgets up to date (the explorer page came back
        to the front: a head chosen in the Heads tab changed the results meanwhile)."""
        if self._closing:
            return
        for tabs in (self.tabs, self.side_tabs):
            view = tabs.currentWidget()
            if view is not None and view.isVisible():
                self.controller.refresh_view(view)

    def retranslate_ui(self) -> None:
        """Re-title every tab in the current language."""
        for tabs in (self.tabs, self.side_tabs):
            for index in range(tabs.count()):
                tabs.setTabText(index, tabs.widget(index).title())

    def stop(self) -> None:
        """Stop following tab changes (the window is closing; the controller is stopping)."""
        if self._closing:
            return
        self._closing = True
        self.tabs.currentChanged.disconnect(self._on_tab_changed)
        self.side_tabs.currentChanged.disconnect(self._on_tab_changed)

    @Slot(bool)
    def set_side_by_side(self, checked: bool) -> None:
        """Move the current view into the side tab widget (``checked``) or every view back."""
        if checked:
            view = self.current_view()
            if self.tabs.count() < 2:
                if self.side_action is not None:
                    with QSignalBlocker(self.side_action):
                        self.side_action.setChecked(False)
                return
            index = self.tabs.indexOf(view)
            self.tabs.removeTab(index)
            self.side_tabs.addTab(view, view.title())
            self.side_tabs.setVisible(True)
            self._side_page.setVisible(True)
        else:
            while self.side_tabs.count():
                view = self.side_tabs.widget(0)
                self.side_tabs.removeTab(0)
                self.tabs.insertTab(self.views.index(view), view, view.title())
            self.side_tabs.setVisible(False)
            self._side_page.setVisible(False)

    @Slot(int)
    def _on_tab_changed(self, index: int) -> None:
        tabs = self.sender()
        # Tab widgets emit while they are destroyed; by then the window has shut down.
        if self._closing:
            return
        if isinstance(tabs, QTabWidget) and index >= 0:
            self.controller.refresh_view(tabs.widget(index))
