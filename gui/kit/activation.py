"""Keep plots from repainting when their window loses or regains focus.

Every pyqtgraph axis, label and view box is a ``QGraphicsWidget``, which repaints itself on each
window (de)activation although nothing it draws depends on it. Opening a dialog over the Heads
tab would thus repaint its grid and maps in one event, after the dialog's own first paint — a
pause the user sees each time a dialog or menu window takes the focus.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QWidget

__all__ = ["ActivationFilter", "ignore_window_activation"]

_ACTIVATION = (QEvent.Type.WindowActivate, QEvent.Type.WindowDeactivate)


class ActivationFilter(QObject):
    """Pass each watched widget its first window activation, then drop every later
    (de)activation: the scene stays active (its items can take the keyboard focus) and is
    never repainted for a focus change alone."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._activated: set[int] = set()

    def watch(self, widget: QWidget) -> None:
        """Filter ``widget``'s activation events."""
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """True (drop) for a (de)activation after the first activation of ``watched``."""
        if event.type() not in _ACTIVATION:
            return False
        key = id(watched)
        if key in self._activated:
            return True
        if event.type() == QEvent.Type.WindowActivate:
            self._activated.add(key)
        return False


def ignore_window_activation(root: QWidget) -> ActivationFilter:
    """Attach one :class:`ActivationFilter` to every pyqtgraph view inside ``root`` (and to
    its viewport, through which the view hands the events to its scene)."""
    blocker = ActivationFilter(root)
    for view in root.findChildren(pg.GraphicsView):
        blocker.watch(view)
        blocker.watch(view.viewport())
    return blocker
