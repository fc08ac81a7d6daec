"""Open a model (a Hugging Face folder or a GGUF file), run it on a text, keep q and k.

>>> model = open_model("path/to/all-MiniLM-L6-v2")          # doctest: +SKIP
>>> capture = model.capture("The cat sat on the mat.")       # doctest: +SKIP
>>> capture.save("minilm.npz")                               # doctest: +SKIP

The saved file is the app's tensor format (:mod:`engine.io.tensors`): ``layer{L}.q`` and
``layer{L}.k`` of shape (heads, n, head_dim), the tokens, and ``meta`` with the model's name
and path, its architecture, where q and k were taken, its logit scale, soft-cap, mask, key-head
count and token ids.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.core.memory import check_memory, get_memory_budget
from engine.io.names import layer_array
from engine.io.source import shown
from engine.io.tensors import TensorFile, tensors_from_arrays, write_tensors
from engine.models.forward import CaptureCancelled, LayerCapture, run_forward
from engine.models.spec import ModelSpec, spec_from_gguf, spec_from_hf_config
from engine.models.tokenize import (
    Encoded,
    Tokenizer,
    TokenizerSource,
    check_gguf_vocabulary,
    check_hf_tokenizer,
    gguf_tokenizer,
)
from engine.models.weights import GgufFile, ModelError, SafetensorsWeights, WeightStore

__all__ = ["Capture", "CaptureCancelled", "Model", "ModelError", "open_model"]

_BERT = {
    "embed": "embeddings.word_embeddings.weight", "pos": "embeddings.position_embeddings.weight",
    "type": "embeddings.token_type_embeddings.weight",
    "embed_norm.w": "embeddings.LayerNorm.weight", "embed_norm.b": "embeddings.LayerNorm.bias",
}
_BERT_LAYER = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "o": "attention.output.dense", "norm1": "attention.output.LayerNorm",
    "up": "intermediate.dense", "down": "output.dense", "norm2": "output.LayerNorm",
}
_GPT2 = {"embed": "wte.weight", "pos": "wpe.weight"}
_GPT2_LAYER = {"norm1": "ln_1", "qkv": "attn.c_attn", "o": "attn.c_proj", "norm2": "ln_2",
               "up": "mlp.c_fc", "down": "mlp.c_proj"}
_LLAMA = {"embed": "embed_tokens.weight"}
_LLAMA_LAYER = {
    "norm1": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj",
    "v": "self_attn.v_proj", "o": "self_attn.o_proj", "q_norm": "self_attn.q_norm",
    "k_norm": "self_attn.k_norm", "norm2": "post_attention_layernorm",
    "post_attn_norm": "post_attention_layernorm", "pre_ff_norm": "pre_feedforward_layernorm",
    "post_ff_norm": "post_feedforward_layernorm", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
    "down": "mlp.down_proj",
}
_GGUF_LAYER = {
    "norm1": "attn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
    "norm2": "ffn_norm", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down",
}
_FAMILY_NAMES = {"bert": (_BERT, _BERT_LAYER, "encoder.layer"),
                 "gpt2": (_GPT2, _GPT2_LAYER, "h"),
                 "llama": (_LLAMA, _LLAMA_LAYER, "layers"),
                 "gemma2": (_LLAMA, _LLAMA_LAYER, "layers")}
_SUFFIX = {"w": "weight", "b": "bias"}

#: What the app captures, for the ``where`` of its files.
WHERE = "attention inputs as the model computes them: after rotary embedding and QK-norm"


def _hf_names(spec: ModelSpec, store: WeightStore, label: str) -> Callable[[int, str], str]:
    top, layer, stem = _FAMILY_NAMES[spec.family]
    suffix = top["embed"]
    found = sorted(name for name in store.names if name == suffix or name.endswith("." + suffix))
    if not found:
        raise ModelError(f"{label}: the weights hold no '{suffix}': they do not belong to a "
                         f"{spec.architecture} model as config.json says")
    prefix = found[0][: -len(suffix)]

    def names(index: int, short: str) -> str:
        if index < 0:
            return prefix + top[short]
        part, _, kind = short.partition(".")
        return f"{prefix}{stem}.{index}.{layer[part]}.{_SUFFIX[kind or 'w']}"

    return names


def _gguf_names(index: int, short: str) -> str:
    if index < 0:
        return "token_embd.weight"
    part, _, kind = short.partition(".")
    return f"blk.{index}.{_GGUF_LAYER[part]}.{_SUFFIX[kind or 'w']}"


def _unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's reordering of q/k rows (interleaved rotary pairs) so q and k come
    out in Hugging Face's layout (halves rotated together), as transformers reads them."""
    rows = w.shape[0]
    return (w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2)
            .reshape(w.shape))


class _GgufLlamaStore(WeightStore):
    """A GGUF llama file's tensors with the q/k rows in Hugging Face's order."""

    def __init__(self, gguf: GgufFile, spec: ModelSpec) -> None:
        self._gguf, self._spec = gguf, spec
        self.names = gguf.names

    def shape(self, name: str) -> tuple[int, ...]:
        return self._gguf.shape(name)

    def get(self, name: str) -> np.ndarray:
        w = self._gguf.get(name)
        if name.endswith(".attn_q.weight"):
            return _unpermute(w, self._spec.heads)
        if name.endswith(".attn_k.weight"):
            return _unpermute(w, self._spec.kv_heads)
        return w

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        return self._gguf.rows(name, index)


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
                 weight_types: Sequence[str],
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
        self._check_weights()

    @property
    def label(self) -> str:
        return shown(self.path.name)

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer, built on first use (raises :class:`ModelError`)."""
        if self._tokenizer is None:
            self._tokenizer = self._build_tokenizer()
        return self._tokenizer

    def _check_weights(self) -> None:
        spec = self.spec
        embed = self._names(-1, "embed")
        shape = self._store.shape(embed)
        if len(shape) != 2 or shape[1] != spec.hidden:
            raise ModelError(f"{self.label}: '{embed}' has shape {shape}, but the config says "
                             f"a width of {spec.hidden}: the config does not match the weights")
        self.vocab_size = shape[0]
        q_out = spec.heads * spec.head_dim
        kv_out = spec.kv_heads * spec.head_dim
        expect = {"q.w": q_out, "k.w": kv_out, "v.w": kv_out}
        if spec.family == "gpt2":
            expect = {"qkv.w": 3 * spec.hidden}
        for layer in range(spec.layers):
            for short, rows in expect.items():
                name = self._names(layer, short)
                if name not in self._store.names:
                    raise ModelError(f"{self.label}: the weights lack '{name}' (layer {layer} "
                                     f"of {spec.layers}): a shard missing, or a config that "
                                     "does not match the weights")
                got = self._store.shape(name)
                size = got[-1] if spec.family == "gpt2" else got[0]
                if size != rows:
                    raise ModelError(f"{self.label}: '{name}' has shape {got}, which does not "
                                     f"match {spec.heads} heads × {spec.head_dim} (key heads "
                                     f"{spec.kv_heads}) of the config")

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

    def tokenize(self, text: str, max_tokens: int | None = None) -> tuple[list[int], bool]:
        """Token ids of ``text`` (cut to ``max_tokens``, keeping the first ones) and whether
        it was cut."""
        encoded = self.encode(text, max_tokens, self.tokenizer.encode_text)
        return list(encoded.ids), encoded.total > len(encoded.ids)

    def token_limit(self, max_tokens: int | None = None) -> int:
        """How many of a text's tokens to keep: ``max_tokens``, and one more than the model's
        positions without it (so that a text too long is recognised)."""
        if max_tokens is not None and max_tokens < 1:
            raise ModelError(f"max tokens must be ≥ 1, got {max_tokens}")
        return max_tokens if max_tokens is not None else self.spec.max_positions + 1

    def encode(self, text: str, max_tokens: int | None,
               tokenize: Callable[[str, int], Encoded | None]) -> Encoded:
        """``text``'s tokens by ``tokenize(text, limit)``, checked: not empty, within the
        model's positions unless ``max_tokens`` cuts it.

        Raises
        ------
        ModelError
            An empty text, one without tokens, or one longer than the model's positions.
        CaptureCancelled
            When ``tokenize`` returned None (it was cancelled).
        """
        if not text.strip():
            raise ModelError("the text is empty: type or paste a text to run the model on")
        limit = self.token_limit(max_tokens)
        encoded = tokenize(text, limit)
        if encoded is None:
            raise CaptureCancelled()
        if not encoded.ids:
            raise ModelError("the text gives no tokens")
        positions = self.spec.max_positions
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
        encoded = self.encode(text, max_tokens, tokenize or self.tokenizer.encode_text)
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
        tokens = encoded.tokens
        layer_meta = {}
        for layer in chosen:
            entry: dict[str, Any] = {"scale": spec.scales[layer]}
            if spec.cap is not None:
                entry["cap"] = spec.cap
            layer_meta[str(layer)] = entry
        meta = {
            "model": self.name, "path": str(self.path), "architecture": spec.architecture,
            "format": self.format, "weights": list(self.weight_types), "where": WHERE,
            "scale": spec.scales[chosen[0]], "scale_rule": spec.scale_note,
            "causal": spec.causal, "kv_heads": spec.kv_heads, "d_k": spec.head_dim,
            "token_ids": list(ids), "truncated": cut, "tokenizer": self.tokenizer_source.kind,
            "layers": layer_meta,
        }
        if spec.cap is not None:
            meta["cap"] = spec.cap
        return Capture(layers=MappingProxyType(captured), tokens=tokens, token_ids=tuple(ids),
                       meta=MappingProxyType(meta), name=f"{self.name} (captured)")


def _read_config(folder: Path) -> dict[str, Any]:
    path = folder / "config.json"
    if not path.is_file():
        raise ModelError(f"{shown(folder.name)}: no config.json in the folder; a Hugging Face "
                         "model folder holds config.json, model.safetensors and tokenizer.json")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{shown(folder.name)}: config.json cannot be read: {exc}") from exc
    if not isinstance(config, dict):
        raise ModelError(f"{shown(folder.name)}: config.json is not a JSON object")
    return config


def _safetensors_files(folder: Path) -> list[Path]:
    single = folder / "model.safetensors"
    index = folder / "model.safetensors.index.json"
    if single.is_file():
        return [single]
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelError(f"{shown(folder.name)}: model.safetensors.index.json cannot be "
                             f"read ({exc})") from exc
        missing = [s for s in shards if not (folder / s).is_file()]
        if missing:
            raise ModelError(f"{shown(folder.name)}: {len(missing)} of {len(shards)} shards "
                             f"are missing, e.g. {shown(missing[0], 80)}")
        return [folder / s for s in shards]
    if any(folder.glob("*.bin")) or any(folder.glob("*.pt")):
        raise ModelError(f"{shown(folder.name)}: the weights are PyTorch pickles (.bin); the "
                         "app reads model.safetensors (convert with transformers' "
                         "save_pretrained(safe_serialization=True))")
    raise ModelError(f"{shown(folder.name)}: no model.safetensors or "
                     "model.safetensors.index.json in the folder")


def open_model(path: str | Path) -> Model:
    """Open a Hugging Face model folder or a ``.gguf`` file (weights stay memory-mapped).

    Raises
    ------
    ModelError
        With one message naming the problem: no config, missing shards, a truncated file, an
        unsupported architecture or quant type (naming the supported ones), a config that does
        not match the weights, a tokenizer that cannot be read.
    """
    path = Path(path)
    if not path.exists():
        raise ModelError(f"{shown(path)}: no such file or folder")
    if path.is_dir():
        config = _read_config(path)
        label = shown(path.name)
        spec = spec_from_hf_config(config, label)
        store = SafetensorsWeights(_safetensors_files(path))
        tokenizer = TokenizerSource.of("tokenizer.json", check_hf_tokenizer(path))
        name = str(config.get("_name_or_path") or path.name)
        if not name or name in (".", "") or name.startswith("/"):
            name = path.name
        return Model(path, name, spec, store, _hf_names(spec, store, label), tokenizer,
                     "huggingface", store.dtypes)
    if path.suffix.lower() != ".gguf":
        raise ModelError(f"{shown(path.name)}: open a Hugging Face model folder (with "
                         "config.json) or a .gguf file")
    gguf = GgufFile(path)
    label = shown(path.name)
    spec = spec_from_gguf(gguf.metadata, label)
    check_gguf_vocabulary(gguf.metadata, label)
    tokenizer = TokenizerSource.of("GGUF vocabulary", path)
    # The file's own name: converters write general.name as they please ("Smollm2 135M 8k
    # Lc100K Mix1 Ep2" for SmolLM2-135M-Instruct), while the file is what the user chose.
    name = path.stem
    return Model(path, name, spec, _GgufLlamaStore(gguf, spec), _gguf_names, tokenizer, "gguf",
                 gguf.types, build_tokenizer=lambda: gguf_tokenizer(gguf.metadata, label))


def layers_text(text: str, count: int) -> list[int]:
    """Parse ``"0,2,5-7"`` into layer indices (checked against ``count`` later)."""
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
