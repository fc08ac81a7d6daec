"""Beside the capture dialog's Capture button: how many of the text's tokens the capture kept,
when Max tokens cut the text, and a button that raises Max tokens to the whole text."""

from __future__ import annotations

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from gui.kit.i18n import Retranslating, translate

__all__ = ["TokenCount"]


class TokenCount(Retranslating, QWidget):
    """"128 of 195 tokens" and "Use all 195", shown while the last capture cut its text.

    Signals
    -------
    useAll(int)
        The Max tokens that reads the whole text, or as much of it as the model reads.
    """

    useAll = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._label = QLabel()
        self._label.setObjectName("token_count")
        self._button = QPushButton()
        self._button.setObjectName("use_all_button")
        self._button.clicked.connect(self._on_use_all)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._label)
        layout.addWidget(self._button)
        self._cut: tuple[int, int, bool, int] | None = None
        self.setVisible(False)

    def show_cut(self, kept: int, total: int, exact: bool, most: int) -> bool:
        """Say that ``kept`` of the text's ``total`` tokens were captured (``exact`` False:
        the text has more than ``total``) when that is fewer than all; ``most`` is the
        largest Max tokens the model and the dialog allow. True when the text was cut."""
        cut = kept < total or not exact
        self._cut = (kept, total, exact, most) if cut else None
        self.retranslate_ui()
        return cut

    def clear(self) -> None:
        """Hide the count (the text, the model or the limit changed since)."""
        self._cut = None
        self.setVisible(False)

    def target(self) -> int:
        """The Max tokens "Use all" sets (0 while nothing was cut)."""
        if self._cut is None:
            return 0
        _, total, exact, most = self._cut
        return min(total, most) if exact else most

    def label_text(self) -> str:
        """The count as shown ("" while hidden)."""
        return self._label.text() if self._cut is not None else ""

    def button_text(self) -> str:
        """The button's text as shown ("" while hidden)."""
        return self._button.text() if self._cut is not None and not self._button.isHidden() \
            else ""

    def retranslate_ui(self) -> None:
        """Set every text in the current language."""
        self.setVisible(self._cut is not None)
        if self._cut is None:
            return
        kept, total, exact, most = self._cut
        if exact:
            self._label.setText(translate("CaptureDialog", "{0:,} of {1:,} tokens").format(
                kept, total))
        else:
            self._label.setText(translate("CaptureDialog", "{0:,} of more than {1:,} tokens"
                                          ).format(kept, total))
        self._label.setToolTip(translate(
            "CaptureDialog", "The text was cut to its first tokens by Max tokens; the capture "
            "holds those only."))
        target = self.target()
        self._button.setVisible(target > kept)  # none when the model reads no more
        if exact and total <= most:
            self._button.setText(translate("CaptureDialog", "Use all {0:,}").format(target))
        else:
            self._button.setText(translate("CaptureDialog", "Use {0:,} (the most)").format(
                target))
        self._button.setToolTip(translate(
            "CaptureDialog", "Set Max tokens to {0:,} and capture again (up to the positions "
            "the model reads; memory and time grow with n²).").format(target))

    @Slot()
    def _on_use_all(self) -> None:
        target = self.target()
        if target:
            self.useAll.emit(target)
