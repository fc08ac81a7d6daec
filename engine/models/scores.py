"""What scoring a text gives: :class:`TextScore` and its :class:`TokenPrediction` rows, and the
losses and top-k tokens of a block of positions computed from the head's logits
(:func:`head_scores`), shared by the causal scoring and BERT's pseudo-log-likelihood."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.models.attend import LayerStats
from engine.models.blocks import check_cancel
from engine.models.capture import Model
from engine.models.intervention import Intervention
from engine.models.lm_head import LOGIT_BLOCK_BYTES, LmHead

__all__ = ["PreparedText", "TextLogits", "TextScore", "TokenPrediction", "head_scores",
           "make_score"]


@dataclass(frozen=True)
class TokenPrediction:
    """One of the model's most likely tokens at a position."""

    token_id: int
    text: str
    probability: float


@dataclass(frozen=True)
class TextScore:
    """A model's loss on a text under one :class:`Intervention` (see the module docstring).

    ``token_losses`` (float64, read-only) has one entry per scored token: n − 1 for a causal
    model (token t + 1 given those up to t), one per token but [CLS] and [SEP] for BERT;
    ``predictions`` the top-k tokens at each position (causal: the next token's); the layer
    arrays hold each layer's mean attention-row entropy (nats) and the share of its
    (head, row) pairs whose largest weight exceeds 0.99.
    """

    intervention: Intervention
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    token_losses: np.ndarray
    loss: float
    perplexity: float
    layer_entropy: np.ndarray
    layer_saturated: np.ndarray
    predictions: tuple[tuple[TokenPrediction, ...], ...]
    nonfinite: bool


@dataclass(frozen=True)
class TextLogits:
    """A causal model's next-token logits on a text under one :class:`Intervention`.

    ``logits`` (n, vocabulary) float32, read-only: row t scores the token after the first
    t + 1 (the last row, the token after the text), from the final norm and the head with
    Granite's divisor and Gemma's final soft-cap, as transformers' ``model(ids).logits[0]``.
    """

    intervention: Intervention
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    logits: np.ndarray


@dataclass(frozen=True)
class PreparedText:
    """A text's tokens, checked for a run of ``model``."""

    ids: np.ndarray
    tokens: tuple[str, ...]


#: Columns per block when the top-k of a long (vocabulary-wide) row is found block-wise.
_TOP_BLOCK = 512


def _top(z: np.ndarray, k: int) -> np.ndarray:
    """The ids of each row's ``k`` largest logits, largest first.

    A wide row (a vocabulary) is searched in blocks: its k largest entries lie in the k
    blocks with the largest maxima (any other block's entries have k larger ones before
    them) or in the ragged tail, so only those columns are partitioned. Among exactly equal
    logits either id may be picked, as with one partition over the whole row.
    """
    rows, n = z.shape
    full = n // _TOP_BLOCK * _TOP_BLOCK
    blocks = full // _TOP_BLOCK
    if not 0 < k <= blocks // 4:
        return _top_of(z, k)
    peaks = z[:, :full].reshape(rows, blocks, _TOP_BLOCK).max(axis=2)
    picked = np.argpartition(peaks, blocks - k, axis=1)[:, blocks - k:]
    cols = (picked[:, :, None] * _TOP_BLOCK + np.arange(_TOP_BLOCK)).reshape(rows, -1)
    if full < n:
        tail = np.broadcast_to(np.arange(full, n), (rows, n - full))
        cols = np.concatenate([cols, tail], axis=1)
    return np.take_along_axis(cols, _top_of(np.take_along_axis(z, cols, axis=1), k), axis=1)


def _top_of(z: np.ndarray, k: int) -> np.ndarray:
    """:func:`_top` by one partition of every whole row."""
    top = np.argpartition(z, z.shape[1] - k, axis=1)[:, z.shape[1] - k:]
    order = np.argsort(-np.take_along_axis(z, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def head_scores(lm: LmHead, h: np.ndarray, targets: np.ndarray, top_k: int,
                cancelled: Callable[[], bool] | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """−ln p(target) of each row of normed ``h`` (targets < 0: not scored, NaN), and each
    row's top-k ids and probabilities, a block of rows at a time (``cancelled()`` polled
    between blocks)."""
    vocab = lm.matrix.shape[0]
    k = min(top_k, vocab)
    rows = max(1, LOGIT_BLOCK_BYTES // (4 * vocab))
    losses = np.full(len(h), np.nan)
    top_ids = np.zeros((len(h), k), dtype=np.int64)
    top_p = np.zeros((len(h), k))
    for a in range(0, len(h), rows):
        check_cancel(cancelled)
        z = lm.logits(h[a:a + rows])
        b = a + len(z)
        scored = targets[a:b] >= 0
        picked = z[np.flatnonzero(scored), targets[a:b][scored]].astype(np.float64)
        if k:
            top_ids[a:b] = _top(z, k)
        top_z = np.take_along_axis(z, top_ids[a:b], axis=1).astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            m = z.max(axis=1, keepdims=True)
            z -= m
            np.exp(z, out=z)
            total = z.sum(axis=1, dtype=np.float64)
            lse = m[:, 0].astype(np.float64) + np.log(total)
            losses[a:b][scored] = lse[scored] - picked
            top_p[a:b] = np.exp(top_z - lse[:, None])
    return losses, top_ids, top_p


def _predictions(model: Model, top_ids: np.ndarray,
                 top_p: np.ndarray) -> tuple[tuple[TokenPrediction, ...], ...]:
    texts = iter(model.tokenizer.token_texts(top_ids.ravel().tolist()))
    return tuple(tuple(TokenPrediction(int(i), next(texts), float(p))
                       for i, p in zip(ids, ps, strict=True))
                 for ids, ps in zip(top_ids, top_p, strict=True))


def make_score(model: Model, prepared: PreparedText, intervention: Intervention,
               losses: np.ndarray, stats: list[LayerStats], top_ids: np.ndarray,
               top_p: np.ndarray, stream_finite: bool) -> TextScore:
    """The :class:`TextScore` of per-token ``losses`` (kept, made read-only), the layers'
    ``stats`` and the top-k ids and probabilities; ``stream_finite``: whether the stream
    leaving the last layer held no NaN or infinity."""
    losses.flags.writeable = False
    loss = float(losses.mean()) if len(losses) else math.nan
    # exp overflows float64 past 709.78 nats: the perplexity is then ∞ (NaN stays NaN)
    perplexity = math.exp(loss) if not loss > 709 else math.inf
    entropy = np.array([s.entropy for s in stats])
    saturated = np.array([s.saturated for s in stats])
    for array in (entropy, saturated):
        array.flags.writeable = False
    return TextScore(intervention, tuple(int(i) for i in prepared.ids), prepared.tokens, losses,
                     loss, perplexity, entropy, saturated,
                     _predictions(model, top_ids, top_p),
                     not (stream_finite and np.isfinite(losses).all()))
