"""View › Pin curves / Clear pins: keep the current curves of a view as a faded reference.

Pin, change a parameter, and the live curves draw over the pinned ones. The label names what
each pin was computed with; pins are saved in the session and shown in every export.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Slot

from gui.kit.i18n import translate
from gui.kit.pins import Pin, PinBoard, capture_pin

__all__ = ["WindowPins"]


class WindowPins(QObject):
    """The pins of one main window's explorer and Train views; the View menu's ``pin`` and
    ``clear_pins`` actions call :meth:`pin_current` and :meth:`clear_current`."""

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self._window = window
        self._views = {view.key: view for view in [*window.views, *window.train_tab.views]}
        self.board = PinBoard(self._views)

    def retranslate_ui(self) -> None:
        """Re-word the pins' labels in the current language (the View menu names the actions)."""
        self.board.relabel()

    @Slot()
    def pin_current(self) -> Pin | None:
        """Pin the curves of the view in front; None (and a message) when it has none."""
        window = self._window
        view = window.current_view()
        if view.key not in self._views:  # the Heads tab
            window.status.show_message(translate("MainWindow", "This tab has no curves to pin."))
            return None
        pin = capture_pin(view, self._label(view.key))
        if pin is None:
            window.status.show_message(translate(
                "MainWindow", "{0} draws no curves to pin.").format(view.title()))
            return None
        try:
            self.board.add(pin)
        except ValueError as exc:
            window.status.show_message(str(exc))
            return None
        window.status.show_message(translate("MainWindow", "Pinned: {0}").format(pin.label))
        return pin

    @Slot()
    def clear_current(self) -> None:
        """Remove the pins of the view in front."""
        self.board.clear(self._window.current_view().key)

    def pins(self) -> tuple[Pin, ...]:
        """Every view's pins (for the session)."""
        return self.board.pins()

    def set_pins(self, pins: tuple[Pin, ...]) -> None:
        """Show the pins of a loaded session (and no others)."""
        self.board.set_pins(pins)

    def _label(self, key: str) -> str:
        """The parameters the view's curves were computed with, in a few words."""
        window = self._window
        if key.startswith("train_"):
            try:
                c = window.train_tab.panel.config()
            except ValueError:
                return translate("MainWindow", "training run")
            return translate("MainWindow", "d_k = {0}, n = {1}, lr {2:g}, batch {3}, {4} steps"
                             ).format(c.d_k, c.n, c.lr, c.batch, c.steps)
        c = window.controller.results().config
        return translate("MainWindow", "n = {0}, d_k = {1}, σ = {2:g}, ρ = {3:g}, rule {4}").format(
            c.n_tokens, c.d_k, c.init_std, c.rho, c.rule.label)
