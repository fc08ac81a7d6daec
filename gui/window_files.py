"""The File menu's work: session files, exports (with their dialogs) and the clipboard."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QMessageBox,
    QSpinBox,
    QWidget,
)

from gui.kit import export
from gui.kit.choices import FORMATS, MAX_SIZE, MIN_SIZE
from gui.kit.i18n import translate
from gui.kit.session import Session, SessionError, load_session, save_session
from gui.model.inputs import model_choice, show_choice

__all__ = ["SizeDialog", "WindowFiles", "show_warning"]


class SizeDialog(QDialog):
    """Ask for an export size in pixels."""

    def __init__(self, width: int, height: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("MainWindow", "Image size"))
        self.width_box = QSpinBox()
        self.height_box = QSpinBox()
        for box, value in ((self.width_box, width), (self.height_box, height)):
            box.setRange(MIN_SIZE, MAX_SIZE)
            box.setSuffix(" px")
            box.setValue(value)
        form = QFormLayout(self)
        form.addRow(translate("MainWindow", "Width"), self.width_box)
        form.addRow(translate("MainWindow", "Height"), self.height_box)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def size_value(self) -> tuple[int, int]:
        """Return the chosen ``(width, height)``."""
        return self.width_box.value(), self.height_box.value()


def show_warning(parent: QWidget, title: str, text: str) -> QMessageBox:
    """Show a non-blocking warning box (window-modal) over ``parent`` and return it."""
    box = QMessageBox(QMessageBox.Icon.Warning, title, text,
                      QMessageBox.StandardButton.Ok, parent)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


class WindowFiles(QObject):
    """Sessions, exports and the clipboard for the main window (the File menu's slots).

    Parameters
    ----------
    window
        The :class:`~gui.main_window.MainWindow`: its ``panel``, ``controller``, ``views``,
        ``train_tab``, ``settings``, ``status`` and ``current_view()`` are used.
    session_path
        The session file the window starts associated with ("" for none).
    """

    sessionChanged = Signal(str)  # path of the session file now associated with the window

    def __init__(self, window: Any, session_path: str = "") -> None:
        super().__init__(window)
        self._window = window
        self._session_path = session_path

    # ------------------------------------------------------------------------------ sessions
    def session_path(self) -> str:
        """Return the session file the window is associated with ("" if none)."""
        return self._session_path

    def update_title(self) -> None:
        """Title the window with the session file's name and the program's name."""
        title = translate("MainWindow", "Attention Scale Explorer")
        if self._session_path:
            title = f"{Path(self._session_path).name} — {title}"
        self._window.setWindowTitle(title)

    def current_session(self) -> Session:
        """Return the session describing what the window shows now."""
        window = self._window
        return Session(config=window.panel.config(), current_view=window.current_view().key,
                       temperature=window.controller.temperature(),
                       tensors=window.heads.choice(), pins=window.pins.pins(),
                       model=model_choice(window.model_view.controls))

    def apply_session(self, session: Session) -> None:
        """Show ``session``: its configuration, temperature, front view, pins, the Heads
        tab's file and the Model tab's inputs (a session without them leaves the tab's)."""
        window = self._window
        if session.tensors is None and window.controller.real_head() is not None:
            window.controller.set_real_head(None)  # the session's q, k are random ones
        window.panel.set_config(session.config)
        window.controller.set_temperature(session.temperature)
        window.controller.set_config(session.config)
        window.show_view(session.current_view)
        window.pins.set_pins(session.pins)
        if session.tensors is not None:
            window.heads.apply_choice(session.tensors, session.config)
        if session.model is not None:
            show_choice(window.model_view.controls, session.model)

    def open_session(self, path: str | os.PathLike[str]) -> bool:
        """Load the session file ``path``; on error show a message and change nothing."""
        try:
            session = load_session(path)
        except SessionError as exc:
            show_warning(self._window, translate("MainWindow", "Cannot open session"), str(exc))
            return False
        self.apply_session(session)
        self._set_session_path(str(path))
        self._window.status.show_message(
            translate("MainWindow", "Opened {0}").format(Path(path).name))
        return True

    def save_session_to(self, path: str | os.PathLike[str]) -> bool:
        """Write the current session to ``path``; on error show a message."""
        try:
            save_session(path, self.current_session())
        except OSError as exc:
            show_warning(self._window, translate("MainWindow", "Cannot save session"), str(exc))
            return False
        self._set_session_path(str(path))
        self._window.status.show_message(
            translate("MainWindow", "Saved {0}").format(Path(path).name))
        return True

    def _set_session_path(self, path: str) -> None:
        self._session_path = path
        self.update_title()
        self.sessionChanged.emit(path)

    # ------------------------------------------------------------------------------- exports
    def export_current(self, path: str | os.PathLike[str], width: int, height: int) -> Path:
        """Export the current view to ``path`` (PNG, SVG or PDF by suffix)."""
        self._window.controller.refresh_views()
        item = self._window.current_view().export_item()
        suffix = str(path).lower().rsplit(".", 1)[-1]
        return export.IMAGE_WRITERS.get(suffix, export.export_png)(item, path, width, height)

    def export_everything(self, folder: str | os.PathLike[str], width: int = 1200,
                          height: int = 800,
                          formats: tuple[str, ...] = FORMATS) -> list[Path]:
        """Export every view (PNG, SVG, PDF, CSV: ``formats``), the training views, the Heads
        tab (when a file is open) and the session JSON."""
        window = self._window
        window.controller.refresh_views()
        window.train_tab.controller.refresh_views()
        views = [*window.views, *window.train_tab.views]
        if window.heads.view.controller.tensor_file() is not None:
            views.append(window.heads.view)  # the Heads tab, once a file is open
        if window.model_view.controller.results().alpha_points:
            views.append(window.model_view)  # the Model tab, once a point is computed
        return export.export_all(views, folder, self.current_session(), width, height,
                                 formats)

    # ----------------------------------------------------------------- menu slots (dialogs)
    @Slot()
    def ask_open_session(self) -> None:
        """File > Open session: ask for a file and open it."""
        path, _ = QFileDialog.getOpenFileName(
            self._window, translate("MainWindow", "Open session"),
            self._session_path or str(Path.home()),
            translate("MainWindow", "Session files (*.json);;All files (*)"))
        if path:
            self.open_session(path)

    @Slot()
    def save_session(self) -> None:
        """File > Save session: save to the current session file, or ask for one."""
        if self._session_path:
            self.save_session_to(self._session_path)
        else:
            self.ask_save_session_as()

    @Slot()
    def ask_save_session_as(self) -> None:
        """File > Save session as: ask for a file and save to it."""
        path, _ = QFileDialog.getSaveFileName(
            self._window, translate("MainWindow", "Save session"),
            self._session_path or "session.json",
            translate("MainWindow", "Session files (*.json)"))
        if path:
            self.save_session_to(path)

    @Slot()
    def ask_export_png(self) -> None:
        """File > Export current view as PNG."""
        self._export_dialog("png", translate("MainWindow", "PNG images (*.png)"))

    @Slot()
    def ask_export_svg(self) -> None:
        """File > Export current view as SVG."""
        self._export_dialog("svg", translate("MainWindow", "SVG images (*.svg)"))

    @Slot()
    def ask_export_pdf(self) -> None:
        """File > Export current view as PDF."""
        self._export_dialog("pdf", translate("MainWindow", "PDF documents (*.pdf)"))

    @Slot()
    def ask_export_all(self) -> None:
        """File > Export all: ask for a size and a folder, export every view into it."""
        size = self._ask_size()
        if size is None:
            return
        settings = self._window.settings
        folder = QFileDialog.getExistingDirectory(
            self._window, translate("MainWindow", "Export all views into folder"),
            settings.get("export/last_dir") or str(Path.home()))
        if not folder:
            return
        try:
            written = self.export_everything(folder, *size)
        except (OSError, ValueError) as exc:
            show_warning(self._window, translate("MainWindow", "Export failed"), str(exc))
            return
        settings.set("export/last_dir", folder)
        self._window.status.show_message(
            translate("MainWindow", "Exported {0} files to {1}").format(len(written), folder))

    @Slot()
    def copy_current(self) -> None:
        """File > Copy current plot: put the view in front on the clipboard at its size."""
        self._window.controller.refresh_views()
        view = self._window.current_view()
        widget = view.export_item()
        width = max(widget.width(), 320)
        height = max(widget.height(), 240)
        export.copy_to_clipboard(widget, width, height)
        self._window.status.show_message(
            translate("MainWindow", "Copied {0} to the clipboard").format(view.title()))

    def _ask_size(self) -> tuple[int, int] | None:
        settings = self._window.settings
        dialog = SizeDialog(settings.get("export/width"), settings.get("export/height"),
                            self._window)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        width, height = dialog.size_value()
        settings.set("export/width", width)
        settings.set("export/height", height)
        return width, height

    def _export_dialog(self, suffix: str, filter_text: str) -> None:
        size = self._ask_size()
        if size is None:
            return
        settings = self._window.settings
        folder = settings.get("export/last_dir") or str(Path.home())
        default = os.path.join(folder, f"{self._window.current_view().key}.{suffix}")
        path, _ = QFileDialog.getSaveFileName(
            self._window, translate("MainWindow", "Export view"), default, filter_text)
        if not path:
            return
        try:
            written = self.export_current(path, *size)
        except (OSError, ValueError) as exc:
            show_warning(self._window, translate("MainWindow", "Export failed"), str(exc))
            return
        settings.set("export/last_dir", str(Path(path).parent))
        self._window.status.show_message(
            translate("MainWindow", "Exported {0}").format(written.name))
