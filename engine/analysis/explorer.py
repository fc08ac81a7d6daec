"""The explorer's plan: which parts of the interactive explorer to compute or reuse for a change.

The parts are the *snapshot* (random q, k or a real head's), the *correlation* and
*temperature* comparisons, the d_k *sweep* and the length view's n sweep; each depends on
only some fields, so a change recomputes only what it affects. :func:`plan_full` and
:func:`plan_temperature` compare the request with what is :class:`Computed` and return an
:class:`ExplorerPlan`; :func:`iter_plan` runs it and yields one :class:`PartReady` per part (per
point for sweeps). Re-used parts are the *same* objects, so a view can skip redrawing with
``is``. The correlation and the sweeps are theory views: they stay random for a real head.
"""

from __future__ import annotations

import dataclasses
import enum
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from engine.config import AttentionConfig, ScalingRule, SweepConfig, SweepParam

if TYPE_CHECKING:
    from engine.analysis.experiment import AttentionSnapshot
    from engine.analysis.real_head import HeadRef

__all__ = [
    "ALL_RULES",
    "CORRELATION_D_K",
    "CORRELATION_SAMPLES_CAP",
    "DEFAULT_SWEEP_SAMPLES_CAP",
    "DEFAULT_SWEEP_VALUES",
    "ComputeCorrelation",
    "ComputeSnapshot",
    "ComputeTemperature",
    "Computed",
    "ExplorerPlan",
    "Part",
    "PartReady",
    "PlanStep",
    "Reuse",
    "StreamSweep",
    "compute_correlation",
    "correlation_key",
    "heatmap_rules",
    "iter_plan",
    "plan_full",
    "plan_temperature",
    "snapshot_head",
    "sweep_config_for",
]

#: Every scaling rule; the snapshot always holds all of them so that switching views is free.
ALL_RULES: tuple[ScalingRule, ...] = tuple(ScalingRule)
#: d_k values of the correlation comparison (its sampling is exact and cheap at any d_k).
CORRELATION_D_K: tuple[int, ...] = tuple(2**i for i in range(13))
#: Upper bound of (q, k) pairs per d_k for the correlation comparison.
CORRELATION_SAMPLES_CAP = 20_000
#: d_k values of the streamed sweep: powers of two 1..1024.
DEFAULT_SWEEP_VALUES: tuple[int, ...] = tuple(2**i for i in range(11))
#: Upper bound of query rows per sweep point (the explorer's sample count can be much larger).
DEFAULT_SWEEP_SAMPLES_CAP = 2000
_SWEEP_RULES = (ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR)


def heatmap_rules(rule: ScalingRule | str) -> tuple[ScalingRule, ScalingRule]:
    """The heatmap's pair: ``rule`` next to ``none``, or ``none`` next to 1/√d_k, not to itself.

    The snapshot stores the full weights of these two rules only; of the others the views show
    one row, which :meth:`~engine.analysis.experiment.RuleView.row_weights` computes alone.
    """
    rule = ScalingRule(rule)
    return rule, ScalingRule.SQRT if rule is ScalingRule.NONE else ScalingRule.NONE


class Part(enum.Enum):
    """A part of the explorer's results."""

    SNAPSHOT = "snapshot"
    CORRELATION = "correlation"
    TEMPERATURE = "temperature"
    SWEEP_POINT = "sweep_point"
    """One point of the streamed sweep (the sweep yields one item per point)."""
    LENGTH_POINT = "length_point"
    """One point of the length view's streamed n sweep."""


# ------------------------------------------------------------------------------- the parts
def sweep_config_for(
    config: AttentionConfig,
    values: Sequence[int] = DEFAULT_SWEEP_VALUES,
    samples_cap: int = DEFAULT_SWEEP_SAMPLES_CAP,
) -> SweepConfig:
    """The d_k sweep of the laws and gradient views for ``config`` (its n, ρ, seed and rule
    parameters): rules ``none``, ``sqrt``, ``linear`` and ``config.rule``, at most
    ``samples_cap`` query rows per d_k of ``values``."""
    return SweepConfig.following(config, param=SweepParam.D_K, values=values,
                                 rules=_SWEEP_RULES, samples_cap=samples_cap,
                                 n_tokens=config.n_tokens, precision_grid=True)


def correlation_key(config: AttentionConfig) -> tuple[float, int, int]:
    """The fields the correlation comparison depends on: ``(ρ, capped samples, seed)``."""
    return (config.rho, min(config.samples, CORRELATION_SAMPLES_CAP), config.seed)


def compute_correlation(config: AttentionConfig) -> dict[str, Any]:
    """Return the q–k correlation RMS comparison for ``config``'s ρ, samples and seed."""
    from engine.analysis.correlation import correlation_rms

    rho, samples, seed = correlation_key(config)
    return correlation_rms(CORRELATION_D_K, rho, samples, seed)


def snapshot_head(snapshot: object) -> HeadRef | None:
    """The :class:`HeadRef` whose q, k a snapshot holds (``None``: random q, k)."""
    real = getattr(snapshot, "real_head", None)
    return None if real is None else real.ref


# -------------------------------------------------------------------------------- the plan
@dataclasses.dataclass(frozen=True)
class Computed:
    """What the explorer has already computed for ``config`` (the parts a plan may re-use):
    its snapshot and correlation comparison, and the d_k and length sweeps whose points are all
    there (finished, not cancelled); ``None`` for a part not there."""

    config: AttentionConfig
    snapshot: AttentionSnapshot | None = None
    correlation: object | None = None
    sweep: SweepConfig | None = None
    length: SweepConfig | None = None


@dataclasses.dataclass(frozen=True)
class ComputeSnapshot:
    """Compute the snapshot of ``config`` with every rule (on ``head``'s q, k if given).

    ``loaded`` is ``head`` already read (a :class:`~engine.analysis.real_head.RealHead` of the
    snapshot on screen), so that moving a slider does not read the file again.
    """

    config: AttentionConfig
    head: HeadRef | None = None
    loaded: Any = dataclasses.field(default=None, compare=False)
    part: Part = dataclasses.field(default=Part.SNAPSHOT, init=False)


@dataclasses.dataclass(frozen=True)
class ComputeCorrelation:
    """Compute the correlation comparison of ``config``."""

    config: AttentionConfig
    part: Part = dataclasses.field(default=Part.CORRELATION, init=False)


@dataclasses.dataclass(frozen=True)
class ComputeTemperature:
    """Compute the temperature comparison, re-using the plan's snapshot of ``config`` and
    ``head`` if any (``head``: a real head's q, k, else random ones)."""

    config: AttentionConfig
    temperature: float
    head: HeadRef | None = None
    part: Part = dataclasses.field(default=Part.TEMPERATURE, init=False)


@dataclasses.dataclass(frozen=True)
class StreamSweep:
    """Run ``sweep`` (the d_k sweep, or the length view's n sweep when ``part`` is
    ``LENGTH_POINT``), one :class:`PartReady` per point."""

    sweep: SweepConfig
    part: Part = Part.SWEEP_POINT


@dataclasses.dataclass(frozen=True)
class Reuse:
    """Keep the part already computed; ``value`` is yielded again (same object).

    A re-used sweep yields nothing: its points are already shown.
    """

    part: Part
    value: object = dataclasses.field(default=None, compare=False)


PlanStep = ComputeSnapshot | ComputeCorrelation | ComputeTemperature | StreamSweep | Reuse


@dataclasses.dataclass(frozen=True)
class ExplorerPlan:
    """The steps of one explorer request for ``config``, each part at most once, in the order
    :func:`iter_plan` runs them, on ``head``'s q, k (``None``: random ones). ``snapshot`` is
    one of ``config`` a temperature step may use when the plan computes none (``None``: q, k
    are drawn or loaded again)."""

    config: AttentionConfig
    steps: tuple[PlanStep, ...]
    snapshot: AttentionSnapshot | None = dataclasses.field(default=None, compare=False)
    head: HeadRef | None = None

    def sweep(self, part: Part = Part.SWEEP_POINT) -> SweepConfig | None:
        """The sweep this plan streams for ``part`` (the d_k sweep by default), or ``None``."""
        return next((step.sweep for step in self.steps
                     if isinstance(step, StreamSweep) and step.part is part), None)

    def length(self) -> SweepConfig | None:
        """The length view's n sweep this plan streams, or ``None``."""
        return self.sweep(Part.LENGTH_POINT)


def plan_full(
    config: AttentionConfig,
    temperature: float,
    computed: Computed | None = None,
    *,
    sweep_values: Sequence[int] = DEFAULT_SWEEP_VALUES,
    sweep_samples_cap: int = DEFAULT_SWEEP_SAMPLES_CAP,
    head: HeadRef | None = None,
    length_values: Sequence[int] = (),
) -> ExplorerPlan:
    """Plan every part for ``config``, re-using from ``computed`` what does not change.

    The snapshot and the temperature comparison (at ``temperature``) are always computed, on
    ``head``'s q, k when given (a head matching ``config``:
    :func:`~engine.analysis.real_head.explorer_config_for`); the correlation and the sweeps
    (:func:`sweep_config_for`; ``length_values``: the length view's n, none when empty) are
    re-used while their inputs are unchanged.
    """
    loaded = None
    if head is not None and computed is not None and snapshot_head(computed.snapshot) == head:
        loaded = getattr(computed.snapshot, "real_head", None)
    steps: list[PlanStep] = [ComputeSnapshot(config, head, loaded)]
    if (
        computed is not None and computed.correlation is not None
        and correlation_key(computed.config) == correlation_key(config)
    ):
        steps.append(Reuse(Part.CORRELATION, computed.correlation))
    else:
        steps.append(ComputeCorrelation(config))
    steps.append(ComputeTemperature(config, float(temperature), head))
    sweep = sweep_config_for(config, sweep_values, sweep_samples_cap)
    if computed is not None and computed.sweep == sweep:
        steps.append(Reuse(Part.SWEEP_POINT))
    else:
        steps.append(StreamSweep(sweep))
    if length_values:
        from engine.analysis.length import length_sweep_config

        length = length_sweep_config(config, length_values)
        if computed is not None and computed.length == length:
            steps.append(Reuse(Part.LENGTH_POINT))
        else:
            steps.append(StreamSweep(length, Part.LENGTH_POINT))
    return ExplorerPlan(config, tuple(steps), head=head)


def plan_temperature(
    config: AttentionConfig, temperature: float, snapshot: AttentionSnapshot | None = None,
    *, head: HeadRef | None = None,
) -> ExplorerPlan:
    """Plan only the temperature comparison (the temperature slider moved).

    ``snapshot`` is re-used for its raw scores only if it belongs to ``config`` and to the
    same q, k source (``head``, or random q, k when ``None``): a comparison never mixes two
    configurations, nor a real head with random q, k.
    """
    if snapshot is not None and (
        getattr(snapshot, "config", None) != config or snapshot_head(snapshot) != head
    ):
        snapshot = None
    return ExplorerPlan(config, (ComputeTemperature(config, float(temperature), head),),
                        snapshot, head)


# --------------------------------------------------------------------------- running a plan
@dataclasses.dataclass(frozen=True)
class PartReady:
    """One part of a plan: ``value`` is a snapshot, a comparison or a ``SweepPoint``."""

    part: Part
    value: Any


def iter_plan(plan: ExplorerPlan, cancel: threading.Event | None = None) -> Iterator[PartReady]:
    """Run ``plan``, yielding one :class:`PartReady` per part and per sweep point.

    ``cancel`` is checked between steps and inside the sweep (within one chunk of work); when
    it is set the generator returns without yielding the unfinished part. One snapshot or
    comparison is a single engine call and is not interrupted.

    Raises
    ------
    ValueError
        From the engine, e.g. ``TensorFileError`` when a real head cannot be read. The
        snapshot's memory is not checked: the request's door did (the explorer's controller,
        :func:`~engine.analysis.experiment.check_snapshot_memory`).
    """
    from engine.analysis.experiment import run_experiment, temperature_comparison
    from engine.analysis.real_head import load_head
    from engine.analysis.sweep import iter_sweep
    from engine.core.parallel import get_num_threads

    snapshot = plan.snapshot
    for step in plan.steps:
        if cancel is not None and cancel.is_set():
            return
        if isinstance(step, Reuse):
            if step.part not in (Part.SWEEP_POINT, Part.LENGTH_POINT):
                yield PartReady(step.part, step.value)
        elif isinstance(step, ComputeSnapshot):
            real = step.loaded
            if real is None and step.head is not None:
                real = load_head(step.head)
            snapshot = run_experiment(step.config, rules=ALL_RULES, real_head=real,
                                      threads=get_num_threads(),
                                      stored_weights=heatmap_rules(step.config.rule),
                                      memory_checked=True)
            yield PartReady(Part.SNAPSHOT, snapshot)
        elif isinstance(step, ComputeCorrelation):
            yield PartReady(Part.CORRELATION, compute_correlation(step.config))
        elif isinstance(step, ComputeTemperature):
            usable = snapshot if (
                snapshot is not None and snapshot.config == step.config
                and snapshot_head(snapshot) == step.head
            ) else None
            if usable is not None:
                real = usable.real_head
            else:
                real = None if step.head is None else load_head(step.head)
            yield PartReady(Part.TEMPERATURE, temperature_comparison(
                step.config, step.temperature, snapshot=usable, real_head=real))
        else:
            for point in iter_sweep(step.sweep, cancel=cancel):
                yield PartReady(step.part, point)
