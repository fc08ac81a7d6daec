"""View › Presentation (F11): the view in front fills the window, its plots 1.6× larger.

For a projector: the parameter dock, the tour, the tab rows and the Train panel fold away,
fonts, lines and markers grow by :data:`~gui.kit.presentation.PRESENTATION_SCALE`, and exports
made meanwhile keep that look. Esc or F11 returns, with every panel as it was.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Slot

from gui.kit.presentation import (
    PRESENTATION_SCALE,
    ScalableLayoutWidget,
    restore_plot_items,
    scale_plot_items,
)

__all__ = ["Presentation"]


class Presentation(QObject):
    """The presentation mode of one main window; the View menu's checkable action
    ``presentation`` (F11) calls :meth:`set_active`."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self._window = window
        self._active = False
        self._saved: list[tuple[Any, bool]] = []  # (widget, was hidden)
        self._side_by_side = False

    def is_active(self) -> bool:
        """Whether the window is in presentation mode."""
        return self._active

    @Slot(bool)
    def set_active(self, active: bool) -> None:
        """Enter (``True``) or leave presentation mode, and check the menu action to match."""
        action = self._window.menu_actions["presentation"]
        if action.isChecked() != active:
            action.setChecked(active)  # comes back here through toggled
            return
        if active == self._active:
            return
        self._active = active
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
        for signal in self._redraws():
            signal.connect(self._rescale_shown)

    def _leave(self) -> None:
        for signal in self._redraws():
            signal.disconnect(self._rescale_shown)
        for widget in self._layout_widgets():
            restore_plot_items(widget.scene())
            widget.set_scale(1.0)
        saved, self._saved = self._saved, []
        for widget, hidden in saved:
            widget.setHidden(hidden)
        if self._side_by_side:
            self._window.menu_actions["side"].setChecked(True)

    def _redraws(self) -> list[Any]:
        """Signals after which a view may have drawn curves with its own pens: a push of
        results, or a view brought to the front (and caught up)."""
        w = self._window
        return [w.controller.resultsShown, w.train_tab.controller.resultsShown,
                w.mode_tabs.currentChanged, w.view_tabs.tabs.currentChanged,
                w.train_tab.view_tabs.currentChanged]

    def _rescale_shown(self, *_signal_args: object) -> None:
        # New items and re-set pens are at their normal size: enlarge what is on screen.
        for widget in self._layout_widgets():
            if widget.isVisible():
                scale_plot_items(widget.scene(), PRESENTATION_SCALE)
