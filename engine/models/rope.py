"""The rotary embedding's settings, read from a config, and its frequencies, as transformers'
``modeling_rope_utils`` computes them.

Besides plain RoPE: linear and Llama 3 scaling (any llama-like family), and Phi-3's LongRoPE
with partial rotary (``phi3`` only, as only ``Phi3Config`` accepts them):

* ``partial_rotary_factor`` p: the first int(p · head width) dimensions of each head turn, the
  rest pass unchanged (Phi-4-mini: 0.75);
* LongRoPE: each pair's frequency is divided by ``short_factor[i]`` while the sequence has at
  most ``original_max_position_embeddings`` tokens, by ``long_factor[i]`` once it has more (the
  choice is per forward pass, by its length, as ``dynamic_rope_update`` makes it), and cos and
  sin are multiplied by the attention factor (given, or √(1 + ln s / ln original) for the
  extension s = max_position_embeddings / original, 1 if s ≤ 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.models.values import Values
from engine.models.windows import LAYER_KINDS

__all__ = ["MAX_POSITIONS", "ROPE_TYPES", "inverse_frequencies", "rope_of", "rotary_width"]

#: The most positions a config may give (10M are published; a hostile count is refused).
MAX_POSITIONS = 1 << 24
ROPE_TYPES = ("default", "linear", "llama3")
#: Phi3Config's: LongRoPE, and the older names it reads as LongRoPE.
PHI3_ROPE_TYPES = ("default", "longrope", "su", "yarn")
#: Phi3Config's original_max_position_embeddings when the config leaves it out; it takes
#: priority over the one in rope_parameters (standardize_rope_params).
PHI3_ORIGINAL_POSITIONS = 4096


def rotary_width(head_dim: int, rope: dict[str, Any]) -> int:
    """How many of a head's dimensions turn (int(p · head width), as transformers rounds; a
    GGUF file gives the count itself)."""
    if "rotary_dim" in rope:
        return int(rope["rotary_dim"])
    return int(head_dim * rope.get("partial_rotary_factor", 1.0))


def _factors(params: Values, key: str, pairs: int) -> tuple[float, ...]:
    name, value = params.raw(key)
    ok = (isinstance(value, list) and len(value) == pairs
          and all(type(x) in (int, float) and math.isfinite(x) and x > 0 for x in value))
    if not ok:
        raise params.refuse(name, value, f"a list of {pairs} numbers > 0, one per turned pair")
    return tuple(float(x) for x in value)


def _longrope(params: Values, config: Values, pairs: int) -> dict[str, Any]:
    original = config.whole("original_max_position_embeddings",
                            default=PHI3_ORIGINAL_POSITIONS, low=2, high=MAX_POSITIONS)
    factor = params.number("factor", default=None, above=0)
    if factor is None:
        factor = config.whole("max_position_embeddings", default=PHI3_ORIGINAL_POSITIONS,
                              high=MAX_POSITIONS) / original
    attention = params.number("attention_factor", default=None, above=0, below=1e6)
    if attention is None:
        attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    return {"short_factor": _factors(params, "short_factor", pairs),
            "long_factor": _factors(params, "long_factor", pairs),
            "original_max_position_embeddings": original, "attention_factor": attention}


def rope_of(config: Values, kind: str = "full_attention", theta_key: str = "rope_theta",
            default_theta: float = 10000.0, *, longrope: bool = False,
            head_dim: int = 0) -> tuple[float, dict[str, Any]]:
    """rope_theta and the rotary scaling of the layers of attention ``kind``, checked: each
    scaling's keys present and in range. ``theta_key`` and ``default_theta``: where an older
    config gives the base of that kind, and the family's base when it gives none; ``longrope``
    (Phi-3, with its ``head_dim``) also reads LongRoPE and partial rotary."""
    # transformers 5 writes "rope_parameters" (with rope_theta inside, per attention kind
    # for some models); older configs write rope_theta and rope_scaling beside each other
    # (Gemma 3's rope_scaling is of its full-attention layers only).
    params = config.mapping("rope_parameters")
    if params is not None and any(params.has(k) for k in LAYER_KINDS):
        # per attention kind; a kind it leaves out gets transformers' defaults
        params = params.mapping(kind) if params.has(kind) else None
    if params is None:
        scaling = config.mapping("rope_scaling") if kind == "full_attention" else None
        params = scaling or Values({}, "")
    theta = params.number("rope_theta", above=1, default=None)
    if theta is None:
        theta = config.number(theta_key, above=1, default=default_theta)
    rope_type = params.choice("rope_type", "type", default="default",
                              options=PHI3_ROPE_TYPES if longrope else ROPE_TYPES)
    rope: dict[str, Any] = {"rope_type": "longrope" if rope_type in ("su", "yarn")
                            else rope_type}
    partials = [(where, value) for where in (params, config)
                if (value := where.number("partial_rotary_factor", default=None, above=0))
                is not None]
    # Phi-3 reads rope_parameters' own first (the config's is only its default); the other
    # families turn whole heads, so a fraction anywhere is refused.
    for where, partial in partials[:1] if longrope else partials:
        if partial == 1.0:
            continue
        width = int(head_dim * partial) if longrope and partial < 1 else 0
        if width < 2 or width % 2:
            allowed = ("a fraction ≤ 1 that turns an even number of dimensions" if longrope else
                       "1 (rotary embedding of part of a head is not modelled)")
            raise where.refuse("partial_rotary_factor", partial, allowed)
        rope["partial_rotary_factor"] = partial
    if rope["rope_type"] in ("linear", "llama3"):
        # transformers warns below 1: a factor < 1 would squeeze positions together, and
        # a tiny one sends the angles to infinity (NaN q and k).
        rope["factor"] = params.number("factor", least=1)
    if rope["rope_type"] == "llama3":
        low = rope["low_freq_factor"] = params.number("low_freq_factor", above=0)
        rope["high_freq_factor"] = params.number("high_freq_factor", above=low)
        rope["original_max_position_embeddings"] = params.whole(
            "original_max_position_embeddings", high=MAX_POSITIONS)
    if rope["rope_type"] == "longrope":
        rope.update(_longrope(params, config, rotary_width(head_dim, rope) // 2))
    return theta, rope


def inverse_frequencies(theta: float, rope: dict[str, Any], dim: int,
                        n: int | None = None) -> np.ndarray:
    """The frequencies of the ``dim`` // 2 turned pairs (float64), with ``rope``'s scaling,
    for a sequence of ``n`` tokens (LongRoPE's factors depend on it; None: the short ones).

    ``rope["freq_factors"]``, where a GGUF file gives them (``rope_freqs.weight``), divide
    the frequencies pair by pair after any other scaling, as llama.cpp's ``ggml_rope_ext``
    does: its converter writes Llama 3's scaling that way, not as metadata.
    """
    inv = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    kind = rope.get("rope_type", "default")
    if kind == "linear":
        inv = inv / float(rope["factor"])
    elif kind == "llama3":
        factor = float(rope["factor"])
        low, high = float(rope["low_freq_factor"]), float(rope["high_freq_factor"])
        original = float(rope["original_max_position_embeddings"])
        wavelen = 2 * math.pi / inv
        scaled = np.where(wavelen > original / low, inv / factor, inv)
        smooth = (original / wavelen - low) / (high - low)
        middle = (1 - smooth) * scaled / factor + smooth * scaled
        between = (wavelen >= original / high) & (wavelen <= original / low)
        inv = np.where(between, middle, scaled)
    elif kind == "longrope":
        long = n is not None and n > rope["original_max_position_embeddings"]
        inv = inv / np.asarray(rope["long_factor" if long else "short_factor"], np.float64)
    divisors = rope.get("freq_factors")
    if divisors is not None:
        inv = inv / np.asarray(divisors, dtype=np.float64)
    return inv
