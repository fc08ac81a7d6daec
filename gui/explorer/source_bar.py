"""The bar above the explorer's views that says which real head they show, with a way back.

Hidden while the views show random q, k. :func:`connect_real_head` wires the controller's
source changes to the bar and the parameter panel.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from gui.explorer.head_text import head_label
from gui.kit.i18n import Retranslating, translate

__all__ = ["SourceBar", "connect_real_head"]


class SourceBar(Retranslating, QFrame):
    """"Real q, k: model.npz · layer 3 · head 5" and a "Back to random q, k" button.

    Signals
    -------
    headRequested(object)
        ``None`` when the user asks for random q, k again (connect to
        ``ExplorerController.set_real_head``).
    """

    headRequested = Signal(object)  # None: back to random q, k

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("realHeadBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("#realHeadBar { background: #fff4d6; }")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 3, 8, 3)
        self.label = QLabel()
        self.label.setObjectName("realHeadLabel")
        self.back_button = QPushButton()
        self.back_button.setObjectName("backToRandom")
        self.back_button.clicked.connect(self._on_back_clicked)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.back_button)
        self._ref: Any = None
        self.setVisible(False)
        self.retranslate_ui()

    def page_with(self, content: QWidget) -> QWidget:
        """A widget holding this bar above ``content`` (the explorer's view tabs)."""
        page = QWidget()
        page.setObjectName("explorerPage")
        box = QVBoxLayout(page)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addWidget(self)
        box.addWidget(content, 1)
        return page

    def head(self) -> Any:
        """The ``HeadRef`` shown, or ``None``."""
        return self._ref

    @Slot(object)
    def set_head(self, ref: Any) -> None:
        """Show ``ref`` (an ``engine.analysis.real_head.HeadRef``); hide for ``None``."""
        self._ref = ref
        self.retranslate_ui()
        self.setVisible(ref is not None)

    def retranslate_ui(self) -> None:
        """Set the texts in the current language."""
        label = "" if self._ref is None else head_label(self._ref)
        self.label.setText(translate("SourceBar", "Real q, k: {0}").format(label))
        self.label.setToolTip(str(getattr(getattr(self._ref, "file", None), "path", "")))
        self.back_button.setText(translate("SourceBar", "Back to random q, k"))
        self.back_button.setToolTip(translate(
            "SourceBar", "Show q and k drawn from the parameters again (the parameters "
            "from before the head was opened)"))

    @Slot()
    def _on_back_clicked(self) -> None:
        self.headRequested.emit(None)


def connect_real_head(controller: Any, panel: Any, bar: SourceBar) -> None:
    """Wire a real head's arrival and departure: controller → bar and panel, bar → controller.

    ``controller`` is the ``ExplorerController``, ``panel`` the ``ParameterPanel``.
    """
    controller.realHeadChanged.connect(bar.set_head)
    controller.realHeadChanged.connect(panel.set_real_head)
    controller.configApplied.connect(panel.set_config)
    bar.headRequested.connect(controller.set_real_head)
