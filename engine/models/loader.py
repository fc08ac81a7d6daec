"""Open a model from disk: a Hugging Face folder (config.json, safetensors, tokenizer.json) or
a GGUF file; each architecture's tensor names, and GGUF's q/k rows in Hugging Face's order."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from engine.io.source import shown
from engine.models.capture import Model
from engine.models.folder import path_kind, poller, read_config, safetensors_files
from engine.models.gguf_families import GGUF_ARCHITECTURE_ROWS
from engine.models.gguf_file import GgufFile
from engine.models.gguf_vocab import check_gguf_vocabulary
from engine.models.lm_head import find_head
from engine.models.rope import MAX_POSITIONS
from engine.models.spec import (
    ModelSpec,
    check_gguf_architecture,
    spec_from_gguf,
    spec_from_hf_config,
)
from engine.models.tokenize import (
    TokenizerSource,
    check_hf_tokenizer,
    gguf_tokenizer,
)
from engine.models.values import Values
from engine.models.weight_names import GGUF_LAYER, GGUF_TOP, HF_HEAD, WEIGHT_ROWS
from engine.models.weights import (
    ModelError,
    SafetensorsWeights,
    WeightStore,
)

__all__ = ["open_model"]

_SUFFIX = {"w": "weight", "b": "bias"}


def _hf_names(spec: ModelSpec, store: WeightStore, label: str) -> Callable[[int, str], str]:
    row = WEIGHT_ROWS[spec.family]
    top, layer, stem = row.top, row.layer, row.stem
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
        return GGUF_TOP[short]
    part, _, kind = short.partition(".")
    return f"blk.{index}.{GGUF_LAYER[part]}.{_SUFFIX[kind or 'w']}"


#: How each GGUF architecture lays out the pairs its rotary embedding turns. llama.cpp turns
#: adjacent dimensions (2i, 2i+1) for llama and granite ("NORM"; its converter permutes q/k
#: rows to suit), and dimensions i and i + d/2 for qwen2, qwen3, gemma2, gemma3, olmo2 and
#: phi3 ("NEOX", rows as in Hugging Face). The forward pass here turns halves, so only a NORM
#: file's q/k rows are reordered.
GGUF_ROPE_LAYOUT = {"llama": "norm", "granite": "norm", "qwen2": "neox", "qwen3": "neox",
                    "gemma2": "neox", "gemma3": "neox", "olmo2": "neox", "phi3": "neox"}
#: llama.cpp's converter writes Llama 3's rope scaling as this tensor: one divisor per pair.
ROPE_FREQS = "rope_freqs.weight"
#: Phi-3's LongRoPE factors, as its converter writes them.
LONGROPE = ("rope_factors_long.weight", "rope_factors_short.weight")


def _unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's reordering of q/k rows (interleaved rotary pairs) so q and k come
    out in Hugging Face's layout (halves rotated together), as transformers reads them."""
    rows = w.shape[0]
    return (w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2)
            .reshape(w.shape))


class _GgufStore(WeightStore):
    """A GGUF file's tensors with the q/k rows in Hugging Face's order."""

    def __init__(self, gguf: GgufFile, spec: ModelSpec) -> None:
        self._gguf, self._spec = gguf, spec
        self.names = gguf.names

    def shape(self, name: str) -> tuple[int, ...]:
        return self._gguf.shape(name)

    def source(self, name: str) -> str:
        return self._gguf.source(name)

    def get(self, name: str) -> np.ndarray:
        w = self._gguf.get(name)
        if GGUF_ROPE_LAYOUT[self._spec.architecture] != "norm":
            return w
        if name.endswith(".attn_q.weight"):
            return _unpermute(w, self._spec.heads)
        if name.endswith(".attn_k.weight"):
            return _unpermute(w, self._spec.kv_heads)
        return w

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        return self._gguf.rows(name, index)


#: Phi-3's layer: q, k and v fused in one matrix, the MLP's gate and up in another.
_FUSED_LAYER = {"norm1.w": ("h",), "qkv.w": ("qkvw", "h"), "o.w": ("h", "q"),
                "norm2.w": ("h",), "gate_up.w": ("2i", "h"), "down.w": ("h", "i")}
#: Biases of q, k, v and o that the llama and gemma2 passes add where the weights hold them.
_ATTENTION_BIASES = {"q.b": ("q",), "k.b": ("kv",), "v.b": ("kv",), "o.b": ("h",)}
_QK_NORMS = {"q_norm.w": ("d",), "k_norm.w": ("d",)}
#: Weights that change a llama forward pass which it does not model (LongRoPE's frequency
#: factors outside Phi-3's, whose loader reads them; MLP biases): refused rather than ignored.
_UNMODELLED_TOP = dict.fromkeys(LONGROPE, "LongRoPE frequency factors")
_UNMODELLED_LAYER = ("gate.b", "up.b", "down.b")
#: Phi-3's layers have no biases at all (transformers builds none, so would ignore them).
_UNMODELLED_FUSED = ("qkv.b", "o.b", "gate_up.b", "down.b")


def _expected_weights(spec: ModelSpec) -> tuple[dict[str, tuple[str, ...]],
                                                  dict[str, tuple[str, ...]]]:
    """The weights each layer must have and those it may have, by short name."""
    if spec.fused:
        return dict(_FUSED_LAYER), {}
    row = WEIGHT_ROWS[spec.family]
    must = dict(row.layer_shapes)
    may: dict[str, tuple[str, ...]] = {}
    if row.rotary:
        if spec.attention_bias:
            must.update(_ATTENTION_BIASES)
        elif spec.qkv_bias:
            must.update({k: v for k, v in _ATTENTION_BIASES.items() if k != "o.b"})
            may["o.b"] = _ATTENTION_BIASES["o.b"]
        else:
            may.update(_ATTENTION_BIASES)
    if spec.qk_norm and row.head_qk_norm:
        must.update(_QK_NORMS)
    return must, may


def _dimensions(spec: ModelSpec) -> dict[str, tuple[int, str]]:
    q, kv, hd = spec.heads * spec.head_dim, spec.kv_heads * spec.head_dim, spec.head_dim
    return {"h": (spec.hidden, f"width {spec.hidden}"),
            "q": (q, f"{spec.heads} heads × {hd}"),
            "kv": (kv, f"{spec.kv_heads} key heads × {hd}"),
            "3q": (3 * q, f"3 × {spec.heads} heads × {hd}"),
            "i": (spec.intermediate, f"MLP width {spec.intermediate}"),
            "2i": (2 * spec.intermediate, f"2 × MLP width {spec.intermediate}"),
            "qkvw": (q + 2 * kv, f"{spec.heads} heads and 2 × {spec.kv_heads} key heads × {hd}"),
            "d": (hd, f"head width {hd}"),
            "P": (spec.max_positions, f"≥ {spec.max_positions} positions")}


def _check_shape(name: str, got: tuple[int, ...], want: tuple[str, ...],
                 dims: dict[str, tuple[int, str]], label: str) -> None:
    fits = len(got) == len(want) and all(
        size >= 1 if kind == "V" else size >= dims[kind][0] if kind == "P"
        else size == dims[kind][0] for size, kind in zip(got, want, strict=True))
    if not fits:
        expected = tuple("rows" if kind == "V" else dims[kind][0] for kind in want)
        why = "; ".join(dims[kind][1] for kind in want if kind != "V")
        raise ModelError(f"{label}: '{shown(name, 80)}' has shape {got}, but the config gives "
                         f"{expected} ({why}): the config does not match the weights")


def _check_weights(spec: ModelSpec, store: WeightStore, names: Callable[[int, str], str],
                   label: str) -> int:
    """Check that every weight the forward pass reads is there with the shape the config
    gives (shapes only: no weight is read); return the vocabulary size.

    Layer by layer from the first, so that a layer count beyond the weights is refused at
    the first missing layer.
    """
    dims = _dimensions(spec)
    for name, what in _UNMODELLED_TOP.items():
        if name in store.names and spec.rope.get("rope_type") != "longrope":
            raise ModelError(f"{label}: the weights hold '{name}' ({what}), which this app "
                             "does not model")

    def check(layer: int, must: dict[str, tuple[str, ...]], may: dict[str, tuple[str, ...]],
              why: str) -> None:
        """The weights of ``must`` are there, ``why`` saying what their lack means; those of
        ``must`` and ``may`` that are there have the config's shapes."""
        for short, want in {**must, **may}.items():
            name = names(layer, short)
            if name in store.names:
                _check_shape(name, store.shape(name), want, dims, label)
            elif short in must:
                raise ModelError(f"{label}: the weights lack '{shown(name, 80)}'{why}")

    row = WEIGHT_ROWS[spec.family]
    check(-1, row.top_shapes, row.optional_top, ": they do not belong to a "
          f"{spec.architecture} model as the config says")
    must, may = _expected_weights(spec)
    for layer in range(spec.layers):
        check(layer, must, may, f" (layer {layer} of {spec.layers}): a shard missing, or a "
              "config that does not match the weights")
        if row.rotary:
            for short in _UNMODELLED_FUSED if spec.fused else _UNMODELLED_LAYER:
                if names(layer, short) in store.names:
                    what = ("a bias, which Phi-3's layers do not have" if spec.fused else
                            "a bias of the MLP")
                    raise ModelError(f"{label}: the weights hold '{names(layer, short)}', "
                                     f"{what}, which this app does not model")
    return store.shape(names(-1, "embed"))[0]


def _divisors(gguf: GgufFile, name: str, pairs: int, head_dim: int,
              label: str) -> tuple[float, ...]:
    """The per-pair frequency divisors of tensor ``name``: ``pairs`` finite numbers > 0."""
    shape = gguf.shape(name)
    if shape != (pairs,):
        raise ModelError(f"{label}: '{name}' has shape {shape}, but a head width of "
                         f"{head_dim} needs ({pairs},): one frequency divisor per pair")
    divisors = gguf.get(name).astype(np.float64).reshape(pairs)
    bad = ~(np.isfinite(divisors) & (divisors > 0))
    if bad.any():
        pair = int(np.argmax(bad))
        raise ModelError(f"{label}: '{name}' holds {divisors[pair]:g} for pair {pair}: "
                         "each rotary frequency divisor must be a finite number > 0")
    return tuple(divisors.tolist())


def _with_rope_factors(spec: ModelSpec, gguf: GgufFile, label: str) -> ModelSpec:
    """``spec`` with the file's rotary frequency divisors, when it holds ``rope_freqs`` (or,
    Phi-3, LongRoPE's ``rope_factors_long`` and ``rope_factors_short``).

    Every Llama 3.1/3.2 GGUF has them (from ``rope_scaling`` llama3, which the converter
    writes nowhere else): without them q and k come out as plain RoPE, silently wrong.
    Phi-3's converter writes LongRoPE's factors as the two tensors, the original context and
    the attention factor as metadata; the factors are chosen by the text's length, as
    transformers does (llama.cpp chooses them by its context size).
    """
    pairs = spec.rotary_width() // 2
    if GGUF_ARCHITECTURE_ROWS[spec.architecture].longrope:
        # llama.cpp multiplies cos and sin by the attention factor with or without factors
        values = Values(gguf.metadata, label)
        rope = {**spec.rope, "attention_factor": values.number(
            "phi3.rope.scaling.attn_factor", default=1.0, above=0, below=1e6)}
        if LONGROPE[0] in gguf.names:
            rope.update({f"{kind}_factor": _divisors(gguf, f"rope_factors_{kind}.weight",
                                                     pairs, spec.head_dim, label)
                         for kind in ("long", "short")},
                        rope_type="longrope", original_max_position_embeddings=values.whole(
                            "phi3.rope.scaling.original_context_length", low=2,
                            high=MAX_POSITIONS))
        return dataclasses.replace(spec, rope=rope)
    if ROPE_FREQS not in gguf.names:
        return spec
    divisors = _divisors(gguf, ROPE_FREQS, pairs, spec.head_dim, label)
    return dataclasses.replace(spec, rope={**spec.rope, "freq_factors": divisors})


def _ids(source: Mapping[str, Any]) -> tuple[int, ...]:
    """The end-of-text ids of a config's ``eos_token_id`` (a number or a list) or a GGUF
    file's ``eos`` and ``eot`` ids; what is not a whole number ≥ 0 is ignored."""
    found: list[Any] = []
    for key in ("eos_token_id", "eos", "eot"):
        value = source.get(key)
        found.extend(value if isinstance(value, list) else [value])
    return tuple(sorted({int(v) for v in found if isinstance(v, int) and not
                         isinstance(v, bool) and v >= 0}))


def open_model(path: str | Path, *, cancelled: Callable[[], bool] | None = None) -> Model:
    """Open a Hugging Face model folder or a ``.gguf`` file (weights stay memory-mapped).

    Parameters
    ----------
    path
        The folder or file. Only regular files are opened (a FIFO is refused, not waited on).
    cancelled
        Polled throughout the open (every few hundred header entries, tensor infos or
        vocabulary strings, well within 50 ms of work); once it returns True the open stops.

    Raises
    ------
    ModelError
        With one message naming the problem: no config, missing shards, a truncated file, an
        unsupported architecture or quant type (naming the supported ones), a config that does
        not match the weights, a tokenizer that cannot be read, an offset, count, alignment or
        shard path the file cannot hold.
    CaptureCancelled
        Once ``cancelled()`` returned True.
    """
    poll = poller(cancelled)
    path = Path(path)
    if path_kind(path) == "folder":
        config = read_config(path)
        label = shown(path.name)
        spec = spec_from_hf_config(config, label)
        store = SafetensorsWeights(safetensors_files(path, poll), poll)
        tokenizer = TokenizerSource.of("tokenizer.json", check_hf_tokenizer(path))
        name = str(config.get("_name_or_path") or path.name)
        if not name or name in (".", "") or name.startswith("/"):
            name = path.name
        names = _hf_names(spec, store, label)
        poll()
        vocab = _check_weights(spec, store, names, label)
        head, missing = find_head(spec, store, names, HF_HEAD, label)
        return Model(path, name, spec, store, names, tokenizer, "huggingface", store.dtypes,
                     vocab, head=head, head_missing=missing, end_ids=_ids(config))
    if path.suffix.lower() != ".gguf":
        raise ModelError(f"{shown(path.name)}: open a Hugging Face model folder (with "
                         "config.json) or a .gguf file")
    gguf = GgufFile(path, poll=poll, check_architecture=check_gguf_architecture)
    label = shown(path.name)
    spec = _with_rope_factors(spec_from_gguf(gguf.metadata, label), gguf, label)
    check_gguf_vocabulary(gguf.metadata, label)
    tokenizer = TokenizerSource.of("GGUF vocabulary", path)
    # The file's own name: converters write general.name as they please ("Smollm2 135M 8k
    # Lc100K Mix1 Ep2" for SmolLM2-135M-Instruct), while the file is what the user chose.
    name = path.stem
    store = _GgufStore(gguf, spec)
    poll()
    vocab = _check_weights(spec, store, _gguf_names, label)
    head, missing = find_head(spec, store, _gguf_names, GGUF_TOP["head"], label)
    ends = {key: gguf.metadata.get(f"tokenizer.ggml.{key}_token_id") for key in ("eos", "eot")}
    return Model(path, name, spec, store, _gguf_names, tokenizer, "gguf", gguf.types, vocab,
                 build_tokenizer=lambda: gguf_tokenizer(gguf.metadata, label), head=head,
                 head_missing=missing, end_ids=_ids(ends))
