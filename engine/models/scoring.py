"""A model's loss on a text, with or without an intervention on its attention: :func:`score_text`.

Causal models: the forward pass runs to the end (:mod:`engine.models.lm_head`), and token t's
loss is −ln p(id[t+1] | ids ≤ t) from the float32 logits (the log-sum-exp summed in float64);
the logits are computed a block of rows at a time, never all (n, vocabulary) at once. BERT
folders with a masked-LM head: the pseudo-log-likelihood, each token masked in turn.

>>> model = open_model("SmolLM2-135M-Instruct.Q4_1.gguf")           # doctest: +SKIP
>>> score_text(model, "The cat sat on the mat.", Intervention(alpha=8)).loss  # doctest: +SKIP
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from engine.config.ranges import check_int
from engine.core.memory import MemoryBudgetError, format_bytes, get_memory_budget
from engine.models.attend import LayerStats
from engine.models.blocks import check_cancel
from engine.models.capture import Model
from engine.models.forward import Pass
from engine.models.intervention import Intervention
from engine.models.masked import score_masked
from engine.models.scores import (
    PreparedText,
    TextLogits,
    TextScore,
    TokenPrediction,
    head_scores,
    make_score,
)
from engine.models.weights import ModelError

__all__ = ["NO_INTERVENTION", "Prefix", "TextLogits", "TextScore", "TokenPrediction",
           "check_lm_memory", "lm_budget", "prepare_text", "score_prepared", "score_text",
           "text_logits"]

#: The model itself (every run's default).
NO_INTERVENTION = Intervention()


def lm_budget(memory_budget: int | None) -> int:
    """The memory budget of one language-model run in bytes: ``memory_budget`` checked (a
    whole number ≥ 1, else a one-line ``ValueError``), or the global one when None
    (:func:`engine.core.memory.get_memory_budget`)."""
    if memory_budget is None:
        return get_memory_budget()
    return check_int("memory_budget", memory_budget, integral_floats=False)


def check_lm_memory(model: Model, n: int, cached_tokens: int = 0,
                    budget: int | None = None, logits_rows: int = 0) -> None:
    """Raise :class:`MemoryBudgetError` (one line) when :meth:`Model.lm_bytes`, plus
    ``logits_rows`` rows of float32 logits a run returns, exceeds ``budget`` (bytes,
    checked; None: the global budget)."""
    budget = lm_budget(budget)
    need = model.lm_bytes(n, cached_tokens, budget)
    if logits_rows:
        need += 4 * logits_rows * model.lm_head().vocab
    if need > budget:
        raise MemoryBudgetError(f"running {model.name} on {n:,} tokens needs about "
                                f"{format_bytes(need)}, more than the memory limit of "
                                f"{format_bytes(budget)}; use fewer tokens or raise the limit")


def prepare_text(model: Model, text: str, intervention: Intervention | None = None, *,
                 max_tokens: int | None = None, extra_tokens: int = 0,
                 least: int = 2, memory_budget: int | None = None,
                 all_logits: bool = False) -> PreparedText:
    """``text``'s tokens, after the checks every run makes: a head, the intervention's
    layers and heads, at least ``least`` tokens, ids the weights embed, the memory budget
    (``memory_budget`` bytes, None: the global one; ``extra_tokens``: a continuation's new
    tokens, in its KV cache; ``all_logits``: the run returns every position's logits). The
    run's weights follow that budget (:meth:`Model.lm_store`).

    Raises
    ------
    ModelError
        One line naming what is wrong.
    MemoryBudgetError
        When the run would exceed the memory budget.
    """
    budget = lm_budget(memory_budget)
    model.lm_store(budget)  # kept in float32 or mapped, as this run's budget allows
    vocab = model.lm_head().vocab
    if intervention is not None:
        intervention.check(model.spec.layers, model.spec.heads)
    encoded = model._encode(text, max_tokens, model.tokenizer.encode_text)
    ids = np.asarray(encoded.ids, dtype=np.int64)
    if len(ids) < least:
        raise ModelError(f"the text gives {len(ids)} token: this needs at least {least} "
                         "tokens")
    if ids.max() >= min(model.vocab_size, vocab):
        raise ModelError(f"the tokenizer gives id {ids.max()}, but the model has "
                         f"{min(model.vocab_size, vocab)} tokens: the tokenizer does not "
                         "belong to these weights")
    check_lm_memory(model, len(ids), extra_tokens, budget, len(ids) if all_logits else 0)
    return PreparedText(ids, encoded.tokens)


class Prefix:
    """The model's own stream entering layer :attr:`layer`, and the statistics of the layers
    before it: what the points of a sweep whose intervention starts at or after that layer
    share (they run the layers before it once)."""

    def __init__(self, run: Pass, ids: np.ndarray) -> None:
        self.run, self.layer, self.x = run, 0, run.embed(ids)
        self.stats: list[LayerStats] = []
        #: Layers run (a sweep's cost, which tests count).
        self.layers_run = 0
        self._counting = threading.Lock()  # points side by side count their layers here

    def ran(self) -> None:
        """Count one more layer run."""
        with self._counting:
            self.layers_run += 1

    def advance_to(self, layer: int, step: Callable[[], None] | None = None) -> None:
        """Run the model's own layers up to ``layer`` (``step()`` after each)."""
        while self.layer < layer:
            self.x = self.run.layer(self.layer, self.x, stats=self.stats)
            self.layer += 1
            self.ran()
            if step is not None:
                step()


def _layers(run: Pass, prefix: Prefix, intervention: Intervention, *, start: int | None,
            advance: bool, progress: Callable[[int, int], None] | None,
            advanced: Callable[[], None] | None = None
            ) -> tuple[np.ndarray, list[LayerStats], int]:
    """The stream leaving the last layer under ``intervention``, every layer's stats and
    the steps ``progress`` counts (the layers run here and the head).

    The layers before ``start`` (default: the first intervened one) come from ``prefix``;
    with ``advance``, the prefix also moves past that layer, sharing its q, k and v with
    this run, and ``advanced()`` is called once it has (this run no longer reads it).
    """
    layers = run.spec.layers
    start = min(intervention.first_layer(layers), layers) if start is None else start
    if prefix.layer > start:
        raise ValueError(f"the prefix has passed layer {start}: it cannot start there")
    total, done = layers - prefix.layer + 1, [0]

    def step() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    prefix.advance_to(start, step)
    x, stats = prefix.x, list(prefix.stats)
    for i in range(start, layers):
        w = run.weights(i)
        q, k, v = run.qkv(i, x, w, repeat=False)
        if advance and i == start == prefix.layer:
            prefix.x = run.rest(x, run.attend(i, q, k, v, stats=prefix.stats), w)
            prefix.layer += 1
            if advanced is not None:
                advanced()
        change = intervention.change_at(i)
        x = run.rest(x, run.attend(i, q, k, v, change=change, stats=stats), w)
        prefix.ran()
        step()
    return x, stats, total


def score_prepared(model: Model, prepared: PreparedText, intervention: Intervention, *,
                   prefix: Prefix | None = None, start: int | None = None,
                   advance: bool = False, top_k: int = 5,
                   progress: Callable[[int, int], None] | None = None,
                   cancelled: Callable[[], bool] | None = None,
                   advanced: Callable[[], None] | None = None) -> TextScore:
    """:func:`score_text` of checked tokens (a sweep's points share ``prefix``, each
    starting at layer ``start``: see :func:`_layers`)."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ModelError(f"top k must be a whole number ≥ 0, got {top_k!r}")
    if model.spec.family == "bert":
        return score_masked(model, prepared, intervention, top_k=top_k, progress=progress,
                            cancelled=cancelled)
    run = prefix.run if prefix is not None else Pass(model.spec, model.lm_store(),
                                                     model._names, cancelled)
    prefix = prefix if prefix is not None else Prefix(run, prepared.ids)
    x, stats, steps = _layers(run, prefix, intervention, start=start, advance=advance,
                              progress=progress, advanced=advanced)
    lm = model.lm_head()
    targets = np.append(prepared.ids[1:], -1)
    losses, top_ids, top_p = head_scores(lm, lm.hidden(x), targets, top_k, run.cancelled)
    if progress is not None:  # the layers from the first run here, then the head
        progress(steps, steps)
    return make_score(model, prepared, intervention, losses[:-1].copy(), stats, top_ids,
                      top_p, bool(np.isfinite(x).all()))


def score_text(model: Model, text: str, intervention: Intervention = NO_INTERVENTION, *,
               top_k: int = 5, max_tokens: int | None = None,
               progress: Callable[[int, int], None] | None = None,
               cancelled: Callable[[], bool] | None = None,
               memory_budget: int | None = None) -> TextScore:
    """The model's loss on ``text`` under ``intervention`` (default: none), per token and in
    mean, with each layer's attention entropy and saturated share and the top-k predictions.
    A BERT folder's is the masked-LM pseudo-log-likelihood (:func:`score_masked`).

    ``memory_budget`` (bytes) bounds the run, as ``set_memory_budget`` does for every run
    (None: that global budget).

    Raises
    ------
    ModelError
        A model without a head, a layer or head it does not have, a text of fewer than 2
        tokens or longer than the model reads.
    ValueError
        A ``memory_budget`` that is not a whole number ≥ 1.
    MemoryBudgetError
        When the run would exceed the memory budget (the message names both).
    CaptureCancelled
        Once ``cancelled()`` returned True.
    """
    budget = lm_budget(memory_budget)  # at the door, before the model reads anything
    prepared = prepare_text(model, text, intervention, max_tokens=max_tokens,
                            memory_budget=budget)
    return score_prepared(model, prepared, intervention, top_k=top_k, progress=progress,
                          cancelled=cancelled)


def text_logits(model: Model, text: str, intervention: Intervention = NO_INTERVENTION, *,
                max_tokens: int | None = None,
                progress: Callable[[int, int], None] | None = None,
                cancelled: Callable[[], bool] | None = None,
                memory_budget: int | None = None) -> TextLogits:
    """A causal model's next-token logits at every position of ``text`` under
    ``intervention`` (default: none): one forward pass to the head, as transformers'
    ``model(ids).logits``, without what :func:`score_text` takes from them (losses, top-k,
    attention statistics). A text of one token gives the logits of the token after it.

    ``progress(done, total)`` is called after each layer and the head; the memory guard
    counts the (n, vocabulary) float32 logits returned.

    Raises
    ------
    ModelError
        A BERT folder (its masked-LM scores come from :func:`score_text`), a model without
        a head, a layer or head it does not have, an empty text or one longer than the model
        reads.
    ValueError
        A ``memory_budget`` that is not a whole number ≥ 1.
    MemoryBudgetError
        When the run would exceed the memory budget.
    CaptureCancelled
        Once ``cancelled()`` returned True.
    """
    budget = lm_budget(memory_budget)
    if not model.spec.causal:
        raise ModelError(f"{model.name} is a masked language model (BERT): it has no "
                         "next-token logits (score_text gives its pseudo-log-likelihood)")
    prepared = prepare_text(model, text, intervention, max_tokens=max_tokens, least=1,
                            memory_budget=budget, all_logits=True)
    run = Pass(model.spec, model.lm_store(), model._names, cancelled)
    layers = model.spec.layers
    x = run.embed(prepared.ids)
    for i in range(layers):
        x = run.layer(i, x, change=intervention.change_at(i))
        if progress is not None:
            progress(i + 1, layers + 1)
    check_cancel(cancelled)
    lm = model.lm_head()
    logits = lm.logits(lm.hidden(x))
    logits.flags.writeable = False
    if progress is not None:
        progress(layers + 1, layers + 1)
    return TextLogits(intervention, tuple(int(i) for i in prepared.ids), prepared.tokens,
                      logits)
