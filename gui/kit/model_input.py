"""What opening a model asks for, shared by the capture dialog and the Model tab: the model's
path (typed, or a folder or GGUF file chosen), a text box bounded against huge pastes, and the
memory limit (up to the machine's memory)."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QMimeData, Signal, Slot
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QWidget,
)

from engine.config import DEFAULT_MEMORY_BUDGET_BYTES
from gui.kit.i18n import translate
from gui.kit.session_model import MAX_TEXT_CHARS

__all__ = ["DEFAULT_TEXT", "BoundedTextEdit", "ModelPathRow", "memory_spin",
           "physical_memory_gib"]

#: The sentence a text box starts with (the one docs/heads.md's SmolLM2 figures were made on).
DEFAULT_TEXT = "The cat sat on the mat because it was tired."


class BoundedTextEdit(QPlainTextEdit):
    """A text box that keeps at most :data:`MAX_TEXT_CHARS` characters of a paste or drop.

    Signals
    -------
    cut(int)
        A pasted or dropped text was cut; the characters it had.
    """

    cut = Signal(int)

    def insertFromMimeData(self, source: QMimeData) -> None:  # Qt override
        """Insert a paste or drop, cut to what the box still holds."""
        text = source.text() if source.hasText() else ""
        room = MAX_TEXT_CHARS - len(self.toPlainText()) + len(self.textCursor().selectedText())
        if len(text) <= room:
            super().insertFromMimeData(source)
            return
        self.textCursor().insertText(text[: max(room, 0)])
        self.cut.emit(len(text))


def physical_memory_gib() -> float:
    """The machine's memory in GiB (64 where the system does not say), the memory limit's
    largest value."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (AttributeError, ValueError, OSError):
        return 64.0


def memory_spin() -> QDoubleSpinBox:
    """The memory limit in GiB: 0.25 up to the machine's memory, the engine's default first."""
    spin = QDoubleSpinBox()
    spin.setObjectName("memory_limit")
    spin.setDecimals(2)
    spin.setSuffix(" GiB")  # a unit symbol, the same in every language
    spin.setSingleStep(0.25)
    spin.setRange(0.25, max(1.0, physical_memory_gib()))
    spin.setValue(DEFAULT_MEMORY_BUDGET_BYTES / 2**30)
    return spin


class ModelPathRow(QWidget):
    """A model folder or GGUF file: typed, or chosen with the Folder… and GGUF file… buttons.

    The widgets are public (``edit``, ``folder_button``, ``gguf_button``); texts are set by
    :meth:`retranslate_ui`, which the owner calls.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.edit = QLineEdit()
        self.edit.setObjectName("model_path")
        self.edit.setClearButtonEnabled(True)
        self.folder_button = QPushButton()
        self.gguf_button = QPushButton()
        self.folder_button.clicked.connect(self._ask_folder)
        self.gguf_button.clicked.connect(self._ask_gguf)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.edit, 1)
        row.addWidget(self.folder_button)
        row.addWidget(self.gguf_button)

    def path(self) -> str:
        """The model folder or .gguf file as typed."""
        return self.edit.text().strip()

    def start_folder(self) -> str:
        """Where a file dialog starts: the folder of the path typed, else the home folder."""
        current = Path(self.path()) if self.path() else None
        if current is not None and current.exists():
            return str(current.parent if current.is_file() else current)
        return str(Path.home())

    def retranslate_ui(self) -> None:
        """Texts and tooltips in the current language."""
        self.edit.setPlaceholderText(translate("CaptureDialog", "a Hugging Face model folder or "
                                               "a .gguf file"))
        self.edit.setToolTip(translate(
            "CaptureDialog", "A folder with config.json, model.safetensors (or a sharded "
            "model.safetensors.index.json) and tokenizer.json, or a GGUF file of the llama "
            "architecture. Weights stay on disk, memory-mapped; no PyTorch is needed."))
        self.folder_button.setText(translate("CaptureDialog", "&Folder…"))
        self.gguf_button.setText(translate("CaptureDialog", "&GGUF file…"))

    @Slot()
    def _ask_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(
            self, translate("CaptureDialog", "Hugging Face model folder"), self.start_folder())
        if path:
            self.edit.setText(path)

    @Slot()
    def _ask_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, translate("CaptureDialog", "GGUF model file"), self.start_folder(),
            translate("CaptureDialog", "GGUF files (*.gguf);;All files (*)"))
        if path:
            self.edit.setText(path)
