"""What a forward pass needs to know about a model, read from ``config.json`` or GGUF metadata."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.models.weights import ModelError

__all__ = ["ARCHITECTURES", "GGUF_ARCHITECTURES", "ModelSpec", "spec_from_gguf",
           "spec_from_hf_config"]

#: Hugging Face ``model_type`` values this app runs, by the forward pass that runs them.
ARCHITECTURES: Mapping[str, str] = {
    "bert": "bert", "gpt2": "gpt2", "llama": "llama", "mistral": "llama", "qwen2": "llama",
    "qwen3": "llama", "gemma2": "gemma2",
}
#: GGUF ``general.architecture`` values this app runs.
GGUF_ARCHITECTURES = ("llama",)
ROPE_TYPES = ("default", "linear", "llama3")


@dataclass(frozen=True)
class ModelSpec:
    """The shape and rules of one model's forward pass."""

    architecture: str  # the model_type as the file names it (e.g. "qwen3")
    family: str  # "bert", "gpt2", "llama" or "gemma2": which forward pass runs it
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    eps: float
    max_positions: int
    activation: str
    causal: bool
    #: c of the logits c·q·kᵀ per layer (GPT-2's scale_attn_by_inverse_layer_idx varies it).
    scales: tuple[float, ...]
    cap: float | None = None
    qk_norm: bool = False
    rope_theta: float | None = None
    rope: Mapping[str, Any] = field(default_factory=dict)
    sliding_window: int | None = None
    scale_note: str = ""

    def rope_inverse_frequencies(self) -> Any:
        """The rotary frequencies per pair of dimensions (float64), with the model's scaling."""
        import numpy as np

        assert self.rope_theta is not None
        dim = self.head_dim
        inv = 1.0 / self.rope_theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
        kind = self.rope.get("rope_type", self.rope.get("type", "default"))
        if kind == "linear":
            inv = inv / float(self.rope["factor"])
        elif kind == "llama3":
            factor = float(self.rope["factor"])
            low, high = float(self.rope["low_freq_factor"]), float(self.rope["high_freq_factor"])
            original = float(self.rope["original_max_position_embeddings"])
            wavelen = 2 * math.pi / inv
            scaled = np.where(wavelen > original / low, inv / factor, inv)
            smooth = (original / wavelen - low) / (high - low)
            middle = (1 - smooth) * scaled / factor + smooth * scaled
            between = (wavelen >= original / high) & (wavelen <= original / low)
            inv = np.where(between, middle, scaled)
        return inv


def _get(config: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        value = config.get(key)
        if value is not None:
            return value
    return default


def _whole(label: str, key: str, value: Any, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ModelError(f"{label}: '{key}' must be a whole number ≥ {low}, got {value!r}")
    return value


def _rope_of(config: Mapping[str, Any], label: str) -> tuple[float, dict[str, Any]]:
    # transformers 5 writes "rope_parameters" (with rope_theta inside); older configs write
    # rope_theta and rope_scaling beside each other.
    params = config.get("rope_parameters")
    if isinstance(params, Mapping) and "full_attention" in params:
        params = params["full_attention"]
    if not isinstance(params, Mapping):
        params = dict(config.get("rope_scaling") or {})
        params.setdefault("rope_theta", config.get("rope_theta", 10000.0))
    params = dict(params)
    kind = params.get("rope_type", params.get("type", "default"))
    if kind not in ROPE_TYPES:
        raise ModelError(f"{label}: rotary scaling '{kind}' is not supported; supported: "
                         f"{', '.join(ROPE_TYPES)}")
    theta = float(params.get("rope_theta", config.get("rope_theta", 10000.0)))
    if not math.isfinite(theta) or theta <= 1:
        raise ModelError(f"{label}: 'rope_theta' must be a number > 1, got {theta!r}")
    return theta, params


def spec_from_hf_config(config: Mapping[str, Any], label: str) -> ModelSpec:
    """Read a Hugging Face ``config.json`` (already parsed).

    Raises
    ------
    ModelError
        For an architecture not in :data:`ARCHITECTURES`, naming it and the supported ones, or
        a field that is missing or out of range.
    """
    arch = config.get("model_type")
    if arch not in ARCHITECTURES:
        classes = config.get("architectures")
        extra = f" ({', '.join(map(str, classes))})" if isinstance(classes, list) else ""
        raise ModelError(f"{label}: the architecture {arch!r}{extra} is not supported; "
                         f"supported: {', '.join(ARCHITECTURES)}")
    family = ARCHITECTURES[arch]
    layers = _whole(label, "num_hidden_layers", _get(config, "num_hidden_layers", "n_layer"))
    hidden = _whole(label, "hidden_size", _get(config, "hidden_size", "n_embd"))
    heads = _whole(label, "num_attention_heads", _get(config, "num_attention_heads", "n_head"))
    kv_heads = _whole(label, "num_key_value_heads", _get(config, "num_key_value_heads",
                                                          default=heads))
    if heads % kv_heads:
        raise ModelError(f"{label}: {heads} query heads cannot share {kv_heads} key heads")
    head_dim = _get(config, "head_dim")
    if head_dim is None:
        if hidden % heads:
            raise ModelError(f"{label}: hidden size {hidden} is not a multiple of {heads} heads")
        head_dim = hidden // heads
    head_dim = _whole(label, "head_dim", head_dim)
    intermediate = _get(config, "intermediate_size", "n_inner", default=4 * hidden)
    intermediate = _whole(label, "intermediate_size", intermediate)
    eps = float(_get(config, "layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps",
                     default=1e-5))
    positions = _whole(label, "max_position_embeddings",
                       _get(config, "max_position_embeddings", "n_positions", default=2048))
    activation = str(_get(config, "hidden_activation", "hidden_act", "activation_function",
                          default="gelu"))
    scale = head_dim ** -0.5
    scales = (scale,) * layers
    note = "1/√d_head"
    cap = None
    theta, rope = None, {}
    window = None
    if family == "gpt2":
        if config.get("scale_attn_weights", True) is False:
            scales, note = (1.0,) * layers, "1 (scale_attn_weights off)"
        if config.get("scale_attn_by_inverse_layer_idx"):
            scales = tuple(s / (i + 1) for i, s in enumerate(scales))
            note += ", ÷ (layer + 1)"
    if family in ("llama", "gemma2"):
        theta, rope = _rope_of(config, label)
        if arch == "mistral" or config.get("use_sliding_window", arch == "gemma2"):
            window = config.get("sliding_window")
    if family == "gemma2":
        scalar = float(_get(config, "query_pre_attn_scalar", default=head_dim))
        scales = (scalar ** -0.5,) * layers
        note = f"query_pre_attn_scalar {scalar:g}: 1/√{scalar:g}"
        cap = config.get("attn_logit_softcapping")
        cap = None if cap is None else float(cap)
        activation = str(_get(config, "hidden_activation", default="gelu_pytorch_tanh"))
    return ModelSpec(architecture=arch, family=family, layers=layers, hidden=hidden, heads=heads,
                     kv_heads=kv_heads, head_dim=head_dim, intermediate=intermediate, eps=eps,
                     max_positions=positions, activation=activation, causal=family != "bert",
                     scales=scales, cap=cap, qk_norm=arch == "qwen3", rope_theta=theta, rope=rope,
                     sliding_window=None if window is None else int(window), scale_note=note)


def spec_from_gguf(metadata: Mapping[str, Any], label: str) -> ModelSpec:
    """Read the metadata of a GGUF file (``general.architecture`` must be ``llama``)."""
    arch = metadata.get("general.architecture")
    if arch not in GGUF_ARCHITECTURES:
        raise ModelError(f"{label}: the GGUF architecture {arch!r} is not supported; supported: "
                         f"{', '.join(GGUF_ARCHITECTURES)}")

    def key(name: str, default: Any = None) -> Any:
        value = metadata.get(f"{arch}.{name}", default)
        if value is None:
            raise ModelError(f"{label}: the GGUF metadata has no '{arch}.{name}'")
        return value

    hidden = _whole(label, "embedding_length", key("embedding_length"))
    heads = _whole(label, "attention.head_count", key("attention.head_count"))
    kv_heads = _whole(label, "attention.head_count_kv", key("attention.head_count_kv", heads))
    if heads % kv_heads or hidden % heads:
        raise ModelError(f"{label}: {heads} heads, {kv_heads} key heads and width {hidden} "
                         "do not fit together")
    head_dim = _whole(label, "rope.dimension_count", key("rope.dimension_count", hidden // heads))
    layers = _whole(label, "block_count", key("block_count"))
    rope: dict[str, Any] = {}
    if metadata.get(f"{arch}.rope.scaling.type") == "linear":
        rope = {"rope_type": "linear", "factor": float(key("rope.scaling.factor"))}
    theta = float(key("rope.freq_base", 10000.0))
    return ModelSpec(architecture=arch, family="llama", layers=layers, hidden=hidden, heads=heads,
                     kv_heads=kv_heads, head_dim=head_dim,
                     intermediate=_whole(label, "feed_forward_length",
                                         key("feed_forward_length")),
                     eps=float(key("attention.layer_norm_rms_epsilon", 1e-5)),
                     max_positions=_whole(label, "context_length", key("context_length", 2048)),
                     activation="silu", causal=True, scales=(head_dim ** -0.5,) * layers,
                     rope_theta=theta, rope=rope, scale_note="1/√d_head")
