"""Which layout a tensor file is in, and its geometry, from its headers alone (nothing read).

* ``"app"``: ``layer{L}.q`` / ``.k`` (/ ``.v``) of :mod:`engine.io.tensors`, or ``layer{L}.attn``
  instead of q and k: attention weights, (heads, n, n) or (batch, heads, n, n).
* ``"transformer_lens"``: a TransformerLens ``cache_dict``: ``blocks.{L}.attn.hook_rot_q`` /
  ``hook_rot_k`` (after RoPE; else ``hook_q`` / ``hook_k``) of shape (batch, pos, head, d_head)
  or (pos, head, d_head); with grouped-query attention k has H_kv < H heads and query head h
  uses key head h // (H / H_kv). Without q and k, every layer's ``hook_attn_scores`` (logits,
  masked entries −inf) or ``hook_pattern`` (weights) is read. Causal unless ``meta`` says
  otherwise; scale 1/√d_head.
* ``"stacked"``: one array of attention weights (layers, batch, heads, n, n), as Hugging Face's
  ``output_attentions`` stacked with ``torch.stack``, in a ``.npy`` file or alone in an ``.npz``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.io.names import LAYER_ARRAY, TEXT_ARRAYS, TL_ARRAY, TL_CACHE
from engine.io.source import Source, TensorFileError, shown

__all__ = ["Geometry", "LayerArrays", "describe"]

_ALLOWED_DTYPES = ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class LayerArrays:
    """Where one layer's arrays lie: names of q and k, of weights (rows summing to 1) or of
    logits (masked entries −inf), each None when absent; ``index``: the layer's leading index
    inside a stacked array (``(L,)``), else ``()``."""

    q: str | None = None
    k: str | None = None
    weights: str | None = None
    scores: str | None = None
    index: tuple[int, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The arrays read for this layer."""
        return tuple(n for n in (self.q, self.k, self.weights, self.scores) if n is not None)


@dataclass(frozen=True)
class Geometry:
    """What the headers of a file say: its layout, arrays and shapes."""

    layout: str
    kind: str
    arrays: dict[int, LayerArrays]
    batch: int
    heads: int
    kv_heads: int
    n: int
    d_k: int
    dtype: str

    @property
    def summary(self) -> str:
        what = (f"d_k {self.d_k}" if self.kind == "qk" else "weights")
        return (f"{len(self.arrays)} layers × {self.heads} heads, n {self.n}, batch "
                f"{self.batch}, {what}, {self.dtype}")


def describe(source: Source) -> Geometry:
    """The layout and geometry of ``source`` from its headers, every array checked."""
    names = [name for name in source.info if name not in TEXT_ARRAYS]
    if any(LAYER_ARRAY.match(name) for name in names):
        return _app_layout(source, names)
    if any(TL_CACHE.match(name) for name in names):
        return _transformer_lens_layout(source, names)
    if len(names) == 1:
        return _stacked_layout(source, names[0])
    for name in names:
        raise TensorFileError(
            f"array '{shown(name, 80)}': unexpected name; expected layer{{L}}.q, layer{{L}}.k "
            "(or layer{L}.attn), layer{L}.v, tokens or meta, a TransformerLens cache "
            "(blocks.{L}.attn.hook_q, …), or one array of attention weights")
    raise TensorFileError("no layer arrays: expected layer{L}.q and layer{L}.k arrays")


def _check_dtype(name: str, dtype: np.dtype) -> None:
    if dtype.name not in _ALLOWED_DTYPES:
        raise TensorFileError(f"array '{name}': unsupported dtype {dtype}; use float16, "
                              "bfloat16, float32 or float64")


def _app_layout(source: Source, names: list[str]) -> Geometry:
    layers: dict[int, dict[str, str]] = {}
    for name in names:
        match = LAYER_ARRAY.match(name)
        if match is None:
            raise TensorFileError(
                f"array '{shown(name, 80)}': unexpected name; expected layer{{L}}.q, layer{{L}}.k, "
                "layer{L}.attn, layer{L}.v, tokens or meta")
        layers.setdefault(int(match.group(1)), {})[match.group(2)] = name
    with_qk = [layer for layer, parts in layers.items() if "q" in parts or "k" in parts]
    if not with_qk and all("attn" in parts for parts in layers.values()):
        arrays = {layer: LayerArrays(weights=parts["attn"]) for layer, parts in layers.items()}
        return _weights_geometry(source, "app", arrays)
    for layer, parts in sorted(layers.items()):
        for part in "qk":
            if part not in parts:
                hint = (" (a file holds q and k for every layer, or layer{L}.attn weights for "
                        "every layer)" if "attn" in parts else "")
                raise TensorFileError(f"array 'layer{layer}.{part}' is missing{hint}")
    batch, heads, n, d_k, dtype = _qkv_geometry(source, layers)
    arrays = {layer: LayerArrays(q=parts["q"], k=parts["k"]) for layer, parts in layers.items()}
    return Geometry("app", "qk", arrays, batch, heads, heads, n, d_k, dtype)


def _qkv_geometry(
    source: Source, layers: dict[int, dict[str, str]]
) -> tuple[int, int, int, int, str]:
    """Return (batch, heads, n, d_k, dtype) after checking every layer array's header."""
    ref: tuple[int, ...] | None = None
    ref_name = ""
    dtype_name = ""
    for _layer, parts in sorted(layers.items()):
        for part in "qkv":
            if part not in parts:
                continue
            name = parts[part]
            shape, dtype = source.info[name]
            _check_dtype(name, dtype)
            if len(shape) not in (3, 4):
                raise TensorFileError(
                    f"array '{name}': shape {shape} has {len(shape)} dimensions; expected "
                    "(heads, n, d_k) or (batch, heads, n, d_k)")
            geo = (1, *shape) if len(shape) == 3 else tuple(shape)
            if min(geo) < 1:
                raise TensorFileError(f"array '{name}': shape {shape} is empty")
            if ref is None:
                ref, ref_name = geo, name
            # v may have its own last dimension (d_v); q and k must agree on all four.
            compare = slice(0, 3) if part == "v" else slice(0, 4)
            if geo[compare] != ref[compare]:
                labels = ("batch", "heads", "n", "d_k")
                what = next(lab for lab, a, b in zip(labels, geo, ref, strict=False) if a != b)
                raise TensorFileError(
                    f"array '{name}': {what} = {geo[labels.index(what)]} does not match "
                    f"'{ref_name}' ({what} = {ref[labels.index(what)]}); shapes {shape} "
                    f"and {source.info[ref_name][0]}")
            if part != "v":
                if dtype_name and dtype.name != dtype_name:
                    raise TensorFileError(
                        f"array '{name}': dtype {dtype.name} differs from the other q/k "
                        f"arrays ({dtype_name})")
                dtype_name = dtype.name
    assert ref is not None  # _app_layout guarantees at least one q array
    batch, heads, n, d_k = ref[:4]
    return batch, heads, n, d_k, dtype_name


def _transformer_lens_layout(source: Source, names: list[str]) -> Geometry:
    found: dict[int, dict[str, str]] = {}
    for name in names:
        match = TL_ARRAY.match(name)
        if match is not None:  # the rest of the cache (residual stream, MLP, …) is not read
            found.setdefault(int(match.group(1)), {})[match.group(2)] = name
    if not found:
        raise TensorFileError(
            "a TransformerLens cache without attention hooks: expected "
            "blocks.{L}.attn.hook_rot_q / hook_rot_k (or hook_q / hook_k, hook_attn_scores, "
            "hook_pattern)")
    if all(("rot_q" in p or "q" in p) and ("rot_k" in p or "k" in p) for p in found.values()):
        arrays = {layer: LayerArrays(q=p.get("rot_q", p.get("q")), k=p.get("rot_k", p.get("k")))
                  for layer, p in found.items()}
        return _tl_qk_geometry(source, arrays)
    if all("attn_scores" in p or "pattern" in p for p in found.values()):
        arrays = {layer: (LayerArrays(scores=p["attn_scores"]) if "attn_scores" in p
                          else LayerArrays(weights=p["pattern"])) for layer, p in found.items()}
        return _weights_geometry(source, "transformer_lens", arrays)
    layer, parts = next((layer, p) for layer, p in sorted(found.items())
                        if not (("rot_q" in p or "q" in p) and ("rot_k" in p or "k" in p)))
    missing = "hook_q" if "rot_q" not in parts and "q" not in parts else "hook_k"
    raise TensorFileError(
        f"array 'blocks.{layer}.attn.{missing}' is missing (and not every layer has "
        "hook_attn_scores or hook_pattern): save the whole attention cache of every layer")


def _tl_qk_geometry(source: Source, arrays: dict[int, LayerArrays]) -> Geometry:
    ref: tuple[int, int, int, int, int, str] | None = None  # batch, n, heads, kv, d, dtype
    ref_name = ""
    for _, entry in sorted(arrays.items()):
        assert entry.q is not None and entry.k is not None
        shapes = []
        for name in (entry.q, entry.k):
            shape, dtype = source.info[name]
            _check_dtype(name, dtype)
            if len(shape) not in (3, 4) or min(shape) < 1:
                raise TensorFileError(
                    f"array '{name}': shape {shape}; expected (batch, pos, head, d_head) or "
                    "(pos, head, d_head)")
            shapes.append(((1, *shape) if len(shape) == 3 else tuple(shape), dtype.name))
        (q_geo, q_dtype), (k_geo, k_dtype) = shapes
        if q_geo[:2] != k_geo[:2] or q_geo[3] != k_geo[3] or q_dtype != k_dtype:
            raise TensorFileError(
                f"array '{entry.k}': shape {source.info[entry.k][0]} ({k_dtype}) does not fit "
                f"'{entry.q}' {source.info[entry.q][0]} ({q_dtype}): batch, pos, d_head and "
                "dtype must agree")
        if q_geo[2] % k_geo[2]:
            raise TensorFileError(
                f"array '{entry.k}': {k_geo[2]} key heads do not divide the {q_geo[2]} query "
                "heads of grouped-query attention")
        geo = (q_geo[0], q_geo[1], q_geo[2], k_geo[2], q_geo[3], q_dtype)
        if ref is None:
            ref, ref_name = geo, entry.q
        elif geo != ref:
            raise TensorFileError(
                f"array '{entry.q}': shape {source.info[entry.q][0]} does not match "
                f"'{ref_name}' {source.info[ref_name][0]}")
    assert ref is not None
    batch, n, heads, kv_heads, d_k, dtype = ref
    return Geometry("transformer_lens", "qk", arrays, batch, heads, kv_heads, n, d_k, dtype)


def _weights_geometry(source: Source, layout: str, arrays: dict[int, LayerArrays]) -> Geometry:
    ref: tuple[int, ...] | None = None
    ref_name = ""
    dtype_name = ""
    for _, entry in sorted(arrays.items()):
        name = entry.scores or entry.weights
        assert name is not None
        shape, dtype = source.info[name]
        _check_dtype(name, dtype)
        if len(shape) not in (3, 4) or min(shape) < 1 or shape[-1] != shape[-2]:
            raise TensorFileError(
                f"array '{name}': shape {shape}; attention weights are (heads, n, n) or "
                "(batch, heads, n, n)")
        geo = (1, *shape) if len(shape) == 3 else tuple(shape)
        if ref is None:
            ref, ref_name, dtype_name = geo, name, dtype.name
        elif geo != ref or dtype.name != dtype_name:
            raise TensorFileError(f"array '{name}': shape {shape} ({dtype.name}) does not match "
                                  f"'{ref_name}' {source.info[ref_name][0]} ({dtype_name})")
    assert ref is not None
    batch, heads, n, _ = ref
    return Geometry(layout, "weights", arrays, batch, heads, heads, n, 0, dtype_name)


def _stacked_layout(source: Source, name: str) -> Geometry:
    shape, dtype = source.info[name]
    _check_dtype(name, dtype)
    if len(shape) != 5 or min(shape) < 1 or shape[-1] != shape[-2]:
        raise TensorFileError(
            f"array '{shown(name, 80)}': shape {shape}; a file of one array holds attention "
            "weights stacked as (layers, batch, heads, n, n) (Hugging Face's output_attentions "
            "through torch.stack); for q and k use layer{L}.q / layer{L}.k arrays")
    layers, batch, heads, n, _ = shape
    arrays = {layer: LayerArrays(weights=name, index=(layer,)) for layer in range(layers)}
    return Geometry("stacked", "weights", arrays, batch, heads, heads, n, 0, dtype.name)
