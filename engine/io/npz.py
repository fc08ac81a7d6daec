"""The ``.npz`` reader: a head is read by seeking inside its archive member, never the whole.

A member must be stored or deflated (what ``np.savez`` and ``np.savez_compressed`` write), not
encrypted, and a compressed q/k/v member may unpack to at most :data:`MAX_RATIO` times its
packed size (a zipfile handle seeks by unpacking, so a zip bomb cost minutes of inflating).
A stored member is read with ``os.pread`` at the head's offset; a compressed one through kept
handles that move forward only, so reading its heads in order unpacks it once.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import struct
import threading
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from engine.core.memory import get_memory_budget
from engine.io.names import TEXT_ARRAYS
from engine.io.source import (
    ArrayInfo,
    TensorFileError,
    check_count,
    check_size,
    check_whole_read,
    head_index,
    nbytes,
    npy_header,
    shown,
    stamp,
    stamp_now,
    to_bfloat16,
)

__all__ = ["ARCHIVE_ERRORS", "FORTRAN_LIMIT", "MAX_RATIO", "Npz"]

#: Largest unpacked/packed size ratio of a compressed q/k/v member. Real q and k compress
#: 1.04-1.3×, 6× when quantised to 4 bits, 58× even when 99 % of the values are 0.
MAX_RATIO = 100
#: Members that unpack to less are not held to MAX_RATIO: unpacking them is cheap anyway.
_RATIO_FLOOR = 1 << 20
#: Largest Fortran-order q/k/v array, in bytes (read whole, then kept for its other heads).
FORTRAN_LIMIT = 64 << 20
#: Bytes read per call when an array is read whole: the read holds the array plus one chunk
#: (zipfile's read(n) collects a whole member by concatenation, twice its size at the end).
_CHUNK = 4 << 20
#: Kept zipfile handles: per compressed member (a 4-D array is read at one place per batch
#: entry), and members with handles (q, k and v of the layers being read).
_HANDLES_PER_MEMBER = 8
_MEMBERS_WITH_HANDLES = 6
#: Fortran-order arrays kept whole (q and k of one layer).
_WHOLE_KEPT = 2

#: What zipfile raises for members it cannot unpack: encrypted (RuntimeError), an unknown
#: compression (NotImplementedError), damaged data (BadZipFile, zlib.error, EOFError).
_MEMBER_ERRORS = (RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error, EOFError)
#: ... and for a damaged directory: also ValueError, OverflowError or struct.error (and
#: UnicodeDecodeError, a ValueError, for a member name flagged UTF-8).
ARCHIVE_ERRORS = (*_MEMBER_ERRORS, ValueError, OverflowError, struct.error)
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


class _Member(NamedTuple):
    """Where an array lies in an archive."""

    filename: str  # the member's name
    offset: int  # of the array data inside the unpacked member (after the .npy header)
    fortran: bool
    start: int | None  # of the member's data in the archive file; None when compressed
    size: int  # of the unpacked member


def _read_exactly(fh: Any, count: int) -> bytes | bytearray:
    """Up to ``count`` bytes from ``fh`` (fewer at its end), in chunks into one buffer."""
    if count <= _CHUNK:
        return fh.read(count)
    out = bytearray(count)
    view = memoryview(out)
    done = 0
    while done < count:
        chunk = fh.read(min(_CHUNK, count - done))
        if not chunk:
            return out[:done]
        view[done:done + len(chunk)] = chunk
        done += len(chunk)
    return out


class _Stored:
    """Seek and read inside a stored (uncompressed) member with ``os.pread``: a zipfile handle
    would read everything before the position."""

    def __init__(self, fd: int, start: int, size: int) -> None:
        self._fd, self._start, self._size, self._pos = fd, start, size, 0

    def seek(self, pos: int) -> int:
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def read(self, n: int) -> bytes:
        n = max(0, min(n, self._size - self._pos))
        data = os.pread(self._fd, n, self._start + self._pos)  # shorter only if it shrank
        self._pos += len(data)
        return data


class _Streams:
    """Seek and read inside a compressed member through a few kept zipfile handles.

    A zipfile handle seeks backward by unpacking again from the start, and forward by
    unpacking up to the target. Each read continues the handle nearest before it, so the heads
    read in order unpack the member once (a 4-D array keeps one handle per batch entry).
    """

    def __init__(self, opener: Callable[[], Any]) -> None:
        self._opener = opener
        self._handles: list[Any] = []  # least recently used first
        self._pos = 0

    def seek(self, pos: int) -> int:
        self._pos = pos
        return pos

    def read(self, n: int) -> bytes:
        before = [h for h in self._handles if h.tell() <= self._pos]
        if before:
            handle = max(before, key=lambda h: h.tell())
            self._handles.remove(handle)
        else:
            handle = self._opener()
            if len(self._handles) >= _HANDLES_PER_MEMBER:
                self._handles.pop(0).close()
        self._handles.append(handle)
        while (gap := self._pos - handle.tell()) > 0:  # zipfile's seek unpacks 16 MiB a step
            if not handle.read(min(gap, _CHUNK)):
                break
        data = handle.read(n)
        self._pos += len(data)
        return data

    def close(self) -> None:
        for handle in self._handles:
            handle.close()
        self._handles.clear()


class Npz:
    """A ``.npz`` zip archive, kept open for every head, its reads serialised by a lock
    (zipfile handles are not safe for concurrent reads)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.text: dict[str, str] = {}
        self.info: dict[str, ArrayInfo] = {}
        self._lock = threading.Lock()
        self._layout: dict[str, _Member] = {}
        self._streams: OrderedDict[str, _Streams] = OrderedDict()
        self._whole: OrderedDict[str, np.ndarray] = OrderedDict()
        self._file = path.open("rb")
        try:
            info = os.fstat(self._file.fileno())
            self._stamp = stamp(info)
            self._zip = zipfile.ZipFile(self._file)
            members = [m for m in self._zip.infolist() if m.filename.endswith(".npy")]
            check_count("arrays in the archive", len(members))
            for member in members:
                self._add(member, info.st_size)
        except BaseException:
            self.close()
            raise

    def _add(self, member: zipfile.ZipInfo, archive_size: int) -> None:
        name = member.filename[: -len(".npy")]
        label = f"array '{shown(name, 80)}'"  # a member's name may be 64 KiB long
        if member.flag_bits & 0x1:
            raise TensorFileError(f"{label}: the archive member is encrypted; save it without "
                                  "a password (np.savez)")
        if member.compress_type not in _ZIP_METHODS:
            method = zipfile.compressor_names.get(member.compress_type,
                                                  f"method {member.compress_type}")
            raise TensorFileError(
                f"{label}: the archive member is compressed with {method}; only stored or "
                "deflated members are read (what np.savez and np.savez_compressed write)")
        stored = member.compress_type == zipfile.ZIP_STORED
        ratio = member.file_size / max(member.compress_size, 1)
        if (not stored and name not in TEXT_ARRAYS and member.file_size > _RATIO_FLOOR
                and ratio > MAX_RATIO):
            raise TensorFileError(
                f"{label}: {member.compress_size:,} packed bytes unpack to {member.file_size:,} "
                f"({ratio:.0f}×), more than the {MAX_RATIO}× that real q and k can compress "
                "(a zip bomb?); save the real values (np.savez or np.savez_compressed)")
        try:
            with self._zip.open(member) as fh:
                shape, fortran, dtype = npy_header(fh, label)
                offset = fh.tell()
        except _MEMBER_ERRORS as exc:
            raise TensorFileError(f"{label}: cannot unpack it: {exc}") from exc
        dtype = to_bfloat16(dtype)
        check_size(label, shape, dtype, offset, member.file_size, "the archive member")
        start = self._data_start(member, label, archive_size) if stored else None
        self.info[name] = (shape, dtype)
        self._layout[name] = _Member(member.filename, offset, fortran, start, member.file_size)

    def _data_start(self, member: zipfile.ZipInfo, label: str, archive_size: int) -> int:
        # The local header (30 bytes, then the name and an extra field of its own lengths)
        # precedes the data; zipfile.open has just checked it.
        local = os.pread(self._file.fileno(), 30, member.header_offset)
        start = (member.header_offset + 30 + int.from_bytes(local[26:28], "little")
                 + int.from_bytes(local[28:30], "little"))
        if len(local) < 30 or start + member.file_size > archive_size:
            raise TensorFileError(f"{label}: the archive is truncated")
        return start

    def close(self) -> None:
        """Close the archive and its kept handles (also done when the reader is collected)."""
        for streams in self._streams.values():
            streams.close()
        self._streams.clear()
        if hasattr(self, "_zip"):
            self._zip.close()
        self._file.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def unchanged(self, names: Iterable[str]) -> bool:
        return stamp_now(self.path) == self._stamp

    def _read(self, name: str, start: int, count: int, fh: Any) -> np.ndarray:
        """``count`` elements of ``name`` from element ``start`` on, through ``fh``."""
        dtype = self.info[name][1]
        size = count * dtype.itemsize
        fh.seek(self._layout[name].offset + start * dtype.itemsize)
        data = _read_exactly(fh, size)
        if len(data) != size:
            raise TensorFileError(f"array '{name}': the file is truncated")
        return np.frombuffer(data, dtype=dtype)

    def _reader(self, name: str) -> Any:
        """A seek/read object for ``name``'s member; call with the lock held."""
        layout = self._layout[name]
        if layout.start is not None:
            return _Stored(self._file.fileno(), layout.start, layout.size)
        streams = self._streams.get(name)
        if streams is None:
            # A partial of the archive, not a closure over self: no reference cycle, so the
            # file closes as soon as the reader is dropped.
            streams = self._streams[name] = _Streams(
                functools.partial(self._zip.open, layout.filename))
            if len(self._streams) > _MEMBERS_WITH_HANDLES:
                self._streams.popitem(last=False)[1].close()
        self._streams.move_to_end(name)
        return streams

    @contextmanager
    def _member(self, name: str) -> Iterator[Any]:
        with self._lock:
            try:
                yield self._reader(name)
            except _MEMBER_ERRORS as exc:
                streams = self._streams.pop(name, None)
                if streams is not None:  # a handle left half-way through damaged data
                    streams.close()
                raise TensorFileError(f"array '{name}': cannot unpack it: {exc}") from exc

    def _whole_array(self, name: str) -> np.ndarray:
        """A Fortran-order array, read whole once and kept for its other heads."""
        shape, dtype = self.info[name]
        size = nbytes(shape, dtype)
        limit = min(FORTRAN_LIMIT, get_memory_budget() // (2 * _WHOLE_KEPT))
        if size > limit:
            raise TensorFileError(
                f"array '{name}': Fortran-order and {size} bytes: its heads are not contiguous, "
                f"so it is read whole, which is allowed up to {limit} bytes; save it in C "
                "order (np.ascontiguousarray)")
        with self._lock:
            kept = self._whole.get(name)
            if kept is not None:
                self._whole.move_to_end(name)
                return kept
        whole = self.read_all(name)
        with self._lock:
            self._whole[name] = whole
            while len(self._whole) > _WHOLE_KEPT:
                self._whole.popitem(last=False)
        return whole

    def read_head(self, name: str, head: int) -> np.ndarray:
        shape, _ = self.info[name]
        if self._layout[name].fortran:  # rare: a Fortran-order head is not contiguous
            return np.ascontiguousarray(self._whole_array(name)[head_index(len(shape), head)])
        batch, heads = (1, shape[0]) if len(shape) == 3 else shape[:2]
        block = math.prod(shape[-2:])
        with self._member(name) as fh:
            parts = [self._read(name, (b * heads + head) * block, block, fh) for b in range(batch)]
        out = np.stack(parts).reshape((batch, *shape[-2:]))
        return out[0] if len(shape) == 3 else out

    def read_all(self, name: str) -> np.ndarray:
        shape, dtype = self.info[name]
        check_whole_read(name, shape, dtype)
        with self._member(name) as fh:
            flat = self._read(name, 0, math.prod(shape), fh)
        return flat.reshape(shape, order="F" if self._layout[name].fortran else "C")

    def read_part(self, name: str, index: tuple[int, ...]) -> np.ndarray:
        shape, _ = self.info[name]
        if self._layout[name].fortran:
            return np.ascontiguousarray(self._whole_array(name)[index])
        rest = shape[len(index):]
        block = math.prod(rest)
        start = int(np.ravel_multi_index(index, shape[:len(index)])) * block if index else 0
        with self._member(name) as fh:
            return self._read(name, start, block, fh).reshape(rest)
