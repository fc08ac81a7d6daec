"""File › Open model…: choose a model folder or GGUF file and a text, and capture its q and k.

The dialog only collects the request and shows its progress: the Heads controller runs the
capture on its worker (:meth:`gui.heads.view.HeadsView.capture_model`). It stays open, with
the text as typed, when the capture fails or is cancelled, and closes once the capture has
opened in the Heads tab.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from engine.cli.capture import read_text_file
from engine.models import Capture, ModelError
from gui.heads.token_count import TokenCount
from gui.kit.i18n import Retranslating, translate
from gui.kit.model_input import DEFAULT_TEXT, BoundedTextEdit, ModelPathRow, memory_spin
from gui.kit.session_model import MAX_TEXT_CHARS

__all__ = ["DEFAULT_TEXT", "MAX_TEXT_CHARS", "MAX_TOKENS_LIMIT", "CaptureDialog"]

#: The largest "Max tokens" the dialog offers (the model's own positions bound it further).
MAX_TOKENS_LIMIT = 8192


class CaptureDialog(Retranslating, QDialog):
    """Model, text, max tokens, layers; Capture with progress and Cancel.

    Signals
    -------
    captureRequested(str, str, int, str, bool, float)
        Model path, text, max tokens, layers as typed ("" for all), keep v, memory limit in
        GiB.
    cancelRequested()
        The user cancelled the running capture.
    """

    captureRequested = Signal(str, str, int, str, bool, float)
    cancelRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("capture_dialog")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self._busy = False
        self._cancelling = False  # the user cancelled the capture that runs
        self._failed = False  # the message says why the last capture did not run
        self._model_label = QLabel()
        path_row = self._path_row = ModelPathRow()
        self._path = path_row.edit
        self._folder_button, self._gguf_button = path_row.folder_button, path_row.gguf_button

        self._text = BoundedTextEdit(DEFAULT_TEXT)
        self._text.cut.connect(self._on_text_cut)
        self._text.setObjectName("capture_text")
        self._text.setTabChangesFocus(True)
        self._text_file_button = QPushButton()
        self._text_file_button.clicked.connect(self._ask_text_file)
        self._default_button = QPushButton()
        self._default_button.clicked.connect(lambda: self._text.setPlainText(DEFAULT_TEXT))
        text_buttons = QHBoxLayout()
        text_buttons.addWidget(self._text_file_button)
        text_buttons.addWidget(self._default_button)
        text_buttons.addStretch(1)

        self._max_tokens = QSpinBox()
        self._max_tokens.setObjectName("max_tokens")
        self._max_tokens.setRange(1, MAX_TOKENS_LIMIT)
        self._max_tokens.setValue(128)
        self._layers = QLineEdit()
        self._layers.setObjectName("layers")
        self._keep_v = QCheckBox()
        self._memory = memory_spin()

        self._form = QFormLayout()
        self._form.addRow(self._model_label, path_row)
        self._text_label = QLabel()
        self._form.addRow(self._text_label, self._text)
        self._form.addRow("", text_buttons)
        self._max_label, self._layers_label = QLabel(), QLabel()
        self._form.addRow(self._max_label, self._max_tokens)
        self._form.addRow(self._layers_label, self._layers)
        self._memory_label = QLabel()
        self._form.addRow(self._memory_label, self._memory)
        self._form.addRow("", self._keep_v)

        self._progress = QProgressBar()
        self._progress.setVisible(False)
        self._message = QLabel()
        self._message.setObjectName("capture_message")
        self._message.setWordWrap(True)
        self._message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._capture_button = QPushButton()
        self._capture_button.setObjectName("capture_button")
        self._capture_button.setDefault(True)
        self._capture_button.clicked.connect(self._on_capture)
        self._close_button = QPushButton()
        self._close_button.setObjectName("close_button")
        self._close_button.clicked.connect(self._on_close_clicked)
        self._count = TokenCount()
        self._count.useAll.connect(self._on_use_all)
        buttons = QHBoxLayout()
        buttons.addWidget(self._progress, 1)
        buttons.addStretch(1)
        buttons.addWidget(self._count)
        buttons.addWidget(self._capture_button)
        buttons.addWidget(self._close_button)

        layout = QVBoxLayout(self)
        layout.addLayout(self._form)
        layout.addWidget(self._message)
        layout.addLayout(buttons)
        self._path.textChanged.connect(self._update_enabled)
        self._text.textChanged.connect(self._update_enabled)
        for changed in (self._path.textChanged, self._text.textChanged,
                        self._max_tokens.valueChanged):
            changed.connect(self._count.clear)  # the count was of another capture
        self.retranslate_ui()
        self._update_enabled()
        self.resize(620, 420)

    # ----------------------------------------------------------------------------- accessors
    def model_path(self) -> str:
        """The model folder or .gguf file as typed."""
        return self._path.text().strip()

    def text(self) -> str:
        """The text to run the model on."""
        return self._text.toPlainText()

    def message(self) -> str:
        """The message under the form (progress, or why the capture did not run)."""
        return self._message.text()

    def is_busy(self) -> bool:
        """True while a capture runs."""
        return self._busy

    def values(self) -> dict[str, object]:
        """The choices, for the settings: path, text, max tokens, layers, keep v, memory
        limit (GiB)."""
        return {"path": self.model_path(), "text": self.text(),
                "max_tokens": self._max_tokens.value(), "layers": self._layers.text(),
                "keep_v": self._keep_v.isChecked(), "memory_gib": self._memory.value()}

    def set_values(self, *, path: str | None = None, text: str | None = None,
                   max_tokens: int | None = None, layers: str | None = None,
                   keep_v: bool | None = None, memory_gib: float | None = None) -> None:
        """Fill in the choices given (the others stay)."""
        for value, setter in ((memory_gib, self._memory.setValue), (path, self._path.setText),
                              (text, self._set_text), (max_tokens, self._max_tokens.setValue),
                              (layers, self._layers.setText), (keep_v, self._keep_v.setChecked)):
            if value is not None:
                setter(value)

    # ------------------------------------------------------------------------------ updates
    @Slot(int, int, str)
    def show_progress(self, done: int, total: int, model: str) -> None:
        """``done`` of ``total`` layers of ``model`` captured."""
        self._progress.setRange(0, max(total, 1))
        self._progress.setValue(done)
        self._progress.setFormat(translate("CaptureDialog", "{0}/{1} layers").format(done,
                                                                                    total))
        if model:
            self._message.setText(translate("CaptureDialog", "Running {0}…").format(model))

    @Slot(bool)
    def set_busy(self, busy: bool) -> None:
        """A capture runs (Cancel stops it) or not; when it ends, the message says how
        (cancelled, or why it failed), never that it still runs."""
        self._busy = busy
        self._progress.setVisible(busy)
        if busy:
            self._failed = self._cancelling = False
            self._progress.setRange(0, 0)  # opening the model: no layer count yet
            self._message.setText(translate("CaptureDialog", "Opening the model…"))
        elif self._cancelling:
            self._cancelling = False
            self._message.setText(translate("CaptureDialog", "Cancelled: nothing was captured."))
        elif not self._failed:
            self._message.setText("")
        self._retranslate_close()
        self._update_enabled()

    def show_captured(self, capture: Capture) -> bool:
        """``capture`` opened; True when Max tokens cut its text: the dialog then stays open
        and says so beside Capture ("128 of 195 tokens"), with a button that raises the
        limit."""
        return self._count.show_cut(len(capture.token_ids), capture.text_tokens,
                                    capture.text_tokens_exact,
                                    min(capture.positions, MAX_TOKENS_LIMIT))

    def token_count(self) -> tuple[str, str]:
        """The count beside Capture and its button's text ("" while nothing was cut)."""
        return self._count.label_text(), self._count.button_text()

    @Slot(str)
    def show_error(self, message: str) -> None:
        """Why the capture did not run; the dialog stays as it was."""
        self._failed = True
        self._message.setText(translate("CaptureDialog", "Not captured: {0}").format(message))

    # -------------------------------------------------------------------------------- Qt
    def reject(self) -> None:  # Qt override (Esc, the title bar's close button)
        """Cancel a running capture first; close when none runs."""
        if self._busy:
            self._cancel()
            return
        super().reject()

    def showEvent(self, event: QShowEvent) -> None:  # Qt override
        """Opened again after a capture that ended: no message of the last one stays."""
        if not self._busy and not self._failed:
            self._message.setText("")
        super().showEvent(event)

    def retranslate_ui(self) -> None:
        """Set every text in the current language."""
        self.setWindowTitle(translate("CaptureDialog", "Open model"))
        self._model_label.setText(translate("CaptureDialog", "&Model:"))
        self._model_label.setBuddy(self._path)
        self._path_row.retranslate_ui()
        self._text_label.setText(translate("CaptureDialog", "&Text:"))
        self._text_label.setBuddy(self._text)
        self._text.setToolTip(translate("CaptureDialog", "The text the model reads, tokenized with "
                                 "its own tokenizer (special tokens added as the model does)."))
        self._text_file_button.setText(translate("CaptureDialog", "Load te&xt file…"))
        self._default_button.setText(translate("CaptureDialog", "&Default sentence"))
        self._max_label.setText(translate("CaptureDialog", "Max &tokens:"))
        self._max_label.setBuddy(self._max_tokens)
        self._max_tokens.setToolTip(translate("CaptureDialog", "A longer text is cut to its first "
                                       "tokens; memory and time grow with n²."))
        self._layers_label.setText(translate("CaptureDialog", "&Layers:"))
        self._layers_label.setBuddy(self._layers)
        self._layers.setPlaceholderText(translate("CaptureDialog", "all (or e.g. 0,2,5-7)"))
        self._layers.setToolTip(translate("CaptureDialog", "Layers whose q and k are kept; empty "
                                   "keeps every layer."))
        self._memory_label.setText(translate("CaptureDialog", "Memory l&imit:"))
        self._memory_label.setBuddy(self._memory)
        self._memory.setToolTip(translate(
            "CaptureDialog", "The most memory the capture may allocate. It is estimated from "
            "the layers and tokens chosen (weights are converted one at a time) before the "
            "model runs; a capture over the limit is refused and says how many tokens fit."))
        self._keep_v.setText(translate("CaptureDialog", "Also keep &v"))
        self._keep_v.setToolTip(translate(
            "CaptureDialog", "Store the values too (the file grows by half); the Heads tab "
            "needs q and k only."))
        self._capture_button.setText(translate("CaptureDialog", "&Capture"))
        self._capture_button.setToolTip(translate("CaptureDialog", "Run the model on the text and "
                                           "open every head in the Heads tab"))
        self._retranslate_close()

    # -------------------------------------------------------------------------------- private
    def _retranslate_close(self) -> None:
        self._close_button.setText(translate("CaptureDialog", "Cancel") if self._busy
                                   else translate("CaptureDialog", "Close"))

    @Slot()
    def _update_enabled(self) -> None:
        ready = bool(self.model_path()) and bool(self.text().strip())
        self._capture_button.setEnabled(ready and not self._busy)
        for widget in (self._path, self._folder_button, self._gguf_button, self._text,
                       self._text_file_button, self._default_button, self._max_tokens,
                       self._layers, self._keep_v, self._memory):
            widget.setEnabled(not self._busy)

    @Slot()
    def _on_capture(self) -> None:
        if self._busy or not self._capture_button.isEnabled():
            return
        path = self.model_path()
        if not Path(path).exists():
            self.show_error(translate("CaptureDialog", "{0}: no such file or folder"
                                      ).format(path))
            return
        self._message.setText("")
        self.captureRequested.emit(path, self.text(), self._max_tokens.value(),
                                   self._layers.text().strip(), self._keep_v.isChecked(),
                                   self._memory.value())

    @Slot(int)
    def _on_use_all(self, tokens: int) -> None:
        self._max_tokens.setValue(tokens)
        self._on_capture()

    def _set_text(self, text: str) -> None:
        self._text.setPlainText(text[:MAX_TEXT_CHARS])
        if len(text) > MAX_TEXT_CHARS:
            self._on_text_cut(len(text))

    @Slot(int)
    def _on_text_cut(self, chars: int) -> None:
        self._message.setText(translate(
            "CaptureDialog", "The text had {0:,} characters; the box keeps the first {1:,} "
            "(more than any model reads as tokens).").format(chars, MAX_TEXT_CHARS))

    def _cancel(self) -> None:
        self._cancelling = True
        self._message.setText(translate("CaptureDialog", "Cancelling…"))
        self.cancelRequested.emit()

    @Slot()
    def _on_close_clicked(self) -> None:
        if self._busy:
            self._cancel()
        else:
            self.reject()

    @Slot()
    def _ask_text_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, translate("CaptureDialog", "Text file"), self._path_row.start_folder(),
            translate("CaptureDialog", "Text files (*.txt *.md);;All files (*)"))
        if not path:
            return
        try:
            self._set_text(read_text_file(path))
        except ModelError as exc:
            self.show_error(str(exc))
