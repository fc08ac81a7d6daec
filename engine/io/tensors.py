"""The tensor file format (version 1): real q and k of a model's attention layers.

``layer{L}.q`` / ``layer{L}.k`` (optionally ``.v``), ``tokens`` and ``meta`` in a ``.npz``, a
``.safetensors`` file or a folder of ``.npy`` files; TransformerLens caches and attention weights
are read too (:mod:`engine.io.layouts`). docs/tensor-format.md specifies it.
A hostile file is refused with one :class:`TensorFileError` naming the file, before it costs
more time or memory than its size warrants (:mod:`engine.io.readers`, :mod:`engine.io.meta`).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.core.softmax import softmax_rows
from engine.io import values
from engine.io.files import atomic_output, describe_os_error, write_bytes_atomic
from engine.io.layouts import LayerArrays, describe
from engine.io.meta import parse_meta, parse_tokens
from engine.io.readers import open_source
from engine.io.source import MemorySource, Source, TensorFileError, shown

__all__ = ["FORMAT_VERSION", "TensorFile", "TensorFileError", "load_tensors",
           "tensors_from_arrays", "write_tensors"]

FORMAT_VERSION = 1


@dataclass(frozen=True)
class TensorFile:
    """A checked tensor file: its geometry, tokens and meta; heads are read on demand.

    ``format`` is ``"npz"``, ``"safetensors"`` or ``"npy"``; ``layers`` the layer indices,
    ascending; ``d_k`` 0 when unknown (a weights-only file without ``meta["d_k"]``); ``batch``
    1 when the arrays have no batch axis; ``dtype`` the stored dtype's name; ``meta`` read-only.
    ``kind`` is ``"qk"`` (read with :meth:`qk`) or ``"weights"`` (attention weights or logits
    only: :meth:`weights`, :meth:`scores`); ``layout`` one of :mod:`engine.io.layouts`;
    ``kv_heads`` fewer than ``heads`` under grouped-query attention.
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
    # The reader load_tensors opened, kept for every head (re-opening the file per head is
    # slow); replaced by a fresh one when the file changes on disk.
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

    def layer_window(self, layer: int) -> int | None:
        """The sliding window of ``layer`` under a causal mask (query i sees keys
        i − window + 1 … i): ``meta["layers"][str(layer)]["window"]``, else None (every
        earlier key)."""
        value = self._layer_meta(layer).get("window")
        return int(value) if value is not None and self.causal else None

    def layer_name(self, layer: int) -> str:
        """A label for ``layer``: ``meta["layers"][str(layer)]["name"]``, else ``"layer L"``."""
        name = self._layer_meta(layer).get("name")
        return str(name) if name is not None else f"layer {layer}"

    def qk(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        """Read q and k of one head as float64 arrays of shape (batch, n, d_k).

        Only that head is read (in the TransformerLens layout, whose heads are not contiguous,
        the layer's arrays are read whole and kept for its other heads). Under grouped-query
        attention k is the key head query head ``head`` uses. A file changed on disk since it
        was opened is read as it is now, if it still has this file's geometry.

        Raises :class:`TensorFileError`, starting with the file's name, if the file holds
        weights only, ``layer`` or ``head`` is not in it, the head holds NaN/inf or exceeds the
        memory budget, or the file has changed shape or can no longer be read.
        """
        if self.kind != "qk":
            raise TensorFileError(f"{shown(self.path.name)}: the file holds attention weights "
                                  "only; this needs q and k")
        with self._reading(layer, head):
            arrays = self._layer(layer, head)
            values.check_head_memory(self.batch, self.n, self.d_k)
            source = self._current_source(arrays.names)
            assert arrays.q is not None and arrays.k is not None
            kv_head = head // (self.heads // self.kv_heads)
            if self.layout == "transformer_lens":
                return (self._head_of_whole(source, arrays.q, head),
                        self._head_of_whole(source, arrays.k, kv_head))
            return (values.read_head(source, arrays.q, head, self.batch),
                    values.read_head(source, arrays.k, kv_head, self.batch))

    def weights(self, layer: int, head: int) -> np.ndarray:
        """Read the attention weights of one head, float64 of shape (batch, n, n).

        Logits (``hook_attn_scores``) are turned into weights by the stable softmax over the
        keys each row sees. Raises :class:`TensorFileError`, starting with the file's name and
        naming the array, if the file holds q and k, ``layer`` or ``head`` is not in it, the
        weights are not a softmax (or not causal in a causal file), or the file cannot be read.
        """
        scores = self.scores(layer, head)
        if scores is not None:
            return softmax_rows(scores)
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
        with self._reading(layer, head):
            arrays = self._layer(layer, head)
            values.check_head_memory(self.batch, self.n, 0)
            name = arrays.scores if part == "scores" else arrays.weights
            assert name is not None
            source = self._current_source(arrays.names)
            raw = values.read_square(source, name, arrays.index, head, self.batch)
            label = f"array '{name}'" + (f" (layer {layer})" if arrays.index else "")
            if part == "scores":
                return values.check_scores(raw, label, head, self.causal)
            return values.check_weights(raw, label, head, self.causal)

    @contextmanager
    def _reading(self, layer: int, head: int) -> Iterator[None]:
        """Errors of a head's read, with the file's name in front."""
        try:
            yield
        except OSError as exc:  # the file changed or vanished since it was opened
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
            whole = values.read_whole(source, name)
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
            now = describe(source)
        else:
            try:
                now = describe(source)
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


def load_tensors(path: str | Path, *, check_finite: bool = True) -> TensorFile:
    """Open and check a tensor file (``.npz``, ``.safetensors``, a folder of ``.npy`` files or
    one ``.npy`` file of stacked attention weights), in any layout of the module docstring.

    With ``check_finite`` every head is scanned now, one at a time: q and k for NaN/inf,
    weights also for rows that are negative or do not sum to 1 and, without
    ``meta["causal"]``, for zeros above the diagonal (else the mask is inferred from the first
    head). :meth:`TensorFile.qk` and :meth:`TensorFile.weights` check the head they read anyway.

    Raises :class:`TensorFileError`, naming the array and the problem.
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
        geometry = describe(source)
        # First: it bounds n, and so the tokens read next.
        values.check_head_memory(geometry.batch, geometry.n, geometry.d_k)
        tokens = parse_tokens(source, geometry.n)
        meta = parse_meta(source)
        d_k = geometry.d_k or int(meta.get("d_k", 0))
        if geometry.kind == "qk":
            default_causal = geometry.layout == "transformer_lens"
            if check_finite:
                for entry in geometry.arrays.values():
                    for name in (entry.q, entry.k):
                        assert name is not None
                        heads = geometry.heads if name == entry.q else geometry.kv_heads
                        if geometry.layout == "transformer_lens":
                            values.read_whole(source, name)
                        else:
                            values.check_finite(source, name, heads)
        else:
            default_causal = ("causal" not in meta
                              and values.infers_causal(source, geometry, check_finite))
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
    """Write arrays (``layer{L}.q`` …) plus tokens and meta as ``.npz`` or ``.safetensors``
    (after the suffix of ``path``); return the path.

    Nothing is validated beyond what the containers need, so tests can write broken files.
    The file is written beside ``path`` and renamed onto it when complete: a failed write
    (an ``OSError``) leaves an existing file unchanged and no fragment behind.
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
        # or read-only folder as a SafetensorError, which callers that catch OSError would not
        # recognise.
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
