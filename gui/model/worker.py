"""The Model tab's worker: opens a model and streams its α sweep, its one-layer-at-a-time sweep
and the two continuations, off the GUI thread.

A :class:`ModelTask` is what the Run button asked for. The worker opens the model (kept open
while its file is unchanged, :class:`~gui.kit.opened_model.OpenedModel`), then iterates the
engine's sweeps (:func:`engine.models.iter_sweep`, generators that yield one
:class:`~engine.models.SweepPoint` as soon as it is computed) and reports every point at once:
the controller shows them as they come. Cancelling stops the engine inside the point it is
computing (its ``cancelled`` callback); the points reported before stay valid. A ``"continue"``
task only continues the text under a newly chosen α.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from engine.core.scaling import Rule
from engine.core.threads import limit_blas_threads
from engine.models import (
    CaptureCancelled,
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
from gui.kit.job_worker import JobWorker
from gui.kit.jobs import Job
from gui.kit.opened_model import OpenedModel

__all__ = ["SCOPES", "ContinuationReady", "ModelOpened", "ModelTask", "ModelWorker", "PointReady",
           "Progress"]

#: Where the intervention applies: every layer, the layers typed, or heads of one layer.
SCOPES = ("all", "layers", "heads")


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


class ModelWorker(JobWorker):
    """Runs :class:`ModelTask` jobs in the thread it was moved to; never touches widgets."""

    def __init__(self) -> None:
        super().__init__()
        self._opened = OpenedModel()

    def execute(self, job: Job[ModelTask]) -> None:
        """Open the model, then report each sweep point and continuation as it is computed."""
        task = job.task
        try:
            model = self._opened.open(task.path, job.cancel.is_set)
        except CaptureCancelled:
            return
        spec = model.spec
        self.report(ModelOpened(model.name, spec.layers, spec.heads, spec.head_dim,
                                bool(getattr(spec, "causal", True))))
        second = (spec.heads if task.scope == "heads" else spec.layers)
        runs = task.kind == "run"
        # A "continue" task re-runs only the intervened continuation: the model's own stays.
        continuations = (True, False) if runs else (False,)
        steps = (len(task.alphas) + second if runs else 0) + len(continuations)
        done = 0
        self.report(Progress(done, steps))
        # The threads the user allows (the GUI thread keeps a core on a two-core machine).
        with limit_blas_threads(task.threads):
            try:
                if runs:
                    for point in self._points(model, task, job):
                        done += 1
                        self.report(PointReady(point))
                        self.report(Progress(done, steps))
                for own in continuations:
                    self.report(self._continue(model, task, job, own))
                    done += 1
                    self.report(Progress(done, steps))
            except CaptureCancelled:
                return
            except UNFORESEEN_ERRORS as exc:
                raise unforeseen(task.path, exc) from exc

    def _points(self, model: Model, task: ModelTask, job: Job[ModelTask]
                ) -> Iterator[SweepPoint]:
        """The α sweep then the one-layer (or one-head) sweep, point by point."""
        common = {"rule": task.rule, "precision": task.precision, "softmax": task.softmax,
                  "top_k": task.top_k, "max_tokens": task.max_tokens,
                  "cancelled": job.cancel.is_set}
        if task.scope == "heads":
            # A head subset has no prefix-reusing α sweep: score each α on its own.
            for index, alpha in enumerate(task.alphas):
                score = score_text(model, task.text, task.intervention(alpha), top_k=task.top_k,
                                   max_tokens=task.max_tokens, cancelled=job.cancel.is_set)
                yield SweepPoint("alpha", index, len(task.alphas), alpha, None, None, score)
            yield from iter_sweep(model, task.text, "head", alpha=task.layer_alpha,
                                  layer=task.layer, **common)
            return
        layers = task.layers if task.scope == "layers" else None
        yield from iter_sweep(model, task.text, "alpha", alphas=task.alphas, layers=layers,
                              **common)
        yield from iter_sweep(model, task.text, "layer", alpha=task.layer_alpha, **common)

    def _continue(self, model: Model, task: ModelTask, job: Job[ModelTask],
                  own: bool) -> ContinuationReady:
        """The greedy continuation at the model's own scale or under the chosen α."""
        alpha = 1.0 if own else task.chosen_alpha
        intervention = Intervention() if own else task.intervention(alpha)
        try:
            continuation = continue_text(model, task.text, intervention,
                                         max_new_tokens=task.new_tokens,
                                         max_tokens=task.max_tokens,
                                         cancelled=job.cancel.is_set)
        except ModelError as exc:  # e.g. a BERT folder: it scores, but does not continue
            return ContinuationReady(own, alpha, None, str(exc))
        return ContinuationReady(own, alpha, continuation)
