"""Memory-mapped weights of a model: the store a forward pass reads, and Hugging Face
safetensors (one file or shards); GGUF files are in :mod:`engine.models.gguf_file`.

Both stores hand out one tensor at a time as float32 in the orientation of a Hugging Face
``nn.Linear`` weight (out_features, in_features), so a forward pass holds one layer's weights in
float32 at a time while the rest stays mapped on disk. Every count, offset and size a file
declares is checked against the file before anything is built from it (safetensors headers by
:mod:`engine.io.safetensors_file`), and only regular files are opened, so a hostile file gets
one line naming the problem instead of a hang, a huge allocation or silently wrong values.
"""

from __future__ import annotations

import math
import mmap
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from engine.io.files import describe_os_error, map_regular, read_regular_file
from engine.io.safetensors_file import SafetensorsFile
from engine.io.source import parse_json, shown

__all__ = ["FLOAT_WEIGHT_TYPES", "MAX_JSON_BYTES", "KeptWeights", "ModelError", "Poll",
           "SafetensorsWeights", "WeightStore", "mapped", "no_poll", "read_json"]


class ModelError(ValueError):
    """A model folder or file that cannot be used, with a message that says why."""


#: Called often inside every loop of an open that can be long; raises to stop the open (the
#: loader's raises ``CaptureCancelled`` once the user cancelled).
Poll = Callable[[], None]


def no_poll() -> None:
    """The :data:`Poll` of an open nobody can cancel."""


#: Largest config.json, tokenizer.json or index read (Gemma's tokenizer.json is 34 MB).
MAX_JSON_BYTES = 256 << 20

#: The float weight types, as safetensors and GGUF name them: what a forward pass reads of a
#: safetensors file (integer buffers such as position ids are not weights), and what a GGUF
#: file holds unquantized.
FLOAT_WEIGHT_TYPES = frozenset({"F16", "BF16", "F32", "F64"})


def mapped(path: Path, what: str = "file") -> mmap.mmap:
    """``path`` mapped read-only; a FIFO, device or socket is refused before it is opened."""
    try:
        return map_regular(path, what)
    except OSError as exc:
        raise ModelError(f"{shown(path.name)}: cannot read it: {describe_os_error(exc)}"
                         ) from exc


def read_json(path: Path, label: str) -> Any:
    """The JSON of a regular file of at most :data:`MAX_JSON_BYTES` (nothing blocks)."""
    name = shown(path.name, 80)
    try:
        raw = read_regular_file(path, MAX_JSON_BYTES)
    except OSError as exc:
        raise ModelError(f"{label}: {name} cannot be read: {describe_os_error(exc)}") from exc
    return parse_json(raw, label, name, ModelError)


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


class KeptWeights(WeightStore):
    """Another store's weights, each kept in float32 (read-only) once read: for runs that
    read every weight many times (a sweep's points)."""

    def __init__(self, store: WeightStore) -> None:
        self._store, self.names, self.label = store, store.names, store.label
        self._kept: dict[str, np.ndarray] = {}
        # a sweep's points run side by side: one converts a weight, the other waits for it
        self._converting = threading.Lock()

    def shape(self, name: str) -> tuple[int, ...]:
        return self._store.shape(name)

    def source(self, name: str) -> str:
        return self._store.source(name)

    def get(self, name: str) -> np.ndarray:
        kept = self._kept.get(name)
        if kept is not None:
            return kept
        with self._converting:
            if name not in self._kept:
                array = self._store.get(name)
                array.flags.writeable = False
                self._kept[name] = array
            return self._kept[name]

    def rows(self, name: str, index: np.ndarray) -> np.ndarray:
        return self.get(name)[index] if name in self._kept else self._store.rows(name, index)


class SafetensorsWeights(WeightStore):
    """One ``model.safetensors`` or the shards listed by ``model.safetensors.index.json``."""

    def __init__(self, files: Iterable[Path], poll: Poll = no_poll) -> None:
        self._where: dict[str, SafetensorsFile] = {}
        self.dtypes: set[str] = set()
        for path in files:
            self.label = shown(path.parent.name)
            poll()
            self._add(path, poll)
        self.names = frozenset(self._where)

    def _add(self, path: Path, poll: Poll) -> None:
        file = SafetensorsFile(mapped(path), shown(path.name), error=ModelError, poll=poll)
        for name, tensor in file.tensors.items():
            if name in self._where:
                raise ModelError(f"{file.label}: tensor '{shown(name, 80)}' is also in "
                                 f"{self._where[name].label}; a tensor may be stored once")
            if tensor.dtype in FLOAT_WEIGHT_TYPES:
                self.dtypes.add(tensor.dtype)
                self._where[name] = file

    def shape(self, name: str) -> tuple[int, ...]:
        return self._entry(name).tensors[name].shape

    def source(self, name: str) -> str:
        return self._entry(name).label

    def _get(self, name: str) -> np.ndarray:
        return self._entry(name).array(name).astype(np.float32)

    def _rows(self, name: str, index: np.ndarray) -> np.ndarray:
        return self._entry(name).array(name)[index].astype(np.float32)
