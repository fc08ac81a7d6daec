"""The training controller's run state."""

from __future__ import annotations

import enum

__all__ = ["TrainState"]


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
