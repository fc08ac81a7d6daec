"""Memory-mapped weights of a model: the store a forward pass reads, and Hugging Face
safetensors (one file or shards); GGUF files are in :mod:`engine.models.gguf_file`.

Both stores hand out one tensor at a time as float32 in the orientation of a Hugging Face
``nn.Linear`` weight (out_features, in_features), so a forward pass holds one layer's weights in
float32 at a time while the rest stays mapped on disk. The headers are parsed here rather than
by ``safetensors``/``gguf``: every count, offset and size a file declares is checked against the
file before anything is built from it, and only regular files are opened, so a hostile file
gets one line naming the problem instead of a hang, a huge allocation or silently wrong values.
"""

from __future__ import annotations

import itertools
import json
import math
import mmap
import os
import struct
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from engine.io.files import describe_os_error, open_regular, read_regular_file
from engine.io.source import MAX_HEADER_BYTES, bfloat16, shown

__all__ = ["MAX_HEADER_BYTES", "MAX_JSON_BYTES", "ModelError", "Poll", "SafetensorsWeights",
           "WeightStore", "check_disjoint", "mapped", "no_poll", "parse_json", "read_json"]


class ModelError(ValueError):
    """A model folder or file that cannot be used, with a message that says why."""


#: Called often inside every loop of an open that can be long; raises to stop the open (the
#: loader's raises ``CaptureCancelled`` once the user cancelled).
Poll = Callable[[], None]


def no_poll() -> None:
    """The :data:`Poll` of an open nobody can cancel."""


#: Largest config.json, tokenizer.json or index read (Gemma's tokenizer.json is 34 MB).
MAX_JSON_BYTES = 256 << 20

_ST_DTYPES: Mapping[str, np.dtype] = {
    "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "F64": np.dtype("<f8"),
}
# Bytes per value of every safetensors dtype, the ones the forward pass skips included, so the
# size each entry declares is checked for all of them.
_ST_ITEMSIZES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2,
                 "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8,
                 "F64": 8}


def _refused(label: str, exc: OSError) -> ModelError:
    return ModelError(f"{label}: cannot read it: {describe_os_error(exc)}")


def mapped(path: Path, what: str = "file") -> mmap.mmap:
    """``path`` mapped read-only; a FIFO, device or socket is refused before it is opened."""
    label = shown(path.name)
    try:
        descriptor, info = open_regular(path, what)
        try:
            if info.st_size == 0:
                raise ModelError(f"{label}: the file is empty")
            return mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(descriptor)
    except OSError as exc:
        raise _refused(label, exc) from exc


def parse_json(raw: bytes, label: str, what: str) -> Any:
    """``raw`` as JSON; ``label: what is not JSON (…)`` in one line for anything else, deep
    nesting included (json raises RecursionError past Python's recursion limit)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ModelError(f"{label}: {what} is JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ModelError(f"{label}: {what} is not JSON ({shown(str(exc), 120)})") from exc


def read_json(path: Path, label: str) -> Any:
    """The JSON of a regular file of at most :data:`MAX_JSON_BYTES` (nothing blocks)."""
    name = shown(path.name, 80)
    try:
        raw = read_regular_file(path, MAX_JSON_BYTES)
    except OSError as exc:
        raise ModelError(f"{label}: {name} cannot be read: {describe_os_error(exc)}") from exc
    return parse_json(raw, label, name)


class WeightStore:
    """What a forward pass reads: tensors by name, as float32, refused when not finite."""

    names: frozenset[str]
    #: The folder or file, as messages name it.
    label: str = "the weights"
    _where: Mapping[str, Any] = {}

    def _entry(self, name: str) -> Any:
        """Where ``name`` is stored; a name the file lacks is one line, not a KeyError."""
        try:
            return self._where[name]
        except KeyError:
            raise ModelError(f"{self.label}: the weights lack '{shown(name, 80)}'") from None

    def shape(self, name: str) -> tuple[int, ...]:
        raise NotImplementedError

    def source(self, name: str) -> str:
        """The file ``name`` is read from, as messages name it."""
        raise NotImplementedError

    def get(self, name: str) -> np.ndarray:
        """The whole tensor ``name`` as a new float32 array."""
        return self._finite(name, self._get(name))

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        """Rows ``index`` of a 2-D tensor (an embedding) as float32, without the rest."""
        return self._finite(name, self._rows(name, index))

    def _get(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def _rows(self, name: str, index: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _finite(self, name: str, values: np.ndarray) -> np.ndarray:
        # A sum is one pass without a temporary; NaN and inf always carry through it. Only a
        # sum that overflowed from large finite values needs the exact (allocating) test.
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.add.reduce(values, axis=None)
        if not np.isfinite(total) and not np.isfinite(values).all():
            raise ModelError(f"{self.source(name)}: tensor '{shown(name, 80)}' holds NaN or "
                             "infinite values")
        return values

    def nbytes(self, name: str) -> int:
        """Bytes of ``name`` once converted to float32."""
        return 4 * math.prod(self.shape(name))


def _ints(value: Any, count: int | None = None) -> list[int] | None:
    """``value`` if it is a list of plain integers (of ``count`` of them), else ``None``."""
    if not isinstance(value, list) or (count is not None and len(value) != count):
        return None
    if not all(type(v) is int for v in value):  # bools and floats are not sizes
        return None
    return value


class SafetensorsWeights(WeightStore):
    """One ``model.safetensors`` or the shards listed by ``model.safetensors.index.json``."""

    def __init__(self, files: Iterable[Path], poll: Poll = no_poll) -> None:
        self._where: dict[str, tuple[mmap.mmap, int, np.dtype, tuple[int, ...], str]] = {}
        self.dtypes: set[str] = set()
        for path in files:
            self.label = shown(path.parent.name)
            poll()
            self._add(path, poll)
        self.names = frozenset(self._where)

    def _header(self, data: mmap.mmap, label: str) -> tuple[dict[str, Any], int]:
        if len(data) < 8:
            raise ModelError(f"{label}: truncated (no safetensors header)")
        (size,) = struct.unpack_from("<Q", data, 0)
        if size > MAX_HEADER_BYTES:
            raise ModelError(f"{label}: a safetensors header of {size:,} bytes; at most "
                             f"{MAX_HEADER_BYTES:,} are read")
        if 8 + size > len(data):
            raise ModelError(f"{label}: truncated or not a safetensors file (header of {size:,}"
                             f" bytes in a file of {len(data):,})")
        header = parse_json(bytes(data[8:8 + size]), label, "its safetensors header")
        if not isinstance(header, dict):
            raise ModelError(f"{label}: not a safetensors file (its header is not an object)")
        return header, 8 + size

    def _add(self, path: Path, poll: Poll) -> None:
        data = mapped(path)
        label = shown(path.name)
        header, start = self._header(data, label)
        room = len(data) - start
        spans: list[tuple[int, int, str]] = []
        for count, (name, entry) in enumerate(header.items()):
            if not count % 256:
                poll()
            if name == "__metadata__":
                continue
            tensor = f"{label}: tensor '{shown(name, 80)}'"
            if name in self._where:
                raise ModelError(f"{tensor} is also in {self._where[name][4]}; a tensor may be "
                                 "stored once")
            fields = entry if isinstance(entry, dict) else {}
            dtype_name, shape = fields.get("dtype"), _ints(fields.get("shape"))
            offsets = _ints(fields.get("data_offsets"), 2)
            if not isinstance(dtype_name, str) or shape is None or offsets is None:
                raise ModelError(f"{tensor} has a malformed entry (it needs a dtype, a shape "
                                 "of integers and data_offsets [begin, end])")
            begin, end = offsets
            if min(shape, default=0) < 0 or len(shape) > 8:
                raise ModelError(f"{tensor} has shape {shown(str(shape), 80)}; a shape is at "
                                 "most 8 sizes ≥ 0")
            if not 0 <= begin <= end:
                raise ModelError(f"{tensor} has data_offsets [{begin}, {end}]; they must be "
                                 "0 ≤ begin ≤ end")
            if end > room:
                raise ModelError(f"{tensor} runs past the end of the file (truncated?): it "
                                 f"ends at byte {end:,} of a data section of {room:,}")
            itemsize = _ST_ITEMSIZES.get(dtype_name)
            if itemsize is not None and end - begin != itemsize * math.prod(shape):
                raise ModelError(f"{tensor} holds {end - begin:,} bytes, but {dtype_name} of "
                                 f"shape {tuple(shape)} needs {itemsize * math.prod(shape):,}")
            spans.append((begin, end, name))
            dtype = bfloat16() if dtype_name == "BF16" else _ST_DTYPES.get(dtype_name)
            if dtype is None:
                continue  # integer buffers (position ids) are not weights of the forward pass
            self.dtypes.add(dtype_name)
            self._where[name] = (data, start + begin, dtype, tuple(shape), label)
        check_disjoint(spans, label, poll)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._entry(name)[3]

    def source(self, name: str) -> str:
        return self._entry(name)[4]

    def _array(self, name: str) -> np.ndarray:
        data, begin, dtype, shape, _label = self._entry(name)
        return np.frombuffer(data, dtype=dtype, count=math.prod(shape), offset=begin
                             ).reshape(shape)

    def _get(self, name: str) -> np.ndarray:
        return self._array(name).astype(np.float32)

    def _rows(self, name: str, index: np.ndarray) -> np.ndarray:
        return self._array(name)[index].astype(np.float32)


def check_disjoint(spans: list[tuple[int, int, str]], label: str, poll: Poll) -> None:
    """Refuse two tensors whose bytes ``[begin, end)`` overlap: one of them would be read as
    the other's values."""
    poll()
    spans = sorted(span for span in spans if span[1] > span[0])
    for (begin, end, name), (next_begin, next_end, next_name) in itertools.pairwise(spans):
        if next_begin < end:
            raise ModelError(f"{label}: tensor '{shown(next_name, 80)}' (bytes {next_begin:,}"
                             f"..{next_end:,}) overlaps tensor '{shown(name, 80)}' (bytes "
                             f"{begin:,}..{end:,})")
