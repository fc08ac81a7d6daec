"""Plots ignore the window's focus changes after the first activation (gui/kit/activation.py)."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QRectF
from PySide6.QtWidgets import QGraphicsWidget, QVBoxLayout, QWidget

from gui.kit.activation import ignore_window_activation


class _CountingWidget(QGraphicsWidget):
    def __init__(self) -> None:
        super().__init__()
        self.activations: list[QEvent.Type] = []
        self.setGeometry(QRectF(0, 0, 50, 50))

    def event(self, event: QEvent) -> bool:  # Qt override
        if event.type() in (QEvent.Type.WindowActivate, QEvent.Type.WindowDeactivate):
            self.activations.append(event.type())
        return super().event(event)


def _window_with_a_plot(qtbot) -> tuple[QWidget, pg.GraphicsView, _CountingWidget]:
    window = QWidget()
    qtbot.addWidget(window)
    view = pg.GraphicsView()
    QVBoxLayout(window).addWidget(view)
    item = _CountingWidget()
    view.scene().addItem(item)
    return window, view, item


def test_a_scene_item_sees_the_first_activation_and_no_later_focus_change(qtbot) -> None:
    window, view, item = _window_with_a_plot(qtbot)
    ignore_window_activation(window)
    window.show()
    for kind in (QEvent.Type.WindowActivate, QEvent.Type.WindowDeactivate,
                 QEvent.Type.WindowActivate, QEvent.Type.WindowDeactivate):
        QCoreApplication.sendEvent(window, QEvent(kind))
    # Shown, the window may already have been activated once (the platform's own event).
    assert item.activations == [QEvent.Type.WindowActivate]
    assert view.scene().isActive()


def test_without_the_filter_the_item_sees_every_focus_change(qtbot) -> None:
    window, _view, item = _window_with_a_plot(qtbot)
    window.show()
    for kind in (QEvent.Type.WindowActivate, QEvent.Type.WindowDeactivate):
        QCoreApplication.sendEvent(window, QEvent(kind))
    assert QEvent.Type.WindowDeactivate in item.activations
