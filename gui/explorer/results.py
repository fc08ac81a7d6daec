"""The immutable bundle of results the controller pushes to every view."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.config import AttentionConfig

if TYPE_CHECKING:  # the engine modules are heavier; views only need the names for typing
    from engine.analysis.experiment import AttentionSnapshot
    from engine.analysis.explorer import Computed
    from engine.analysis.sweep import SweepConfig, SweepPoint

__all__ = ["ExplorerResults"]


@dataclasses.dataclass(frozen=True)
class ExplorerResults:
    """Everything the views show for one request, produced off the GUI thread.

    A part that changes makes a new object (``dataclasses.replace``); unchanged parts stay the
    *same* objects, so a view can skip work with an ``is`` check.

    Parameters
    ----------
    config
        The configuration of the request answered (``config.rule`` is the rule shown against
        ``"none"``).
    snapshot
        ``run_experiment(config, rules=every rule)``, or ``None`` before it arrives.
    temperature, temperature_comparison
        The temperature view's T and its ``temperature_comparison`` result (or ``None``).
    sweep_points, sweep_done, length_points, length_done
        Points of the d_k and n sweeps received so far, and whether each has finished.
    correlation
        ``correlation_rms`` result, or ``None``.
    sweep_plan, length_plan
        The two sweeps as planned (``None``: not planned), known before their first point, so
        that views fix their axes and legends up front.
    """

    config: AttentionConfig
    snapshot: AttentionSnapshot | None = None
    temperature: float = 8.0
    temperature_comparison: object | None = None
    sweep_points: tuple[SweepPoint, ...] = ()
    sweep_done: bool = False
    length_points: tuple[SweepPoint, ...] = ()
    length_done: bool = False
    correlation: object | None = None
    sweep_plan: SweepConfig | None = None
    length_plan: SweepConfig | None = None

    @property
    def real_head(self) -> Any:
        """The ``engine.analysis.real_head.RealHead`` the snapshot shows, or ``None`` (random
        q, k, or no snapshot yet)."""
        return None if self.snapshot is None else self.snapshot.real_head

    def computed(self) -> Computed:
        """What these results hold for the engine's next plan to re-use: the fast parts, and
        each sweep as planned once it has finished."""
        from engine.analysis.explorer import Computed

        sweep = self.sweep_plan if self.sweep_done and self.sweep_points else None
        length = self.length_plan if self.length_done and self.length_points else None
        return Computed(self.config, self.snapshot, self.correlation, sweep, length)

    def replace(self, **changes: object) -> ExplorerResults:
        """Return a copy with ``changes`` applied (the other parts are shared, not copied)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
