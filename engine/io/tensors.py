"""The tensor file format (version 1): real q and k of a model's attention layers.

A file is a ``.npz`` archive, a ``.safetensors`` file or a folder of ``NAME.npy`` files holding

* ``layer{L}.q`` and ``layer{L}.k`` (and optionally ``layer{L}.v``) for each layer ``L``, of
  shape (heads, n, d_k) or (batch, heads, n, d_k), dtype float16, bfloat16, float32 or float64;
* optionally ``tokens``: the n token strings (a 1-D string array, or JSON text);
* optionally ``meta``: a JSON object, e.g. ``{"model": ..., "where": ..., "scale": c,
  "causal": true}``.

In a ``.safetensors`` file, ``tokens`` and ``meta`` are JSON strings in the file's
``__metadata__``. :func:`load_tensors` checks the whole file head by head and returns a
:class:`TensorFile` whose :meth:`TensorFile.qk` reads one head at a time.

Three other layouts are read as they are written by the tools users already have
(:attr:`TensorFile.layout`):

* ``"transformer_lens"``: a TransformerLens ``cache_dict`` (``.safetensors`` or ``.npz``):
  ``blocks.{L}.attn.hook_rot_q`` / ``hook_rot_k`` (after RoPE; else ``hook_q`` / ``hook_k``) of
  shape (batch, pos, head, d_head) or (pos, head, d_head); with grouped-query attention k has
  H_kv < H heads and query head h uses key head h // (H / H_kv). Without q and k, every layer's
  ``hook_attn_scores`` (logits, masked entries −inf) or ``hook_pattern`` (weights) is read.
  Every other name of the cache (residual stream, MLP, …) is ignored. Causal unless ``meta``
  says otherwise; scale 1/√d_head.
* ``"app"`` with ``layer{L}.attn`` instead of q and k: attention weights, (heads, n, n) or
  (batch, heads, n, n).
* ``"stacked"``: one array of attention weights (layers, batch, heads, n, n), as Hugging Face's
  ``output_attentions`` stacked with ``torch.stack``, in a single ``.npy`` file or as the only
  array of an ``.npz``.

A file of weights only (:attr:`TensorFile.kind` ``"weights"``) is read with
:meth:`TensorFile.weights`; every row must be ≥ 0 and sum to 1, and without ``meta["causal"]``
the mask is inferred: causal when every weight above the diagonal is 0.

A hostile file is refused with one :class:`TensorFileError` whose message starts with the
file's name, before it costs more time or memory than its size warrants (the containers'
limits are listed in :mod:`engine.io.readers`). What it declares is bounded too:

* ``tokens``: exactly n of them (checked on the declared shape, before they are read), each at
  most :data:`MAX_TOKEN_CHARS` characters, valid UTF-8;
* ``meta`` and JSON ``tokens``: at most :data:`MAX_JSON_BYTES` of JSON, nested less deep than
  Python's recursion limit, integers within Python's digit limit;
* a layer name (``meta["layers"][L]["name"]``) longer than :data:`MAX_NAME_CHARS` is refused,
  not cut: a cut name could make two layers look alike, and the file's author can shorten it;
* ``scale`` (c) and ``cap``: finite, |c| ≤ :data:`MAX_SCALE`, and a cap within the explorer's
  own cap range (:data:`CAP_RANGE`, that of :class:`engine.config.AttentionConfig`), so that
  the model's rule can always be shown in the explorer.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.config import AttentionConfig
from engine.core.memory import MemoryBudgetError, check_memory
from engine.io.files import atomic_output, describe_os_error, write_bytes_atomic
from engine.io.readers import (
    MemorySource,
    Source,
    TensorFileError,
    decode_json_array,
    open_source,
    shown,
)

__all__ = ["FORMAT_VERSION", "LayerArrays", "TensorFile", "TensorFileError", "load_tensors",
           "tensors_from_arrays", "write_tensors"]

FORMAT_VERSION = 1

_ALLOWED_DTYPES = ("float16", "bfloat16", "float32", "float64")

# Bounds on what a file may declare, checked before anything is read: a small file can
# claim gigabytes of text (a 1 MB `tokens` declared 2^28 long took 3.2 GB), and a long layer
# name was drawn into every label (100,000 characters: 5.4 GB in the window).
#: Largest ``meta`` (and JSON ``tokens``) text, in bytes.
MAX_JSON_BYTES = 1 << 20
#: Longest token, and longest layer name, in characters.
MAX_TOKEN_CHARS = 1000
MAX_NAME_CHARS = 200
#: Largest |scale|: logits c·q·k stay far from float64's range for any finite float32 q and k
#: (real models use c ≈ 0.02-1).
MAX_SCALE = 1e6
#: The caps a file may declare: the explorer's cap range (real models use 30-50). A cap of
#: 1e308 passed the old check (finite, > 0) and failed later, when the Heads tab showed the
#: model's own rule in the explorer: AttentionConfig refused "cap must be in [1e-06, 1e+06]";
#: a cap of 1e-300 overflowed the diagnostics (q·c/cap squared).
CAP_RANGE = (float(AttentionConfig.FIELDS["cap"].low), float(AttentionConfig.FIELDS["cap"].high))
_LAYER_NAME = re.compile(r"^layer(\d+)\.(q|k|v|attn)$")
_TL_NAME = re.compile(r"^blocks\.(\d+)\.attn\.hook_(q|k|rot_q|rot_k|attn_scores|pattern)$")
_TL_ANY = re.compile(r"^(blocks\.\d+\.|hook_embed$|hook_pos_embed$|ln_final\.)")
#: Largest d_k a weights-only file may declare in ``meta["d_k"]``.
MAX_D_K = 1 << 20
#: Scores at or below this count as masked when a mask is inferred (TransformerLens writes −inf;
#: older releases a large negative number, −1e5).
MASKED_SCORE = -1e4


@dataclass(frozen=True)
class LayerArrays:
    """Where one layer's arrays lie in the file.

    Attributes
    ----------
    q, k
        Names of the query and key arrays (None in a weights-only file).
    weights
        Name of the attention-weight array (rows summing to 1), or None.
    scores
        Name of an array of logits (masked entries −inf), or None.
    index
        Leading index of the layer inside a stacked array (``(L,)``), else ``()``.
    """

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
class TensorFile:
    """A checked tensor file: its geometry, tokens and meta; heads are read on demand.

    Attributes
    ----------
    path
        The file or folder.
    format
        ``"npz"``, ``"safetensors"`` or ``"npy"`` (a folder of ``.npy`` files, or one file).
    layers
        The layer indices present, ascending.
    heads, n, d_k
        Heads per layer, tokens (query and key positions), key dimension (0 when unknown: a
        weights-only file without ``meta["d_k"]``).
    batch
        Batch entries (1 when the arrays have no batch axis).
    dtype
        The stored dtype name: ``float16``, ``bfloat16``, ``float32`` or ``float64``.
    tokens
        The n token strings, or ``None``.
    meta
        The file's meta object (read-only; empty when absent).
    kind
        ``"qk"`` (queries and keys: read with :meth:`qk`) or ``"weights"`` (attention weights
        or logits only: read with :meth:`weights` and :meth:`scores`).
    layout
        ``"app"``, ``"transformer_lens"`` or ``"stacked"`` (see the module docstring).
    kv_heads
        Key heads per layer: fewer than ``heads`` under grouped-query attention (query head h
        uses key head h // (heads / kv_heads)).
    """

    path: Path
    format: str
    layers: tuple[int, ...]
    heads: int
    n: int
    d_k: int
    batch: int
    dtype: str
    tokens: tuple[str, ...] | None
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    kind: str = "qk"
    layout: str = "app"
    kv_heads: int = 0
    # The mask when meta does not say: the layout's (TransformerLens: causal) or the one the
    # weights show (zeros above the diagonal).
    default_causal: bool = False
    _arrays: Mapping[int, LayerArrays] = field(default_factory=dict, repr=False, compare=False)
    # The reader load_tensors opened: heads are read through it, not by re-opening the file
    # (which re-parsed every array header per head: 25 s for a file of 500 tiny layers). It is
    # replaced by a fresh one when the file changes on disk.
    _source: Source | None = field(default=None, repr=False, compare=False)
    # Whole arrays of the last layer read, for layouts whose heads are not contiguous.
    _kept: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def scale(self) -> float:
        """The model's own logit scale c: ``meta["scale"]``, else 1/√d_k (NaN when d_k is
        unknown)."""
        value = self.meta.get("scale")
        if value is not None:
            return float(value)
        return 1.0 / math.sqrt(self.d_k) if self.d_k > 0 else math.nan

    @property
    def causal(self) -> bool:
        """Whether the logits are masked causally: ``bool(meta["causal"])``, else the layout's
        default (TransformerLens: True; weights: inferred from zeros above the diagonal)."""
        return bool(self.meta.get("causal", self.default_causal))

    @property
    def has_logits(self) -> bool:
        """Whether a weights-only file holds the logits too (TransformerLens'
        ``hook_attn_scores``)."""
        return any(arrays.scores is not None for arrays in self._arrays.values())

    def _layer_meta(self, layer: int) -> Mapping[str, Any]:
        layers = self.meta.get("layers")
        if not isinstance(layers, Mapping):
            return {}
        entry = layers.get(str(layer))
        return entry if isinstance(entry, Mapping) else {}

    def layer_scale(self, layer: int) -> float:
        """The logit scale c of ``layer``: ``meta["layers"][str(layer)]["scale"]``, else
        :attr:`scale`."""
        value = self._layer_meta(layer).get("scale")
        return self.scale if value is None else float(value)

    def layer_cap(self, layer: int) -> float | None:
        """The soft-cap of ``layer`` (logits cap·tanh(c·q·k/cap)): ``meta["layers"][L]["cap"]``,
        else ``meta["cap"]``, else None (no cap)."""
        value = self._layer_meta(layer).get("cap", self.meta.get("cap"))
        return None if value is None else float(value)

    def layer_name(self, layer: int) -> str:
        """A label for ``layer``: ``meta["layers"][str(layer)]["name"]``, else ``"layer L"``."""
        name = self._layer_meta(layer).get("name")
        return str(name) if name is not None else f"layer {layer}"

    def qk(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """Read q and k of one head as float64 arrays of shape (batch, n, d_k).

        Only that head is read from the file (memory-mapped, sliced or sought to); in the
        TransformerLens layout, whose heads are not contiguous, the layer's arrays are read
        whole and kept for its other heads. Under grouped-query attention k is the key head
        query head ``head`` uses.

        A file rewritten or replaced since it was opened is opened again and read as it is
        now, if it still has this file's geometry.

        Raises
        ------
        TensorFileError
            Starting with the file's name: if the file holds attention weights only, ``layer``
            or ``head`` is not in the file, the head holds NaN/inf, the pair would exceed the
            memory budget, or the file has changed shape or can no longer be read.
        """
        if self.kind != "qk":
            raise TensorFileError(f"{shown(self.path.name)}: the file holds attention weights "
                                  "only; this needs q and k")
        try:
            arrays = self._layer(layer, head)
            _check_head_memory(self.batch, self.n, self.d_k)
            source = self._current_source(arrays.names)
            assert arrays.q is not None and arrays.k is not None
            kv_head = head // (self.heads // self.kv_heads)
            if self.layout == "transformer_lens":
                return (self._head_of_whole(source, arrays.q, head),
                        self._head_of_whole(source, arrays.k, kv_head))
            return (_read_head(source, arrays.q, head, self.batch),
                    _read_head(source, arrays.k, kv_head, self.batch))
        except OSError as exc:  # the file changed or vanished since it was opened
            raise TensorFileError(
                f"{shown(self.path.name)}: cannot read layer {layer}, head {head}: "
                f"{describe_os_error(exc)}") from exc
        except TensorFileError as exc:
            raise _named(self.path, exc) from exc

    def weights(self, layer: int, head: int) -> np.ndarray:
        """Read the attention weights of one head, float64 of shape (batch, n, n).

        From a file of q and k nothing is read: use :meth:`qk`. Logits (``hook_attn_scores``)
        are turned into weights by the stable softmax over the keys each row sees.

        Raises
        ------
        TensorFileError
            Starting with the file's name, naming the array: if the file holds q and k,
            ``layer`` or ``head`` is not in the file, a weight is negative, NaN or inf, a row
            does not sum to 1, a weight lies above the diagonal of a causal file, or the file
            changed or can no longer be read.
        """
        scores = self.scores(layer, head)
        if scores is not None:
            shifted = scores - scores.max(axis=-1, keepdims=True)
            e = np.exp(shifted)
            return e / e.sum(axis=-1, keepdims=True)
        return self._read_rows(layer, head, "weights")

    def scores(self, layer: int, head: int) -> np.ndarray | None:
        """The logits of one head, float64 (batch, n, n), masked entries −inf; None when the
        file holds weights without logits. Raises as :meth:`weights`."""
        arrays = self._layer(layer, head) if self.kind == "weights" else None
        if arrays is None or arrays.scores is None:
            if self.kind != "weights":
                raise TensorFileError(f"{shown(self.path.name)}: the file holds q and k; read "
                                      "them with qk()")
            return None
        return self._read_rows(layer, head, "scores")

    def _read_rows(self, layer: int, head: int, part: str) -> np.ndarray:
        try:
            arrays = self._layer(layer, head)
            _check_head_memory(self.batch, self.n, 0)
            name = arrays.scores if part == "scores" else arrays.weights
            assert name is not None
            source = self._current_source(arrays.names)
            raw = _read_square(source, name, arrays.index, head, self.batch)
            label = f"array '{name}'" + (f" (layer {layer})" if arrays.index else "")
            if part == "scores":
                return _check_scores(raw, label, head, self.causal)
            return _check_weights(raw, label, head, self.causal)
        except OSError as exc:
            raise TensorFileError(
                f"{shown(self.path.name)}: cannot read layer {layer}, head {head}: "
                f"{describe_os_error(exc)}") from exc
        except TensorFileError as exc:
            raise _named(self.path, exc) from exc

    def _layer(self, layer: int, head: int) -> LayerArrays:
        if layer not in self.layers:
            raise TensorFileError(f"layer {layer} is not in the file (layers: {self.layers})")
        if not 0 <= head < self.heads:
            raise TensorFileError(f"head {head} is out of range (the file has {self.heads})")
        return self._arrays[layer]

    def _head_of_whole(self, source: Source, name: str, head: int) -> np.ndarray:
        """Head ``head`` of a (batch, pos, head, d) or (pos, head, d) array read whole."""
        with self._lock:
            whole = self._kept.get(name)
        if whole is None:
            whole = source.read_all(name)
            bad = _count_bad(whole)
            if bad:
                raise TensorFileError(f"array '{name}': {bad} NaN/inf values")
            with self._lock:
                # One layer's q and k at a time: a layer's heads are read in turn.
                if len(self._kept) >= 2:
                    self._kept.clear()
                self._kept[name] = whole
        part = whole[..., head, :]
        return np.asarray(part, dtype=np.float64).reshape((self.batch, self.n, part.shape[-1]))

    def _current_source(self, names: Sequence[str]) -> Source:
        """The kept reader, or a fresh one if the files holding ``names`` have changed."""
        source = self._source
        if source is not None and source.unchanged(names):
            return source
        _, source = open_source(self.path)
        if self.layout == "app" and self.kind == "qk":  # the arrays read, by name
            for name in names:
                shape, dtype = source.info.get(name, ((), np.dtype(np.uint8)))
                geometry = (1, *shape) if len(shape) == 3 else tuple(shape)
                if (geometry != (self.batch, self.heads, self.n, self.d_k)
                        or dtype.name != self.dtype):
                    raise TensorFileError(
                        f"array '{name}': the file has changed since it was opened (now "
                        f"{shape if name in source.info else 'missing'}); open it again")
            now = _describe(source)
        else:
            try:
                now = _describe(source)
            except TensorFileError as exc:
                raise TensorFileError(f"the file has changed since it was opened ({exc}); "
                                      "open it again") from None
            if (now.layout, now.kind, now.batch, now.heads, now.kv_heads, now.n, now.dtype,
                    now.d_k if self.kind == "qk" else 0) != (
                    self.layout, self.kind, self.batch, self.heads, self.kv_heads, self.n,
                    self.dtype, self.d_k if self.kind == "qk" else 0):
                raise TensorFileError(f"the file has changed since it was opened (now "
                                      f"{now.summary}); open it again")
        # Kept for the next heads (a frozen dataclass: the reader is a cache, not a value).
        object.__setattr__(self, "_source", source)
        object.__setattr__(self, "_arrays", now.arrays)
        with self._lock:
            self._kept.clear()
        return source


def _check_head_memory(batch: int, n: int, d_k: int) -> None:
    try:
        check_memory(2 * batch * n * d_k * 8, f"one head's float64 q and k ({batch}×{n}×{d_k})")
        check_memory(batch * n * n * 8, f"one head's float64 logits ({batch}×{n}×{n})")
    except MemoryBudgetError as exc:
        raise TensorFileError(str(exc)) from exc


def _count_bad(raw: np.ndarray) -> int:
    # In the stored dtype: casting a signalling NaN (any bit pattern may be stored) to float64
    # raises the "invalid value" floating-point warning.
    return int(np.count_nonzero(~np.isfinite(raw)))


def _read_head(source: Source, name: str, head: int, batch: int) -> np.ndarray:
    raw = source.read_head(name, head)
    bad = _count_bad(raw)
    if bad:
        raise TensorFileError(f"array '{name}': head {head} holds {bad} NaN/inf values")
    return np.asarray(raw, dtype=np.float64).reshape((batch, *raw.shape[-2:]))


def _check_finite(source: Source, name: str, heads: int) -> None:
    # Head by head, so the scan of a large array never holds more than one head.
    bad = {h: _count_bad(source.read_head(name, h)) for h in range(heads)}
    bad = {h: count for h, count in bad.items() if count}
    if bad:
        raise TensorFileError(
            f"array '{name}': {sum(bad.values())} NaN/inf values "
            f"(in head{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))})"
        )


@dataclass(frozen=True)
class _Geometry:
    """What the headers of a file say: its layout, arrays and shapes (nothing read yet)."""

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


def _describe(source: Source) -> _Geometry:
    """The layout and geometry of ``source`` from its headers, every array checked."""
    names = [name for name in source.info if name not in ("tokens", "meta")]
    if any(_LAYER_NAME.match(name) for name in names):
        return _app_layout(source, names)
    if any(_TL_ANY.match(name) for name in names):
        return _transformer_lens_layout(source, names)
    if len(names) == 1:
        return _stacked_layout(source, names[0])
    for name in names:
        raise TensorFileError(
            f"array '{shown(name, 80)}': unexpected name; expected layer{{L}}.q, layer{{L}}.k "
            "(or layer{L}.attn), layer{L}.v, tokens or meta, a TransformerLens cache "
            "(blocks.{L}.attn.hook_q, …), or one array of attention weights")
    raise TensorFileError("no layer arrays: expected layer{L}.q and layer{L}.k arrays")


def _app_layout(source: Source, names: list[str]) -> _Geometry:
    layers: dict[int, dict[str, str]] = {}
    for name in names:
        match = _LAYER_NAME.match(name)
        if match is None:
            raise TensorFileError(
                f"array '{shown(name, 80)}': unexpected name; expected layer{{L}}.q, layer{{L}}.k, "
                "layer{L}.attn, layer{L}.v, tokens or meta"
            )
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
    batch, heads, n, d_k, dtype = _check_geometry(source, layers)
    arrays = {layer: LayerArrays(q=parts["q"], k=parts["k"]) for layer, parts in layers.items()}
    return _Geometry("app", "qk", arrays, batch, heads, heads, n, d_k, dtype)


def _check_dtype(name: str, dtype: np.dtype) -> None:
    if dtype.name not in _ALLOWED_DTYPES:
        raise TensorFileError(f"array '{name}': unsupported dtype {dtype}; use float16, "
                              "bfloat16, float32 or float64")


def _transformer_lens_layout(source: Source, names: list[str]) -> _Geometry:
    found: dict[int, dict[str, str]] = {}
    for name in names:
        match = _TL_NAME.match(name)
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


def _tl_qk_geometry(source: Source, arrays: dict[int, LayerArrays]) -> _Geometry:
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
    return _Geometry("transformer_lens", "qk", arrays, batch, heads, kv_heads, n, d_k, dtype)


def _weights_geometry(source: Source, layout: str, arrays: dict[int, LayerArrays]) -> _Geometry:
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
    return _Geometry(layout, "weights", arrays, batch, heads, heads, n, 0, dtype_name)


def _stacked_layout(source: Source, name: str) -> _Geometry:
    shape, dtype = source.info[name]
    _check_dtype(name, dtype)
    if len(shape) != 5 or min(shape) < 1 or shape[-1] != shape[-2]:
        raise TensorFileError(
            f"array '{shown(name, 80)}': shape {shape}; a file of one array holds attention "
            "weights stacked as (layers, batch, heads, n, n) (Hugging Face's output_attentions "
            "through torch.stack); for q and k use layer{L}.q / layer{L}.k arrays")
    layers, batch, heads, n, _ = shape
    arrays = {layer: LayerArrays(weights=name, index=(layer,)) for layer in range(layers)}
    return _Geometry("stacked", "weights", arrays, batch, heads, heads, n, 0, dtype.name)


def _read_square(source: Source, name: str, index: tuple[int, ...], head: int,
                 batch: int) -> np.ndarray:
    """One head's (batch, n, n) block of a weights array, in its stored dtype."""
    if not index:
        raw = source.read_head(name, head)
        return raw.reshape((batch, *raw.shape[-2:]))
    return np.stack([source.read_part(name, (*index, b, head)) for b in range(batch)])


def _tolerance(raw: np.ndarray) -> float:
    # Rounding each weight to the stored format moves a row's sum by at most its unit
    # roundoff (bfloat16: 0.004); a float32 sum over many keys drifts by ~1e-5.
    return max(1e-3, 2.0 * float(np.finfo(raw.dtype).eps))


def _row_position(shape: tuple[int, ...], flat: int) -> str:
    b, i = np.unravel_index(flat, shape[:2])
    return f"batch {b}, row {i}" if shape[0] > 1 else f"row {i}"


def _above_diagonal(n: int) -> np.ndarray:
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def _check_weights(raw: np.ndarray, label: str, head: int, causal: bool) -> np.ndarray:
    bad = _count_bad(raw)
    if bad:
        raise TensorFileError(f"{label}: head {head} holds {bad} NaN/inf values")
    weights = np.asarray(raw, dtype=np.float64)
    negative = int(np.count_nonzero(weights < 0))
    if negative:
        raise TensorFileError(f"{label}: head {head} holds {negative} negative weights; "
                              "attention weights are ≥ 0")
    sums = weights.sum(axis=-1)
    off = np.abs(sums - 1.0)
    worst = int(np.argmax(off))
    if off.flat[worst] > _tolerance(raw):
        raise TensorFileError(
            f"{label}: head {head}, {_row_position(sums.shape, worst)} sums to "
            f"{sums.flat[worst]:.6g}, not 1: attention weights (after the softmax) sum to 1 "
            "over the keys")
    if causal:
        above = int(np.count_nonzero(weights[:, _above_diagonal(weights.shape[-1])]))
        if above:
            raise TensorFileError(
                f"{label}: head {head} has {above} weights above the diagonal, but the file is "
                "causal (meta \"causal\": true)")
    return weights


def _check_scores(raw: np.ndarray, label: str, head: int, causal: bool) -> np.ndarray:
    scores = np.asarray(raw, dtype=np.float64)
    bad = int(np.count_nonzero(np.isnan(scores) | (scores == np.inf)))
    if bad:
        raise TensorFileError(f"{label}: head {head} holds {bad} NaN/+inf logits")
    if causal:
        scores[:, _above_diagonal(scores.shape[-1])] = -np.inf
    empty = ~np.isfinite(scores).any(axis=-1)
    if empty.any():
        where = _row_position(empty.shape, int(np.argmax(empty)))
        raise TensorFileError(f"{label}: head {head}, {where} has no finite logit")
    return scores


def _infers_causal(source: Source, geometry: _Geometry, every_head: bool) -> bool:
    """Whether every weight above the diagonal is 0 (scores: masked), in every head read."""
    n = geometry.n
    if n < 2:
        return False
    above = _above_diagonal(n)
    for _, entry in sorted(geometry.arrays.items()):
        name = entry.scores or entry.weights
        assert name is not None
        for head in range(geometry.heads if every_head else 1):
            raw = _read_square(source, name, entry.index, head, geometry.batch)
            values = np.asarray(raw[:, above], dtype=np.float64)
            masked = values <= MASKED_SCORE if entry.scores else values == 0
            if not masked.all():
                return False
        if not every_head:
            break
    return True


def _check_geometry(
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
            if dtype.name not in _ALLOWED_DTYPES:
                raise TensorFileError(
                    f"array '{name}': unsupported dtype {dtype}; use float16, bfloat16, "
                    "float32 or float64"
                )
            if len(shape) not in (3, 4):
                raise TensorFileError(
                    f"array '{name}': shape {shape} has {len(shape)} dimensions; expected "
                    "(heads, n, d_k) or (batch, heads, n, d_k)"
                )
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
                    f"and {source.info[ref_name][0]}"
                )
            if part != "v":
                if dtype_name and dtype.name != dtype_name:
                    raise TensorFileError(
                        f"array '{name}': dtype {dtype.name} differs from the other q/k "
                        f"arrays ({dtype_name})"
                    )
                dtype_name = dtype.name
    assert ref is not None  # _app_layout guarantees at least one q array
    batch, heads, n, d_k = ref[:4]
    return batch, heads, n, d_k, dtype_name


def _json_field(source: Source, key: str) -> Any:
    if key in source.info:
        shape, dtype = source.info[key]
        size = math.prod(shape) * dtype.itemsize
    else:
        size = len(source.text.get(key, "").encode("utf-8"))
    if size > MAX_JSON_BYTES:
        raise TensorFileError(f"array '{key}': {size} bytes of JSON text, more than "
                              f"{MAX_JSON_BYTES} bytes")
    try:
        if key in source.info:
            return decode_json_array(key, source.read_all(key))
        if key in source.text:
            return json.loads(source.text[key])
    except TensorFileError:  # raised by the reader (a ValueError too): already clear
        raise
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TensorFileError(f"array '{key}': not valid JSON: {exc}") from exc
    except RecursionError:
        raise TensorFileError(f"array '{key}': JSON nested too deeply (more than Python's "
                              f"recursion limit, {sys.getrecursionlimit()})") from None
    except ValueError:  # Python reads integers of at most sys.get_int_max_str_digits()
        raise TensorFileError(f"array '{key}': its JSON holds an integer of more than "
                              f"{sys.get_int_max_str_digits()} digits") from None
    return None


def _parse_tokens(source: Source, n: int) -> tuple[str, ...] | None:
    if "tokens" in source.info:
        shape, dtype = source.info["tokens"]
        if dtype.kind in "US" and len(shape) == 1:
            if shape[0] != n:  # before reading: the declared length may be huge
                raise TensorFileError(f"array 'tokens': {shape[0]} tokens, but n = {n}")
            chars = dtype.itemsize // (4 if dtype.kind == "U" else 1)
            if chars > MAX_TOKEN_CHARS:
                raise TensorFileError(f"array 'tokens': tokens of up to {chars} characters; "
                                      f"at most {MAX_TOKEN_CHARS} are read")
            arr = source.read_all("tokens")
            try:
                tokens: Any = [t.decode("utf-8") if isinstance(t, bytes) else str(t)
                               for t in arr]
            except UnicodeDecodeError as exc:
                raise TensorFileError(f"array 'tokens': not UTF-8 text ({exc.reason} at byte "
                                      f"{exc.start})") from None
        else:
            tokens = _json_field(source, "tokens")
    else:
        tokens = _json_field(source, "tokens")
    if tokens is None:
        return None
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise TensorFileError("array 'tokens': expected a list of strings")
    if len(tokens) != n:
        raise TensorFileError(f"array 'tokens': {len(tokens)} tokens, but n = {n}")
    longest = max(map(len, tokens), default=0)
    if longest > MAX_TOKEN_CHARS:
        raise TensorFileError(f"array 'tokens': a token of {longest} characters; at most "
                              f"{MAX_TOKEN_CHARS} are read")
    return tuple(tokens)


def _parse_meta(source: Source) -> Mapping[str, Any]:
    meta = _json_field(source, "meta")
    if meta is None:
        return MappingProxyType({})
    if not isinstance(meta, dict):
        raise TensorFileError(f"array 'meta': expected a JSON object, got {type(meta).__name__}")
    _check_number(meta, "scale", "'scale'", bounds=(-MAX_SCALE, MAX_SCALE))
    _check_number(meta, "cap", "'cap'", bounds=CAP_RANGE)
    d_k = meta.get("d_k")
    if d_k is not None and (isinstance(d_k, bool) or not isinstance(d_k, int)
                            or not 1 <= d_k <= MAX_D_K):
        text = json.dumps(d_k)
        raise TensorFileError(f"array 'meta': 'd_k' must be a whole number in 1..{MAX_D_K}, got "
                              f"{text if len(text) <= 40 else text[:39] + '…'}")
    if "causal" in meta and not isinstance(meta["causal"], bool):
        raise TensorFileError(f"array 'meta': 'causal' must be true or false, got "
                              f"{json.dumps(meta['causal'])[:40]}")
    layers = meta.get("layers")
    if layers is not None:
        if not isinstance(layers, dict):
            raise TensorFileError("array 'meta': 'layers' must be an object keyed by layer index")
        for key, entry in layers.items():
            if not isinstance(entry, dict):
                raise TensorFileError(f"array 'meta': 'layers.{key}' must be an object")
            label = f"'layers.{key[:20]}{'…' if len(key) > 20 else ''}"
            _check_number(entry, "scale", f"{label}.scale'", bounds=(-MAX_SCALE, MAX_SCALE))
            _check_number(entry, "cap", f"{label}.cap'", bounds=CAP_RANGE)
            name = entry.get("name")
            if name is not None and len(str(name)) > MAX_NAME_CHARS:
                raise TensorFileError(f"array 'meta': {label}.name' has {len(str(name))} "
                                      f"characters; at most {MAX_NAME_CHARS} are allowed")
    return MappingProxyType(meta)


def _check_number(owner: Mapping[str, Any], key: str, label: str, *,
                  bounds: tuple[float, float]) -> None:
    value = owner.get(key)
    if value is None:
        return
    try:  # an int too large for a float (1e400 written out) is not finite either
        finite = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(
            value)
    except OverflowError:
        finite = False
    if not finite:
        text = json.dumps(value)
        raise TensorFileError(f"array 'meta': {label} must be a finite number, got "
                              f"{text if len(text) <= 40 else text[:39] + '…'}")
    low, high = bounds
    if low > 0 and value <= 0:
        raise TensorFileError(f"array 'meta': {label} must be > 0, got {value!r}")
    if not low <= value <= high:
        raise TensorFileError(f"array 'meta': {label} = {value:g} is outside {low:g}..{high:g}, "
                              "far from what a model uses")


def load_tensors(path: str | Path, *, check_finite: bool = True) -> TensorFile:
    """Open and check a tensor file (``.npz``, ``.safetensors``, a folder of ``.npy`` files or
    one ``.npy`` file of stacked attention weights), in any layout of the module docstring.

    Parameters
    ----------
    path
        The file or folder.
    check_finite
        Scan every head now (head by head, so memory stays at one head): q and k for NaN/inf,
        weights also for rows that are negative or do not sum to 1, and, without
        ``meta["causal"]``, for zeros above the diagonal (the mask is then inferred from every
        head; with ``check_finite=False`` from the first head). :meth:`TensorFile.qk` and
        :meth:`TensorFile.weights` check the head they read in any case.

    Returns
    -------
    TensorFile

    Raises
    ------
    TensorFileError
        With a message naming the array and the problem: a missing path, a file of no known
        format or truncated, wrong shapes, a missing q or k, no layer arrays, mismatched
        batch/heads/n/d_k or dtype, an unsupported dtype, NaN/inf, weights that are not a
        softmax, tokens not n strings, meta not a JSON object, or one head too large for the
        memory budget.
    """
    path = Path(path)
    try:
        fmt, source = open_source(path)
    except TensorFileError as exc:
        raise _named(path, exc) from exc
    return _open_checked(path, fmt, source, check_finite)


def tensors_from_arrays(name: str, arrays: Mapping[str, np.ndarray], *,
                        tokens: Sequence[str] | None = None,
                        meta: Mapping[str, Any] | None = None) -> TensorFile:
    """A :class:`TensorFile` of arrays in memory (named ``name``, with no file behind it),
    checked as :func:`load_tensors` checks a file: what a capture from a model opens in the
    Heads tab before it is saved."""
    text = {}
    if tokens is not None:
        text["tokens"] = json.dumps(list(tokens))
    if meta is not None:
        text["meta"] = json.dumps(dict(meta))
    return _open_checked(Path(name), "memory", MemorySource(dict(arrays), text), True)


def _open_checked(path: Path, fmt: str, source: Source, check_finite: bool) -> TensorFile:
    try:
        geometry = _describe(source)
        # First: it bounds n, and so the tokens read next.
        _check_head_memory(geometry.batch, geometry.n, geometry.d_k)
        tokens = _parse_tokens(source, geometry.n)
        meta = _parse_meta(source)
        d_k = geometry.d_k or int(meta.get("d_k", 0))
        if geometry.kind == "qk":
            default_causal = geometry.layout == "transformer_lens"
            if check_finite:
                for entry in geometry.arrays.values():
                    for name in (entry.q, entry.k):
                        assert name is not None
                        heads = geometry.heads if name == entry.q else geometry.kv_heads
                        if geometry.layout == "transformer_lens":
                            _check_finite_whole(source, name)
                        else:
                            _check_finite(source, name, heads)
        else:
            default_causal = ("causal" not in meta
                              and _infers_causal(source, geometry, check_finite))
        tf = TensorFile(path=path, format=fmt, layers=tuple(sorted(geometry.arrays)),
                        heads=geometry.heads, n=geometry.n, d_k=d_k, batch=geometry.batch,
                        dtype=geometry.dtype, tokens=tokens, meta=meta, kind=geometry.kind,
                        layout=geometry.layout, kv_heads=geometry.kv_heads,
                        default_causal=default_causal, _arrays=geometry.arrays, _source=source)
        if geometry.kind == "weights" and check_finite:
            for layer in tf.layers:
                for head in range(tf.heads):
                    tf.weights(layer, head)
    except TensorFileError as exc:
        raise _named(path, exc) from exc
    except OSError as exc:  # a read that failed after the file was opened
        raise TensorFileError(f"{shown(path.name)}: cannot read it: {describe_os_error(exc)}"
                              ) from exc
    return tf


def _check_finite_whole(source: Source, name: str) -> None:
    bad = _count_bad(source.read_all(name))
    if bad:
        raise TensorFileError(f"array '{name}': {bad} NaN/inf values")


def _named(path: Path, exc: TensorFileError) -> TensorFileError:
    """``exc`` with the file's name in front, unless the message already starts with it."""
    text = str(exc)
    if text.startswith((f"{shown(path.name)}:", f"{shown(path)}:", f"{shown(repr(str(path)))}:")):
        return exc
    return TensorFileError(f"{shown(path.name)}: {text}")


def write_tensors(
    path: str | Path,
    arrays: Mapping[str, np.ndarray],
    *,
    tokens: list[str] | tuple[str, ...] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Write arrays (``layer{L}.q`` …) plus tokens and meta as ``.npz`` or ``.safetensors``.

    The format follows the suffix of ``path``. Nothing is validated beyond what the containers
    need, so tests can write deliberately broken files; read back with :func:`load_tensors`.
    A ``.safetensors`` file is assembled in memory before it is written (one more copy of the
    arrays while it is written). The file is written beside ``path`` and renamed onto it when
    complete: a failed write leaves an existing file unchanged and no fragment behind.

    Returns
    -------
    Path
        The written path.

    Raises
    ------
    OSError
        If the file cannot be written (missing folder, no permission, disk full).
    """
    path = Path(path)
    # np.ascontiguousarray would turn a 0-d string (JSON text) into a 1-d array: copy instead.
    data = {name: np.array(a, order="C", copy=None) for name, a in arrays.items()}
    meta_text = None if meta is None else json.dumps(dict(meta))
    if path.suffix == ".safetensors":
        from safetensors.numpy import save

        text = {"format_version": str(FORMAT_VERSION)}
        if tokens is not None:
            text["tokens"] = json.dumps(list(tokens))
        if meta_text is not None:
            text["meta"] = meta_text
        # Serialised here and written by Python: safetensors' own save_file reports a missing
        # or read-only folder as a SafetensorError, which callers that catch OSError (the
        # window's export, the train command) would not recognise.
        write_bytes_atomic(path, save(data, metadata=text))
    elif path.suffix == ".npz":
        if tokens is not None:
            data["tokens"] = np.array(list(tokens), dtype=np.str_)
        if meta_text is not None:
            data["meta"] = np.array(meta_text)
        with atomic_output(path, "wb") as fh:
            np.savez(fh, **data)  # type: ignore[arg-type]
    else:
        raise ValueError(f"{path.name}: write .npz or .safetensors (got suffix {path.suffix!r})")
    return path
