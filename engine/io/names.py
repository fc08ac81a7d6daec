"""How a tensor file names its arrays: the one list of names that writers and readers derive
theirs from."""

from __future__ import annotations

import re

__all__ = ["LAYER_ARRAY", "LAYER_PARTS", "TEXT_ARRAYS", "TL_ARRAY", "TL_CACHE", "TL_HOOKS",
           "layer_array"]

#: The arrays of one layer, ``layer{L}.{part}``: queries, keys, values (optional) and
#: attention weights (instead of q and k).
LAYER_PARTS = ("q", "k", "v", "attn")
#: The arrays that hold JSON or strings, not numbers.
TEXT_ARRAYS = ("tokens", "meta")
#: Matches a layer array's name: group 1 is the layer index, group 2 the part.
LAYER_ARRAY = re.compile(rf"^layer(\d+)\.({'|'.join(LAYER_PARTS)})$")

#: The attention hooks read from a TransformerLens ``cache_dict``:
#: ``blocks.{L}.attn.hook_{hook}``; every other name of the cache is ignored.
TL_HOOKS = ("q", "k", "rot_q", "rot_k", "attn_scores", "pattern")
TL_ARRAY = re.compile(rf"^blocks\.(\d+)\.attn\.hook_({'|'.join(TL_HOOKS)})$")
#: Matches any name of a TransformerLens cache (how that layout is recognised).
TL_CACHE = re.compile(r"^(blocks\.\d+\.|hook_embed$|hook_pos_embed$|ln_final\.)")


def layer_array(layer: int, part: str) -> str:
    """The name of ``part`` (one of :data:`LAYER_PARTS`) of ``layer``, e.g. ``layer3.q``."""
    return f"layer{layer}.{part}"
