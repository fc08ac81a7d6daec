"""The window's menu actions, declared once: the table builds the menus and re-translates them.

Each :class:`ActionSpec` row gives an action's name, its text and status tip (marked for
translation where they are declared), its shortcut and the window attribute path of the slot it
triggers. :func:`build_menu` creates the actions of one menu from its rows and
:func:`retranslate_actions` sets their texts again after a language change, from the same rows,
so a new command is one row plus its slot.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from typing import Any

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from gui.kit.i18n import QT_TRANSLATE_NOOP, translate

__all__ = [
    "ACTION_CONTEXT",
    "FILE_MENU",
    "HELP_MENU",
    "MENU_TITLES",
    "SEPARATOR",
    "VIEW_MENU",
    "ActionSpec",
    "build_menu",
    "retranslate_actions",
]

# Translation context of every text in this table (the catalogue's existing entries).
ACTION_CONTEXT = "MainWindow"


@dataclasses.dataclass(frozen=True)
class ActionSpec:
    """One menu command.

    Attributes
    ----------
    name
        Key of the action in the window's ``menu_actions`` dictionary.
    text, status_tip
        Menu text with its ``&`` mnemonic and status-bar tip ("" for none), in English, marked
        with ``QT_TRANSLATE_NOOP`` in :data:`ACTION_CONTEXT`.
    slot
        Dotted path from the window to the callable run (``"close"``, ``"files.ask_open_session"``).
    shortcut
        A portable key string (``"Ctrl+E"``), a ``QKeySequence.StandardKey`` or ``None``.
    checkable
        The action toggles and ``slot`` receives the new state; otherwise it is called without
        arguments.
    """

    name: str
    text: str
    slot: str
    shortcut: str | QKeySequence.StandardKey | None = None
    status_tip: str = ""
    checkable: bool = False


# A separator between two groups of actions.
SEPARATOR = None

# Menu name -> title (``&File``…), marked for translation.
MENU_TITLES: dict[str, str] = {
    "file": QT_TRANSLATE_NOOP("MainWindow", "&File"),
    "view": QT_TRANSLATE_NOOP("MainWindow", "&View"),
    "help": QT_TRANSLATE_NOOP("MainWindow", "&Help"),
}

FILE_MENU: tuple[ActionSpec | None, ...] = (
    ActionSpec("open", QT_TRANSLATE_NOOP("MainWindow", "&Open session…"),
               "files.ask_open_session", QKeySequence.StandardKey.Open),
    ActionSpec("save", QT_TRANSLATE_NOOP("MainWindow", "&Save session"),
               "files.save_session", QKeySequence.StandardKey.Save),
    ActionSpec("save_as", QT_TRANSLATE_NOOP("MainWindow", "Save session &as…"),
               "files.ask_save_session_as", "Ctrl+Alt+S"),
    SEPARATOR,
    ActionSpec("open_tensors", QT_TRANSLATE_NOOP("MainWindow", "Open &tensors…"),
               "heads.ask_open_tensors", "Ctrl+Shift+O",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "Open a model's q and k (.npz, .safetensors) and diagnose "
                   "every head")),
    ActionSpec("open_model", QT_TRANSLATE_NOOP("MainWindow", "Open &model…"),
               "heads.ask_open_model", "Ctrl+M",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "Run a Hugging Face model folder or a GGUF file on a text and "
                   "diagnose every head (no PyTorch needed)")),
    ActionSpec("save_capture", QT_TRANSLATE_NOOP("MainWindow", "Save capt&ured tensors…"),
               "heads.ask_save_capture",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "Write the q and k captured from a model as .npz or "
                   ".safetensors")),
    SEPARATOR,
    ActionSpec("export_png", QT_TRANSLATE_NOOP("MainWindow", "Export current view as &PNG…"),
               "files.ask_export_png", "Ctrl+E"),
    ActionSpec("export_svg", QT_TRANSLATE_NOOP("MainWindow", "Export current view as S&VG…"),
               "files.ask_export_svg", "Ctrl+Shift+E"),
    ActionSpec("export_pdf", QT_TRANSLATE_NOOP("MainWindow", "Export current view as P&DF…"),
               "files.ask_export_pdf", "Ctrl+Alt+E",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "A one-page vector PDF of the view in front, for papers")),
    ActionSpec("export_all", QT_TRANSLATE_NOOP("MainWindow", "Export &all…"),
               "files.ask_export_all", "Ctrl+Shift+A",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "PNG, SVG, PDF and CSV of every view plus the session, into "
                   "one folder")),
    ActionSpec("copy", QT_TRANSLATE_NOOP("MainWindow", "&Copy current plot"),
               "files.copy_current", "Ctrl+Shift+C"),
    SEPARATOR,
    ActionSpec("quit", QT_TRANSLATE_NOOP("MainWindow", "&Quit"), "close", "Ctrl+Q"),
)

# The View menu's fixed head; the window appends one action per view, the parameter dock's
# toggle and the language menu.
VIEW_MENU: tuple[ActionSpec | None, ...] = (
    ActionSpec("reset", QT_TRANSLATE_NOOP("MainWindow", "&Reset view"),
               "reset_current_view", "Ctrl+R"),
    ActionSpec("side", QT_TRANSLATE_NOOP("MainWindow", "Show current view &side by side"),
               "view_tabs.set_side_by_side", "Ctrl+Shift+S", checkable=True),
    ActionSpec("cancel", QT_TRANSLATE_NOOP("MainWindow", "&Cancel computation"),
               "on_escape", "Esc"),
    ActionSpec("presentation", QT_TRANSLATE_NOOP("MainWindow", "&Presentation"),
               "presentation.set_active", "F11", checkable=True,
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "The view in front fills the window with 1.6× larger text and "
                   "lines, for a projector; Esc or F11 returns")),
    ActionSpec("back_to_random", QT_TRANSLATE_NOOP("MainWindow", "Back to &random q, k"),
               "heads.back_to_random",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "The Explorer shows a real head (picked in the Heads tab): "
                   "show q and k drawn from the parameters again")),
    ActionSpec("pin", QT_TRANSLATE_NOOP("MainWindow", "&Pin curves"),
               "pins.pin_current", "Ctrl+K",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "Keep the current curves of this view as a faded reference; "
                   "the live curves draw over them when a parameter changes")),
    ActionSpec("clear_pins", QT_TRANSLATE_NOOP("MainWindow", "C&lear pins"),
               "pins.clear_current", "Ctrl+Shift+K",
               status_tip=QT_TRANSLATE_NOOP("MainWindow", "Remove this view's pinned curves")),
)

# The Help menu after the guided tour's action (which the tour installs and translates).
HELP_MENU: tuple[ActionSpec | None, ...] = (
    ActionSpec("open_sample", QT_TRANSLATE_NOOP("MainWindow", "Open &sample tensors"),
               "heads.open_sample",
               status_tip=QT_TRANSLATE_NOOP(
                   "MainWindow", "Heads of the mini-trainer's models, shipped with the program")),
    ActionSpec("about", QT_TRANSLATE_NOOP("MainWindow", "&About"), "show_about"),
)


def build_menu(menu: QMenu, specs: Sequence[ActionSpec | None], owner: Any,
               actions: dict[str, QAction]) -> None:
    """Add the actions of ``specs`` to ``menu`` (owned by ``owner``) and record them by name.

    Texts are set by :func:`retranslate_actions`; ``SEPARATOR`` rows add a separator.
    """
    for spec in specs:
        if spec is None:
            menu.addSeparator()
            continue
        action = QAction(owner)
        if spec.shortcut is not None:
            action.setShortcut(QKeySequence(spec.shortcut))
        slot = operator.attrgetter(spec.slot)(owner)
        if spec.checkable:
            action.setCheckable(True)
            action.toggled.connect(slot)
        else:
            action.triggered.connect(slot)
        menu.addAction(action)
        actions[spec.name] = action


def retranslate_actions(specs: Sequence[ActionSpec | None],
                        actions: dict[str, QAction]) -> None:
    """Set the text and status tip of every action of ``specs`` in the current language."""
    for spec in specs:
        if spec is None:
            continue
        action = actions[spec.name]
        action.setText(translate(ACTION_CONTEXT, spec.text))
        if spec.status_tip:
            action.setStatusTip(translate(ACTION_CONTEXT, spec.status_tip))
