"""A model's loss as its attention scale changes: :func:`iter_sweep` streams one point at a time.

Three sweeps: α over a grid (all layers, or a set of them), α on one layer at a time, α on
one head of a layer at a time. The model's own layers before the first intervened one run
once per sweep (:class:`~engine.models.scoring.Prefix`), not once per point: a "layer" sweep
runs layer L's own attention with the q, k and v of its intervened point, and carries the
stream on to the next point, so 30 layers cost the layers from L on for each point.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from engine.core.parallel import get_num_threads, run_side_by_side
from engine.core.scaling import Rule
from engine.models.blocks import check_cancel
from engine.models.capture import Model
from engine.models.forward import Pass
from engine.models.intervention import DEFAULT_ALPHAS, Intervention
from engine.models.scoring import Prefix, TextScore, lm_budget, prepare_text, score_prepared
from engine.models.weights import ModelError

__all__ = ["SWEEP_KINDS", "SweepPoint", "iter_sweep"]

#: The sweeps :func:`iter_sweep` runs.
SWEEP_KINDS = ("alpha", "layer", "head")
#: The most points an α grid may have.
MAX_ALPHAS = 1000


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: where it is, what was changed and the score it gave."""

    kind: str
    index: int
    total: int
    alpha: float
    layer: int | None
    head: int | None
    score: TextScore


def _points(model: Model, kind: str, alphas: Sequence[float], alpha: float | None,
            layer: int, layers: tuple[int, ...] | None,
            common: dict[str, object]) -> list[tuple[Intervention, int | None, int | None]]:
    """Each point's intervention and its layer and head (checked before any runs)."""
    spec = model.spec
    if kind not in SWEEP_KINDS:
        raise ModelError(f"sweep kind must be one of {', '.join(SWEEP_KINDS)}; got {kind!r}")
    if kind == "alpha":
        grid = list(alphas)
        if not grid or len(grid) > MAX_ALPHAS:
            raise ModelError(f"alphas: give 1 to {MAX_ALPHAS} values, got {len(grid)}")
        points = [(Intervention(alpha=a, layers=layers, **common), None, None)  # type: ignore[arg-type]
                  for a in grid]
    else:
        a = math.sqrt(spec.head_dim) if alpha is None else alpha
        if kind == "layer":
            points = [(Intervention(alpha=a, layers=(i,), **common), i, None)  # type: ignore[arg-type]
                      for i in range(spec.layers)]
        else:
            if isinstance(layer, bool) or not isinstance(layer, int):
                raise ModelError(f"layer must be a layer number, got {layer!r}")
            points = [(Intervention(alpha=a, layers=(layer,), heads=(h,), **common),  # type: ignore[arg-type]
                       layer, h) for h in range(spec.heads)]
    for intervention, _, _ in points:
        intervention.check(spec.layers, spec.heads)
    return points


def iter_sweep(model: Model, text: str, kind: str = "alpha", *,
               alphas: Sequence[float] = DEFAULT_ALPHAS, alpha: float | None = None,
               layer: int = 0, layers: tuple[int, ...] | None = None,
               rule: Rule | None = None, precision: str = "float32", softmax: str = "stable",
               top_k: int = 5, max_tokens: int | None = None,
               cancelled: Callable[[], bool] | None = None,
               prefix_runs: Callable[[int], None] | None = None,
               memory_budget: int | None = None) -> Iterator[SweepPoint]:
    """Stream the points of a sweep of ``text``'s loss, each as soon as it is computed.

    ``kind``: ``"alpha"`` (one point per value of ``alphas``, applied on ``layers``, None:
    all), ``"layer"`` (α on each layer in turn) or ``"head"`` (α on each query head of
    ``layer``); ``alpha`` is the α of the last two (None: √head_dim, "no scaling" for a
    1/√d_k model). ``rule``, ``precision`` and ``softmax`` are every point's (see
    :class:`Intervention`). ``prefix_runs(layers)``, when given, is told how many layers the
    sweep ran in all once it ends (tests count the prefix reuse with it). ``memory_budget``
    (bytes) bounds every point, as ``set_memory_budget`` does for every run (None: that
    global budget).

    Raises
    ------
    ModelError
        Before any point: a bad kind, α, layer or head, a model without a head, a text of
        fewer than 2 tokens.
    ValueError
        Before any point: a ``memory_budget`` that is not a whole number ≥ 1.
    MemoryBudgetError
        Before any point: when a point would exceed the memory budget (the message names
        both).
    CaptureCancelled
        Between or inside points once ``cancelled()`` is True; the points already yielded
        stay valid.
    """
    budget = lm_budget(memory_budget)  # at the door, before the model reads anything
    common = {"rule": rule, "precision": precision, "softmax": softmax}
    points = _points(model, kind, alphas, alpha, layer, layers, common)
    prepared = prepare_text(model, text, points[0][0], max_tokens=max_tokens,
                            memory_budget=budget)
    run = Pass(model.spec, model.lm_store(), model._names, cancelled)
    prefix = Prefix(run, prepared.ids)
    # the α grid shares its layers' first; the others start at their point's layer
    first = points[0][0].layers
    starts = ([0 if first is None else first[0]] * len(points) if kind == "alpha"
              else [at or 0 for _, at, _ in points])
    # a point that starts before the next one carries the prefix on to it
    advances = [b > a for a, b in itertools.pairwise(starts)] + [False]
    width = _side_by_side(model, len(prepared.ids), budget, len(points))

    def score(index: int, after: threading.Event | None = None,
              advanced: Callable[[], None] | None = None) -> TextScore:
        if after is not None:
            after.wait()  # the point before carries the prefix to this one's start
        return score_prepared(model, prepared, points[index][0], prefix=prefix,
                              start=starts[index], advance=advances[index], top_k=top_k,
                              cancelled=cancelled, advanced=advanced)

    try:
        prefix.advance_to(starts[0])  # once, not by points running side by side
        for first_index in range(0, len(points), width):
            wave = range(first_index, min(first_index + width, len(points)))
            check_cancel(cancelled)
            outcomes = _wave(score, wave, advances)
            for index in wave:  # one at a time, as they are yielded, where not side by side
                outcome = score(index) if outcomes is None else outcomes[index - wave[0]]
                if isinstance(outcome, BaseException):
                    raise outcome
                intervention, at, head = points[index]
                yield SweepPoint(kind, index, len(points), intervention.alpha, at, head,
                                 outcome)
    finally:
        if prefix_runs is not None:
            prefix_runs(prefix.layers_run)


def _side_by_side(model: Model, n: int, budget: int, count: int) -> int:
    """How many points of a sweep run at once: one per engine thread (each on one thread),
    as many as the memory budget holds beside the first."""
    threads = min(get_num_threads(), count)
    if threads < 2:
        return 1
    spare = budget - model.lm_bytes(n, budget=budget)
    return max(1, min(threads, 1 + spare // model.lm_run_bytes(n)))


def _wave(score: Callable[..., TextScore], wave: range,
          advances: list[bool]) -> list[TextScore | Exception] | None:
    """The scores of the points ``wave`` computed side by side, a point stopped by an error
    giving the error; None, having run nothing, for a single point or when another caller
    is splitting."""
    if len(wave) == 1:
        return None
    ready = {index: threading.Event() for index in wave}

    def one(index: int) -> TextScore | Exception:
        try:
            earlier = ready.get(index - 1) if advances[index - 1] else None
            return score(index, earlier, ready[index].set)
        except Exception as exc:  # handed back in order: the caller raises it
            return exc
        finally:
            ready[index].set()  # also when it failed before carrying the prefix on

    return run_side_by_side(one, [(index,) for index in wave])
