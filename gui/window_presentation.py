"""View › Presentation (F11): the view in front fills the window, its plots 1.6× larger.

For a projector: the parameter dock, the tour, the tab rows and the Train panel fold away,
fonts, lines and markers grow by :data:`~gui.kit.presentation.PRESENTATION_SCALE`, and exports
made meanwhile keep that look. Esc or F11 returns, with every panel as it was.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, QTimer, Slot
from PySide6.QtGui import QAction, QKeySequence

from gui.kit.i18n import translate
from gui.kit.presentation import (
    PRESENTATION_SCALE,
    ScalableLayoutWidget,
    restore_plot_items,
    scale_plot_items,
)

__all__ = ["Presentation"]

#: How often (ms) curves redrawn while presenting are enlarged again.
_RESCALE_MS = 250


class Presentation(QObject):
    """The presentation mode of one main window, with its checkable action (F11)."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self._window = window
        self._saved: list[tuple[Any, bool]] = []  # (widget, was hidden)
        self._side_by_side = False
        self.action = QAction(window)
        self.action.setObjectName("presentationAction")
        self.action.setCheckable(True)
        self.action.setShortcut(QKeySequence("F11"))
        self.action.toggled.connect(self.set_active)
        self._timer = QTimer(self)
        self._timer.setInterval(_RESCALE_MS)
        self._timer.timeout.connect(self._rescale_shown)
        self.retranslate_ui()

    def retranslate_ui(self) -> None:
        """Name the action in the current language."""
        self.action.setText(translate("MainWindow", "&Presentation"))
        self.action.setStatusTip(translate(
            "MainWindow", "The view in front fills the window with 1.6× larger text and lines, "
            "for a projector; Esc or F11 returns"))

    def is_active(self) -> bool:
        """Whether the window is in presentation mode."""
        return self.action.isChecked()

    @Slot(bool)
    def set_active(self, active: bool) -> None:
        """Enter (``True``) or leave presentation mode."""
        if self.action.isChecked() != active:
            self.action.setChecked(active)  # comes back here through toggled
            return
        if active == bool(self._saved):
            return
        if active:
            self._enter()
        else:
            self._leave()

    # -- internals ----------------------------------------------------------------------------
    def _folding(self) -> list[Any]:
        """Everything around the plots that folds away."""
        w = self._window
        return [w.parameter_dock, w.tour_dock, w.mode_tabs.tabBar(), w.view_tabs.tabs.bar,
                w.view_tabs.side_tabs.bar, w.train_tab.view_tabs.bar, w.train_tab.panel_area(),
                w.statusBar()]

    def _layout_widgets(self) -> list[ScalableLayoutWidget]:
        return self._window.findChildren(ScalableLayoutWidget)

    def _enter(self) -> None:
        w = self._window
        side = w.menu_actions["side"]
        self._side_by_side = side.isChecked()
        if self._side_by_side:
            side.setChecked(False)  # one view, the one in front
        # Each widget's own hidden flag: isVisible() is also False for a widget on a page
        # behind another tab, and restoring that would hide it for good.
        self._saved = [(widget, widget.isHidden()) for widget in self._folding()]
        for widget, _hidden in self._saved:
            widget.setHidden(True)
        for widget in self._layout_widgets():
            widget.set_scale(PRESENTATION_SCALE)
            scale_plot_items(widget.scene(), PRESENTATION_SCALE)
        self._timer.start()

    def _leave(self) -> None:
        self._timer.stop()
        for widget in self._layout_widgets():
            restore_plot_items(widget.scene())
            widget.set_scale(1.0)
        saved, self._saved = self._saved, []
        for widget, hidden in saved:
            widget.setHidden(hidden)
        if self._side_by_side:
            self._window.menu_actions["side"].setChecked(True)

    @Slot()
    def _rescale_shown(self) -> None:
        # Views redraw their curves with their own pens; enlarge what is on screen again.
        for widget in self._layout_widgets():
            if widget.isVisible():
                scale_plot_items(widget.scene(), PRESENTATION_SCALE)
