"""The end of a model's forward pass: the final norm and the language-model head.

Causal families: the final norm (RMS, Gemma's with 1 + w; GPT-2's LayerNorm), the head matrix
(``lm_head.weight`` / GGUF ``output.weight``, or the embedding matrix when tied), Granite's
division by ``logits_scaling`` and Gemma's final soft-cap ``cap·tanh(z/cap)``, as
transformers' *ForCausalLM compute them. BERT: BertForMaskedLM's head (dense, activation,
LayerNorm, then the word embeddings' transpose plus a bias). :func:`find_head` checks the
weights at open without reading them; :class:`LmHead` computes the logits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from engine.core.memory import get_memory_budget
from engine.core.parallel import rows_product
from engine.io.source import shown
from engine.models.blocks import activation, layer_norm, rms_norm
from engine.models.spec import ModelSpec
from engine.models.weight_names import HF_HEAD, HF_MLM, HF_MLM_TIED, WEIGHT_ROWS
from engine.models.weights import KeptWeights, ModelError, WeightStore

__all__ = ["LOGIT_BLOCK_BYTES", "HeadWeights", "LanguageModel", "LmHead", "find_head"]

#: The float32 copies of a model's weights are kept for language-model runs (a sweep reads
#: each weight once per point) when they fit in this share of the memory budget.
KEPT_WEIGHTS_SHARE = 0.75
#: Bytes of one block of logits rows (the rows per block follow from the vocabulary). Each
#: block reads the whole head matrix again: 64 MiB holds SmolLM2's 256 rows in one pass, where
#: 16 MiB took four (0.51 s against 0.33 s).
LOGIT_BLOCK_BYTES = 64 << 20


@dataclass(frozen=True)
class HeadWeights:
    """Where a model's head is stored: ``matrix`` (vocabulary × width), the final norm's
    weight and bias (BERT: none), and BERT's MLM transform (short name → stored name)."""

    kind: str  # "causal" or "mlm"
    matrix: str
    tied: bool
    norm: tuple[str, ...] = ()
    mlm: tuple[tuple[str, str], ...] = ()


def _shape(store: WeightStore, name: str, want: tuple[int, ...], label: str, why: str) -> None:
    got = store.shape(name)
    if got != want:
        raise ModelError(f"{label}: '{shown(name, 80)}' has shape {got}, but {why} needs "
                         f"{want}")


def _unused(name: str, label: str, why: str) -> ModelError:
    return ModelError(f"{label}: the weights hold '{shown(name, 80)}', which would be unused: "
                      f"{why}")


def _mlm(spec: ModelSpec, store: WeightStore, embed: str, vocab: int,
         label: str) -> tuple[HeadWeights | None, str]:
    if HF_MLM["dense.w"] not in store.names:
        return None, "the weights hold no cls.predictions.* (masked-LM head) weights"
    h = spec.hidden
    for short, want in (("dense.w", (h, h)), ("dense.b", (h,)), ("norm.w", (h,)),
                        ("norm.b", (h,)), ("bias", (vocab,))):
        if HF_MLM[short] not in store.names:
            raise ModelError(f"{label}: the masked-LM head lacks '{HF_MLM[short]}'")
        _shape(store, HF_MLM[short], want, label, "the masked-LM head")
    if HF_MLM_TIED[1] in store.names:
        raise _unused(HF_MLM_TIED[1], label, "the decoder's bias is cls.predictions.bias")
    matrix = embed
    if spec.tied_head and HF_MLM_TIED[0] in store.names:
        raise _unused(HF_MLM_TIED[0], label, "tie_word_embeddings makes the decoder the word "
                      "embeddings")
    if not spec.tied_head:
        if HF_MLM_TIED[0] not in store.names:
            raise ModelError(f"{label}: the masked-LM head lacks '{HF_MLM_TIED[0]}' "
                             "(tie_word_embeddings is false)")
        matrix = HF_MLM_TIED[0]
        _shape(store, matrix, (vocab, h), label, "the masked-LM decoder")
    return HeadWeights("mlm", matrix, spec.tied_head, mlm=tuple(HF_MLM.items())), ""


def find_head(spec: ModelSpec, store: WeightStore, names: Callable[[int, str], str],
              head_name: str, label: str) -> tuple[HeadWeights | None, str]:
    """The model's head, or None and why there is none (a base model's folder, a BERT folder
    without its MLM head); ``head_name`` is the untied head's stored name (``lm_head.weight``
    or GGUF ``output.weight``; for a GGUF file the head is tied iff it is absent).

    Raises
    ------
    ModelError
        A head weight of the wrong shape, or one present but unused (``lm_head.weight``
        beside ``tie_word_embeddings`` true).
    """
    embed = names(-1, "embed")
    vocab = store.shape(embed)[0]
    if spec.family == "bert":
        return _mlm(spec, store, embed, vocab, label)
    gguf = head_name != HF_HEAD
    tied = head_name not in store.names if gguf else spec.tied_head
    if tied and head_name in store.names:
        raise _unused(head_name, label, "tie_word_embeddings makes the LM head the embedding "
                      "matrix")
    norm = tuple(names(-1, short) for short in ("final_norm.w", "final_norm.b")
                 if short in WEIGHT_ROWS[spec.family].top or (gguf and short.endswith("w")))
    for name in norm:
        if name not in store.names:
            return None, f"the weights hold no final norm '{shown(name, 80)}'"
        _shape(store, name, (spec.hidden,), label, "the final norm")
    if not tied:
        if head_name not in store.names:
            return None, (f"the weights hold no '{head_name}' (a base model without its "
                          "language-model head)")
        _shape(store, head_name, (vocab, spec.hidden), label,
               f"a head over the {vocab:,} embedded tokens")
    return HeadWeights("causal", embed if tied else head_name, tied, norm=norm), ""


class LmHead:
    """Computes a model's logits from the stream leaving its last layer.

    The head matrix is converted to float32 once, on first use, and kept (a sweep reads it at
    every point).
    """

    def __init__(self, spec: ModelSpec, store: WeightStore, weights: HeadWeights) -> None:
        self.spec, self.store, self.weights = spec, store, weights
        self._matrix: np.ndarray | None = None

    @property
    def matrix(self) -> np.ndarray:
        """(vocabulary, width) float32."""
        if self._matrix is None:
            self._matrix = self.store.get(self.weights.matrix)
        return self._matrix

    @property
    def vocab(self) -> int:
        """The number of tokens the head scores."""
        return self.store.shape(self.weights.matrix)[0]

    def hidden(self, x: np.ndarray) -> np.ndarray:
        """The final norm (BERT: the MLM transform) of the stream ``x`` (n, width)."""
        spec, get = self.spec, self.store.get
        if self.weights.kind == "mlm":
            mlm = dict(self.weights.mlm)
            h = activation(spec.activation)(x @ get(mlm["dense.w"]).T + get(mlm["dense.b"]))
            return layer_norm(h.astype(np.float32, copy=False), get(mlm["norm.w"]),
                              get(mlm["norm.b"]), spec.eps)
        norm = self.weights.norm
        if len(norm) == 2:
            return layer_norm(x, get(norm[0]), get(norm[1]), spec.eps)
        plus_one = spec.family == "gemma2" and not spec.norms_hold_one
        return rms_norm(x, get(norm[0]), spec.eps, plus_one)

    def logits(self, h: np.ndarray, *, split_rows: bool = False) -> np.ndarray:
        """(m, vocabulary) float32 logits of normed rows ``h`` (m, width); ``split_rows``: one
        row's logits computed in vocabulary blocks over the engine's threads
        (:func:`engine.core.parallel.rows_product`, the same bits)."""
        z = rows_product(self.matrix, h).T if split_rows else h @ self.matrix.T
        if self.weights.kind == "mlm":
            z += self.store.get(dict(self.weights.mlm)["bias"])
        spec = self.spec
        if spec.logits_divisor != 1.0:
            z /= np.float32(spec.logits_divisor)
        if spec.final_cap is not None:
            z /= np.float32(spec.final_cap)
            np.tanh(z, out=z)
            z *= np.float32(spec.final_cap)
        return z

    def nbytes(self) -> int:
        """Bytes of the float32 head matrix."""
        return self.store.nbytes(self.weights.matrix)


class LanguageModel:
    """What :class:`~engine.models.capture.Model` adds for language-model runs: its head,
    the weights they read and the memory they take."""

    spec: ModelSpec
    name: str
    head: HeadWeights | None
    head_missing: str
    _store: WeightStore
    _lm_head: LmHead | None
    _lm_store: WeightStore | None
    #: The capture's memory estimate (:meth:`Model.estimate_bytes`).
    estimate_bytes: Callable[..., int]
    #: What converting a layer's largest weight, and dequantizing a weight's rows, hold.
    _weight_bytes: Callable[[], int]
    _dequantize_bytes: Callable[[int], int]

    @property
    def has_lm_head(self) -> bool:
        """Whether the model computes next-token (BERT: masked-token) logits."""
        return self.head is not None

    def lm_head(self) -> LmHead:
        """The head that computes the logits (its matrix is kept once read)."""
        if self.head is None:
            what = "masked-LM" if self.spec.family == "bert" else "language-model"
            raise ModelError(f"{self.name} has no {what} head: {self.head_missing}")
        if self._lm_head is None:
            self._lm_head = LmHead(self.spec, self.lm_store(), self.head)
        return self._lm_head

    def kept_bytes(self) -> int:
        """Bytes of every weight in float32: what :meth:`lm_store` keeps when it fits."""
        return sum(self._store.nbytes(name) for name in self._store.names)

    def lm_store(self, budget: int | None = None) -> WeightStore:
        """The weights language-model runs read: float32 copies kept between runs when they
        all fit in KEPT_WEIGHTS_SHARE of ``budget`` (bytes), else the mapped weights.

        ``budget`` is the run's memory budget, decided again at each run that gives one: the
        guard counts the copies against that budget (:meth:`lm_bytes`), so a run under a
        smaller one drops them rather than being refused for them, and a larger one keeps
        them. ``None``: the choice made last (the first time, with the global budget).
        """
        if budget is None and self._lm_store is not None:
            return self._lm_store
        limit = get_memory_budget() if budget is None else budget
        keep = self.kept_bytes() <= KEPT_WEIGHTS_SHARE * limit
        if self._lm_store is None or keep != isinstance(self._lm_store, KeptWeights):
            self._lm_store = KeptWeights(self._store) if keep else self._store
            self._lm_head = None  # its matrix was read from the store replaced
        return self._lm_store

    def lm_bytes(self, n: int, cached_tokens: int = 0, budget: int | None = None) -> int:
        """Peak bytes of scoring ``n`` tokens (``cached_tokens``: a continuation's new
        tokens, whose KV cache holds n + cached_tokens positions) under the memory
        ``budget`` (bytes; None: the choice of :meth:`lm_store` made last).

        The capture's estimate of one layer's work (:meth:`estimate_bytes`), plus the
        float32 weights kept between runs (:meth:`lm_store`; else the head matrix), two blocks
        of logits (one and the scratch of its log-softmax and top-k), the rows of the
        attention statistics, a sweep's cached stream and the KV cache.
        """
        spec, store = self.spec, self.lm_store(budget)  # before the head, which reads it
        head = self.lm_head().nbytes() if self.has_lm_head else 0
        cache = 8 * spec.layers * spec.kv_heads * spec.head_dim * (n + cached_tokens
                                                                if cached_tokens else 0)
        kept, conversion = head, 0
        if isinstance(store, KeptWeights):
            kept = self.kept_bytes()
            # The first run converts every weight, the embeddings too, which are far larger
            # than a layer's: beside the copy kept, a finiteness mask (a byte per weight) and
            # a dequantizing block (SmolLM2: 32.5 MiB held, against 21.9 for a layer weight).
            largest = max(self._store.nbytes(name) for name in self._store.names)
            conversion = max(0, largest // 4 + self._dequantize_bytes(largest)
                             - self._weight_bytes())
        return self.lm_run_bytes(n) + kept + conversion + cache

    def lm_run_bytes(self, n: int) -> int:
        """The part of :meth:`lm_bytes` that each run on ``n`` tokens holds for itself (what
        a second run beside it adds): a layer's work, two blocks of logits, the rows of the
        attention statistics and a sweep's cached stream."""
        vocab = self.lm_head().vocab if self.has_lm_head else 0
        block = min(LOGIT_BLOCK_BYTES, 4 * max(n, 1) * vocab)
        return (self.estimate_bytes(n, 0) + 2 * block + 16 * self.spec.heads * n * n
                + 8 * n * self.spec.hidden)
