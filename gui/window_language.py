"""View > Language: the menu of UI languages and switching to one at run time."""

from __future__ import annotations

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QMenu

from gui.kit import i18n
from gui.kit.settings import Settings

__all__ = ["LanguageMenu"]


class LanguageMenu(QObject):
    """A submenu with one checkable entry per language; choosing one switches and remembers it.

    The entries are the languages' own names, so they are never translated; the menu's title
    is set by the window's re-translation.

    Parameters
    ----------
    parent_menu
        The menu the submenu is added to.
    settings
        Where the choice is remembered (``ui/language``).
    """

    def __init__(self, parent_menu: QMenu, settings: Settings) -> None:
        super().__init__(parent_menu)
        self._settings = settings
        self.menu = parent_menu.addMenu("")
        self.menu.setObjectName("languageMenu")
        # Exclusive: exactly one language is checked.
        self.group = QActionGroup(self)
        self.group.setExclusive(True)
        self.group.triggered.connect(lambda action: self.set_language(str(action.data())))
        self.actions: dict[str, QAction] = {}
        for code, name in i18n.LANGUAGES.items():
            action = self.group.addAction(name)
            action.setCheckable(True)
            action.setData(code)
            self.actions[code] = action
        self.menu.addActions(list(self.actions.values()))
        self._check_current()

    def set_language(self, code: str) -> bool:
        """Switch the UI to ``code`` (a key of :data:`gui.kit.i18n.LANGUAGES`) and remember it."""
        if not i18n.set_language(code):
            self._check_current()
            return False
        self._settings.set("ui/language", code)
        self._check_current()
        return True

    def _check_current(self) -> None:
        action = self.actions.get(i18n.current_language())
        if action is not None:
            # No QSignalBlocker here: the group keeps itself exclusive through the action's
            # signals, and blocking them left the previous language checked as well. The
            # switch itself listens to ``triggered``, which setChecked does not emit.
            action.setChecked(True)
