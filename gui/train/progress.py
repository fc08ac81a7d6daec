"""The Train panel's progress bar: how far a run or sweep is, worded with its state and ETA."""

from __future__ import annotations

import math

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QProgressBar

from gui.kit.i18n import translate
from gui.train.state import TrainState

__all__ = ["RunProgress"]


class RunProgress(QProgressBar):
    """Progress of the run or sweep in tenths of a percent, with "paused", "done", time left…"""

    def __init__(self) -> None:
        super().__init__()
        self.setRange(0, 1000)
        self.setValue(0)
        self.setTextVisible(True)
        self._state = TrainState.IDLE
        self._eta = math.nan  # last ETA shown, to re-word the bar in a new language
        self._ran = False  # a job ran since the last Reset ("stopped" rather than "idle")

    def retranslate_ui(self) -> None:
        """Tooltip and wording in the current language."""
        self.setToolTip(translate(
            "TrainPanel",
            "Progress of the run or sweep, with the estimated time left (pauses excluded)."))
        self._word()

    def set_state(self, state: TrainState) -> None:
        """Word the bar for controller state ``state``."""
        self._state = state
        if state == TrainState.RUNNING:
            self._ran = True
        self._word()

    @Slot(float, float)
    def set_progress(self, fraction: float, eta_s: float) -> None:
        """Show progress ``fraction`` and the estimated seconds left."""
        self.setValue(round(1000 * min(max(fraction, 0.0), 1.0)))
        self._eta = eta_s
        self._word()

    def reset_run(self) -> None:
        """Empty the bar and show it as idle (Reset)."""
        self._ran = False
        self.set_progress(0.0, math.nan)

    def _word(self) -> None:
        state, done = self._state, self.value() >= self.maximum()
        if state == TrainState.PAUSED:
            text = translate("TrainPanel", "%p% — paused")
        elif state == TrainState.STOPPING:
            text = translate("TrainPanel", "%p% — stopping")
        elif state == TrainState.EXPORTING:
            text = translate("TrainPanel", "%p% — writing q and k")
        elif done:
            text = translate("TrainPanel", "%p% — done")
        elif state == TrainState.IDLE:
            text = translate("TrainPanel", "%p% — stopped") if self._ran else translate(
                "TrainPanel", "idle")
        elif math.isfinite(self._eta):
            text = translate("TrainPanel", "%p% — {0} left").format(_duration(self._eta))
        else:
            text = "%p%"
        self.setFormat(text)


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds < 60:
        return translate("TrainPanel", "{0} s").format(seconds)
    return translate("TrainPanel", "{0} min {1:02d} s").format(seconds // 60, seconds % 60)
