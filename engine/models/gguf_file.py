"""GGUF files: the metadata and tensor infos parsed with every declared count, length, offset
and alignment checked against the file first, and the tensors dequantized one at a time.

The header is parsed here rather than by ``gguf.GGUFReader``: its checks come first (a file
that declares 2^24 tensor infos is refused before one is parsed, an unsupported architecture
before the tensor infos), and the reader turns a large vocabulary into per-string arrays many
times slower than a plain loop. The ``gguf`` package does the dequantizing.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from engine.io.source import check_disjoint, shown
from engine.models.weights import ModelError, Poll, WeightStore, mapped, no_poll

__all__ = ["GGUF_TYPES", "MAX_GGUF_COUNT", "GgufFile"]

#: Tensor types of GGUF files this app dequantizes (with the ``gguf`` package).
GGUF_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K",
              "Q4_K", "Q5_K", "Q6_K")

# GGUF value types (gguf's GGUFValueType): struct format of each scalar.
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
#: Most tensors or metadata keys one file may declare (a 405B llama has ~1,100 tensors).
MAX_GGUF_COUNT = 1 << 16
#: Most values all of a file's arrays may hold together: Gemma 3's vocabulary, its token types
#: and scores are ~800,000; each value becomes a Python object of up to ~60 bytes.
MAX_GGUF_VALUES = 1 << 22
#: Longest key, tensor name or string value read (GGUF's own limit for keys).
_MAX_STRING = (1 << 16) - 1
_MAX_VALUE_STRING = 1 << 20
#: Arrays of arrays deeper than this are refused (no real file nests at all).
MAX_ARRAY_DEPTH = 4
# The fewest bytes an entry can take: a key/value (key length, type, a one-byte value) and a
# tensor info (name length, dimension count, type, offset). A declared count is checked
# against the file's size with these before a single entry is parsed.
_MIN_KV_BYTES, _MIN_INFO_BYTES = 8 + 4 + 1, 8 + 4 + 4 + 8
_MIN_ITEM_BYTES = {_STRING: 8, _ARRAY: 12, **{k: struct.calcsize(f) for k, f in _SCALARS.items()}}
#: Weights a quantized tensor is dequantized in at a time: a block's temporaries stay bounded
#: (engine.models.capture counts them in its memory estimate).
DEQUANTIZE_ROWS_WEIGHTS = 1 << 22


class _Cursor:
    def __init__(self, data: Any, label: str, poll: Poll) -> None:
        self.data, self.pos, self.label, self.poll = data, 0, label, poll
        self.values_left = MAX_GGUF_VALUES

    def room(self) -> int:
        return len(self.data) - self.pos

    def need(self, size: int) -> None:
        if size > self.room():
            raise ModelError(f"{self.label}: truncated (the GGUF header ends early)")

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(size)
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self, what: str, limit: int = _MAX_STRING) -> str:
        size = self.take("<Q")
        if size > limit:
            raise ModelError(f"{self.label}: {what} is a string of {size:,} bytes; at most "
                             f"{limit:,} are read")
        self.need(size)
        raw = self.data[self.pos:self.pos + size]
        self.pos += size
        return raw.decode("utf-8", errors="replace")

    def value(self, kind: int, key: str, depth: int = 0) -> Any:
        if kind in _SCALARS:
            return self.take(_SCALARS[kind])
        if kind == _STRING:
            return self.string(f"the value of '{key}'", _MAX_VALUE_STRING)
        if kind != _ARRAY:
            raise ModelError(f"{self.label}: '{key}' has the unknown GGUF value type {kind}")
        if depth >= MAX_ARRAY_DEPTH:
            raise ModelError(f"{self.label}: '{key}' nests arrays more than {MAX_ARRAY_DEPTH} "
                             "deep")
        item, count = self.take("<I"), self.take("<Q")
        if item not in _MIN_ITEM_BYTES:
            raise ModelError(f"{self.label}: '{key}' is an array of the unknown GGUF value "
                             f"type {item}")
        if count > self.values_left:
            raise ModelError(f"{self.label}: '{key}' declares an array of {count:,} values; "
                             f"at most {MAX_GGUF_VALUES:,} are read in all arrays together")
        if count * _MIN_ITEM_BYTES[item] > self.room():
            raise ModelError(f"{self.label}: '{key}' declares an array of {count:,} values, "
                             f"more than the {self.room():,} bytes left in the file can hold "
                             "(truncated?)")
        self.values_left -= count
        values: list[Any] = []
        if item in _SCALARS and item != 7:
            array = np.frombuffer(self.data, dtype=np.dtype(_SCALARS[item]), count=count,
                                  offset=self.pos)
            for begin in range(0, count, 1 << 16):  # ~2 ms of work between two polls
                self.poll()
                values.extend(array[begin:begin + (1 << 16)].tolist())
            self.pos += count * _MIN_ITEM_BYTES[item]
            return values
        for index in range(count):
            if not index & 0xFFF:  # a 150k-token vocabulary parses in ~60 ms
                self.poll()
            if item == _STRING:
                values.append(self.string(f"an entry of '{key}'", _MAX_VALUE_STRING))
            else:
                values.append(self.value(item, key, depth + 1))
        return values


def _check_alignment(value: Any, label: str) -> int:
    if type(value) is not int or value <= 0 or value & (value - 1):
        raise ModelError(f"{label}: general.alignment is {shown(repr(value), 40)}; it must be "
                         "a positive power of two (32 by default)")
    return value


def _known_types() -> dict[int, str]:
    import gguf

    return {int(gguf.GGMLQuantizationType[name]): name for name in GGUF_TYPES}


class GgufFile(WeightStore):
    """A GGUF file: its metadata and its tensors, dequantized one at a time.

    Parameters
    ----------
    path
        The file (a regular file; anything else is refused before it is opened).
    poll
        Called often while parsing; raises to stop (see :data:`~engine.models.weights.Poll`).
    architectures
        If given, the ``general.architecture`` values accepted, checked before the tensor
        infos are parsed.
    check_architecture
        If given, called with ``general.architecture`` and the file's label at the same point,
        to raise the :class:`ModelError` of an architecture refused for a reason of its own
        (a mixture of experts), before the tensors' types are looked at.
    tensors
        ``False`` reads the metadata only (the tokenizer's vocabulary needs no more).
    """

    MAGIC: ClassVar[bytes] = b"GGUF"

    def __init__(self, path: Path, *, poll: Poll = no_poll,
                 architectures: Sequence[str] | None = None,
                 check_architecture: Callable[[object, str], None] | None = None,
                 tensors: bool = True) -> None:
        self.path = path
        self._label = self.label = label = shown(path.name)
        data = self._data = mapped(path)
        if bytes(data[:4]) != self.MAGIC:
            raise ModelError(f"{label}: not a GGUF file (it does not start with 'GGUF')")
        cursor = _Cursor(data, label, poll)
        cursor.pos = 4
        version = cursor.take("<I")
        if version not in (2, 3):
            raise ModelError(f"{label}: GGUF version {version}; versions 2 and 3 are read")
        n_tensors, n_fields = cursor.take("<Q"), cursor.take("<Q")
        if max(n_tensors, n_fields) > MAX_GGUF_COUNT:
            raise ModelError(f"{label}: declares {n_tensors:,} tensors and {n_fields:,} "
                             f"metadata keys; at most {MAX_GGUF_COUNT:,} of each are read")
        if n_tensors * _MIN_INFO_BYTES + n_fields * _MIN_KV_BYTES > cursor.room():
            raise ModelError(f"{label}: declares {n_tensors:,} tensors and {n_fields:,} "
                             f"metadata keys, more than its {len(data):,} bytes can hold "
                             "(truncated?)")
        self.metadata = self._read_metadata(cursor, n_fields)
        arch = self.metadata.get("general.architecture")
        if check_architecture is not None:
            check_architecture(arch, label)
        if architectures is not None and arch not in architectures:
            raise ModelError(f"{label}: the GGUF architecture {shown(repr(arch), 80)} is not "
                             f"supported; supported: {', '.join(architectures)}")
        alignment = _check_alignment(self.metadata.get("general.alignment", 32), label)
        self._where: dict[str, tuple[int, int, tuple[int, ...], int]] = {}
        self.types: set[str] = set()
        if tensors:
            infos = self._read_infos(cursor, n_tensors)
            self._place(infos, -(-cursor.pos // alignment) * alignment, alignment, poll)
        self.names = frozenset(self._where)

    def _read_metadata(self, cursor: _Cursor, count: int) -> dict[str, Any]:
        metadata: dict[str, Any] = {}
        for index in range(count):
            if not index & 0x3F:
                cursor.poll()
            key = cursor.string("a metadata key")
            if key in metadata:
                raise ModelError(f"{self._label}: the metadata key '{shown(key, 80)}' appears "
                                 "twice")
            metadata[key] = cursor.value(cursor.take("<I"), shown(key, 80))
        return metadata

    def _read_infos(self, cursor: _Cursor, count: int) -> list[tuple[str, tuple, int, int]]:
        infos, seen = [], set()
        for index in range(count):
            if not index & 0xFF:
                cursor.poll()
            name = cursor.string("a tensor name")
            n_dims = cursor.take("<I")
            if n_dims > 8:
                raise ModelError(f"{self._label}: tensor '{shown(name, 80)}' has {n_dims} "
                                 "dimensions; at most 8 are read")
            if name in seen:
                raise ModelError(f"{self._label}: tensor '{shown(name, 80)}' is listed twice")
            seen.add(name)
            dims = tuple(cursor.take("<Q") for _ in range(n_dims))
            infos.append((name, dims, cursor.take("<I"), cursor.take("<Q")))
        return infos

    def _place(self, infos: list[tuple[str, tuple, int, int]], start: int, alignment: int,
               poll: Poll) -> None:
        import gguf

        label, known = self._label, _known_types()
        spans = []
        for index, (name, dims, kind, offset) in enumerate(infos):
            if not index & 0xFF:
                poll()
            tensor = f"{label}: tensor '{shown(name, 80)}'"
            # GGUF lists dimensions fastest first: (in_features, out_features) is numpy's
            # (out_features, in_features).
            shape = tuple(reversed(dims))
            if kind not in known:
                try:
                    kind_name = gguf.GGMLQuantizationType(kind).name
                except ValueError:
                    kind_name = f"type {kind}"
                raise ModelError(f"{tensor} is stored as {kind_name}, which this app cannot "
                                 f"dequantize; supported: {', '.join(GGUF_TYPES)}")
            if offset % alignment:
                raise ModelError(f"{tensor} starts at offset {offset:,}, not a multiple of the "
                                 f"alignment {alignment}")
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
            if not shape or shape[-1] % block:
                raise ModelError(f"{tensor} has a row of {shape[-1] if shape else 0} values, "
                                 "not whole blocks")
            row_bytes = shape[-1] // block * type_size
            nbytes = row_bytes * math.prod(shape[:-1])
            begin = start + offset
            if begin + nbytes > len(self._data):
                raise ModelError(f"{tensor} runs past the end of the file (truncated?)")
            spans.append((begin, begin + nbytes, name))
            self.types.add(known[kind])
            self._where[name] = (begin, row_bytes, shape, kind)
        check_disjoint(spans, label, poll, ModelError)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._entry(name)[2]

    def source(self, name: str) -> str:
        return self._label

    def _raw(self, name: str) -> tuple[np.ndarray, int]:
        begin, row_bytes, shape, kind = self._entry(name)
        rows = math.prod(shape[:-1])
        raw = np.frombuffer(self._data, dtype=np.uint8, count=rows * row_bytes, offset=begin)
        return raw.reshape(rows, row_bytes), kind

    def _dequantize(self, raw: np.ndarray, kind: int, shape: tuple[int, ...]) -> np.ndarray:
        import gguf

        qtype = gguf.GGMLQuantizationType(kind)
        if qtype == gguf.GGMLQuantizationType.F32:
            return raw.view(np.float32).reshape(shape).copy()  # off the read-only mapping
        if qtype == gguf.GGMLQuantizationType.F16:
            return raw.view(np.float16).astype(np.float32).reshape(shape)
        traits = getattr(gguf.quants, "_type_traits", {}).get(qtype)
        if traits is None:  # a gguf version without the per-type classes
            return np.asarray(gguf.quants.dequantize(raw, qtype), np.float32).reshape(shape)
        # gguf.quants.dequantize works through 16 rows at a time: for a 135M model half the
        # capture's time went to its per-group Python overhead. Chunks of ~4M weights keep
        # the temporaries of a large model's matrices bounded.
        traits.init_grid()
        out = np.empty((raw.shape[0], shape[-1]), dtype=np.float32)
        step = max(1, DEQUANTIZE_ROWS_WEIGHTS // max(shape[-1], 1))
        for start in range(0, raw.shape[0], step):
            out[start:start + step] = traits.dequantize_rows(raw[start:start + step])
        return out.reshape(shape)

    def _get(self, name: str) -> np.ndarray:
        raw, kind = self._raw(name)
        return self._dequantize(raw, kind, self.shape(name))

    def _rows(self, name: str, index: np.ndarray) -> np.ndarray:
        raw, kind = self._raw(name)
        picked = raw[np.asarray(index)]
        return self._dequantize(picked, kind, (len(picked), self.shape(name)[-1]))
