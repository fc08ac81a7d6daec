"""The window's top-level tabs (Explorer, Train, Heads) and the parameter dock that follows them.

The explorer's parameter dock means nothing on the other tabs: it is hidden there and comes
back (if it was open) on returning to the explorer.
"""

from __future__ import annotations

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QDockWidget, QTabWidget, QWidget

from gui.kit.i18n import translate

__all__ = ["ModeTabs"]


class ModeTabs(QTabWidget):
    """Top-level tabs whose first page is the explorer (the one the parameter dock serves)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("modeTabs")
        self._titles: list[tuple[QWidget, str]] = []
        self._dock: QDockWidget | None = None
        self._dock_was_visible = True
        self._last_index = 0
        self.currentChanged.connect(self._on_changed)

    def add_page(self, page: QWidget, title: str) -> None:
        """Add ``page`` titled ``title`` (English, marked in the ``MainWindow`` context)."""
        self._titles.append((page, title))
        self.addTab(page, translate("MainWindow", title))

    def follow_dock(self, dock: QDockWidget) -> None:
        """Hide ``dock`` on every page but the first, restoring it there."""
        self._dock = dock

    def retranslate_ui(self) -> None:
        """Re-title every page in the current language."""
        for page, title in self._titles:
            self.setTabText(self.indexOf(page), translate("MainWindow", title))

    def restore_dock(self) -> None:
        """Show the dock again if it was hidden only because another page is in front (the
        window is closing and saves its state)."""
        if self._dock is not None and self.currentIndex() != 0 and self._dock_was_visible:
            self._dock.show()

    @Slot(int)
    def _on_changed(self, index: int) -> None:
        dock = self._dock
        if dock is None:
            return
        if index != 0:
            if self._last_index == 0:
                self._dock_was_visible = dock.isVisible()
            dock.hide()
        elif self._dock_was_visible:
            dock.show()
        self._last_index = index
