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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.config import AttentionConfig
from engine.core.memory import MemoryBudgetError, check_memory
from engine.io.files import atomic_output, describe_os_error, write_bytes_atomic
from engine.io.readers import Source, TensorFileError, decode_json_array, open_source, shown

__all__ = ["FORMAT_VERSION", "TensorFile", "TensorFileError", "load_tensors", "write_tensors"]

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
_LAYER_NAME = re.compile(r"^layer(\d+)\.([qkv])$")


@dataclass(frozen=True)
class TensorFile:
    """A checked tensor file: its geometry, tokens and meta; heads are read on demand.

    Attributes
    ----------
    path
        The file or folder.
    format
        ``"npz"``, ``"safetensors"`` or ``"npy"`` (a folder of ``.npy`` files).
    layers
        The layer indices present, ascending.
    heads, n, d_k
        Heads per layer, tokens (query and key positions), key dimension.
    batch
        Batch entries (1 when the arrays are 3-D).
    dtype
        The stored dtype name of q and k: ``float16``, ``bfloat16``, ``float32`` or ``float64``.
    tokens
        The n token strings, or ``None``.
    meta
        The file's meta object (read-only; empty when absent).
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
    # The reader load_tensors opened: heads are read through it, not by re-opening the file
    # (which re-parsed every array header per head: 25 s for a file of 500 tiny layers). It is
    # replaced by a fresh one when the file changes on disk.
    _source: Source | None = field(default=None, repr=False, compare=False)

    @property
    def scale(self) -> float:
        """The model's own logit scale c: ``meta["scale"]``, else 1/√d_k."""
        value = self.meta.get("scale")
        return 1.0 / math.sqrt(self.d_k) if value is None else float(value)

    @property
    def causal(self) -> bool:
        """Whether the logits are masked causally: ``bool(meta["causal"])``, default False."""
        return bool(self.meta.get("causal", False))

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

        Only that head is read from the file (memory-mapped, sliced or sought to).

        A file rewritten or replaced since it was opened is opened again and read as it is
        now, if its q and k still have this file's geometry.

        Raises
        ------
        TensorFileError
            Starting with the file's name: if ``layer`` or ``head`` is not in the file, the
            head holds NaN/inf, the pair would exceed the memory budget, or the file has
            changed shape or can no longer be read.
        """
        try:
            if layer not in self.layers:
                raise TensorFileError(
                    f"layer {layer} is not in the file (layers: {self.layers})")
            if not 0 <= head < self.heads:
                raise TensorFileError(
                    f"head {head} is out of range (the file has {self.heads})")
            _check_head_memory(self.batch, self.n, self.d_k)
            names = (f"layer{layer}.q", f"layer{layer}.k")
            source = self._current_source(names)
            return (_read_head(source, names[0], head, self.batch),
                    _read_head(source, names[1], head, self.batch))
        except OSError as exc:  # the file changed or vanished since it was opened
            raise TensorFileError(
                f"{shown(self.path.name)}: cannot read layer {layer}, head {head}: "
                f"{describe_os_error(exc)}") from exc
        except TensorFileError as exc:
            raise _named(self.path, exc) from exc

    def _current_source(self, names: Sequence[str]) -> Source:
        """The kept reader, or a fresh one if the files holding ``names`` have changed."""
        source = self._source
        if source is not None and source.unchanged(names):
            return source
        _, source = open_source(self.path)
        for name in names:
            shape, dtype = source.info.get(name, ((), np.dtype(np.uint8)))
            geometry = (1, *shape) if len(shape) == 3 else tuple(shape)
            if geometry != (self.batch, self.heads, self.n, self.d_k) or dtype.name != self.dtype:
                raise TensorFileError(
                    f"array '{name}': the file has changed since it was opened "
                    f"(now {shape if name in source.info else 'missing'}); open it again")
        # Kept for the next heads (a frozen dataclass: the reader is a cache, not a value).
        object.__setattr__(self, "_source", source)
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


def _parse_layers(source: Source) -> dict[int, dict[str, str]]:
    layers: dict[int, dict[str, str]] = {}
    for name in source.info:
        if name in ("tokens", "meta"):
            continue
        match = _LAYER_NAME.match(name)
        if match is None:
            raise TensorFileError(
                f"array '{shown(name, 80)}': unexpected name; expected layer{{L}}.q, layer{{L}}.k, "
                "layer{L}.v, tokens or meta"
            )
        layers.setdefault(int(match.group(1)), {})[match.group(2)] = name
    if not layers:
        raise TensorFileError("no layer arrays: expected layer{L}.q and layer{L}.k arrays")
    for layer, parts in sorted(layers.items()):
        for part in "qk":
            if part not in parts:
                raise TensorFileError(f"array 'layer{layer}.{part}' is missing")
    return layers


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
    assert ref is not None  # _parse_layers guarantees at least one q array
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
    """Open and check a tensor file (``.npz``, ``.safetensors`` or a folder of ``.npy``).

    Parameters
    ----------
    path
        The file or folder.
    check_finite
        Scan every q and k head for NaN/inf now (head by head, so memory stays at one head).
        :meth:`TensorFile.qk` checks the head it reads in any case.

    Returns
    -------
    TensorFile

    Raises
    ------
    TensorFileError
        With a message naming the array and the problem: a missing path, a file of no known
        format or truncated, wrong shapes, a missing q or k, no layer arrays, mismatched
        batch/heads/n/d_k or dtype, an unsupported dtype, NaN/inf, tokens not n strings, meta
        not a JSON object, or one head too large for the memory budget.
    """
    path = Path(path)
    try:
        fmt, source = open_source(path)
        layers = _parse_layers(source)
        batch, heads, n, d_k, dtype = _check_geometry(source, layers)
        _check_head_memory(batch, n, d_k)  # first: it bounds n, and so the tokens read next
        tokens = _parse_tokens(source, n)
        meta = _parse_meta(source)
        if check_finite:
            for parts in layers.values():
                for name in (parts["q"], parts["k"]):
                    _check_finite(source, name, heads)
    except TensorFileError as exc:
        raise _named(path, exc) from exc
    except OSError as exc:  # a read that failed after the file was opened
        raise TensorFileError(f"{shown(path.name)}: cannot read it: {describe_os_error(exc)}"
                              ) from exc
    return TensorFile(path=path, format=fmt, layers=tuple(sorted(layers)), heads=heads, n=n,
                      d_k=d_k, batch=batch, dtype=dtype, tokens=tokens, meta=meta,
                      _source=source)


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
