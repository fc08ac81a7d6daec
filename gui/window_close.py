"""Closing the main window: stop every worker thread first, never freeze while waiting.

One engine call cannot be interrupted (a training step of a large model takes seconds), and
waiting for it inside ``closeEvent`` would freeze the window. :class:`WindowClose` asks every
worker to stop, waits :data:`CLOSE_WAIT_MS`, and otherwise keeps the window responsive,
disabled, saying why it has not closed yet, and closes it when the workers report that they
have stopped.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Slot
from PySide6.QtWidgets import QMainWindow

from gui.kit.i18n import translate
from gui.window_settings import save_window

__all__ = ["CLOSE_WAIT_MS", "WindowClose", "stop_workers"]

#: How long closing the window waits for the workers before it closes asynchronously.
CLOSE_WAIT_MS = 100


def worker_owners(window: QMainWindow) -> list[Any]:
    """The owners of worker threads ``window`` has built so far: training, explorer, heads,
    model (stopped in that order)."""
    parts = vars(window)
    train, heads, model = parts.get("train_tab"), parts.get("heads"), parts.get("model_view")
    owners = (train.controller if train is not None else None, parts.get("controller"),
              heads.view.controller if heads is not None else None,
              model.controller if model is not None else None)
    return [owner for owner in owners if owner is not None]


def stop_workers(window: QMainWindow, timeout_ms: int) -> None:
    """Stop every worker thread ``window`` has built and wait ``timeout_ms`` each (then without
    bound): Qt aborts the process when a running ``QThread`` is destroyed."""
    for owner in worker_owners(window):
        owner.shutdown(timeout_ms)


class WindowClose(QObject):
    """The shutdown of ``window`` (a :class:`~gui.main_window.MainWindow`).

    Parameters
    ----------
    window
        The window; its ``view_tabs``, ``mode_tabs``, ``train_tab``, ``controller``, ``heads``
        and ``status`` exist when a method here is called.
    persist
        Save the window's geometry and configuration to its settings on the first shutdown.
    """

    def __init__(self, window: QMainWindow, persist: bool) -> None:
        super().__init__(window)
        self._window: Any = window
        self._persist = persist
        self.closing = False  # begin() ran: no results are drawn any more
        self._pending = False  # a close event waits for the workers

    def begin(self) -> None:
        """Ask every worker thread to stop and save settings, without waiting; idempotent."""
        if self.closing:
            return
        self.closing = True
        window = self._window
        window.view_tabs.stop()
        for controller in worker_owners(self._window):
            controller.begin_shutdown()
        window.mode_tabs.restore_dock()  # saved state: the dock was only hidden for another tab
        if self._persist:
            save_window(window, window.settings)

    def finish(self, timeout_ms: int) -> None:
        """Stop every worker and wait for it (``timeout_ms`` each, then without bound)."""
        self.begin()
        stop_workers(self._window, timeout_ms)

    def workers_running(self) -> bool:
        """True while a worker thread (explorer, training, heads) is still alive."""
        return any(controller.is_running() for controller in worker_owners(self._window))

    def may_close(self) -> bool:
        """For ``closeEvent``: True when every worker has stopped within :data:`CLOSE_WAIT_MS`;
        else the window is disabled, says why, and closes itself once they have."""
        self.begin()
        for controller in worker_owners(self._window):
            controller.wait_stopped(CLOSE_WAIT_MS)
        if not self.workers_running():
            self.finish(0)  # every thread has ended: this only tidies up
            return True
        if not self._pending:
            self._pending = True
            self._window.setEnabled(False)
            self._window.status.show_message(translate(
                "MainWindow", "Closing: waiting for the current computation step to end…"))
            for controller in worker_owners(self._window):
                controller.workerStopped.connect(self._on_worker_stopped)
        return False

    @Slot()
    def _on_worker_stopped(self) -> None:
        if self._pending and not self.workers_running():
            self._pending = False
            self._window.close()
