"""What each GGUF architecture sets beyond the keys every one shares, read as llama.cpp's model
loader (``src/llama-model.cpp``) reads them, as :class:`~engine.models.spec.ModelSpec` fields:

* ``gemma2``: no query_pre_attn_scalar (the scale is 1/√key width, 1/√(width / heads) for the
  46-layer 27B), logit cap and window defaulting to 50 and 4096, even layers sliding;
* ``gemma3``: as Gemma 2 without a cap, with QK-norm; llama.cpp fixes the window pattern (every
  layer but each sixth slides) and the sliding layers' RoPE (base 10000, unscaled), whatever
  the folder said, and scales the 62-layer 27B by 1/√(width / heads); no window key (or 0):
  no sliding layers;
* ``granite``: ``attention.scale``, ``embedding_scale``, ``residual_scale`` and
  ``logit_scale``, each optional as llama.cpp reads them (absent or 0: not applied);
  ``rope.scaling.finetuned`` false turns its RoPE off in llama.cpp, which is refused.

OLMo 2 needs nothing here: its QK-norm over all heads is the olmo2 pass's, and the window
OLMo 3 writes under the same name is refused by engine.models.gguf_keys.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.models.families import GEMMA3_THETA, Architecture
from engine.models.rope import MAX_POSITIONS
from engine.models.values import Values
from engine.models.windows import GEMMA3_PATTERN

__all__ = ["GGUF_ARCHITECTURE_ROWS", "GGUF_GEMMA2_CAP", "GGUF_GEMMA2_WINDOW",
           "gguf_family_settings"]

#: Every GGUF ``general.architecture`` this app runs: its forward block, QK-norm (OLMo 2's over
#: all heads) and fused projections (the bias keys of a folder's config have no GGUF rows).
GGUF_ARCHITECTURE_ROWS = {
    "llama": Architecture("llama"),
    "qwen2": Architecture("llama", qkv_bias=True),
    "qwen3": Architecture("llama", qk_norm=True),
    "phi3": Architecture("llama", fused=True, partial_rotary=True, uniform_window=True,
                         longrope=True),
    "granite": Architecture("llama"),
    "gemma2": Architecture("gemma2", activation="gelu_pytorch_tanh"),
    "gemma3": Architecture("gemma2", qk_norm=True, activation="gelu_pytorch_tanh"),
    "olmo2": Architecture("olmo2", qk_norm=True),
}
#: Gemma 2's window and logit cap in llama.cpp when a GGUF file leaves the key out.
GGUF_GEMMA2_WINDOW = 4096
GGUF_GEMMA2_CAP = 50.0
#: The layer counts of Gemma 2 27B and Gemma 3 27B, which llama.cpp scales by
#: 1/√(width / heads), not by 1/√(key width) as the smaller ones (the two agree with each
#: model's query_pre_attn_scalar).
GEMMA_27B_LAYERS = {"gemma2": 46, "gemma3": 62}
#: llama.cpp fixes Gemma 3's pattern at transformers' default (layer i slides unless
#: i % 6 == 5), and its sliding layers turn by transformers' default local base, unscaled.
GEMMA3_LOCAL_THETA = GEMMA3_THETA["sliding_attention"]


def _gemma(arch: str, layers: int, hidden: int, heads: int, head_dim: int) -> dict[str, Any]:
    """What Gemma 2 and 3 share: the scale (the 27B's its own) and the norms' + 1."""
    scale, note = head_dim ** -0.5, "1/√d_head"
    if layers == GEMMA_27B_LAYERS[arch]:
        scale, note = (hidden // heads) ** -0.5, f"1/√(width / heads) = 1/√{hidden // heads}"
    return {"scale": scale, "note": note, "norms_hold_one": True,
            "embed_scale": hidden ** 0.5}


def _gemma2(values: Values, arch: str, layers: int, hidden: int, heads: int,
            head_dim: int) -> dict[str, Any]:
    out = _gemma(arch, layers, hidden, heads, head_dim)
    out["cap"] = values.number("gemma2.attn_logit_softcapping", default=GGUF_GEMMA2_CAP,
                               least=1e-3, below=1e6)
    window = values.whole("gemma2.attention.sliding_window", default=GGUF_GEMMA2_WINDOW,
                          high=MAX_POSITIONS)
    out["windows"] = tuple(window if i % 2 == 0 else None for i in range(layers))
    # llama.cpp's default is 30; the converter writes 0 for a config's null (no cap)
    final = values.number("gemma2.final_logit_softcapping", default=30.0, least=0, below=1e6)
    out["final_cap"] = final or None
    return out


def _gemma3(values: Values, arch: str, layers: int, hidden: int, heads: int,
            head_dim: int) -> dict[str, Any]:
    out = _gemma(arch, layers, hidden, heads, head_dim)
    out["final_cap"] = values.number("gemma3.final_logit_softcapping", default=None,
                                     least=1e-3, below=1e6)
    window = values.whole("gemma3.attention.sliding_window", default=0, low=0,
                          high=MAX_POSITIONS)
    out["windows"] = tuple(window if window and i % GEMMA3_PATTERN != GEMMA3_PATTERN - 1
                           else None for i in range(layers))
    if window:
        out["local_rope_theta"], out["local_rope"] = GEMMA3_LOCAL_THETA, {"rope_type": "default"}
    return out


def _granite(values: Values, *_: int | str) -> dict[str, Any]:
    # a negative multiplier would flip the branch it scales, which no trained model does
    def multiplier(name: str, default: float | None) -> float | None:
        value = values.number(f"granite.{name}", default=default, least=0, below=1e6)
        return default if value == 0 else value

    if not values.flag("granite.rope.scaling.finetuned", default=True):
        raise values.refuse("granite.rope.scaling.finetuned", False,
                            "true (llama.cpp turns Granite's RoPE off: not modelled)")
    out: dict[str, Any] = {"embed_scale": multiplier("embedding_scale", 1.0),
                           "residual_scale": multiplier("residual_scale", 1.0),
                           "logits_divisor": multiplier("logit_scale", 1.0)}
    scale = multiplier("attention.scale", None)
    if scale is not None:
        out["scale"], out["note"] = scale, f"attention.scale {scale:g}"
    return out


#: What an architecture reads beyond the keys every one shares, by ``general.architecture``.
_SETTINGS: Mapping[str, Callable[..., dict[str, Any]]] = {
    "gemma2": _gemma2, "gemma3": _gemma3, "granite": _granite,
}


def gguf_family_settings(values: Values, arch: str, layers: int, hidden: int, heads: int,
                         head_dim: int) -> dict[str, Any]:
    """``arch``'s own settings: ModelSpec fields, plus ``scale`` and ``note`` (the logits'
    scale and how it was chosen) where they are not 1/√(head width).

    Raises
    ------
    ModelError
        Naming a key whose value is out of range or asks for what is not modelled.
    """
    reader = _SETTINGS.get(arch)
    return {} if reader is None else reader(values, arch, layers, hidden, heads, head_dim)
