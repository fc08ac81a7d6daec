"""What the training controller keeps between items: its run state and gradient history."""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from engine.config import ScalingRule
from engine.core.checks import readonly

__all__ = ["GradientHistory", "GrowingArray", "TrainState"]


class TrainState(enum.Enum):
    """What the training controller is doing; carried by ``stateChanged`` as an ``object``."""

    IDLE = "idle"
    """No job: Start and Reset are possible."""
    RUNNING = "running"
    """A job runs: Pause and Stop are possible."""
    PAUSED = "paused"
    """A job is held between two engine yields: Resume and Stop are possible."""
    STOPPING = "stopping"
    """Stop was pressed; the job ends after its current step."""
    EXPORTING = "exporting"
    """The trained q and k are being written to a tensor file (nothing else may start)."""


class GrowingArray:
    """An append-only 1-D array whose filled part is handed out without copying.

    :meth:`view` returns a read-only view of the entries so far; entries never change once
    written and a reallocation leaves the old buffer to the views already handed out, so a
    view stays valid for as long as it is held, and a snapshot costs O(1) on the GUI thread
    instead of converting a growing list (O(steps)).
    """

    def __init__(self, dtype: type) -> None:
        self._data = np.empty(256, dtype=dtype)
        self._size = 0

    def append(self, value: float) -> None:
        """Add ``value`` at the end (amortised O(1): the buffer doubles when full)."""
        if self._size == self._data.size:
            grown = np.empty(2 * self._data.size, dtype=self._data.dtype)
            grown[: self._size] = self._data
            self._data = grown
        self._data[self._size] = value
        self._size += 1

    def view(self) -> np.ndarray:
        """The entries so far, read-only, without copying."""
        return readonly(self._data[: self._size])


class GradientHistory:
    """The global gradient norm of every rule at every snapshot of one training run.

    NaN marks the steps after a rule diverged. Handed out as read-only views (no copies).
    """

    def __init__(self) -> None:
        self._steps = GrowingArray(np.int64)
        self._norms: dict[ScalingRule, GrowingArray] = {}

    def record(self, snapshot: object) -> None:
        """Append the norms of ``snapshot`` (an engine ``TrainSnapshot``)."""
        step = int(snapshot.step)  # type: ignore[attr-defined]
        if step == 0:
            return  # no gradient before the first step
        self._steps.append(step)
        for rule, st in snapshot.rules.items():  # type: ignore[attr-defined]
            alive = st.diverged_at is None or step < st.diverged_at
            norms = self._norms.setdefault(rule, GrowingArray(np.float64))
            norms.append(float(st.grad_norm) if alive else math.nan)

    def steps(self) -> np.ndarray:
        """The steps recorded so far."""
        return self._steps.view()

    def norms(self) -> Mapping[ScalingRule, np.ndarray]:
        """Rule → its norms at :meth:`steps`."""
        return MappingProxyType({rule: v.view() for rule, v in self._norms.items()})
