"""The immutable bundle of results the controller pushes to every view."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from engine.config import AttentionConfig

if TYPE_CHECKING:  # the engine modules are heavier; views only need the names for typing
    from engine.analysis.experiment import AttentionSnapshot
    from engine.analysis.sweep import SweepConfig, SweepPoint

__all__ = ["ExplorerResults"]


@dataclasses.dataclass(frozen=True)
class ExplorerResults:
    """Everything the views show for one request, produced off the GUI thread.

    A new object is created whenever a part changes (``dataclasses.replace``); parts that did not
    change are the *same* objects as before, so a view can skip work with an ``is`` check.

    Parameters
    ----------
    request_id
        Id of the controller request these results answer (increasing).
    config
        The attention configuration the results were computed for (``config.rule`` is the
        rule shown against ``"none"``).
    snapshot
        ``engine.analysis.experiment.run_experiment(config, rules=every rule)``, or ``None``
        before
        the first part of the request has arrived.
    temperature
        The temperature T of the temperature view.
    temperature_comparison
        ``engine.analysis.experiment.temperature_comparison(...)`` result, or ``None``.
    sweep_points
        Points of the d_k sweep received so far (grows while streaming).
    sweep_done
        True once the sweep has finished (not when it was cancelled).
    length_points, length_done
        Points of the length view's n sweep received so far (grows while streaming), and
        whether it has finished.
    correlation
        ``engine.analysis.correlation.correlation_rms(...)`` result, or ``None``.
    sweep_plan, length_plan
        The d_k sweep and the n sweep whose points these are (``None``: not planned), known
        before their first point arrives: views fix their axes and legends to them, so that
        nothing moves while the points stream in.
    """

    request_id: int
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

    def replace(self, **changes: object) -> ExplorerResults:
        """Return a copy with ``changes`` applied (the other parts are shared, not copied)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
