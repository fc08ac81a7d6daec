"""What every container reader shares: the :class:`Source` protocol, the one error a refused
file raises, and the checks of what a file declares before any data is read."""

from __future__ import annotations

import itertools
import json
import math
import os
import tokenize
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np

from engine.core.checks import readonly
from engine.core.memory import MemoryBudgetError, check_memory

__all__ = ["MAX_ARRAYS", "MAX_HEADER_BYTES", "ArrayInfo", "ArraySource", "MemorySource", "Source",
           "Stamp", "TensorFileError", "bfloat16", "check_count", "check_disjoint", "check_size",
           "check_whole_read", "head_index", "nbytes", "npy_header", "parse_json", "shown", "stamp",
           "stamp_now", "to_bfloat16"]

#: Most arrays one file may hold (a 100-layer model with q, k and v has 300).
MAX_ARRAYS = 10_000
#: Largest safetensors header read, in bytes, by the tensor readers and the model loader alike
#: (names, shapes and offsets take ~80 bytes a tensor; tokens and meta are bounded separately,
#: to 1 MiB each).
MAX_HEADER_BYTES = 16 << 20


class TensorFileError(ValueError):
    """A tensor file cannot be used; the message names the file or array and the problem."""


ArrayInfo = tuple[tuple[int, ...], np.dtype]
#: What changes when a file is rewritten or replaced: (device, inode, size, mtime in ns).
Stamp = tuple[int, int, int, int]


def shown(path: str | os.PathLike[str], limit: int = 160) -> str:
    """``path`` (or a name) as messages show it: cut in the middle beyond ``limit`` characters
    (a hostile name of thousands of characters would fill the window with one message), and
    control characters, newlines and lone surrogates escaped (``\\n``), so a name read from a
    file cannot break a message into lines or fail to print."""
    text = os.fspath(path)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit // 2] + "…" + text[-(limit // 2 - 1):]


def stamp(info: os.stat_result) -> Stamp:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def stamp_now(path: os.PathLike[str]) -> Stamp | None:
    try:
        return stamp(os.stat(path))
    except OSError:
        return None


def bfloat16() -> np.dtype:
    """``ml_dtypes.bfloat16``, imported on first use: importing ml_dtypes takes up to 1.4 s,
    most of a model capture's cold start when no file holds bfloat16."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def to_bfloat16(dtype: np.dtype) -> np.dtype:
    """bfloat16 for numpy's stand-in ``|V2`` (what ``np.save`` writes for it), else ``dtype``."""
    if dtype.kind == "V" and dtype.itemsize == 2 and dtype.names is None:
        return bfloat16()
    return dtype


class Source(Protocol):
    """What a container reader offers: headers, one head, a small whole array, text metadata."""

    info: dict[str, ArrayInfo]
    text: dict[str, str]

    def read_head(self, name: str, head: int) -> np.ndarray:
        """Return head ``head`` of a 3-D (heads, n, d) or 4-D (batch, heads, n, d) array."""
        ...

    def read_all(self, name: str) -> np.ndarray:
        """Return a whole (small) array, e.g. ``tokens`` or ``meta``."""
        ...

    def read_part(self, name: str, index: tuple[int, ...]) -> np.ndarray:
        """Return ``array[index]`` for integer indices of the leading axes (a contiguous
        block of a C-order array: one layer of a stacked array, one batch entry)."""
        ...

    def unchanged(self, names: Iterable[str]) -> bool:
        """Whether the files holding ``names`` are still those opened (same inode, size and
        modification time): False once one was rewritten, replaced or removed."""
        ...


def head_index(ndim: int, head: int) -> tuple[Any, ...]:
    return (head,) if ndim == 3 else (slice(None), head)


def nbytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def check_whole_read(name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Refuse to read a whole array larger than the memory budget (a compressed member of a
    few KB may declare gigabytes)."""
    try:
        check_memory(nbytes(shape, dtype), f"reading the whole array '{name}' {tuple(shape)}")
    except MemoryBudgetError as exc:
        raise TensorFileError(str(exc)) from exc


def check_size(label: str, shape: tuple[int, ...], dtype: np.dtype, offset: int, held: int,
               where: str) -> None:
    """Refuse an array whose data is not exactly what its header declares."""
    declared = offset + nbytes(shape, dtype)
    if declared != held:
        raise TensorFileError(
            f"{label}: its header declares shape {shape} ({declared} bytes with the header), "
            f"but {where} holds {held}" + ("; it is truncated" if held < declared else ""))


def check_count(what: str, count: int) -> None:
    if count > MAX_ARRAYS:
        raise TensorFileError(f"{count} {what}; at most {MAX_ARRAYS} arrays are read")


def check_disjoint(spans: list[tuple[int, int, str]], label: str, poll: Callable[[], None],
                   error: type[ValueError] = TensorFileError) -> None:
    """Refuse two tensors whose bytes ``[begin, end)`` overlap: one of them would be read as
    the other's values."""
    poll()
    spans = sorted(span for span in spans if span[1] > span[0])
    for (begin, end, name), (next_begin, next_end, next_name) in itertools.pairwise(spans):
        if next_begin < end:
            raise error(f"{label}: tensor '{shown(next_name, 80)}' (bytes {next_begin:,}"
                        f"..{next_end:,}) overlaps tensor '{shown(name, 80)}' (bytes "
                        f"{begin:,}..{end:,})")


def parse_json(raw: bytes, label: str, what: str,
               error: type[ValueError] = TensorFileError) -> Any:
    """``raw`` as JSON; ``label: what is not JSON (…)`` in one line for anything else, deep
    nesting included (json raises RecursionError past Python's recursion limit)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise error(f"{label}: {what} is JSON nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise error(f"{label}: {what} is not JSON ({shown(str(exc), 120)})") from exc


def npy_header(fh: Any, label: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of the .npy stream ``fh``, refusing object arrays;
    ``label`` (e.g. ``array 'tokens'``) starts the message."""
    try:
        version = np.lib.format.read_magic(fh)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(fh)
    # numpy parses the header's Python literal with tokenize and ast, which raise their own
    # errors for damaged text (TokenError, SyntaxError, RecursionError for deep nesting).
    except (ValueError, EOFError, TypeError, SyntaxError, RecursionError, MemoryError,
            tokenize.TokenError) as exc:
        raise TensorFileError(f"{label}: bad .npy header: {' '.join(str(exc).split())}"
                              ) from exc
    if dtype.hasobject:
        raise TensorFileError(
            f"{label}: object (pickled) arrays are not read; store strings as a string array "
            "or as JSON")
    return tuple(shape), bool(fortran), dtype


class ArraySource:
    """A reader whose arrays are numpy arrays, mapped from files or in memory (``_array``): a
    head, a part or a whole array is read as a copy in ``info``'s dtype."""

    info: dict[str, ArrayInfo]
    text: dict[str, str]

    def _array(self, name: str) -> np.ndarray:
        raise NotImplementedError

    def _copy(self, name: str, part: np.ndarray) -> np.ndarray:
        # The stored dtype may be numpy's stand-in for bfloat16 (|V2): read as info says.
        return np.array(part).view(self.info[name][1])

    def read_head(self, name: str, head: int) -> np.ndarray:
        arr = self._array(name)
        return self._copy(name, arr[head_index(arr.ndim, head)])

    def read_all(self, name: str) -> np.ndarray:
        check_whole_read(name, *self.info[name])
        return self._copy(name, self._array(name))

    def read_part(self, name: str, index: tuple[int, ...]) -> np.ndarray:
        return self._copy(name, self._array(name)[index])


class MemorySource(ArraySource):
    """Arrays already in memory (a capture from a model), read like a file's arrays."""

    def __init__(self, arrays: dict[str, np.ndarray], text: dict[str, str]) -> None:
        self.arrays = {name: readonly(a) for name, a in arrays.items()}
        self.info = {name: (a.shape, a.dtype) for name, a in self.arrays.items()}
        self.text = dict(text)

    def _array(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def unchanged(self, names: Iterable[str]) -> bool:
        return True
