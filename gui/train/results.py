"""What the training views show: the latest engine objects."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["TrainResults"]

# eq=False: views compare parts by identity.
@dataclasses.dataclass(frozen=True, eq=False)
class TrainResults:
    """Immutable state pushed to the training views.

    Attributes
    ----------
    snapshot
        The latest ``engine.training.trainer.TrainSnapshot`` of the current training run, or
        ``None``.
    sweep
        The latest ``engine.training.lr_sweep.LrSweepProgress`` of the current sweep, or ``None``.
    """

    snapshot: Any = None
    sweep: Any = None

    def replace(self, **changes: Any) -> TrainResults:
        """Return a copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    @property
    def sweep_result(self) -> Any:
        """The finished ``LrSweepResult`` (``None`` while the sweep runs)."""
        return None if self.sweep is None else self.sweep.result
