"""The one safetensors reader, for tensor files (:mod:`engine.io.readers`) and model weights
(:mod:`engine.models.weights`) alike.

The header is parsed here rather than by the ``safetensors`` package, and every count, offset
and size it declares is checked against the file before anything is built from it: a header of
at most :data:`~engine.io.source.MAX_HEADER_BYTES`, metadata of strings, and for each tensor a
dtype, a shape of at most 8 sizes ≥ 0 and data_offsets inside the data section, holding exactly
the bytes that dtype and shape need, no two tensors overlapping. A hostile file gets one line
naming the problem instead of a hang, a huge allocation or silently wrong values. The file
stays mapped: a tensor is a read-only view of its bytes, so a read touches only its pages.
"""

from __future__ import annotations

import math
import mmap
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from engine.io.source import (
    MAX_HEADER_BYTES,
    TensorFileError,
    bfloat16,
    check_disjoint,
    parse_json,
    shown,
)

__all__ = ["SafetensorsFile", "Tensor"]

# The dtypes numpy holds (BF16 as ml_dtypes' bfloat16, imported on first use).
_NUMPY_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "U8": "u1", "I8": "i1", "I16": "<i2",
                 "I32": "<i4", "I64": "<i8", "U16": "<u2", "U32": "<u4", "U64": "<u8",
                 "BOOL": "?"}
# Bytes per value of every dtype, the 8-bit floats numpy cannot hold included, so the size each
# entry declares is checked for all of them.
_ITEMSIZES = {**{code: np.dtype(t).itemsize for code, t in _NUMPY_DTYPES.items()},
              "BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1}


class Tensor(NamedTuple):
    """One tensor's entry: its dtype as the file names it, its shape and its first byte."""

    dtype: str
    shape: tuple[int, ...]
    begin: int


def _ints(value: Any, count: int | None = None) -> list[int] | None:
    """``value`` if it is a list of plain integers (of ``count`` of them), else ``None``."""
    if not isinstance(value, list) or (count is not None and len(value) != count):
        return None
    if not all(type(v) is int for v in value):  # bools and floats are not sizes
        return None
    return value


class SafetensorsFile:
    """A mapped ``.safetensors`` file: its metadata and tensors, checked as the module says.

    Parameters
    ----------
    data
        The file, mapped read-only.
    label
        The file's name as messages show it; every message starts with it.
    error
        The exception raised for a refused file (a :class:`ValueError` taking the message).
    poll
        Called between entries of a long header; raises to stop the open.
    """

    def __init__(self, data: mmap.mmap, label: str, *,
                 error: type[ValueError] = TensorFileError,
                 poll: Callable[[], None] = lambda: None) -> None:
        self.data, self.label, self._error = data, label, error
        header, start = self._header()
        metadata = header.pop("__metadata__", {})
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise error(f"{label}: the safetensors __metadata__ is not an object of strings")
        self.metadata: dict[str, str] = metadata
        self.tensors: dict[str, Tensor] = {}
        room = len(data) - start
        spans: list[tuple[int, int, str]] = []
        for count, (name, entry) in enumerate(header.items()):
            if not count % 256:
                poll()
            tensor = f"{label}: tensor '{shown(name, 80)}'"
            fields = entry if isinstance(entry, dict) else {}
            dtype, shape = fields.get("dtype"), _ints(fields.get("shape"))
            offsets = _ints(fields.get("data_offsets"), 2)
            if not isinstance(dtype, str) or shape is None or offsets is None:
                raise error(f"{tensor} has a malformed entry (it needs a dtype, a shape of "
                            "integers and data_offsets [begin, end])")
            begin, end = offsets
            if min(shape, default=0) < 0 or len(shape) > 8:
                raise error(f"{tensor} has shape {shown(str(shape), 80)}; a shape is at most 8 "
                            "sizes ≥ 0")
            if not 0 <= begin <= end:
                raise error(f"{tensor} has data_offsets [{begin}, {end}]; they must be "
                            "0 ≤ begin ≤ end")
            if end > room:
                raise error(f"{tensor} runs past the end of the file (truncated?): it ends at "
                            f"byte {end:,} of a data section of {room:,}")
            itemsize = _ITEMSIZES.get(dtype)
            if itemsize is not None and end - begin != itemsize * math.prod(shape):
                raise error(f"{tensor} holds {end - begin:,} bytes, but {dtype} of shape "
                            f"{tuple(shape)} needs {itemsize * math.prod(shape):,}")
            spans.append((begin, end, name))
            self.tensors[name] = Tensor(dtype, tuple(shape), start + begin)
        check_disjoint(spans, label, poll, error)

    def _header(self) -> tuple[dict[str, Any], int]:
        """The header's JSON object and the data section's first byte."""
        data, label, error = self.data, self.label, self._error
        if len(data) < 8:
            raise error(f"{label}: truncated (no safetensors header)")
        (size,) = struct.unpack_from("<Q", data, 0)
        if size > MAX_HEADER_BYTES:
            raise error(f"{label}: a safetensors header of {size:,} bytes; at most "
                        f"{MAX_HEADER_BYTES:,} are read")
        if 8 + size > len(data):
            raise error(f"{label}: truncated or not a safetensors file (header of {size:,} "
                        f"bytes in a file of {len(data):,})")
        header = parse_json(bytes(data[8:8 + size]), label, "its safetensors header", error)
        if not isinstance(header, dict):
            raise error(f"{label}: not a safetensors file (its header is not an object)")
        return header, 8 + size

    def dtype(self, name: str) -> np.dtype | None:
        """The numpy dtype of tensor ``name``; None for one numpy cannot hold (8-bit floats,
        or a dtype this reader does not know)."""
        code = self.tensors[name].dtype
        if code == "BF16":
            return bfloat16()
        return np.dtype(_NUMPY_DTYPES[code]) if code in _NUMPY_DTYPES else None

    def array(self, name: str) -> np.ndarray:
        """Tensor ``name`` as a read-only view of the mapped file (its dtype must be known)."""
        _, shape, begin = self.tensors[name]
        return np.frombuffer(self.data, dtype=self.dtype(name), count=math.prod(shape),
                             offset=begin).reshape(shape)
