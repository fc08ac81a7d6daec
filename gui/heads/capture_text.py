"""The capture dialog's text box, bounded against huge pastes, and the machine's memory (the
memory limit's largest value)."""

from __future__ import annotations

import os

from PySide6.QtCore import QMimeData, Signal
from PySide6.QtWidgets import QPlainTextEdit

__all__ = ["MAX_TEXT_CHARS", "BoundedTextEdit", "physical_memory_gib"]

#: The most characters the text box holds: far more than the dialog's Max tokens of any text,
#: while the 8 MB a careless paste brings froze the window for seconds in the box's layout.
MAX_TEXT_CHARS = 1 << 18


class BoundedTextEdit(QPlainTextEdit):
    """A text box that keeps at most :data:`MAX_TEXT_CHARS` characters of a paste or drop.

    Signals
    -------
    cut(int)
        A pasted or dropped text was cut; the characters it had.
    """

    cut = Signal(int)

    def insertFromMimeData(self, source: QMimeData) -> None:  # Qt override
        """Insert a paste or drop, cut to what the box still holds."""
        text = source.text() if source.hasText() else ""
        room = MAX_TEXT_CHARS - len(self.toPlainText()) + len(self.textCursor().selectedText())
        if len(text) <= room:
            super().insertFromMimeData(source)
            return
        self.textCursor().insertText(text[: max(room, 0)])
        self.cut.emit(len(text))


def physical_memory_gib() -> float:
    """The machine's memory in GiB (64 where the system does not say), the memory limit's
    largest value."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (AttributeError, ValueError, OSError):
        return 64.0
