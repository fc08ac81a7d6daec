"""Greedy continuation of a text by a causal model, with a KV cache: :func:`continue_text`.

The prompt runs once; each new token then runs alone through every layer, its query attending
to the cached keys and values of all earlier positions (its rotary position and the layer's
sliding window as in the full pass), so that each step costs one token's work, not the
whole text's again. An intervention changes every step's attention as it changes a score's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.core.parallel import OneRowWays
from engine.models.capture import Model
from engine.models.forward import Pass
from engine.models.intervention import Intervention
from engine.models.scoring import NO_INTERVENTION, lm_budget, prepare_text
from engine.models.weights import ModelError

__all__ = ["MAX_NEW_TOKENS", "Continuation", "continue_text"]

#: The most new tokens one continuation may ask for.
MAX_NEW_TOKENS = 4096


@dataclass(frozen=True)
class Continuation:
    """A prompt and the tokens the model added to it greedily."""

    intervention: Intervention
    prompt: str
    prompt_ids: tuple[int, ...]
    new_ids: tuple[int, ...]
    new_tokens: tuple[str, ...]
    text: str


class _Cache:
    """Each layer's keys and values of the positions run so far, (kv heads, positions, d)."""

    def __init__(self, layers: int, kv_heads: int, length: int, head_dim: int) -> None:
        self.k = np.empty((layers, kv_heads, length, head_dim), dtype=np.float32)
        self.v = np.empty_like(self.k)

    def add(self, layer: int, start: int, k: np.ndarray,
            v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Store positions start … of ``k`` and ``v``; return all keys and values so far."""
        end = start + k.shape[1]
        self.k[layer, :, start:end], self.v[layer, :, start:end] = k, v
        return self.k[layer, :, :end], self.v[layer, :, :end]


def _step(run: Pass, cache: _Cache, ids: np.ndarray, start: int,
          intervention: Intervention) -> np.ndarray:
    """The stream leaving the last layer for tokens ``ids`` at positions start …"""
    x = run.embed(ids, start)
    for i in range(run.spec.layers):
        w = run.weights(i)
        q, k, v = run.qkv(i, x, w, start, repeat=False)
        k, v = cache.add(i, start, k, v)
        attended = run.attend(i, q, k, v, offset=start, change=intervention.change_at(i))
        x = run.rest(x, attended, w)
    return x


def continue_text(model: Model, text: str, intervention: Intervention = NO_INTERVENTION, *,
                  max_new_tokens: int = 32, max_tokens: int | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  cancelled: Callable[[], bool] | None = None,
                  memory_budget: int | None = None) -> Continuation:
    """Continue ``text`` greedily by up to ``max_new_tokens`` tokens (fewer at the model's
    end-of-text token or its last position) under ``intervention``. ``memory_budget``
    (bytes) bounds the run with its KV cache, as ``set_memory_budget`` does for every run
    (None: that global budget).

    Raises
    ------
    ModelError
        A model that is not causal (BERT) or has no head, a bad token count, layer or head.
    ValueError
        A ``memory_budget`` that is not a whole number ≥ 1.
    MemoryBudgetError
        When the run with its KV cache would exceed the memory budget (the message names
        both).
    CaptureCancelled
        Once ``cancelled()`` returned True.
    """
    budget = lm_budget(memory_budget)  # at the door, before the model reads anything
    spec = model.spec
    if not spec.causal:
        raise ModelError(f"{model.name} is a masked language model (BERT): it fills in "
                         "masked tokens and cannot continue a text")
    if (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
            or not 1 <= max_new_tokens <= MAX_NEW_TOKENS):
        raise ModelError(f"max new tokens must be a whole number from 1 to {MAX_NEW_TOKENS}, "
                         f"got {max_new_tokens!r}")
    prepared = prepare_text(model, text, intervention, max_tokens=max_tokens,
                            extra_tokens=max_new_tokens, least=1, memory_budget=budget)
    ids = prepared.ids
    steps = min(max_new_tokens, spec.max_positions - len(ids))
    if steps < 1:
        raise ModelError(f"the text fills all {spec.max_positions:,} positions {model.name} "
                         "reads: no room for a new token")
    runs = {split: Pass(spec, model.lm_store(), model._names, cancelled, split_rows=split)
            for split in (False, True)}
    lm = model.lm_head()
    cache = _Cache(spec.layers, spec.kv_heads, len(ids) + steps, spec.head_dim)
    x = _step(runs[False], cache, ids, 0, intervention)[-1:]
    new: list[int] = []
    # Each new token multiplies one row by every weight matrix: whether its products go faster
    # split over the engine's threads or on BLAS's depends on the machine, so the first steps
    # time both (the same bits either way).
    ways = OneRowWays()
    for done in range(steps):
        with ways.step() as split:
            token = int(np.argmax(lm.logits(lm.hidden(x), split_rows=split)[0]))
            new.append(token)
            if progress is not None:
                progress(done + 1, steps)
            if token in model.end_ids or done + 1 == steps:
                break
            x = _step(runs[split], cache, np.array([token]), len(ids) + done, intervention)
    tokenizer = model.tokenizer
    return Continuation(intervention, text, tuple(int(i) for i in ids), tuple(new),
                        tuple(tokenizer.token_texts(new)), tokenizer.decode(new))
