"""The window's part of the Heads tab: opening tensor files (menu, drag and drop, sample) and
showing a chosen head in the explorer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Slot
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog

from engine.analysis.real_head import HeadRef
from engine.config import AttentionConfig
from gui.heads.view import HeadsView
from gui.kit.i18n import translate
from gui.kit.session import TensorsChoice
from gui.window_files import show_warning

__all__ = ["TENSOR_SUFFIXES", "WindowHeads"]

#: File suffixes the window accepts as tensor files (a folder of .npy files is accepted too).
TENSOR_SUFFIXES = (".npz", ".safetensors")


def tensor_path_of(urls: list[Any]) -> str:
    """The first local tensor file or folder among dropped ``urls`` ("" if none)."""
    for url in urls:
        if not url.isLocalFile():
            continue
        path = url.toLocalFile()
        if Path(path).suffix.lower() in TENSOR_SUFFIXES or os.path.isdir(path):
            return path
    return ""


class WindowHeads(QObject):
    """Owns the Heads view for the window: file dialogs, drops, errors, explorer hand-over.

    Parameters
    ----------
    window
        The main window (``mode_tabs``, ``status``, ``settings``, ``train_tab``, the explorer's
        ``controller``).
    """

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self._window = window
        self.view = HeadsView()
        self._session_config: AttentionConfig | None = None
        self.view.controller.errorOccurred.connect(self._on_error)
        self.view.controller.fileOpened.connect(self._on_file_opened)
        self.view.headChosen.connect(self._on_head_chosen)
        # Train tab › Inspect trained model: the file it wrote opens here.
        window.train_tab.tensorsWritten.connect(self._on_tensors_written)
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    # ------------------------------------------------------------------------------ actions
    def open_tensors(self, path: str | os.PathLike[str]) -> None:
        """Open the tensor file ``path`` in the Heads tab and bring the tab to the front."""
        self._window.mode_tabs.setCurrentWidget(self.view)
        self._window.status.show_message(
            translate("MainWindow", "Opening {0}…").format(Path(path).name))
        self.view.open_file(path)

    @Slot()
    def ask_open_tensors(self) -> None:
        """File > Open tensors: ask for a .npz / .safetensors file and open it."""
        settings = self._window.settings
        folder = settings.get("tensors/last_dir") or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(
            self._window, translate("MainWindow", "Open tensors"), folder,
            translate("MainWindow", "Tensor files (*.npz *.safetensors);;All files (*)"))
        if path:
            settings.set("tensors/last_dir", str(Path(path).parent))
            self.open_tensors(path)

    @Slot()
    def open_sample(self) -> None:
        """Help > Open sample tensors: the trained heads shipped with the program."""
        from gui.kit.resources import sample_tensors_path

        self.open_tensors(sample_tensors_path())

    def choice(self) -> TensorsChoice | None:
        """The tensor file shown and the head chosen, for the session file."""
        tensor_file = self.view.controller.tensor_file()
        if tensor_file is None:
            return None
        selected = self.view.controller.selected()
        if selected is None:
            return TensorsChoice(str(tensor_file.path))
        layer, head, batch_entry = selected
        return TensorsChoice(str(tensor_file.path), layer, head, batch_entry)

    def apply_choice(self, choice: TensorsChoice, config: AttentionConfig | None = None) -> None:
        """Open a session's tensor file and choose its head; a file that has moved is reported
        and the rest of the session stays open. ``config`` (the session's explorer settings,
        saved while the head was shown) is applied once the head is: the rule replayed on it
        comes back instead of the model's own one."""
        self._session_config = config
        if not os.path.exists(choice.path):
            show_warning(self._window, translate("MainWindow", "Tensor file not found"),
                         translate("MainWindow", "The session's tensor file {0} was not found "
                                   "(moved or deleted?). The rest of the session is open; "
                                   "open the file again with File › Open tensors…")
                         .format(choice.path))
            return
        select = None if choice.layer is None or choice.head is None else (
            choice.layer, choice.head, choice.batch_entry)
        self.view.open_file(choice.path, select=select)

    # ----------------------------------------------------------------------------- events
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """Accept tensor files dragged onto the window and open the dropped one."""
        if watched is self._window and event.type() in (QEvent.Type.DragEnter,
                                                        QEvent.Type.Drop):
            assert isinstance(event, QDragEnterEvent | QDropEvent)
            path = tensor_path_of(event.mimeData().urls()) if event.mimeData().hasUrls() else ""
            if not path:
                return False
            event.acceptProposedAction()
            if event.type() == QEvent.Type.Drop:
                self.open_tensors(path)
            return True
        return super().eventFilter(watched, event)

    @Slot(str)
    def _on_error(self, message: str) -> None:
        show_warning(self._window, translate("MainWindow", "Tensor file problem"), message)

    @Slot(str)
    def _on_tensors_written(self, path: str) -> None:
        self.open_tensors(path)

    @Slot(object)
    def _on_file_opened(self, tensor_file: Any) -> None:
        self._window.status.show_message(
            translate("MainWindow", "Opened {0}").format(Path(tensor_file.path).name))

    @Slot(int, int, int)
    def _on_head_chosen(self, layer: int, head: int, batch_entry: int) -> None:
        # Every explorer view shows that head's real q and k instead of random ones.
        tensor_file = self.view.controller.tensor_file()
        if tensor_file is None:
            return
        window = self._window
        window.controller.set_real_head(HeadRef(tensor_file, layer, head, batch_entry))
        config, self._session_config = self._session_config, None
        if config is not None and (config.n_tokens, config.d_k) == (tensor_file.n,
                                                                     tensor_file.d_k):
            window.panel.set_config(config)
            window.controller.set_config(config)
