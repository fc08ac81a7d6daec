"""The guided tour in the main window: a dockable panel and its Help menu action.

The panel (:mod:`gui.tour.panel`) walks through the interview questions step by step; the
content is read by :mod:`gui.tour.content`; the window is steered only through
:class:`~gui.tour.host.TourHost`.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMenu

from gui.kit.i18n import Retranslating, translate
from gui.tour.panel import TourPanel

__all__ = ["MIN_CENTRAL_WIDTH", "install_tour"]


class _TourDock(Retranslating, QDockWidget):
    """The dock holding the tour panel; keeps its title and action text translated."""

    def __init__(self, panel: TourPanel, action: QAction, parent: QMainWindow) -> None:
        super().__init__(parent)
        self.setObjectName("tourDock")
        self.panel = panel
        self._action = action
        self.setWidget(panel)
        self.retranslate_ui()

    def retranslate_ui(self) -> None:
        """Dock title and menu entry in the current language."""
        self.setWindowTitle(translate("TourPanel", "Guided tour"))
        self._action.setText(translate("TourPanel", "&Guided tour"))
        self._action.setStatusTip(
            translate("TourPanel", "Step through the interview questions with live experiments"))

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt override
        """The tour ends: the settings its steps changed outside the explorer come back."""
        self.panel.end_tour()
        super().closeEvent(event)


class _TourLifetime(QObject):
    """Stops the panel's claim thread with the window: destroying a running QThread aborts.

    On the window's close the evaluation is cancelled without waiting (the window stays
    responsive); before the window is deleted (``deleteLater``) the thread is waited for.
    """

    def __init__(self, panel: TourPanel, parent: QObject) -> None:
        super().__init__(parent)
        self._panel = panel

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """Watch the window's close and deferred deletion; never consume the event."""
        kind = event.type()
        if kind == QEvent.Type.Close:
            self._panel.begin_shutdown()
        elif kind == QEvent.Type.DeferredDelete:
            self._panel.shutdown()
        return False


def install_tour(window: QMainWindow, menu: QMenu) -> tuple[QDockWidget, QAction]:
    """Add the hidden "Guided tour" dock to ``window`` and its action (F1, Ctrl+G) to ``menu``.

    ``window`` must also be a :class:`~gui.tour.host.TourHost` (the steps steer it through
    that interface only). Triggering the action shows the dock and applies the current step;
    *Finish* on the last step or the dock's close button ends the tour (the Train tab's
    settings come back); the panel's claim thread is stopped when the window closes or is
    deleted.
    """
    action = QAction(window)
    action.setShortcuts([QKeySequence("F1"), QKeySequence("Ctrl+G")])
    panel = TourPanel(window)  # type: ignore[arg-type]  # MainWindow is a TourHost
    dock = _TourDock(panel, action, window)
    dock.setMinimumWidth(340)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    dock.hide()

    def open_tour() -> None:
        if dock.isHidden():
            _place_dock(window, dock)
        dock.show()
        dock.raise_()
        panel.start()

    action.triggered.connect(open_tour)
    panel.finished.connect(dock.close)
    menu.addAction(action)
    window.installEventFilter(_TourLifetime(panel, dock))
    return dock, action


#: Narrowest central area (px) left beside both docks; below it the tour shares the left dock
#: area with the parameters (as tabs) instead of taking a column of its own.
MIN_CENTRAL_WIDTH = 700


def _place_dock(window: QMainWindow, dock: QDockWidget) -> None:
    """Put the tour beside the views if the window is wide enough, else tab it with the
    parameter dock: at 1024×768 two dock columns would leave ~350 px for the views and push
    the window wider than the screen."""
    if dock.isFloating():
        return
    parameters = window.findChild(QDockWidget, "parameterDock")
    if parameters is None or parameters.isFloating():
        return
    needed = (parameters.minimumSizeHint().width() + dock.minimumWidth()
              + MIN_CENTRAL_WIDTH)
    area = window.dockWidgetArea(dock)
    if window.width() < needed:
        if dock not in window.tabifiedDockWidgets(parameters):
            window.tabifyDockWidget(parameters, dock)
    elif area != Qt.DockWidgetArea.RightDockWidgetArea:
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
