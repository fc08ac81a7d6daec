"""Open a model from disk: a Hugging Face folder (config.json, safetensors, tokenizer.json) or
a GGUF file; each architecture's tensor names, and GGUF's q/k rows in Hugging Face's order."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from engine.io.source import shown
from engine.models.capture import Model
from engine.models.spec import ModelSpec, spec_from_gguf, spec_from_hf_config
from engine.models.tokenize import (
    TokenizerSource,
    check_gguf_vocabulary,
    check_hf_tokenizer,
    gguf_tokenizer,
)
from engine.models.weights import GgufFile, ModelError, SafetensorsWeights, WeightStore

__all__ = ["open_model"]

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


def _check_weights(spec: ModelSpec, store: WeightStore, names: Callable[[int, str], str],
                   label: str) -> int:
    """Check that the weights have the shapes the config gives; return the vocabulary size."""
    embed = names(-1, "embed")
    shape = store.shape(embed)
    if len(shape) != 2 or shape[1] != spec.hidden:
        raise ModelError(f"{label}: '{embed}' has shape {shape}, but the config says "
                         f"a width of {spec.hidden}: the config does not match the weights")
    q_out = spec.heads * spec.head_dim
    kv_out = spec.kv_heads * spec.head_dim
    expect = {"q.w": q_out, "k.w": kv_out, "v.w": kv_out}
    if spec.family == "gpt2":
        expect = {"qkv.w": 3 * spec.hidden}
    for layer in range(spec.layers):
        for short, rows in expect.items():
            name = names(layer, short)
            if name not in store.names:
                raise ModelError(f"{label}: the weights lack '{name}' (layer {layer} "
                                 f"of {spec.layers}): a shard missing, or a config that "
                                 "does not match the weights")
            got = store.shape(name)
            size = got[-1] if spec.family == "gpt2" else got[0]
            if size != rows:
                raise ModelError(f"{label}: '{name}' has shape {got}, which does not "
                                 f"match {spec.heads} heads × {spec.head_dim} (key heads "
                                 f"{spec.kv_heads}) of the config")
    return shape[0]


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
        names = _hf_names(spec, store, label)
        return Model(path, name, spec, store, names, tokenizer, "huggingface", store.dtypes,
                     _check_weights(spec, store, names, label))
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
    store = _GgufLlamaStore(gguf, spec)
    return Model(path, name, spec, store, _gguf_names, tokenizer, "gguf", gguf.types,
                 _check_weights(spec, store, _gguf_names, label),
                 build_tokenizer=lambda: gguf_tokenizer(gguf.metadata, label))
