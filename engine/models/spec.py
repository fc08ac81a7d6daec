"""What a forward pass needs to know about a model, read from ``config.json`` or GGUF metadata."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.io.source import shown
from engine.models.families import (
    ARCHITECTURE_ROWS,
    check_config_keys,
    family_settings,
    text_config,
)
from engine.models.gguf_families import GGUF_ARCHITECTURE_ROWS, gguf_family_settings
from engine.models.gguf_keys import check_gguf_keys
from engine.models.rope import (
    MAX_POSITIONS,
    inverse_frequencies,
    rotary_width,
)
from engine.models.values import Values
from engine.models.weights import ModelError
from engine.models.windows import layer_windows

__all__ = ["ARCHITECTURES", "GGUF_ARCHITECTURES", "ModelSpec", "check_gguf_architecture",
           "spec_from_gguf", "spec_from_hf_config"]

#: Hugging Face ``model_type`` values this app runs, by the forward pass that runs them.
ARCHITECTURES: Mapping[str, str] = {arch: row.family for arch, row in ARCHITECTURE_ROWS.items()}
#: GGUF ``general.architecture`` values this app runs, by the forward pass that runs them.
GGUF_FAMILIES: Mapping[str, str] = {arch: row.family
                                    for arch, row in GGUF_ARCHITECTURE_ROWS.items()}
GGUF_ARCHITECTURES = tuple(GGUF_FAMILIES)
#: Mixtures of experts, as folders (``model_type``) and GGUF files name them: each token goes
#: through a routed few of many MLPs, which the forward passes here do not model (Mixtral's
#: GGUF files say "llama" and are refused by their ``expert_count``).
MOE_ARCHITECTURES = ("mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "deepseek_v2",
                     "deepseek_v3", "llama4", "llama4_text")
GGUF_MOE_ARCHITECTURES = ("qwen2moe", "qwen3moe", "gpt-oss", "deepseek2", "llama4")
#: The activations the forward pass computes (engine.models.forward).
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "silu", "swish")

# Bounds on the counts a config gives, well above the largest published models (126 layers,
# 128 heads, width 16,384, 10M positions), so that a hostile count is refused before anything
# is built from it (a billion layers once built a 7.9 GB tuple before the weights were read).
MAX_LAYERS = 1024
MAX_HEADS = 4096
MAX_WIDTH = 1 << 17
MAX_INNER = 1 << 20
MAX_HEAD_DIM = 1 << 13
#: The smallest norm epsilon: a smaller one is 0 in float32 (a row of zeros would divide by
#: zero); BERT's 1e-12 is the smallest in use. A negative one gives NaN q and k.
TINY_EPS = 1e-30


@dataclass(frozen=True)
class ModelSpec:
    """The shape and rules of one model's forward pass."""

    architecture: str  # the model_type as the file names it (e.g. "qwen3")
    family: str  # "bert", "gpt2", "llama", "gemma2" or "olmo2": which forward pass runs it
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
    #: The sliding window of each layer (None: every earlier key; see engine.models.windows).
    windows: tuple[int | None, ...] = ()
    scale_note: str = ""
    #: Whether q, k, v and o have biases the config asks for (Qwen2's q, k and v always do).
    attention_bias: bool = False
    #: Whether q, k and v have biases whatever the config says, and o may (Qwen2).
    qkv_bias: bool = False
    #: Whether Gemma's RMS norm weights already hold its + 1 (llama.cpp's converter adds it
    #: when it writes a GGUF file), so the forward pass must not add it again.
    norms_hold_one: bool = False
    #: What the embeddings are multiplied by (Gemma: √width; Granite: embedding_multiplier).
    embed_scale: float = 1.0
    #: What each residual branch is multiplied by before its sum (Granite).
    residual_scale: float = 1.0
    #: The LM head's logits are divided by logits_divisor (Granite), then soft-capped by
    #: final_cap (Gemma 2 and 3).
    logits_divisor: float = 1.0
    final_cap: float | None = None
    #: Whether the LM head is the embedding matrix (a folder's tie_word_embeddings; a GGUF
    #: file without output.weight).
    tied_head: bool = False
    #: rope_theta and scaling of the sliding layers, where they differ (Gemma 3).
    local_rope_theta: float | None = None
    local_rope: Mapping[str, Any] = field(default_factory=dict)
    #: q, k and v in one matrix (qkv) and the MLP's gate and up in another (gate_up), as
    #: Phi-3 stores them.
    fused: bool = False

    def window(self, layer: int) -> int | None:
        """The sliding window of ``layer`` (None: it sees every earlier key)."""
        return self.windows[layer] if self.windows else None

    def rope_inverse_frequencies(self, local: bool = False, n: int | None = None) -> Any:
        """The rotary frequencies per turned pair (float64), with the model's scaling, for a
        sequence of ``n`` tokens (``local``: those of the sliding layers, where the model has
        its own; see :func:`engine.models.rope.inverse_frequencies`)."""
        theta, rope = ((self.local_rope_theta, self.local_rope) if local
                       and self.local_rope_theta is not None else (self.rope_theta, self.rope))
        assert theta is not None
        return inverse_frequencies(theta, dict(rope), self.rotary_width(), n)

    def rotary_width(self) -> int:
        """How many of each head's dimensions the rotary embedding turns (Phi-3: part)."""
        return rotary_width(self.head_dim, dict(self.rope))

    def rope_attention_factor(self) -> float:
        """What cos and sin are multiplied by (LongRoPE's attention factor; else 1)."""
        return float(self.rope.get("attention_factor", 1.0))


def _check_rotary(label: str, head_dim: int) -> None:
    if head_dim % 2:
        raise ModelError(f"{label}: the rotary embedding turns pairs of dimensions, but the "
                         f"head width is {head_dim} (odd)")


def _heads_and_width(config: Values, rotary: bool, label: str) -> tuple[int, int, int, int]:
    """hidden, heads, key heads and head width, checked against one another."""
    hidden = config.whole("hidden_size", "n_embd", high=MAX_WIDTH)
    heads = config.whole("num_attention_heads", "n_head", high=MAX_HEADS)
    # BERT and GPT-2 have neither grouped keys nor a head width of their own: transformers
    # ignores those keys there, and so does this.
    kv_heads = config.whole("num_key_value_heads", default=heads, high=heads) if rotary else heads
    if heads % kv_heads:
        raise ModelError(f"{label}: {heads} query heads cannot share {kv_heads} key heads")
    head_dim = config.whole("head_dim", default=None, high=MAX_HEAD_DIM) if rotary else None
    if head_dim is None:
        if hidden % heads:
            raise ModelError(f"{label}: hidden size {hidden} is not a multiple of {heads} heads")
        head_dim = hidden // heads
    if rotary:
        _check_rotary(label, head_dim)
    return hidden, heads, kv_heads, head_dim


def _mixture(label: str, arch: str) -> ModelError:
    return ModelError(f"{label}: the architecture '{arch}' is a mixture of experts, which this "
                      "app does not model")


def spec_from_hf_config(config: Mapping[str, Any], label: str) -> ModelSpec:
    """Read a Hugging Face ``config.json`` (already parsed).

    Raises
    ------
    ModelError
        For an architecture not in :data:`ARCHITECTURES`, naming it and the supported ones, or
        a field that is missing, of the wrong type or out of range (naming the key, its value
        and what is allowed), or that asks for what the forward pass does not model.
    """
    config = text_config(config, label)
    values = Values(config, label)
    _, arch = values.raw("model_type")
    if arch in MOE_ARCHITECTURES:
        raise _mixture(label, arch)
    if not isinstance(arch, str) or arch not in ARCHITECTURES:
        classes = config.get("architectures")
        extra = (f" ({shown(', '.join(map(str, classes)), 80)})" if isinstance(classes, list)
                 else "")
        raise ModelError(f"{label}: the architecture {shown(repr(arch), 60)}{extra} is not "
                         f"supported; supported: {', '.join(ARCHITECTURES)}")
    check_config_keys(values, arch)
    row = ARCHITECTURE_ROWS[arch]
    family = row.family
    layers = values.whole("num_hidden_layers", "n_layer", high=MAX_LAYERS)
    hidden, heads, kv_heads, head_dim = _heads_and_width(values, row.rope is not None, label)
    intermediate = values.whole("intermediate_size", "n_inner", default=4 * hidden,
                                high=MAX_INNER)
    eps = values.number("layer_norm_eps", "layer_norm_epsilon", "rms_norm_eps", default=1e-5,
                        least=TINY_EPS, below=1)
    positions = values.whole("max_position_embeddings", "n_positions", default=2048,
                             high=MAX_POSITIONS)
    activation = values.choice(*row.activation_keys, options=ACTIVATIONS,
                               default=row.activation)
    theta, rope, local_theta, local_rope = (None, {}, None, {}) if row.rope is None else (
        row.rope(values, head_dim))
    biases = False
    if row.mlp_bias and values.flag("mlp_bias", default=False):
        raise values.refuse("mlp_bias", True, "false (biases of the MLP are not modelled)")
    if row.attention_bias:
        biases = values.flag("attention_bias", default=False)
    extra = family_settings(values, arch)
    scale, note = extra.pop("scale", head_dim ** -0.5), extra.pop("note", "1/√d_head")
    per_layer = extra.pop("per_layer", False)
    if per_layer:
        note += ", ÷ (layer + 1)"
    if row.embed_sqrt_width:
        extra["embed_scale"] = hidden ** 0.5
    scales = (tuple(scale / (i + 1) for i in range(layers)) if per_layer
              else (scale,) * layers)
    return ModelSpec(architecture=arch, family=family, layers=layers, hidden=hidden, heads=heads,
                     kv_heads=kv_heads, head_dim=head_dim, intermediate=intermediate, eps=eps,
                     max_positions=positions, activation=activation, causal=row.causal,
                     scales=scales, qk_norm=row.qk_norm,
                     rope_theta=theta, rope=rope,
                     windows=layer_windows(values, arch, layers, MAX_POSITIONS),
                     scale_note=note, attention_bias=biases, local_rope_theta=local_theta,
                     local_rope=local_rope, fused=row.fused, qkv_bias=row.qkv_bias,
                     tied_head=values.flag("tie_word_embeddings", default=row.tied_head),
                     **extra)


def check_gguf_architecture(arch: object, label: str) -> None:
    """Refuse a GGUF ``general.architecture`` this app does not run, in one line: a mixture
    of experts as such, any other naming the supported ones."""
    if arch in GGUF_MOE_ARCHITECTURES:
        raise _mixture(label, str(arch))
    if not isinstance(arch, str) or arch not in GGUF_ARCHITECTURES:
        raise ModelError(f"{label}: the GGUF architecture {shown(repr(arch), 60)} is not "
                         f"supported; supported: {', '.join(GGUF_ARCHITECTURES)}")


def spec_from_gguf(metadata: Mapping[str, Any], label: str) -> ModelSpec:
    """Read the metadata of a GGUF file (``general.architecture`` one of
    :data:`GGUF_ARCHITECTURES`), as llama.cpp reads it.

    Raises
    ------
    ModelError
        For another architecture, a value that is missing, of the wrong type or out of range
        (naming the key, its value and what is allowed), or a key that changes the forward
        pass in a way this app does not model (YaRN rotary scaling, partial rotary, experts).
    """
    values = Values(metadata, label)
    _, arch = values.raw("general.architecture")
    check_gguf_architecture(arch, label)
    check_gguf_keys(metadata, arch, label)
    row = GGUF_ARCHITECTURE_ROWS[arch]

    def key(name: str) -> str:
        return f"{arch}.{name}"

    hidden = values.whole(key("embedding_length"), high=MAX_WIDTH)
    heads = values.whole(key("attention.head_count"), high=MAX_HEADS)
    kv_heads = values.whole(key("attention.head_count_kv"), default=heads, high=heads)
    head_dim = values.whole(key("attention.key_length"), default=None, high=MAX_HEAD_DIM)
    if heads % kv_heads or (head_dim is None and hidden % heads):
        raise ModelError(f"{label}: {heads} heads, {kv_heads} key heads and width {hidden} "
                         "do not fit together")
    head_dim = hidden // heads if head_dim is None else head_dim
    # llama.cpp allows a value width, and a rotary width, other than the key width; the
    # forward pass here (as transformers' Llama) has one head width, rotated whole but in
    # Phi-3 (partial rotary: Phi-4-mini turns 96 of 128).
    rope: dict[str, Any] = {"rope_type": "default"}
    for name, what in (("attention.value_length", "the key width"),
                       ("rope.dimension_count", "the head width (partial rotary is not "
                                                "modelled)")):
        width = values.whole(key(name), default=head_dim, high=MAX_HEAD_DIM)
        if row.partial_rotary and name.startswith("rope") and width < head_dim:
            if width < 2 or width % 2:
                raise values.refuse(key(name), width, f"an even number from 2 to {head_dim}")
            rope["rotary_dim"] = width
        elif width != head_dim:
            raise values.refuse(key(name), width, f"{head_dim}, {what}")
    _check_rotary(label, head_dim)
    layers = values.whole(key("block_count"), high=MAX_LAYERS)
    experts = values.whole(key("expert_count"), default=0, low=0, high=MAX_HEADS)
    if experts:
        raise values.refuse(key("expert_count"), experts,
                            "0 (a mixture of experts is not modelled)")
    scaling = values.choice(key("rope.scaling.type"), options=("none", "linear"),
                            default="none")
    if scaling == "linear":
        rope.update(rope_type="linear", factor=values.number(key("rope.scaling.factor"),
                                                             least=1))
    scale_linear = values.number(key("rope.scale_linear"), default=1.0, above=0)
    if scale_linear != 1.0:
        raise values.refuse(key("rope.scale_linear"), scale_linear,
                            "1 (write the factor as rope.scaling.type linear and "
                            "rope.scaling.factor)")
    family = row.family
    extra = {"windows": (None,) * layers,
             **gguf_family_settings(values, arch, layers, hidden, heads, head_dim)}
    scale, note = extra.pop("scale", head_dim ** -0.5), extra.pop("note", "1/√d_head")
    if row.uniform_window:
        # The converter writes 0 for none (Phi-4). llama.cpp now ignores Phi-3's window; it
        # is applied here as the model defines it (transformers), so that a file and the
        # folder it was written from give the same q and k.
        window = values.whole(key("attention.sliding_window"), default=0, low=0,
                              high=MAX_POSITIONS)
        extra["windows"] = (window or None,) * layers
    return ModelSpec(architecture=arch, family=family, layers=layers, hidden=hidden,
                     heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                     intermediate=values.whole(key("feed_forward_length"), high=MAX_INNER),
                     eps=values.number(key("attention.layer_norm_rms_epsilon"), default=1e-5,
                                       least=TINY_EPS, below=1),
                     max_positions=values.whole(key("context_length"), default=2048,
                                                high=MAX_POSITIONS),
                     activation=row.activation,
                     causal=True, scales=(scale,) * layers, qk_norm=row.qk_norm,
                     rope_theta=values.number(key("rope.freq_base"), default=10000.0, above=1),
                     rope=rope, scale_note=note, fused=row.fused, qkv_bias=row.qkv_bias,
                     **extra)
