"""The window's part of the Heads tab: opening tensor files and models (menu, drag and drop,
samples), saving a capture, showing a chosen head (and a chosen rule) in the explorer, and
keeping the tab's choices."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Slot
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox

from engine.analysis.real_head import HeadRef
from engine.config import AttentionConfig, ScalingRule
from engine.core.scaling import Rule
from engine.models import SampleModel, sample_models
from gui.explorer.head_text import head_label
from gui.heads.capture_dialog import CaptureDialog
from gui.heads.capture_worker import CaptureReady
from gui.heads.drops import dropped_file
from gui.heads.view import HeadsView
from gui.heads.worker import Logits
from gui.kit.i18n import translate
from gui.kit.session import LogitsChoice, TensorsChoice
from gui.window_files import show_warning

__all__ = ["WindowHeads", "sample_title"]


def sample_title(sample: SampleModel) -> str:
    """The menu text of a sample model: its name, architecture, layers and heads."""
    return translate("MainWindow", "{0} ({1}, {2} layers × {3} heads)").format(
        sample.name, sample.architecture, sample.layers, sample.heads)


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
        controller = self.view.controller
        controller.captureReady.connect(self._on_captured)
        controller.captureFailed.connect(self._on_capture_failed)
        controller.captureSaved.connect(self._on_capture_saved)
        controller.captureSaveFailed.connect(self._on_capture_save_failed)
        controller.fileOpened.connect(self.update_actions)
        self._capture_dialog: CaptureDialog | None = None
        self._samples_menu: QMenu | None = None
        # Train tab › Inspect trained model: the file it wrote opens here.
        window.train_tab.tensorsWritten.connect(self.open_tensors)
        window.controller.realHeadChanged.connect(self.update_actions)
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
    def back_to_random(self) -> None:
        """View › Back to random q, k: the explorer leaves the real head it shows."""
        self._window.controller.set_real_head(None)

    @Slot()
    def open_sample(self) -> None:
        """Help > Open sample tensors: the trained heads shipped with the program."""
        from gui.kit.resources import sample_tensors_path

        self.open_tensors(sample_tensors_path())

    @Slot()
    def ask_open_model(self) -> None:
        """File › Open model…: the capture dialog, with the model used last."""
        self.open_model("")

    def open_model(self, path: str | os.PathLike[str]) -> CaptureDialog:
        """Show the capture dialog for the model at ``path`` ("" for the one used last)."""
        dialog = self.capture_dialog()
        if path:
            dialog.set_values(path=str(path))
        dialog.show()
        dialog.activateWindow()
        return dialog

    def capture_dialog(self) -> CaptureDialog:
        """The capture dialog (made on first use, filled with the choices used last)."""
        if self._capture_dialog is None:
            settings = self._window.settings
            dialog = CaptureDialog(self._window)
            dialog.set_values(path=settings.get("model/last_path"),
                              max_tokens=settings.get("model/max_tokens"),
                              layers=settings.get("model/layers"),
                              memory_gib=settings.get("model/memory_gib"))
            if settings.get("model/text"):
                dialog.set_values(text=settings.get("model/text"))
            controller = self.view.controller
            dialog.captureRequested.connect(self._on_capture_requested)
            dialog.cancelRequested.connect(controller.cancel_capture)
            controller.captureProgress.connect(dialog.show_progress)
            controller.captureBusyChanged.connect(dialog.set_busy)
            self._capture_dialog = dialog
        return self._capture_dialog

    def install_samples_menu(self, menu: QMenu, before: QAction | None) -> QMenu:
        """Help › Open sample model: the real models installed as packages (filled each time
        it opens, so a package installed meanwhile shows), and how to install the others."""
        samples = QMenu(menu)
        samples.setObjectName("sample_models_menu")
        samples.aboutToShow.connect(self._fill_samples_menu)
        menu.insertMenu(before, samples) if before is not None else menu.addMenu(samples)
        self._samples_menu = samples
        self.retranslate_ui()
        return samples

    def retranslate_ui(self) -> None:
        """Texts of the window's parts this object owns."""
        if self._samples_menu is not None:
            self._samples_menu.setTitle(translate("MainWindow", "Open sample &model"))
            self._samples_menu.menuAction().setStatusTip(translate(
                "MainWindow", "Real models installed as Python packages: capture their heads"))

    @Slot()
    def ask_save_capture(self) -> None:
        """File › Save captured tensors…: write the capture shown as .npz or .safetensors,
        then show the written file (so that a session refers to it)."""
        capture = self.view.controller.unsaved_capture()
        if capture is None:
            return
        settings = self._window.settings
        folder = settings.get("tensors/last_dir") or str(Path.home())
        stem = capture.capture.name.split("/")[-1].replace(" (captured)", "")
        suggested = str(Path(folder) / (_safe_stem(stem) + ".npz"))
        path, chosen = QFileDialog.getSaveFileName(
            self._window, translate("MainWindow", "Save captured tensors"), suggested,
            translate("MainWindow", "NumPy archive (*.npz);;safetensors (*.safetensors)"))
        if not path:
            return
        if Path(path).suffix.lower() not in (".npz", ".safetensors"):
            path += ".safetensors" if "safetensors" in chosen else ".npz"
        self.save_capture(path)

    def save_capture(self, path: str | os.PathLike[str]) -> bool:
        """Start writing the capture shown to ``path`` on a worker, then show the written file or
        say why it was not written; False when there is no unsaved capture."""
        if not self.view.controller.save_capture(str(path)):
            return False
        self._window.statusBar().showMessage(
            translate("MainWindow", "Saving the captured tensors to {0}…").format(path))
        self.update_actions()
        return True

    @Slot(str, bool)
    def _on_capture_saved(self, written: str, shown: bool) -> None:
        controller = self.view.controller
        self._window.statusBar().showMessage(
            translate("MainWindow", "Captured tensors saved to {0}").format(written), 5000)
        self._window.settings.set("tensors/last_dir", str(Path(written).parent))
        self.update_actions()
        if shown:  # show it from its file now, so that a session can name it
            self.view.open_file(written, select=controller.selected(),
                                logits=controller.logits())

    @Slot(str, str)
    def _on_capture_save_failed(self, path: str, reason: str) -> None:
        self._window.statusBar().clearMessage()
        self.update_actions()
        show_warning(self._window, translate("MainWindow", "Not saved"),
                     translate("MainWindow", "The captured tensors were not saved to {0}: "
                               "{1}. The capture is still open.").format(path, reason))

    def choice(self) -> TensorsChoice | None:
        """The tensor file shown and the head chosen, for the session file (none for a
        capture not saved yet: a session names files)."""
        tensor_file = self.view.controller.tensor_file()
        if tensor_file is None or tensor_file.format == "memory":
            return None
        shown = self.view.controller.logits()
        rule = shown.rule
        logits = LogitsChoice(None if shown.own_scale else rule.kind.value, rule.temperature,
                              rule.gain, rule.cap)
        layer, head, batch_entry = self.view.controller.selected() or (None, None, 0)
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
        saved = choice.logits
        rule = Rule(saved.rule or ScalingRule.SQRT, temperature=saved.temperature, gain=saved.gain,
                    cap=saved.cap)
        self.view.open_file(choice.path, select=select,
                            logits=Logits(rule, own_scale=saved.rule is None))

    # ----------------------------------------------------------------------------- events
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        """Accept tensor files dragged onto the window and open the dropped one."""
        if watched is self._window and event.type() in (QEvent.Type.DragEnter,
                                                        QEvent.Type.Drop):
            assert isinstance(event, QDragEnterEvent | QDropEvent)
            kind, path = dropped_file(event.mimeData().urls() if event.mimeData().hasUrls()
                                      else [])
            if not kind:
                return False
            event.acceptProposedAction()
            if event.type() == QEvent.Type.Drop:
                (self.open_model if kind == "model" else self.open_tensors)(path)
            return True
        return super().eventFilter(watched, event)

    @Slot(str)
    def _on_error(self, message: str) -> None:
        show_warning(self._window, translate("MainWindow", "Tensor file problem"), message)

    @Slot(str, str, int, str, bool, float)
    def _on_capture_requested(self, path: str, text: str, max_tokens: int, layers: str,
                              keep_v: bool, memory_gib: float) -> None:
        settings = self._window.settings
        settings.set("model/last_path", path)
        settings.set("model/max_tokens", max_tokens)
        settings.set("model/layers", layers)
        settings.set("model/memory_gib", memory_gib)
        settings.set("model/text", text if len(text) <= 4000 else "")
        self.view.capture_model(path, text, max_tokens=max_tokens, layers=layers,
                                keep_v=keep_v, memory_budget=int(memory_gib * 2**30))

    @Slot(object)
    def _on_captured(self, message: CaptureReady) -> None:
        dialog = self._capture_dialog
        # A text cut by Max tokens keeps the dialog open: it says so and offers more.
        if dialog is not None and not dialog.show_captured(message.capture):
            dialog.accept()
        self._window.mode_tabs.setCurrentWidget(self.view)

    @Slot(str)
    def _on_capture_failed(self, message: str) -> None:
        dialog = self._capture_dialog
        if dialog is not None and dialog.isVisible():
            dialog.show_error(message)
        else:
            show_warning(self._window, translate("MainWindow", "Model problem"), message)

    @Slot()
    @Slot(object)
    def update_actions(self, *_args: object) -> None:
        """Enable File › Save captured tensors… for an unsaved capture (not while it is written)
        and View › Back to random q, k while the explorer shows a real head."""
        actions, controller = self._window.menu_actions, self.view.controller
        if "save_capture" in actions:
            actions["save_capture"].setEnabled(controller.unsaved_capture() is not None
                                               and not controller.is_saving())
        if "back_to_random" in actions:
            actions["back_to_random"].setEnabled(self._window.controller.real_head() is not None)

    @Slot()
    def _fill_samples_menu(self) -> None:
        menu = self._samples_menu
        menu.clear()
        for sample, path in sample_models():
            title = sample_title(sample)
            if path is not None:
                action = menu.addAction(title)
                action.setStatusTip(translate("MainWindow", "{0} ({1} MB): {2}").format(
                    sample.description, sample.size_mb, path))
                action.triggered.connect(lambda _=False, p=str(path): self.open_model(p))
            else:
                action = menu.addAction(translate("MainWindow", "{0} — not installed…"
                                                  ).format(title))
                action.setStatusTip(translate("MainWindow", "Not installed; install with: {0}"
                                              ).format(sample.pip_command))
                action.triggered.connect(lambda _=False, s=sample: self._show_install(s))

    def _show_install(self, sample: SampleModel) -> None:
        command = sample.pip_command
        box = QMessageBox(QMessageBox.Icon.Information,
                          translate("MainWindow", "Sample model not installed"),
                          translate("MainWindow", "{0} is not installed. Install it ({1} MB) "
                                    "into the Python environment the app runs in, then choose "
                                    "it again from Help › Open sample model:").format(
                              sample_title(sample), sample.size_mb)
                          + f"\n\n{command}", QMessageBox.StandardButton.Ok, self._window)
        copy = box.addButton(translate("MainWindow", "Copy command"),
                             QMessageBox.ButtonRole.ActionRole)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(command))
        # With a second button Qt finds no escape button for Esc and the title bar's ×.
        box.setEscapeButton(QMessageBox.StandardButton.Ok)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def _restore_preferences(self) -> None:
        settings = self._window.settings
        self.view.set_replay_rules(tuple(settings.get("heads/replay_rules").split(",")))
        hidden = settings.get("heads/hidden_columns")
        if hidden != "default":
            self.view.table.set_hidden_columns(tuple(k for k in hidden.split(",") if k))

    @Slot()
    def _save_preferences(self) -> None:
        settings = self._window.settings
        settings.set("heads/replay_rules",
                     ",".join(r.value for r in self.view.controls.replay_rules()))
        settings.set("heads/hidden_columns", ",".join(self.view.table.hidden_columns()))

    @Slot(int, int, int, str)
    def _on_rule_chosen(self, layer: int, head: int, batch_entry: int, rule: str) -> None:
        # The replayed map clicked: the explorer shows that head under that rule (with the
        # tab's T, gain and cap), its heatmap in front.
        self._on_head_chosen(layer, head, batch_entry)
        window = self._window
        if window.controller.real_head() is None:
            return  # the head could not be shown; the explorer said why
        shown = self.view.controller.logits().rule
        self._show_config(window.controller.config().replace(
            rule=ScalingRule(rule), temperature=shown.temperature, gain=shown.gain,
            cap=shown.cap))
        window.show_view("heatmap")

    @Slot(int, int, int)
    def _on_head_chosen(self, layer: int, head: int, batch_entry: int) -> None:
        # Every explorer view shows that head's real q and k instead of random ones.
        tensor_file = self.view.controller.tensor_file()
        if tensor_file is None or tensor_file.kind == "weights":
            return  # weights only: the explorer has no q and k to compute from
        window = self._window
        ref = HeadRef(tensor_file, layer, head, batch_entry)
        window.controller.set_real_head(ref)
        if window.controller.real_head() == ref:  # say it: the Explorer is out of sight here
            window.statusBar().showMessage(translate(
                "MainWindow", "The Explorer now shows {0} (n = {1}); View › Back to random q, k "
                "returns to the parameters").format(head_label(ref), tensor_file.n), 10_000)
        config, self._session_config = self._session_config, None
        if config is not None and (config.n_tokens, config.d_k) == (tensor_file.n,
                                                                     tensor_file.d_k):
            self._show_config(config)

    def _show_config(self, config: AttentionConfig) -> None:
        """Show ``config`` in the explorer's panel and compute it (the head stays)."""
        self._window.panel.set_config(config)
        self._window.controller.set_config(config)


def _safe_stem(name: str) -> str:
    """``name`` usable as a file name on every system."""
    kept = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip("._")
    return kept or "captured"
