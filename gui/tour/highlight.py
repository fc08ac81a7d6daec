"""The frame the tour lays over the view a step brings forward."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFrame, QWidget

from gui.kit.style import HIGHLIGHT_COLOR

__all__ = ["HIGHLIGHT_MS", "Highlight"]

#: How long the frame around the step's view stays visible.
HIGHLIGHT_MS = 2000


class Highlight(QFrame):
    """A frame in the highlight colour (absent from every rule colour) laid over a widget for a
    moment; ignores the mouse."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("tourHighlight")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setStyleSheet(
            f"#tourHighlight {{ border: 4px solid {HIGHLIGHT_COLOR}; background: transparent; }}"
        )
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)

    def flash(self, target: QWidget, ms: int = HIGHLIGHT_MS) -> None:
        """Show the frame over ``target`` for ``ms`` milliseconds."""
        if self.parentWidget() is not target:
            self.setParent(target)
        self.setGeometry(target.rect())
        self.show()
        self.raise_()
        self._timer.start(ms)

    def stop(self) -> None:
        """Hide at once."""
        self._timer.stop()
        self.hide()
