"""How the training curves draw the training loss: every step or a trailing mean, log or linear."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QLabel, QWidget

from gui.kit.i18n import translate
from gui.kit.wrapping_tabs import FlowLayout

__all__ = ["LOSS_SMOOTHING_STEPS", "LossDisplay"]

#: Steps the smoothed training loss averages over: enough to calm a batch of 64's noise, few
#: enough to follow the fall of a 500-step run.
LOSS_SMOOTHING_STEPS = 50


class LossDisplay(QWidget):
    """The row of controls above the training curves: loss smoothing and loss axis.

    Signals
    -------
    changed()
        The user (or a setter) chose another smoothing or axis.
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        policy = self.sizePolicy()
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        row = FlowLayout(self, spacing=6)
        row.setContentsMargins(6, 2, 6, 0)
        self._smoothing_label = QLabel()
        self._smoothing = QComboBox()
        self._smoothing.addItem("", 1)
        self._smoothing.addItem("", LOSS_SMOOTHING_STEPS)
        self._axis_label = QLabel()
        self._axis = QComboBox()
        self._axis.addItem("", True)
        self._axis.addItem("", False)
        for widget in (self._smoothing_label, self._smoothing, self._axis_label, self._axis):
            row.addWidget(widget)
        self._smoothing.currentIndexChanged.connect(self.changed)
        self._axis.currentIndexChanged.connect(self.changed)

    def retranslate_ui(self) -> None:
        """Labels, items and tooltips in the current language."""
        self._smoothing_label.setText(translate("TrainCurvesView", "Training loss:"))
        self._smoothing.setItemText(0, translate("TrainCurvesView", "every step"))
        self._smoothing.setItemText(1, translate(
            "TrainCurvesView", "mean of the last {0} steps").format(LOSS_SMOOTHING_STEPS))
        self._smoothing.setToolTip(translate(
            "TrainCurvesView",
            "The loss of one batch jumps by orders of magnitude from step to step; its trailing "
            "mean shows the trend next to the held-out loss. The CSV keeps every step."))
        self._axis_label.setText(translate("TrainCurvesView", "Loss axis:"))
        self._axis.setItemText(0, translate("TrainCurvesView", "log"))
        self._axis.setItemText(1, translate("TrainCurvesView", "linear"))
        self._axis.setToolTip(translate(
            "TrainCurvesView",
            "Log shows the late, small losses; linear shows the early fall as it is."))

    def smoothing(self) -> int:
        """Steps the training-loss curve averages over (1: every step as recorded)."""
        return int(self._smoothing.currentData())

    def set_smoothing(self, steps: int) -> None:
        """Show the training loss per step (``1``) or averaged (:data:`LOSS_SMOOTHING_STEPS`)."""
        index = self._smoothing.findData(int(steps))
        if index < 0:
            raise ValueError(f"smoothing must be 1 or {LOSS_SMOOTHING_STEPS} steps, got {steps}")
        self._smoothing.setCurrentIndex(index)

    def log_y(self) -> bool:
        """Whether the loss plot's y axis is logarithmic (the default)."""
        return bool(self._axis.currentData())

    def set_log_y(self, log_y: bool) -> None:
        """Make the loss plot's y axis logarithmic or linear."""
        self._axis.setCurrentIndex(0 if log_y else 1)
