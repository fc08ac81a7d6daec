"""Memory-mapped weights of a model: Hugging Face safetensors (one file or shards) and GGUF.

Both stores hand out one tensor at a time as float32 in the orientation of a Hugging Face
``nn.Linear`` weight (out_features, in_features), so a forward pass holds one layer's weights in
float32 at a time while the rest stays mapped on disk. The headers are parsed here rather than
by ``safetensors``/``gguf``: the checks (every tensor inside its file, a declared size that
matches its shape) come first, and ``gguf.GGUFReader`` turns a large vocabulary into
per-string arrays many times slower than a plain loop. The ``gguf`` package does the
dequantizing.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from engine.io.files import describe_os_error
from engine.io.source import bfloat16, shown

__all__ = ["GGUF_TYPES", "GgufFile", "ModelError", "SafetensorsWeights", "WeightStore"]


class ModelError(ValueError):
    """A model folder or file that cannot be used, with a message that says why."""


_ST_DTYPES: Mapping[str, np.dtype] = {
    "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8"),
}
MAX_HEADER_BYTES = 100 << 20


def _mapped(path: Path) -> mmap.mmap:
    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                raise ModelError(f"{shown(path.name)}: the file is empty")
            return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise ModelError(f"{shown(path.name)}: cannot read it: {describe_os_error(exc)}"
                         ) from exc


class WeightStore:
    """What a forward pass reads: tensors by name, as float32."""

    names: frozenset[str]

    def shape(self, name: str) -> tuple[int, ...]:
        raise NotImplementedError

    def get(self, name: str) -> np.ndarray:
        """The whole tensor ``name`` as a new float32 array."""
        raise NotImplementedError

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        """Rows ``index`` of a 2-D tensor (an embedding) as float32, without the rest."""
        raise NotImplementedError

    def nbytes(self, name: str) -> int:
        """Bytes of ``name`` once converted to float32."""
        return 4 * math.prod(self.shape(name))


class SafetensorsWeights(WeightStore):
    """One ``model.safetensors`` or the shards listed by ``model.safetensors.index.json``."""

    def __init__(self, files: Iterable[Path]) -> None:
        self._where: dict[str, tuple[mmap.mmap, int, int, np.dtype, tuple[int, ...]]] = {}
        self.dtypes: set[str] = set()
        for path in files:
            self._add(path)
        self.names = frozenset(self._where)

    def _add(self, path: Path) -> None:
        data = _mapped(path)
        label = shown(path.name)
        if len(data) < 8:
            raise ModelError(f"{label}: truncated (no safetensors header)")
        (size,) = struct.unpack_from("<Q", data, 0)
        if size > MAX_HEADER_BYTES or 8 + size > len(data):
            raise ModelError(f"{label}: truncated or not a safetensors file (header of {size:,}"
                             f" bytes in a file of {len(data):,})")
        try:
            header = json.loads(bytes(data[8:8 + size]))
        except ValueError as exc:
            raise ModelError(f"{label}: not a safetensors file (its header is not JSON)") from exc
        if not isinstance(header, dict):
            raise ModelError(f"{label}: not a safetensors file (its header is not an object)")
        start = 8 + size
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            try:
                dtype_name = entry["dtype"]
                shape = tuple(int(s) for s in entry["shape"])
                begin, end = (int(o) for o in entry["data_offsets"])
            except (KeyError, TypeError, ValueError) as exc:
                raise ModelError(f"{label}: tensor '{shown(name, 80)}' has a malformed entry"
                                 ) from exc
            dtype = bfloat16() if dtype_name == "BF16" else _ST_DTYPES.get(dtype_name)
            if dtype is None:
                continue  # integer buffers (position ids) are not weights of the forward pass
            if end - begin != dtype.itemsize * math.prod(shape) or start + end > len(data):
                raise ModelError(f"{label}: tensor '{shown(name, 80)}' runs past the end of "
                                 "the file (truncated?)")
            self.dtypes.add(dtype_name)
            self._where[name] = (data, start + begin, start + end, dtype, shape)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._where[name][4]

    def _array(self, name: str) -> np.ndarray:
        data, begin, _end, dtype, shape = self._where[name]
        return np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=begin
                             ).reshape(shape)

    def get(self, name: str) -> np.ndarray:
        return self._array(name).astype(np.float32)

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        return self._array(name)[index].astype(np.float32)


# GGUF value types (gguf's GGUFValueType): struct format of each scalar.
_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
MAX_GGUF_COUNT = 1 << 24


class _Cursor:
    def __init__(self, data: mmap.mmap, label: str) -> None:
        self.data, self.pos, self.label = data, 0, label

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ModelError(f"{self.label}: truncated (the GGUF header ends early)")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        size = self.take("<Q")
        if self.pos + size > len(self.data):
            raise ModelError(f"{self.label}: truncated (the GGUF header ends early)")
        raw = self.data[self.pos:self.pos + size]
        self.pos += size
        return raw.decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind in _GGUF_SCALARS:
            return self.take(_GGUF_SCALARS[kind])
        if kind == _GGUF_STRING:
            return self.string()
        if kind == _GGUF_ARRAY:
            item, count = self.take("<I"), self.take("<Q")
            if count > MAX_GGUF_COUNT:
                raise ModelError(f"{self.label}: an array of {count:,} values in the header")
            if item in _GGUF_SCALARS and item != 7:
                fmt = _GGUF_SCALARS[item]
                size = struct.calcsize(fmt) * count
                if self.pos + size > len(self.data):
                    raise ModelError(f"{self.label}: truncated (the GGUF header ends early)")
                values = np.frombuffer(self.data, dtype=np.dtype(fmt), count=count,
                                       offset=self.pos).tolist()
                self.pos += size
                return values
            return [self.value(item) for _ in range(count)]
        raise ModelError(f"{self.label}: unknown GGUF value type {kind}")


def _gguf_types() -> dict[int, str]:
    import gguf

    names = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K",
             "Q4_K", "Q5_K", "Q6_K")
    return {int(gguf.GGMLQuantizationType[name]): name for name in names}


#: Tensor types of GGUF files this app dequantizes (with the ``gguf`` package).
GGUF_TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K",
              "Q4_K", "Q5_K", "Q6_K")


class GgufFile(WeightStore):
    """A GGUF file: its metadata and its tensors, dequantized one at a time."""

    MAGIC: ClassVar[bytes] = b"GGUF"

    def __init__(self, path: Path) -> None:
        import gguf

        self.path = path
        label = shown(path.name)
        data = _mapped(path)
        if bytes(data[:4]) != self.MAGIC:
            raise ModelError(f"{label}: not a GGUF file (it does not start with 'GGUF')")
        cursor = _Cursor(data, label)
        cursor.pos = 4
        version = cursor.take("<I")
        if version not in (2, 3):
            raise ModelError(f"{label}: GGUF version {version}; versions 2 and 3 are read")
        n_tensors, n_fields = cursor.take("<Q"), cursor.take("<Q")
        if n_tensors > MAX_GGUF_COUNT or n_fields > MAX_GGUF_COUNT:
            raise ModelError(f"{label}: not a usable GGUF file ({n_tensors:,} tensors)")
        self.metadata: dict[str, Any] = {}
        for _ in range(n_fields):
            key = cursor.string()
            self.metadata[key] = cursor.value(cursor.take("<I"))
        infos = []
        for _ in range(n_tensors):
            name = cursor.string()
            n_dims = cursor.take("<I")
            if n_dims > 8:
                raise ModelError(f"{label}: tensor '{shown(name, 80)}' has {n_dims} dimensions")
            dims = tuple(cursor.take("<Q") for _ in range(n_dims))
            infos.append((name, dims, cursor.take("<I"), cursor.take("<Q")))
        alignment = int(self.metadata.get("general.alignment", 32)) or 32
        start = -(-cursor.pos // alignment) * alignment
        known = _gguf_types()
        self._where: dict[str, tuple[int, int, tuple[int, ...], int]] = {}
        self.types: set[str] = set()
        for name, dims, kind, offset in infos:
            # GGUF lists dimensions fastest first: (in_features, out_features) is numpy's
            # (out_features, in_features).
            shape = tuple(reversed(dims))
            if kind not in known:
                try:
                    kind_name = gguf.GGMLQuantizationType(kind).name
                except ValueError:
                    kind_name = f"type {kind}"
                raise ModelError(f"{label}: tensor '{shown(name, 80)}' is stored as {kind_name},"
                                 f" which this app cannot dequantize; supported: "
                                 f"{', '.join(GGUF_TYPES)}")
            block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
            if not shape or shape[-1] % block:
                raise ModelError(f"{label}: tensor '{shown(name, 80)}' has a row of "
                                 f"{shape[-1] if shape else 0} values, not whole blocks")
            row_bytes = shape[-1] // block * type_size
            nbytes = row_bytes * math.prod(shape[:-1])
            begin = start + offset
            if begin + nbytes > len(data):
                raise ModelError(f"{label}: tensor '{shown(name, 80)}' runs past the end of the "
                                 "file (truncated?)")
            self.types.add(known[kind])
            self._where[name] = (begin, row_bytes, shape, kind)
        self._data = data
        self.names = frozenset(self._where)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._where[name][2]

    def _raw(self, name: str) -> tuple[np.ndarray, int]:
        begin, row_bytes, shape, kind = self._where[name]
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
        step = max(1, (1 << 22) // max(shape[-1], 1))
        for start in range(0, raw.shape[0], step):
            out[start:start + step] = traits.dequantize_rows(raw[start:start + step])
        return out.reshape(shape)

    def get(self, name: str) -> np.ndarray:
        raw, kind = self._raw(name)
        return self._dequantize(raw, kind, self.shape(name))

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        raw, kind = self._raw(name)
        picked = raw[np.asarray(index)]
        return self._dequantize(picked, kind, (len(picked), self.shape(name)[-1]))
