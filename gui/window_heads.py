"""The window's part of the Heads tab: opening tensor files (menu, drag and drop, sample),
showing a chosen head (and a chosen rule) in the explorer, and keeping the tab's choices."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Slot
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog

from engine.analysis.real_head import HeadRef
from engine.config import AttentionConfig, ScalingRule
from gui.heads.view import HeadsView
from gui.heads.worker import RuleParams
from gui.kit.i18n import translate
from gui.kit.session import LogitsChoice, TensorsChoice
from gui.window_files import show_warning

__all__ = ["TENSOR_SUFFIXES", "WindowHeads"]

#: File suffixes the window accepts as tensor files (a folder of .npy files is accepted too;
#: a single .npy file holds a stack of attention weights).
TENSOR_SUFFIXES = (".npz", ".safetensors", ".npy")


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
        self._restore_preferences()
        self.view.controller.errorOccurred.connect(self._on_error)
        self.view.headChosen.connect(self._on_head_chosen)
        self.view.ruleChosen.connect(self._on_rule_chosen)
        self.view.preferencesChanged.connect(self._save_preferences)
        # Train tab › Inspect trained model: the file it wrote opens here.
        window.train_tab.tensorsWritten.connect(self._on_tensors_written)
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    # ------------------------------------------------------------------------------ actions
    def open_tensors(self, path: str | os.PathLike[str]) -> None:
        """Open the tensor file ``path`` in the Heads tab and bring the tab to the front."""
        self._window.mode_tabs.setCurrentWidget(self.view)
        self.view.open_file(path)  # the status bar follows the tab's own state

    @Slot()
    def ask_open_tensors(self) -> None:
        """File > Open tensors: ask for a .npz / .safetensors / .npy file and open it."""
        settings = self._window.settings
        folder = settings.get("tensors/last_dir") or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(
            self._window, translate("MainWindow", "Open tensors"), folder,
            translate("MainWindow", "Tensor files (*.npz *.safetensors *.npy);;All files (*)"))
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
        params = self.view.logits_params()
        logits = LogitsChoice(params.rule.value if params.rule is not None else None,
                              params.temperature, params.gain, params.cap)
        selected = self.view.controller.selected()
        if selected is None:
            return TensorsChoice(str(tensor_file.path), logits=logits)
        layer, head, batch_entry = selected
        return TensorsChoice(str(tensor_file.path), layer, head, batch_entry, logits=logits)

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
        logits = choice.logits
        params = RuleParams(ScalingRule(logits.rule) if logits.rule is not None else None,
                            logits.temperature, logits.gain, logits.cap)
        self.view.open_file(choice.path, select=select, params=params)

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

    def _restore_preferences(self) -> None:
        settings = self._window.settings
        rules = tuple(r for r in settings.get("heads/replay_rules").split(",") if r)
        if rules:
            self.view.set_replay_rules(rules)
        hidden = settings.get("heads/hidden_columns")
        if hidden != "default":
            self.view.set_hidden_columns(tuple(k for k in hidden.split(",") if k))

    @Slot()
    def _save_preferences(self) -> None:
        settings = self._window.settings
        settings.set("heads/replay_rules", ",".join(r.value for r in self.view.replay_rules()))
        settings.set("heads/hidden_columns", ",".join(self.view.hidden_columns()))

    @Slot(int, int, int, str)
    def _on_rule_chosen(self, layer: int, head: int, batch_entry: int, rule: str) -> None:
        # The replayed map clicked: the explorer shows that head under that rule (with the
        # tab's T, gain and cap), its heatmap in front.
        self._on_head_chosen(layer, head, batch_entry)
        window = self._window
        if window.controller.real_head() is None:
            return  # the head could not be shown; the explorer said why
        params = self.view.logits_params()
        config = dataclasses.replace(window.controller.config(), rule=ScalingRule(rule),
                                     temperature=params.temperature, gain=params.gain,
                                     cap=params.cap)
        window.panel.set_config(config)
        window.controller.set_config(config)
        window.show_view("heatmap")

    @Slot(int, int, int)
    def _on_head_chosen(self, layer: int, head: int, batch_entry: int) -> None:
        # Every explorer view shows that head's real q and k instead of random ones.
        tensor_file = self.view.controller.tensor_file()
        if tensor_file is None or tensor_file.kind == "weights":
            return  # weights only: the explorer has no q and k to compute from
        window = self._window
        window.controller.set_real_head(HeadRef(tensor_file, layer, head, batch_entry))
        config, self._session_config = self._session_config, None
        if config is not None and (config.n_tokens, config.d_k) == (tensor_file.n,
                                                                     tensor_file.d_k):
            window.panel.set_config(config)
            window.controller.set_config(config)
