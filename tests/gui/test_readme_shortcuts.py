"""The README's shortcut table lists every keyboard shortcut the window has."""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QAbstractButton

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _readme_shortcut_keys() -> set[str]:
    section = README[README.index("## Keyboard shortcuts"):]
    section = section[: section.index("\n## ")]
    keys: set[str] = set()
    for row in re.findall(r"^\| ([^|]+) \|", section, re.MULTILINE):
        for part in re.split(r" / | or ", row.strip()):
            ranged = re.fullmatch(r"Ctrl\+(\d) … Ctrl\+(\d)", part)
            if ranged:
                keys.update(f"Ctrl+{i}" for i in range(int(ranged[1]), int(ranged[2]) + 1))
            else:
                keys.add(part)
    return keys


def test_readme_lists_every_window_shortcut(window):
    shortcuts: set[str] = set()
    for action in window.findChildren(QAction):
        for sequence in action.shortcuts():
            shortcuts.add(sequence.toString(QKeySequence.SequenceFormat.PortableText))
    for button in window.findChildren(QAbstractButton):
        shortcuts.add(button.shortcut().toString(QKeySequence.SequenceFormat.PortableText))
    shortcuts.discard("")
    assert {"Ctrl+Shift+S", "Ctrl+Alt+S", "Ctrl+T"} <= shortcuts  # the search found them
    missing = sorted(shortcuts - _readme_shortcut_keys())
    assert not missing, f"README's shortcut table lacks {missing}"
