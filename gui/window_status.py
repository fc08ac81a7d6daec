"""The window's status bar: what the tab in front is doing.

For the Explorer, the state of its computation, its progress and a Cancel button; the Train
and Heads tabs report their own state (:meth:`StatusLine.set_tab_text`), so the bar never shows
the explorer's parameters or sweep progress while another tab is in front.
"""

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

    #: The tab whose state the bar shows while it is in front (the others: set_tab_text).
    EXPLORER = "explorer"

    def __init__(self, bar: QStatusBar, controller: Any) -> None:
        super().__init__(bar)
        self.controller = controller
        self._tab = self.EXPLORER
        self._tab_texts: dict[str, str] = {}
        self._tab_cancels: dict[str, Any] = {}  # what Esc calls while the tab is in front
        self._explorer_text, self._error_shown = "", False
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

    def follow_tabs(self, mode_tabs: Any, tabs: dict[str, tuple[Any, Any]]) -> None:
        """Show the state of the tab in front of ``mode_tabs``: ``tabs`` maps a key to a tab
        (with ``statusChanged(str)`` and ``status_line()``) and what Esc calls while it is in
        front; any other page is the explorer's."""
        pages = {page: key for key, (page, _cancel) in tabs.items()}
        for key, (page, cancel) in tabs.items():
            page.statusChanged.connect(lambda text, key=key: self.set_tab_text(key, text))
            self.set_tab_text(key, page.status_line())
            self._tab_cancels[key] = cancel
        mode_tabs.currentChanged.connect(
            lambda _index: self.set_tab(pages.get(mode_tabs.currentWidget(), self.EXPLORER)))

    def show_message(self, text: str) -> None:
        """Show ``text`` (already translated) until the next state change."""
        self.label.setText(text)
        self.label.setToolTip(text)

    def set_tab(self, tab: str) -> None:
        """Show the state of ``tab`` (:data:`EXPLORER` or a key given to set_tab_text)."""
        self._tab = tab
        explorer = tab == self.EXPLORER
        if not explorer:
            self.progress.setVisible(False)
            self.cancel_button.setVisible(False)
            self.show_message(self._tab_texts.get(tab, ""))
            return
        self.cancel_button.setVisible(self.controller.is_busy())
        self._restate()

    def set_tab_text(self, tab: str, text: str) -> None:
        """The state line of ``tab`` (shown at once if it is in front)."""
        self._tab_texts[tab] = text
        if self._tab == tab:
            self.show_message(text)

    def text(self) -> str:
        """The line shown."""
        return self.label.text()

    def _explorer(self, text: str, tooltip: str | None = None) -> None:
        """The explorer's state line (shown while it is in front)."""
        self._explorer_text, self._error_shown = text, False
        if self._tab == self.EXPLORER:
            self.label.setText(text)
            self.label.setToolTip(tooltip if tooltip is not None else text)

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
            self._explorer(translate("MainWindow", "Computing…"))
        elif controller.results() is not None and not controller.last_error():
            self._on_results_shown(controller.results())
        elif not controller.last_error():
            self._explorer(translate("MainWindow", "Ready"))
        elif self._tab == self.EXPLORER:
            self._explorer(translate("MainWindow", "Error: {0}").format(controller.last_error()),
                           controller.last_error())

    @Slot()
    def cancel(self) -> None:
        """Cancel the running computation (Esc, the Cancel button); the results so far stay."""
        if self._tab != self.EXPLORER:
            cancel = self._tab_cancels.get(self._tab)
            if cancel is not None:
                cancel()
            return
        if self.controller.is_busy():
            self.controller.cancel()
            self._explorer(
                translate("MainWindow", "Cancelled; showing the results computed so far"))

    @Slot(int, int)
    def _on_progress_changed(self, done: int, total: int) -> None:
        if total <= 0:
            self.progress.setVisible(False)
            return
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.progress.setVisible(done < total and self._tab == self.EXPLORER)

    @Slot(bool)
    def _on_busy_changed(self, busy: bool) -> None:
        self.cancel_button.setVisible(busy and self._tab == self.EXPLORER)
        if busy:
            self._explorer(translate("MainWindow", "Computing…"))
            return
        self.progress.setVisible(False)
        # The last push of a job can arrive while it still counts as busy (a σ change reuses
        # the sweep, so no later push follows): restate the results here or "Computing…"
        # stayed with the process idle. A "Cancelled" message is left as it is, an error while
        # it stands (a refused edit, then an accepted one during the same job, is over).
        if self._explorer_text == translate("MainWindow", "Computing…") or (
                self._error_shown and not self.controller.last_error()):
            self._restate()

    @Slot(str)
    def _on_error(self, message: str) -> None:
        self._explorer(translate("MainWindow", "Error: {0}").format(message), message)
        self._error_shown = True

    @Slot(object)
    def _on_results_shown(self, results: Any) -> None:
        if not self.controller.is_busy() and not self.controller.last_error():
            config = results.config
            self._explorer(
                translate("MainWindow", "n = {0}, d_k = {1}, h = {2}, rule {3}").format(
                    config.n_tokens, config.d_k, config.heads, config.rule.label))
