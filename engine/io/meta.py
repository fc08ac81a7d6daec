"""A tensor file's ``tokens`` and ``meta``: parsed and bounded before they cost more than the
file's size warrants (a 1 MB ``tokens`` declared 2^28 long would take gigabytes)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from engine.io.source import Source, TensorFileError

__all__ = ["CAP_RANGE", "MAX_D_K", "MAX_JSON_BYTES", "MAX_NAME_CHARS", "MAX_SCALE",
           "MAX_TOKEN_CHARS", "json_number", "parse_meta", "parse_tokens"]

#: Largest ``meta`` (and JSON ``tokens``) text, in bytes.
MAX_JSON_BYTES = 1 << 20
#: Longest token, and longest layer name, in characters (a name is drawn into every label).
MAX_TOKEN_CHARS = 1000
MAX_NAME_CHARS = 200
#: Largest |scale|: logits c·q·k stay far from float64's range for any finite float32 q and k
#: (real models use c ≈ 0.02-1).
MAX_SCALE = 1e6
#: The caps a file may declare: real models use 30-50, and a cap outside this range is far from
#: any model (any cap > 0 can be shown in the explorer).
CAP_RANGE = (1e-6, 1e6)
#: Largest d_k a weights-only file may declare in ``meta["d_k"]``.
MAX_D_K = 1 << 20
#: The largest sliding window read: the most positions a model config may give
#: (engine.models.spec.MAX_POSITIONS; io does not import the models).
MAX_WINDOW = 1 << 24


def json_number(value: float) -> float | None:
    """``value`` as a float, or None (JSON's null) where not finite: JSON has no NaN or inf
    (the meta a file is written with, the command line's JSON output)."""
    value = float(value)
    return value if math.isfinite(value) else None


def _decode_json_array(name: str, arr: np.ndarray) -> Any:
    """Decode a JSON text stored as a 0-d string array or a 1-D uint8 (UTF-8 bytes) array."""
    if arr.dtype == np.uint8 and arr.ndim == 1:
        text = arr.tobytes().decode("utf-8", errors="strict")
    elif arr.dtype.kind in "US" and arr.ndim == 0:
        text = arr.item().decode("utf-8") if arr.dtype.kind == "S" else str(arr.item())
    else:
        raise TensorFileError(
            f"array '{name}': expected JSON text (a string or uint8 array), "
            f"got dtype {arr.dtype} with shape {arr.shape}")
    return json.loads(text)


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
            return _decode_json_array(key, source.read_all(key))
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


def parse_tokens(source: Source, n: int) -> tuple[str, ...] | None:
    """The n token strings (a 1-D string array or JSON text), or None when absent."""
    tokens: Any = None
    info = source.info.get("tokens")
    if info is not None and info[1].kind in "US" and len(info[0]) == 1:
        shape, dtype = info
        if shape[0] != n:  # before reading: the declared length may be huge
            raise TensorFileError(f"array 'tokens': {shape[0]} tokens, but n = {n}")
        chars = dtype.itemsize // (4 if dtype.kind == "U" else 1)
        if chars > MAX_TOKEN_CHARS:
            raise TensorFileError(f"array 'tokens': tokens of up to {chars} characters; "
                                  f"at most {MAX_TOKEN_CHARS} are read")
        arr = source.read_all("tokens")
        try:
            tokens = [t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in arr]
        except UnicodeDecodeError as exc:
            raise TensorFileError(f"array 'tokens': not UTF-8 text ({exc.reason} at byte "
                                  f"{exc.start})") from None
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


def _shown_json(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def parse_meta(source: Source) -> Mapping[str, Any]:
    """The file's checked meta object (read-only; empty when absent)."""
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
        raise TensorFileError(f"array 'meta': 'd_k' must be a whole number in 1..{MAX_D_K}, got "
                              f"{_shown_json(d_k)}")
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
            window = entry.get("window")
            if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                                       or not 1 <= window <= MAX_WINDOW):
                raise TensorFileError(f"array 'meta': {label}.window' must be a whole number "
                                      f"in 1..{MAX_WINDOW:,}, got {_shown_json(window)}")
            # Refused, not cut: a cut name could make two layers look alike.
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
        raise TensorFileError(f"array 'meta': {label} must be a finite number, got "
                              f"{_shown_json(value)}")
    low, high = bounds
    if low > 0 and value <= 0:
        raise TensorFileError(f"array 'meta': {label} must be > 0, got {value!r}")
    if not low <= value <= high:
        raise TensorFileError(f"array 'meta': {label} = {value:g} is outside {low:g}..{high:g}, "
                              "far from what a model uses")

