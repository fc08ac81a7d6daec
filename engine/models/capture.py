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

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.core.memory import MemoryBudgetError, format_bytes, get_memory_budget
from engine.io.names import layer_array
from engine.io.source import shown
from engine.io.tensors import TensorFile, tensors_from_arrays, write_tensors
from engine.models.forward import CaptureCancelled, LayerCapture, run_forward
from engine.models.gguf_file import DEQUANTIZE_ROWS_WEIGHTS
from engine.models.lm_head import HeadWeights, LanguageModel, LmHead
from engine.models.spec import ModelSpec
from engine.models.tokenize import Encoded, Tokenizer, TokenizerSource
from engine.models.weights import FLOAT_WEIGHT_TYPES, ModelError, WeightStore

__all__ = ["Capture", "Model", "layers_text"]

#: Dequantizing converts a block of DEQUANTIZE_ROWS_WEIGHTS of a quantized tensor at a time,
#: holding some 16 bytes of temporaries per weight of the block besides its output.
DEQUANTIZE_BYTES_PER_WEIGHT = 16
#: The first prefix of a long text that is tokenized (characters), and how many tokens past
#: the limit make the tokens before them those of the whole text.
PREFIX_CHARS, SETTLED_TOKENS = 4096, 32
#: The widest range ``layers_text`` builds without a layer count to check against.
MAX_LAYER_RANGE = 1 << 16
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_LAYER_PART = re.compile(r"([0-9]{1,9})(?:-([0-9]{1,9}))?", re.ASCII)


def _prefix(text: str, chars: int) -> str:
    """The first ``chars`` characters of ``text``, cut back to the last white space in their
    final quarter if there is one (so the cut does not split a word)."""
    if len(text) <= chars:
        return text
    head = text[:chars]
    space = max(head.rfind(" ", chars * 3 // 4), head.rfind("\n", chars * 3 // 4))
    return head[:space] if space > 0 else head


def where_of(spec: ModelSpec) -> str:
    """What the app captures, for the ``where`` of its files: the attention inputs after what
    this family applies to q and k (rotary embedding, QK-norm), or that it applies neither
    (BERT, GPT-2: q and k straight from the projections)."""
    applied = [step for step, present in (("rotary embedding", spec.rope_theta is not None),
                                          ("QK-norm", spec.qk_norm)) if present]
    if not applied:
        return ("attention inputs as the model computes them: q and k from the projections "
                "(this model has no rotary embedding and no QK-norm)")
    return "attention inputs as the model computes them: after " + " and ".join(applied)


@dataclass(frozen=True)
class Capture:
    """What one run of a model on one text gave: per layer q and k (and v), the tokens, meta."""

    layers: Mapping[int, LayerCapture]
    tokens: tuple[str, ...]
    token_ids: tuple[int, ...]
    meta: Mapping[str, Any]
    name: str
    #: The tokens of the whole text (a lower bound when ``text_tokens_exact`` is False: a long
    #: text is tokenized by a prefix), and the most positions the model reads.
    text_tokens: int = 0
    text_tokens_exact: bool = True
    positions: int = 0

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


class Model(LanguageModel):
    """A model opened for capturing and scoring: its spec, weights (memory-mapped),
    tokenizer and language-model head (see :class:`LanguageModel`)."""

    def __init__(self, path: Path, name: str, spec: ModelSpec, store: WeightStore,
                 names: Callable[[int, str], str], tokenizer: TokenizerSource, fmt: str,
                 weight_types: Sequence[str], vocab_size: int,
                 build_tokenizer: Callable[[], Tokenizer] | None = None, *,
                 head: HeadWeights | None = None, head_missing: str = "",
                 end_ids: Sequence[int] = ()) -> None:
        self.path, self.spec = path, spec
        #: The model's name as messages show it: a config's ``_name_or_path`` is whatever its
        #: writer put there, control characters and kilobytes included.
        self.name = shown(_CONTROL.sub("?", name).strip() or path.name, 80)
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
        #: The language-model head's weights (None: there is none, ``head_missing`` says
        #: why), and the ids that end a text (a continuation stops at them).
        self.head, self.head_missing, self.end_ids = head, head_missing, tuple(end_ids)
        self._lm_head: LmHead | None = None
        self._lm_store: WeightStore | None = None

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer, built on first use (raises :class:`ModelError`)."""
        if self._tokenizer is None:
            self._tokenizer = self._build_tokenizer()
        return self._tokenizer

    def _largest_layer_tensor(self) -> int:
        """Bytes of the largest weight of layer 0 once converted to float32 (every layer of
        these families has the same shapes)."""
        # Every family's layer has an output projection, and its name starts as the layer's.
        probe = self._names(0, "o.w")
        prefix = probe[: probe.index(".0.") + 3] if ".0." in probe else probe
        return max((self._store.nbytes(name) for name in self._store.names
                    if name.startswith(prefix)), default=0)

    def _weight_bytes(self) -> int:
        """What converting the largest weight holds: its float32 conversion, a reordered
        copy and a finiteness mask, and for a quantized file a dequantizing block's
        temporaries."""
        largest = self._largest_layer_tensor()
        return 5 * largest // 2 + self._dequantize_bytes(largest)

    def _dequantize_bytes(self, float32_bytes: int) -> int:
        """What dequantizing a block of rows of a weight of ``float32_bytes`` holds (0 for a
        model without quantized weights)."""
        if FLOAT_WEIGHT_TYPES.issuperset(self.weight_types):
            return 0
        return DEQUANTIZE_BYTES_PER_WEIGHT * min(float32_bytes // 4, DEQUANTIZE_ROWS_WEIGHTS)

    def estimate_bytes(self, n: int, layers: int | None = None, keep_v: bool = False) -> int:
        """Memory a capture of ``n`` tokens keeping ``layers`` layers allocates at its peak.

        The forward converts one weight at a time to float32 while the rest stays mapped on
        disk (clean file pages, which the kernel reclaims, so they are not counted): the
        largest weight twice (its conversion and one copy: GGUF's q/k reordering, or a check),
        plus what dequantizing a quantized block of rows holds. Then the activations of one
        layer: the residual stream and its norms, q, k, v with their head-major copies and
        rotations, the heads' n × n logits with the causal mask, and the MLP's inner
        activations; and the q and k (and v) kept of every chosen layer.
        """
        spec = self.spec
        layers = spec.layers if layers is None else layers
        weights = self._weight_bytes()
        width = spec.heads * spec.head_dim
        # BERT's exact GELU computes erf in float64: its temporaries are twice as wide.
        inner = 56 if spec.activation == "gelu" else 20
        stream = 4 * n * (6 * spec.hidden + 8 * width) + inner * n * spec.intermediate
        logits = spec.heads * n * n * 4 + 2 * n * n  # float32 logits, the boolean mask twice
        kept = 4 * layers * width * n * (3 if keep_v else 2)
        return weights + stream + logits + kept

    def tokens_that_fit(self, n: int, layers: int, keep_v: bool, budget: int) -> int:
        """The largest token count ≤ ``n`` whose :meth:`estimate_bytes` is within ``budget``
        (0 when not even one token fits)."""
        low, high = 0, n
        while low < high:  # the estimate grows with n
            middle = (low + high + 1) // 2
            if self.estimate_bytes(middle, layers, keep_v) <= budget:
                low = middle
            else:
                high = middle - 1
        return low

    def _encode(self, text: str, max_tokens: int | None,
                tokenize: Callable[[str, int], Encoded | None]) -> Encoded:
        """``text``'s tokens by ``tokenize(text, limit)``, checked: not empty, within the
        model's positions unless ``max_tokens`` cuts it (the limit is one more than the
        positions without it, so that a text too long is recognised).

        A long text is tokenized by growing prefixes, each cut at a space, until one gives
        :data:`SETTLED_TOKENS` tokens more than the limit: the tokens that far before the cut
        are those of the whole text, and a pasted book with max tokens 64 costs a few
        kilobytes of tokenizing instead of the whole book. Its ``total`` then counts the
        prefix's tokens only (a lower bound, enough to say the text was cut).

        Raises
        ------
        ModelError
            An empty text, one without tokens, or one longer than the model's positions.
        CaptureCancelled
            When ``tokenize`` returned None (it was cancelled).
        """
        if not text.strip():
            raise ModelError("the text is empty: type or paste a text to run the model on")
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
            raise ModelError(f"max tokens must be ≥ 1, got {max_tokens!r}")
        positions = self.spec.max_positions
        limit = positions + 1 if max_tokens is None else min(max_tokens, positions + 1)
        chars = max(PREFIX_CHARS, 16 * limit)
        while True:
            prefix = _prefix(text, chars)
            encoded = tokenize(prefix, limit)
            if encoded is None:
                raise CaptureCancelled()
            if len(prefix) == len(text) or encoded.total >= limit + SETTLED_TOKENS:
                break
            chars *= 4
        encoded = dataclasses.replace(encoded, whole=len(prefix) == len(text))
        if not encoded.ids:
            raise ModelError("the text gives no tokens")
        if len(encoded.ids) > positions:
            more = "" if encoded.whole else "more than "
            raise ModelError(f"the text has {more}{encoded.total:,} tokens, more than the "
                             f"{positions:,} positions {self.name} reads; shorten it or set "
                             f"max tokens ≤ {positions:,}")
        if max_tokens is not None and len(encoded.ids) > max_tokens:
            encoded = dataclasses.replace(encoded, ids=encoded.ids[:max_tokens],
                                          tokens=encoded.tokens[:max_tokens])
        return encoded

    def _too_large(self, n: int, chosen: Sequence[int], keep_v: bool,
                   budget: int) -> MemoryBudgetError:
        """The error for a capture of ``n`` tokens over ``budget``, saying what would fit."""
        need = self.estimate_bytes(n, len(chosen), keep_v)
        what = (f"capturing {len(chosen)} of the {self.spec.layers} layers of {self.name} at "
                f"n = {n:,} needs about {format_bytes(need)}, more than the memory limit of "
                f"{format_bytes(budget)}")
        fits = self.tokens_that_fit(n, len(chosen), keep_v, budget)
        if fits:
            advice = f"at most {fits:,} tokens fit; use fewer tokens or layers, or raise the limit"
        else:
            weight = self._weight_bytes()
            advice = (f"not even one token fits (converting its largest weight alone takes "
                      f"{format_bytes(weight)}); raise the limit")
        return MemoryBudgetError(f"{what}: {advice}")

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
        memory_budget: int | None = None,
    ) -> Capture:
        """Run the model on ``text`` and return q and k of ``layers`` (default: all).

        ``tokenize(text, limit)`` replaces the model's tokenizer in this process, e.g. by
        :meth:`TokenizerProcess.encode` of :attr:`tokenizer_source` (the window does that).
        ``memory_budget`` (bytes) bounds :meth:`estimate_bytes`; default
        :func:`engine.core.memory.get_memory_budget`.

        Raises
        ------
        ModelError
            An empty text, one longer than the model's positions, a layer out of range, or a
            capture that would exceed the memory budget (the message says what would fit).
        CaptureCancelled
            When ``cancelled()`` returned True between two steps.
        """
        spec = self.spec
        if layers is not None and len(layers) > 4 * spec.layers + 64:
            raise ModelError(f"layers: {len(layers):,} numbers for a model of {spec.layers} "
                             "layers")
        chosen = list(range(spec.layers)) if layers is None else sorted(set(layers))
        if not chosen:
            raise ModelError("choose at least one layer")
        bad = [layer for layer in chosen if not 0 <= layer < spec.layers]
        if bad:
            raise ModelError(f"layer {bad[0]} does not exist: {self.name} has layers "
                             f"0–{spec.layers - 1}")
        budget = get_memory_budget() if memory_budget is None else memory_budget
        if self.estimate_bytes(1, len(chosen), keep_v) > budget:  # before any tokenizing
            raise self._too_large(1, chosen, keep_v, budget)
        encoded = self._encode(text, max_tokens, tokenize or self.tokenizer.encode_text)
        ids, cut = list(encoded.ids), encoded.total > len(encoded.ids)
        n = len(ids)
        if max(ids) >= self.vocab_size:
            raise ModelError(f"the tokenizer gives id {max(ids)}, but the model has "
                             f"{self.vocab_size} embeddings: the tokenizer does not belong to "
                             "these weights")
        if self.estimate_bytes(n, len(chosen), keep_v) > budget:
            raise self._too_large(n, chosen, keep_v, budget)
        captured = run_forward(spec, self._store, self._names, np.asarray(ids, dtype=np.int64),
                               chosen, keep_v=keep_v, progress=progress, cancelled=cancelled)
        cap = {} if spec.cap is None else {"cap": spec.cap}
        # A layer's window is its own mask (meta "window": query i sees keys i − window + 1 …
        # i); a layer without one sees every earlier key, as "causal" says.
        layer_meta = {str(layer): {"scale": spec.scales[layer], **cap,
                                   **_window_meta(spec.window(layer))} for layer in chosen}
        meta = {
            "model": self.name, "path": str(self.path), "architecture": spec.architecture,
            "format": self.format, "weights": list(self.weight_types), "where": where_of(spec),
            "scale": spec.scales[chosen[0]], "scale_rule": spec.scale_note,
            "causal": spec.causal, "kv_heads": spec.kv_heads, "d_k": spec.head_dim,
            "token_ids": list(ids), "truncated": cut, "tokenizer": self.tokenizer_source.kind,
            "layers": layer_meta, **cap,
        }
        return Capture(layers=MappingProxyType(captured), tokens=encoded.tokens,
                       token_ids=tuple(ids), meta=MappingProxyType(meta),
                       name=f"{self.name} (captured)", text_tokens=encoded.total,
                       text_tokens_exact=encoded.whole, positions=spec.max_positions)


def _window_meta(window: int | None) -> dict[str, int]:
    return {} if window is None else {"window": window}


#: Errors a hostile model file can still raise where this app's checks did not foresee it.
UNFORESEEN_ERRORS = (RecursionError, MemoryError, ArithmeticError, LookupError, TypeError,
                     AttributeError)


def unforeseen(path: str | Path, exc: BaseException) -> ModelError:
    """One line for an error the checks of a model file did not foresee (a bug, reported as
    such, but never a traceback in the user's face)."""
    return ModelError(f"{shown(str(path))}: cannot be used (unexpected {type(exc).__name__}: "
                      f"{shown(' '.join(str(exc).split()), 200)})")


def layers_text(text: str, count: int | None = None, *, what: str = "layer") -> list[int]:
    """Parse ``"0,2,5-7"`` into sorted layer indices, each below ``count`` when given (a
    range is checked before it is built: "0-50000000" costs nothing). ``what`` names the
    indices in the messages (``"head"`` for a list of heads)."""
    out: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        match = _LAYER_PART.fullmatch(part)
        if match is None:
            raise ModelError(f"{what}s: {shown(part, 40)!r} is not a {what} number or a range "
                             "like 2-5 (digits 0-9)")
        lo = int(match[1])
        hi = lo if match[2] is None else int(match[2])
        if hi < lo:
            raise ModelError(f"{what}s: the range {part} runs backwards")
        if count is not None and hi >= count:
            raise ModelError(f"{what}s: {what} {hi} does not exist: the model has {what}s "
                             f"0–{count - 1}")
        if hi - lo >= MAX_LAYER_RANGE:
            raise ModelError(f"{what}s: the range {part} has more than {MAX_LAYER_RANGE:,} "
                             f"{what}s")
        out.update(range(lo, hi + 1))
    if not out:
        raise ModelError(f"{what}s: none given")
    return sorted(out)
