"""Run an opened model on a text and keep q and k (:mod:`engine.models.loader` opens it).

>>> model = open_model("path/to/all-MiniLM-L6-v2")          # doctest: +SKIP
>>> capture = model.capture("The cat sat on the mat.")       # doctest: +SKIP
>>> capture.save("minilm.npz")                               # doctest: +SKIP

The saved file is the app's tensor format (:mod:`engine.io.tensors`): ``layer{L}.q`` and
``layer{L}.k`` of shape (heads, n, head_dim), the tokens, and ``meta`` with the model's name
and path, its architecture, where q and k were taken, its logit scale, soft-cap, mask, key-head
count and token ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.core.memory import check_memory, get_memory_budget
from engine.io.names import layer_array
from engine.io.tensors import TensorFile, tensors_from_arrays, write_tensors
from engine.models.forward import CaptureCancelled, LayerCapture, run_forward
from engine.models.spec import ModelSpec
from engine.models.tokenize import Encoded, Tokenizer, TokenizerSource
from engine.models.weights import ModelError, WeightStore

__all__ = ["Capture", "Model", "layers_text"]

#: What the app captures, for the ``where`` of its files.
WHERE = "attention inputs as the model computes them: after rotary embedding and QK-norm"


@dataclass(frozen=True)
class Capture:
    """What one run of a model on one text gave: per layer q and k (and v), the tokens, meta."""

    layers: Mapping[int, LayerCapture]
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    meta: Mapping[str, Any]
    name: str

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the app's tensor format (``layer{L}.q`` …)."""
        out = {}
        for layer, cap in self.layers.items():
            out[layer_array(layer, "q")], out[layer_array(layer, "k")] = cap.q, cap.k
            if cap.v is not None:
                out[layer_array(layer, "v")] = cap.v
        return out

    def save(self, path: str | Path) -> Path:
        """Write the capture as ``.npz`` or ``.safetensors`` (by the suffix of ``path``)."""
        return write_tensors(path, self.arrays(), tokens=list(self.tokens), meta=self.meta)

    def tensor_file(self) -> TensorFile:
        """The capture as an open :class:`~engine.io.tensors.TensorFile` (no file written)."""
        return tensors_from_arrays(self.name, self.arrays(), tokens=self.tokens, meta=self.meta)


class Model:
    """A model opened for capturing: its spec, weights (memory-mapped) and tokenizer."""

    def __init__(self, path: Path, name: str, spec: ModelSpec, store: WeightStore,
                 names: Callable[[int, str], str], tokenizer: TokenizerSource, fmt: str,
                 weight_types: Sequence[str], vocab_size: int,
                 build_tokenizer: Callable[[], Tokenizer] | None = None) -> None:
        self.path, self.name, self.spec = path, name, spec
        self._build_tokenizer = build_tokenizer or tokenizer.build
        self._store, self._names = store, names
        #: Where the tokenizer comes from (it is built when first used, see :attr:`tokenizer`).
        self.tokenizer_source = tokenizer
        self._tokenizer: Tokenizer | None = None
        #: "huggingface" or "gguf".
        self.format = fmt
        #: The stored types of the weights (F32, BF16, Q4_1, …).
        self.weight_types = tuple(sorted(weight_types))
        #: The rows of the token embedding: every token id must be below it.
        self.vocab_size = vocab_size

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer, built on first use (raises :class:`ModelError`)."""
        if self._tokenizer is None:
            self._tokenizer = self._build_tokenizer()
        return self._tokenizer

    def estimate_bytes(self, n: int, layers: int | None = None, keep_v: bool = False) -> int:
        """Memory a capture of ``n`` tokens needs: the float32 weights of the largest layer
        (twice: the mapped pages and their conversion), the activations and the kept q, k."""
        spec = self.spec
        layers = spec.layers if layers is None else layers
        probe = self._names(0, "qkv.w" if spec.family == "gpt2" else "q.w")
        prefix = probe[: probe.index(".0.") + 3] if ".0." in probe else probe
        layer_bytes = sum(self._store.nbytes(name) for name in self._store.names
                          if name.startswith(prefix))
        width = max(spec.hidden, spec.heads * spec.head_dim)
        activations = 4 * n * (6 * width + 3 * spec.intermediate) + 4 * 3 * spec.heads * n * n
        kept = 4 * layers * spec.heads * n * spec.head_dim * (3 if keep_v else 2)
        return 2 * layer_bytes + activations + kept + 4 * n * spec.hidden * 2

    def _encode(self, text: str, max_tokens: int | None,
                tokenize: Callable[[str, int], Encoded | None]) -> Encoded:
        """``text``'s tokens by ``tokenize(text, limit)``, checked: not empty, within the
        model's positions unless ``max_tokens`` cuts it (the limit is one more than the
        positions without it, so that a text too long is recognised).

        Raises
        ------
        ModelError
            An empty text, one without tokens, or one longer than the model's positions.
        CaptureCancelled
            When ``tokenize`` returned None (it was cancelled).
        """
        if not text.strip():
            raise ModelError("the text is empty: type or paste a text to run the model on")
        if max_tokens is not None and max_tokens < 1:
            raise ModelError(f"max tokens must be ≥ 1, got {max_tokens}")
        positions = self.spec.max_positions
        encoded = tokenize(text, positions + 1 if max_tokens is None else max_tokens)
        if encoded is None:
            raise CaptureCancelled()
        if not encoded.ids:
            raise ModelError("the text gives no tokens")
        if len(encoded.ids) > positions:
            raise ModelError(f"the text has {encoded.total:,} tokens, more than the "
                             f"{positions:,} positions {self.name} reads; shorten it or set "
                             f"max tokens ≤ {positions:,}")
        return encoded

    def capture(
        self,
        text: str,
        *,
        max_tokens: int | None = None,
        layers: Sequence[int] | None = None,
        keep_v: bool = False,
        progress: Callable[[int, int], None] | None = None,
        cancelled: Callable[[], bool] | None = None,
        tokenize: Callable[[str, int], Encoded | None] | None = None,
    ) -> Capture:
        """Run the model on ``text`` and return q and k of ``layers`` (default: all).

        ``tokenize(text, limit)`` replaces the model's tokenizer in this process, e.g. by
        :meth:`TokenizerProcess.encode` of :attr:`tokenizer_source` (the window does that).

        Raises
        ------
        ModelError
            An empty text, one longer than the model's positions, a layer out of range, or a
            capture that would exceed the memory budget (the message says what would fit).
        CaptureCancelled
            When ``cancelled()`` returned True between two steps.
        """
        spec = self.spec
        chosen = list(range(spec.layers)) if layers is None else sorted(set(layers))
        if not chosen:
            raise ModelError("choose at least one layer")
        bad = [layer for layer in chosen if not 0 <= layer < spec.layers]
        if bad:
            raise ModelError(f"layer {bad[0]} does not exist: {self.name} has layers "
                             f"0–{spec.layers - 1}")
        encoded = self._encode(text, max_tokens, tokenize or self.tokenizer.encode_text)
        ids, cut = list(encoded.ids), encoded.total > len(encoded.ids)
        n = len(ids)
        if spec.sliding_window is not None and n > spec.sliding_window:
            raise ModelError(f"{n} tokens are more than the sliding window of "
                             f"{spec.sliding_window}; the app models full causal masks only")
        if max(ids) >= self.vocab_size:
            raise ModelError(f"the tokenizer gives id {max(ids)}, but the model has "
                             f"{self.vocab_size} embeddings: the tokenizer does not belong to "
                             "these weights")
        need = self.estimate_bytes(n, len(chosen), keep_v)
        fits = n
        while fits > 1 and self.estimate_bytes(fits, len(chosen), keep_v) > get_memory_budget():
            fits = fits * 3 // 4
        check_memory(need, lambda: f"capturing {len(chosen)} layers of {self.name} at "
                     f"n = {n} (at most about {fits} tokens fit)")
        captured = run_forward(spec, self._store, self._names, np.asarray(ids, dtype=np.int64),
                               chosen, keep_v=keep_v, progress=progress, cancelled=cancelled)
        cap = {} if spec.cap is None else {"cap": spec.cap}
        layer_meta = {str(layer): {"scale": spec.scales[layer], **cap} for layer in chosen}
        meta = {
            "model": self.name, "path": str(self.path), "architecture": spec.architecture,
            "format": self.format, "weights": list(self.weight_types), "where": WHERE,
            "scale": spec.scales[chosen[0]], "scale_rule": spec.scale_note,
            "causal": spec.causal, "kv_heads": spec.kv_heads, "d_k": spec.head_dim,
            "token_ids": list(ids), "truncated": cut, "tokenizer": self.tokenizer_source.kind,
            "layers": layer_meta, **cap,
        }
        return Capture(layers=MappingProxyType(captured), tokens=encoded.tokens,
                       token_ids=tuple(ids), meta=MappingProxyType(meta),
                       name=f"{self.name} (captured)")


def layers_text(text: str) -> list[int]:
    """Parse ``"0,2,5-7"`` into sorted layer indices (:meth:`Model.capture` checks them)."""
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        try:
            lo = int(first)
            hi = int(last) if dash else lo
        except ValueError:
            raise ModelError(f"layers: {part!r} is not a layer number or range like 2-5"
                             ) from None
        if hi < lo:
            raise ModelError(f"layers: the range {part} runs backwards")
        out.extend(range(lo, hi + 1))
    if not out:
        raise ModelError("layers: none given")
    return sorted(set(out))
