"""The explorer's status bar: what the computation is doing, its progress and a Cancel button."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QStatusBar

from gui.kit.i18n import translate

__all__ = ["StatusLine"]


class StatusLine(QObject):
    """The status bar's label, progress bar and Cancel button, following an explorer controller.

    Parameters
    ----------
    bar
        The window's status bar (the widgets are added to it).
    controller
        The :class:`~gui.explorer.controller.ExplorerController` whose state is shown.
    """

    def __init__(self, bar: QStatusBar, controller: Any) -> None:
        super().__init__(bar)
        self.controller = controller
        self.label = QLabel()
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.setVisible(False)
        self.cancel_button = QPushButton()
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self.cancel)
        bar.addWidget(self.label, 1)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel_button)
        controller.progressChanged.connect(self._on_progress_changed)
        controller.busyChanged.connect(self._on_busy_changed)
        controller.errorOccurred.connect(self._on_error)
        controller.resultsShown.connect(self._on_results_shown)

    def show_message(self, text: str) -> None:
        """Show ``text`` (already translated) until the next state change."""
        self.label.setText(text)

    def retranslate_ui(self) -> None:
        """Set the widgets' texts and re-state the status in the current language."""
        self.progress.setFormat(translate("MainWindow", "sweep %v/%m"))
        self.cancel_button.setText(translate("MainWindow", "Cancel"))
        self.cancel_button.setToolTip(translate("MainWindow", "Stop the running computation (Esc)"))
        self._restate()

    def _restate(self) -> None:
        """Re-state the status line in the current language (from the controller's state)."""
        controller = self.controller
        if controller.is_busy():
            self.label.setText(translate("MainWindow", "Computing…"))
        elif controller.results() is not None and not controller.last_error():
            self._on_results_shown(controller.results())
        elif not controller.last_error():
            self.label.setText(translate("MainWindow", "Ready"))

    @Slot()
    def cancel(self) -> None:
        """Cancel the running computation (Esc, the Cancel button); the results so far stay."""
        if self.controller.is_busy():
            self.controller.cancel()
            self.label.setText(
                translate("MainWindow", "Cancelled; showing the results computed so far"))

    @Slot(int, int)
    def _on_progress_changed(self, done: int, total: int) -> None:
        if total <= 0:
            self.progress.setVisible(False)
            return
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.progress.setVisible(done < total)

    @Slot(bool)
    def _on_busy_changed(self, busy: bool) -> None:
        self.cancel_button.setVisible(busy)
        if busy:
            self.label.setText(translate("MainWindow", "Computing…"))
            return
        self.progress.setVisible(False)
        # The last push of a job can arrive while it still counts as busy (a σ change reuses
        # the sweep, so no later push follows): restate the results here or "Computing…"
        # stayed with the process idle. A "Cancelled" or error message is left as it is.
        if self.label.text() == translate("MainWindow", "Computing…"):
            self._restate()

    @Slot(str)
    def _on_error(self, message: str) -> None:
        self.label.setText(translate("MainWindow", "Error: {0}").format(message))
        self.label.setToolTip(message)

    @Slot(object)
    def _on_results_shown(self, results: Any) -> None:
        if not self.controller.is_busy() and not self.controller.last_error():
            config = results.config
            self.label.setText(
                translate("MainWindow", "n = {0}, d_k = {1}, h = {2}, rule {3}").format(
                    config.n_tokens, config.d_k, config.heads, config.rule.label))
