"""View > go to: one shortcut per explorer view (Ctrl+1…9) and per top-level tab (Alt+1…4)."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

__all__ = ["GotoActions"]


class GotoActions:
    """The go-to actions of ``window`` (a :class:`~gui.main_window.MainWindow`), added to
    ``menu``: first the explorer views, then the top-level tabs, each group after a separator.

    Attributes
    ----------
    view_actions
        One per explorer view, in the window's order; data: the view's key.
    mode_actions
        One per top-level tab (Explorer, Train, Heads); data: the tab's index.
    """

    def __init__(self, window: Any, menu: QMenu) -> None:
        self._window = window
        menu.addSeparator()
        self.view_actions: list[QAction] = []
        for index, view in enumerate(window.views):
            action = QAction(window)
            if index < 9:
                action.setShortcut(f"Ctrl+{index + 1}")
            action.setData(view.key)
            action.triggered.connect(lambda _checked=False, key=view.key: window.show_view(key))
            self.view_actions.append(action)
        menu.addActions(self.view_actions)
        menu.addSeparator()
        self.mode_actions: list[QAction] = []
        for index in range(window.mode_tabs.count()):
            action = QAction(window)
            action.setShortcut(f"Alt+{index + 1}")
            action.setData(index)
            action.triggered.connect(
                lambda _checked=False, index=index: window.mode_tabs.setCurrentIndex(index))
            self.mode_actions.append(action)
        menu.addActions(self.mode_actions)

    def retranslate_ui(self) -> None:
        """Name each action after its view or tab (call after the tabs are re-translated)."""
        for action, view in zip(self.view_actions, self._window.views, strict=True):
            action.setText(view.title())
        for action in self.mode_actions:
            action.setText(self._window.mode_tabs.tabText(int(action.data())))
