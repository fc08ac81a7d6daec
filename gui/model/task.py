"""What the Model tab asks of a real model, and the messages its answer streams back (no Qt).

A :class:`ModelTask` is what Run asked for. :func:`run_task` opens the model (kept open while
its file is unchanged, :class:`~gui.kit.opened_model.OpenedModel`), iterates the engine's sweeps
(:func:`engine.models.iter_sweep`, generators that yield one :class:`~engine.models.SweepPoint`
as soon as it is computed) and the two continuations, and yields each message as it comes. It
runs in the tab's child process (:mod:`gui.model.process`), so that the window never waits
for the interpreter lock while a model computes; this module imports no Qt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from engine.core.memory import set_memory_budget
from engine.core.parallel import limit_threads
from engine.core.scaling import Rule
from engine.core.threads import limit_blas_threads
from engine.models import (
    Continuation,
    Intervention,
    Model,
    ModelError,
    SweepPoint,
    continue_text,
    iter_sweep,
    score_text,
)
from engine.models.capture import UNFORESEEN_ERRORS, unforeseen
from gui.kit.opened_model import OpenedModel

__all__ = ["ContinuationReady", "ModelOpened", "ModelTask", "PointReady", "Progress", "run_task"]


@dataclasses.dataclass(frozen=True)
class ModelTask:
    """One request of the Model tab (immutable; built on the GUI thread from the controls).

    ``kind`` is ``"run"`` (open, α sweep, one-layer sweep, continuations) or ``"continue"``
    (only the continuation under ``chosen_alpha``). ``layers`` are the intervened layers of
    scope ``"layers"``; ``layer`` and ``heads`` those of scope ``"heads"`` (``None``: every head
    of the layer). ``layer_alpha`` is the α of the one-layer sweep (``None``: √head_dim, "no
    scaling" for a 1/√d_k model).
    """

    path: str
    text: str
    alphas: tuple[float, ...]
    kind: str = "run"
    scope: str = "all"
    layers: tuple[int, ...] | None = None
    layer: int = 0
    heads: tuple[int, ...] | None = None
    rule: Rule | None = None
    precision: str = "float32"
    softmax: str = "stable"
    layer_alpha: float | None = None
    chosen_alpha: float = 8.0
    max_tokens: int | None = None
    memory_budget: int | None = None
    new_tokens: int = 32
    top_k: int = 5
    threads: int = 1

    def intervention(self, alpha: float) -> Intervention:
        """The intervention of this task's scope, rule and precision at ``alpha``."""
        if self.scope == "heads":
            layers, heads = (self.layer,), self.heads
        else:
            layers, heads = (self.layers if self.scope == "layers" else None), None
        return Intervention(alpha=alpha, rule=self.rule, layers=layers, heads=heads,
                            precision=self.precision, softmax=self.softmax)

    def second_kind(self) -> str:
        """The second sweep: each layer in turn, or each head of the scope's layer."""
        return "head" if self.scope == "heads" else "layer"


@dataclasses.dataclass(frozen=True)
class ModelOpened:
    """The model opened: its name and shape (the views fix their axes to it)."""

    name: str
    layers: int
    heads: int
    head_dim: int
    causal: bool


@dataclasses.dataclass(frozen=True)
class PointReady:
    """One computed point of a sweep."""

    point: SweepPoint


@dataclasses.dataclass(frozen=True)
class ContinuationReady:
    """The greedy continuation at the model's own scale (``own``) or under the intervention;
    ``continuation`` is None when the model cannot continue a text (``note`` says why)."""

    own: bool
    alpha: float
    continuation: Continuation | None
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Progress:
    """``done`` of ``total`` steps (points and continuations) of the running task."""

    done: int
    total: int


def run_task(opened: OpenedModel, task: ModelTask, cancelled: Callable[[], bool]
             ) -> Iterator[object]:
    """Yield the messages of ``task``: :class:`ModelOpened`, then :class:`PointReady` and
    :class:`Progress` as each point is computed, then :class:`ContinuationReady`.

    Raises
    ------
    ValueError
        Input the user can fix (a :class:`~engine.models.ModelError`, a text over the task's
        memory budget, which becomes the budget of the process it runs in): one line.
    CaptureCancelled
        ``cancelled()`` turned true (the points yielded before stay valid).
    """
    if task.memory_budget is not None:
        # The child process's own budget (the window's explorer keeps its own).
        set_memory_budget(task.memory_budget)
    model = opened.open(task.path, cancelled)
    spec = model.spec
    yield ModelOpened(model.name, spec.layers, spec.heads, spec.head_dim,
                      bool(getattr(spec, "causal", True)))
    runs = task.kind == "run"
    # A "continue" task re-runs only the intervened continuation: the model's own stays.
    continuations = (True, False) if runs else (False,)
    second = spec.heads if task.scope == "heads" else spec.layers
    steps = (len(task.alphas) + second if runs else 0) + len(continuations)
    done = 0
    yield Progress(done, steps)
    with limit_blas_threads(task.threads), limit_threads(task.threads):
        try:
            if runs:
                for point in _points(model, task, cancelled):
                    done += 1
                    yield PointReady(point)
                    yield Progress(done, steps)
            for own in continuations:
                yield _continue(model, task, cancelled, own)
                done += 1
                yield Progress(done, steps)
        except UNFORESEEN_ERRORS as exc:
            raise unforeseen(task.path, exc) from exc


def _points(model: Model, task: ModelTask, cancelled: Callable[[], bool]
            ) -> Iterator[SweepPoint]:
    """The α sweep then the one-layer (or one-head) sweep, point by point."""
    common = {"rule": task.rule, "precision": task.precision, "softmax": task.softmax,
              "top_k": task.top_k, "max_tokens": task.max_tokens, "cancelled": cancelled}
    if task.scope == "heads":
        # A head subset has no prefix-reusing α sweep: each α is scored on its own.
        for index, alpha in enumerate(task.alphas):
            score = score_text(model, task.text, task.intervention(alpha), top_k=task.top_k,
                               max_tokens=task.max_tokens, cancelled=cancelled)
            yield SweepPoint("alpha", index, len(task.alphas), alpha, None, None, score)
        yield from iter_sweep(model, task.text, "head", alpha=task.layer_alpha,
                              layer=task.layer, **common)
        return
    layers = task.layers if task.scope == "layers" else None
    yield from iter_sweep(model, task.text, "alpha", alphas=task.alphas, layers=layers, **common)
    yield from iter_sweep(model, task.text, "layer", alpha=task.layer_alpha, **common)


def _continue(model: Model, task: ModelTask, cancelled: Callable[[], bool],
              own: bool) -> ContinuationReady:
    """The greedy continuation at the model's own scale or under the chosen α."""
    alpha = 1.0 if own else task.chosen_alpha
    intervention = Intervention() if own else task.intervention(alpha)
    try:
        continuation = continue_text(model, task.text, intervention,
                                     max_new_tokens=task.new_tokens, max_tokens=task.max_tokens,
                                     cancelled=cancelled)
    except ModelError as exc:  # e.g. a BERT folder: it scores, but does not continue
        return ContinuationReady(own, alpha, None, str(exc))
    return ContinuationReady(own, alpha, continuation)
