"""What the training views show: the latest engine objects plus the recorded gradient norms."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.config import ScalingRule

__all__ = ["TrainResults"]

_EMPTY: Mapping[ScalingRule, np.ndarray] = MappingProxyType({})


# eq=False: the arrays have no boolean equality; views compare parts by identity.
@dataclasses.dataclass(frozen=True, eq=False)
class TrainResults:
    """Immutable state pushed to the training views.

    Attributes
    ----------
    snapshot
        The latest ``engine.training.trainer.TrainSnapshot`` of the current training run, or
        ``None``.
    grad_steps
        Steps of the recorded global gradient norms: one per snapshot received. The engine's
        snapshot carries only the latest norm, so the controller keeps this record (every
        snapshot, not only the ≤ 30 Hz pushed ones).
    grad_norms
        Rule → global gradient norm at ``grad_steps`` (NaN after the rule diverged).
    sweep
        The latest ``engine.training.lr_sweep.LrSweepProgress`` of the current sweep, or ``None``.
    """

    snapshot: Any = None
    grad_steps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=int))
    grad_norms: Mapping[ScalingRule, np.ndarray] = dataclasses.field(default_factory=lambda: _EMPTY)
    sweep: Any = None

    def replace(self, **changes: Any) -> TrainResults:
        """Return a copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)

    @property
    def sweep_result(self) -> Any:
        """The finished ``LrSweepResult`` (``None`` while the sweep runs)."""
        return None if self.sweep is None else self.sweep.result
