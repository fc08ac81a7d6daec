"""Synthetic tasks that a one-layer attention model can only solve with *sharp* attention.

Both tasks present a sequence of token positions, each the sum of the embeddings of one or more
token ids (``channels``), and ask for a class in ``[0, vocab)`` at a few target positions:

``retrieval``
    n key/value pairs followed by a query key; the answer is the value paired with the query.
    Position i < n carries the ids (key_i, vocab + value_i); position n carries
    (query_key, 2·vocab), the last id being a "query" marker. Keys of one example are distinct.
    Only the last position is a target, and it must put (nearly) all of its attention on the one
    matching position among n: a logit gap of about ln n + a few nats.
``copy_back``
    n uniform random symbols; the answer at position t (for t >= offset) is the symbol at
    t − offset. The causal mask applies; the model must locate position t − offset through its
    positional embeddings.

Chance level (the best input-independent prediction) is ln(vocab) for both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.config import MaskKind
from engine.config.train import TaskKind, TrainConfig

__all__ = ["Batch", "Task", "make_task"]


@dataclass(frozen=True, slots=True)
class Batch:
    """A batch of examples (arrays are read-only).

    Attributes
    ----------
    ids
        (batch, seq_len, channels) int64 token ids into the input vocabulary.
    targets
        (batch, n_targets) int64 classes in ``[0, vocab)`` at ``Task.target_positions``.
    """

    ids: np.ndarray
    targets: np.ndarray

    def __post_init__(self) -> None:
        self.ids.flags.writeable = False
        self.targets.flags.writeable = False

    @property
    def size(self) -> int:
        """Number of examples."""
        return int(self.ids.shape[0])


@dataclass(frozen=True, slots=True)
class Task:
    """A synthetic task: its shapes, its mask, and a sampler.

    Attributes
    ----------
    kind
        Which task.
    n, vocab, offset
        As in :class:`~engine.config.train.TrainConfig`.
    seq_len, channels
        Tokens per example; token ids summed at each position.
    input_vocab, n_classes
        Sizes of the input embedding table and of the readout (= vocab).
    target_positions, mask
        Positions whose output is scored; the attention mask the task uses.
    """

    kind: TaskKind
    n: int
    vocab: int
    offset: int
    seq_len: int
    channels: int
    input_vocab: int
    n_classes: int
    target_positions: tuple[int, ...]
    mask: MaskKind

    @property
    def chance_loss(self) -> float:
        """Cross-entropy of the best input-independent prediction: ln(vocab)."""
        return math.log(self.n_classes)

    def sample(self, rng: np.random.Generator, size: int) -> Batch:
        """Draw ``size`` independent examples from ``rng``."""
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if self.kind is TaskKind.RETRIEVAL:
            return self._sample_retrieval(rng, size)
        return self._sample_copy_back(rng, size)

    def _sample_retrieval(self, rng: np.random.Generator, size: int) -> Batch:
        n, vocab = self.n, self.vocab
        # n distinct keys per example: the first n of a random permutation of the key symbols.
        keys = np.argsort(rng.random((size, vocab)), axis=1)[:, :n]
        values = rng.integers(0, vocab, size=(size, n))
        which = rng.integers(0, n, size=size)
        rows = np.arange(size)
        ids = np.empty((size, n + 1, 2), dtype=np.int64)
        ids[:, :n, 0] = keys
        ids[:, :n, 1] = values + vocab
        ids[:, n, 0] = keys[rows, which]
        ids[:, n, 1] = 2 * vocab
        targets = values[rows, which][:, None].astype(np.int64)
        return Batch(ids=ids, targets=targets)

    def _sample_copy_back(self, rng: np.random.Generator, size: int) -> Batch:
        tokens = rng.integers(0, self.vocab, size=(size, self.n), dtype=np.int64)
        targets = np.ascontiguousarray(tokens[:, : self.n - self.offset])
        return Batch(ids=tokens[:, :, None], targets=targets)


def make_task(config: TrainConfig) -> Task:
    """Return the :class:`Task` described by ``config``."""
    retrieval = config.task is TaskKind.RETRIEVAL  # else copy_back
    n, vocab = config.n, config.vocab
    return Task(
        kind=config.task, n=n, vocab=vocab, offset=config.offset, n_classes=vocab,
        seq_len=n + 1 if retrieval else n,
        channels=2 if retrieval else 1,
        input_vocab=2 * vocab + 1 if retrieval else vocab,
        target_positions=(n,) if retrieval else tuple(range(config.offset, n)),
        mask=MaskKind.NONE if retrieval else MaskKind.CAUSAL,
    )
