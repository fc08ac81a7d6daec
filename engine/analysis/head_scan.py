"""Every head of a tensor file, diagnosed in turn, and one head replayed under every rule.

:func:`iter_file_diagnostics` is what ``main.py inspect`` writes and what the GUI's Heads view
streams (one head at a time, so memory stays at one head and a cancel takes effect between
heads). :func:`replay_head` evaluates one head under each scaling rule, for the side-by-side
replay.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.analysis.head_weights import (
    NeedsQK,
    diagnose_weights,
    logit_factors,
    replay_weights_map,
)
from engine.analysis.heads import HeadDiagnostics, _diagnose
from engine.config import ScalingRule
from engine.core.attention import attention_logits
from engine.core.memory import check_memory, get_memory_budget
from engine.core.plan import layer_mask
from engine.core.scaling import Rule
from engine.core.softmax import softmax
from engine.io.tensors import TensorFile, TensorFileError

__all__ = ["HeadRecord", "RuleReplay", "check_replay_memory", "check_weights_rule",
           "every_rule", "iter_file_diagnostics", "replay_file_head", "replay_head"]


@dataclass(frozen=True, slots=True)
class HeadRecord:
    """The diagnostics of one (layer, head) of a file."""

    layer: int
    head: int
    diagnostics: HeadDiagnostics


def iter_file_diagnostics(
    tf: TensorFile, *, rule: Rule | None = None, cancel: threading.Event | None = None
) -> Iterator[HeadRecord]:
    """Diagnose every head of ``tf``, layer by layer, one head read at a time.

    ``rule`` is replayed on every head (None: each layer's own scale and cap). ``cancel`` is
    checked before each head and between the tiles of one; once set, the iteration ends. A
    file of attention weights refuses a rule that needs q and k
    (:class:`~engine.analysis.head_weights.NeedsQK`) before any head is read.

    Raises
    ------
    ValueError
        Prefixed with ``layer L head H:`` when a head cannot be diagnosed (a
        :class:`~engine.io.tensors.TensorFileError` when it cannot be read).
    """
    check_weights_rule(tf, rule)  # refused at once, not at the first head
    for layer in tf.layers:
        for head in range(tf.heads):
            if cancel is not None and cancel.is_set():
                return
            try:
                if tf.kind == "weights":
                    rows, params = _weights_head(tf, layer, head)
                    diagnostics = diagnose_weights(rows, rule=rule, cancel=cancel, **params)
                else:
                    q, k = tf.qk(layer, head)
                    diagnostics = _diagnose(q, k, scale=tf.layer_scale(layer),
                                            cap=tf.layer_cap(layer), rule=rule,
                                            causal=tf.causal, cancel=cancel,
                                            window=tf.layer_window(layer))
            except TensorFileError:
                raise
            except ValueError as exc:
                raise ValueError(f"layer {layer} head {head}: {exc}") from None
            if diagnostics is None:  # cancelled inside the head (a long one)
                return
            yield HeadRecord(layer, head, diagnostics)


def check_weights_rule(tf: TensorFile, rule: Rule | None) -> None:
    """Raise :class:`~engine.analysis.head_weights.NeedsQK` (naming the file) if ``tf`` holds
    attention weights on which ``rule`` cannot be replayed."""
    if tf.kind != "weights" or rule is None:
        return
    try:
        logit_factors(rule, file_scale=tf.scale, d_k=tf.d_k, visible=np.ones(1))
    except NeedsQK as exc:
        raise NeedsQK(f"{tf.path.name}: {exc}", exc.needs) from None


def _weights_head(tf: TensorFile, layer: int, head: int) -> tuple[np.ndarray, dict[str, Any]]:
    """The rows of one head of a weights file (its logits when it has them) and the keywords
    that describe them to :mod:`engine.analysis.head_weights`."""
    scores = tf.scores(layer, head)
    rows = tf.weights(layer, head) if scores is None else scores
    return rows, {"causal": tf.causal, "is_logits": scores is not None,
                  "file_scale": tf.layer_scale(layer), "d_k": tf.d_k,
                  "window": tf.layer_window(layer)}


#: Logits per block of rows of a replay's softmax (2 MiB of float64): a cancel waits for one
#: block instead of the whole n×n softmax.
_SOFTMAX_BLOCK = 1 << 18


def _softmax_rows(logits: np.ndarray, cancel: threading.Event | None) -> np.ndarray | None:
    """The row softmax of (n_q, n_k) ``logits``, block of rows by block; None once cancelled."""
    weights = np.empty_like(logits)
    rows = max(1, _SOFTMAX_BLOCK // logits.shape[-1])
    for start in range(0, logits.shape[0], rows):
        if cancel is not None and cancel.is_set():
            return None
        weights[start:start + rows] = softmax(logits[start:start + rows])
    return weights


def check_replay_memory(n_q: int, n_k: int, rules: int) -> None:
    """Refuse a replay whose (n_q, n_k) weight maps would not fit in the memory budget.

    :func:`replay_head` keeps one float64 map per rule and builds one logit matrix (plus one
    softmax block) at a time; all of them are counted, not one map alone.

    Raises
    ------
    MemoryBudgetError
        Naming the sizes and the largest n that would fit.
    """
    maps = rules + 1  # the kept weights of every rule, and the logits being turned into them
    budget = get_memory_budget()
    largest = math.isqrt(max(budget - _SOFTMAX_BLOCK * 8, 0) // (8 * maps))
    check_memory(maps * n_q * n_k * 8 + _SOFTMAX_BLOCK * 8,
                 lambda: f"the replay of one head under {rules} rules ({maps} float64 maps of "
                 f"{n_q}×{n_k}; n ≤ {largest} fits)")


@dataclass(frozen=True, slots=True)
class RuleReplay:
    """One rule re-applied to a head: its diagnostics (all batch entries) and the (n, n)
    attention weights of the shown batch entry (read-only; masked entries 0).

    A rule that the head's file cannot replay (QK-norm on attention weights) has no
    diagnostics and no weights, and ``missing`` says what it needs: ``"q_and_k"``, ``"d_k"``
    or ``"scale"`` (:class:`~engine.analysis.head_weights.NeedsQK`); it is ``""`` otherwise.
    """

    rule: ScalingRule
    diagnostics: HeadDiagnostics | None
    weights: np.ndarray | None
    missing: str = ""


def every_rule(params: Rule) -> tuple[Rule, ...]:
    """Every scaling rule, in :class:`~engine.config.ScalingRule` order, with the parameters
    of ``params`` (its T, gain, cap, s and f; its kind is one of the rules like the others)."""
    return tuple(params.replace(kind=kind) for kind in ScalingRule)


def replay_head(
    q: np.ndarray,
    k: np.ndarray,
    *,
    causal: bool,
    rules: tuple[Rule, ...],
    batch_entry: int = 0,
    cancel: threading.Event | None = None,
    window: int | None = None,
) -> tuple[RuleReplay, ...]:
    """Re-apply each of ``rules`` (in order; all: :func:`every_rule`) to one head's
    (batch, n, d_k) q and k: diagnostics over every batch entry, weights of ``batch_entry``.

    ``window`` is the layer's sliding window under the causal mask
    (:func:`engine.core.plan.layer_mask`).

    ``cancel`` is checked before each rule, between the tiles of its diagnostics and between
    blocks of its softmax rows; once set, the rules done so far are returned.
    """
    if not 0 <= batch_entry < q.shape[0]:
        raise ValueError(f"batch entry {batch_entry} is out of range (batch {q.shape[0]})")
    check_replay_memory(q.shape[1], k.shape[1], len(rules))
    return _replay_each(
        rules, cancel,
        lambda rule: _diagnose(q, k, rule=rule, causal=causal, cancel=cancel, window=window),
        lambda rule: _softmax_rows(attention_logits(q[batch_entry], k[batch_entry], rule=rule,
                                                    mask=layer_mask(q.shape[1], causal, window)),
                                   cancel))


def _replay_each(
    rules: tuple[Rule, ...], cancel: threading.Event | None,
    diagnose: Callable[[Rule], HeadDiagnostics | None],
    weights_map: Callable[[Rule], np.ndarray | None],
) -> tuple[RuleReplay, ...]:
    """One :class:`RuleReplay` per rule until ``cancel`` is set (or a step returns None)."""
    out = []
    for rule in rules:
        if cancel is not None and cancel.is_set():
            break
        try:
            diagnostics = diagnose(rule)
        except NeedsQK as exc:
            out.append(RuleReplay(rule.kind, None, None, missing=exc.needs))
            continue
        weights = None if diagnostics is None else weights_map(rule)
        if weights is None:  # cancelled inside
            break
        weights.flags.writeable = False
        out.append(RuleReplay(rule.kind, diagnostics, weights))
    return tuple(out)


def replay_file_head(
    tf: TensorFile,
    layer: int,
    head: int,
    *,
    rules: tuple[Rule, ...],
    batch_entry: int = 0,
    cancel: threading.Event | None = None,
) -> tuple[RuleReplay, ...]:
    """:func:`replay_head` on head ``head`` of ``layer`` of ``tf``, read from the file.

    From a file of attention weights, the rules that multiply the logits are replayed exactly
    (:mod:`engine.analysis.head_weights`); the others come back with ``missing`` set.
    """
    if tf.kind != "weights":
        q, k = tf.qk(layer, head)
        if cancel is not None and cancel.is_set():
            return ()
        return replay_head(q, k, causal=tf.causal, rules=rules, batch_entry=batch_entry,
                           cancel=cancel, window=tf.layer_window(layer))
    if not 0 <= batch_entry < tf.batch:
        raise ValueError(f"batch entry {batch_entry} is out of range (batch {tf.batch})")
    check_replay_memory(tf.n, tf.n, len(rules))
    rows, params = _weights_head(tf, layer, head)
    return _replay_each(
        rules, cancel, lambda rule: diagnose_weights(rows, rule=rule, cancel=cancel, **params),
        lambda rule: replay_weights_map(rows[batch_entry], rule=rule, **params))
