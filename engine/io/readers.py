"""Low-level readers for the three tensor-file containers: ``.npz``, ``.safetensors`` and a
folder of ``.npy`` files.

Each reader lists the arrays with their shape and dtype from the file headers alone and reads
one head of one array at a time, so a file larger than memory can be inspected head by head.
A reader is opened once per file and serves every head (reads are serialised by a lock:
zipfile handles are not safe for concurrent reads); re-parsing every header per head took
25 s for a file of 500 tiny layers.

What a file declares is checked before any data is read, so that a small hostile file costs
neither time nor memory out of proportion to its size; each refusal is one
:class:`TensorFileError` naming the array:

* Only regular files are opened (a FIFO blocks its reader, a device never ends), and a
  ``.npy`` folder's symbolic links must lead to files inside the folder (they are refused
  otherwise, not followed).
* Every array must hold exactly the bytes its header declares (shape × item size).
* An ``.npz`` member must be stored or deflated (what ``np.savez`` and
  ``np.savez_compressed`` write), not encrypted, and a q/k/v member must unpack to at most
  :data:`MAX_RATIO` times its packed size. The zip bomb that prompted this: 522 KB whose two
  members unpacked to 256 MiB of zeros each; checking every head unpacked each member again
  from its start up to that head (a zipfile handle seeks by unpacking), 16 GiB of inflating,
  and 90 s. Heads of a compressed member are read through kept handles that move forward
  only, so reading them in order unpacks the member once; a stored member is read with
  ``os.pread`` at the head's offset.
* A file holds at most :data:`MAX_ARRAYS` arrays; a safetensors header (its JSON) is at most
  :data:`MAX_HEADER_BYTES`.
* An array read whole (``tokens``, ``meta``, a Fortran-order array, whose heads are not
  contiguous) must fit the memory budget (:func:`engine.core.memory.check_memory`); a
  Fortran-order q/k/v array is kept after its first read (at most two) and must be at most a
  quarter of the budget and :data:`FORTRAN_LIMIT`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import stat
import struct
import threading
import tokenize
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np
from safetensors import SafetensorError, safe_open

from engine.core.memory import MemoryBudgetError, check_memory, get_memory_budget
from engine.io.files import check_regular_file, describe_os_error
from engine.io.names import TEXT_ARRAYS

__all__ = [
    "FORTRAN_LIMIT",
    "MAX_ARRAYS",
    "MAX_HEADER_BYTES",
    "MAX_RATIO",
    "ArrayInfo",
    "MemorySource",
    "Source",
    "TensorFileError",
    "open_source",
    "to_bfloat16",
]

#: Most arrays one file may hold (a 100-layer model with q, k and v has 300).
MAX_ARRAYS = 10_000
#: Largest unpacked/packed size ratio of a compressed q/k/v member. Real q and k compress
#: 1.04-1.3× (float64, float32, float16, bfloat16), 6× when quantised to 4 bits, 58× even
#: when 99 % of the values are 0; zeros compress 1000×.
MAX_RATIO = 100
#: Members that unpack to less are not held to MAX_RATIO: unpacking them is cheap anyway.
_RATIO_FLOOR = 1 << 20
#: Largest safetensors header read, in bytes (names, shapes and offsets take ~80 bytes a
#: tensor; tokens and meta are bounded separately, to 1 MiB each).
MAX_HEADER_BYTES = 16 << 20
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


class TensorFileError(ValueError):
    """A tensor file cannot be used; the message names the file or array and the problem."""


ArrayInfo = tuple[tuple[int, ...], np.dtype]
#: What changes when a file is rewritten or replaced: (device, inode, size, mtime in ns).
Stamp = tuple[int, int, int, int]


def shown(path: str | os.PathLike[str], limit: int = 160) -> str:
    """``path`` (or a name) as messages show it: cut in the middle beyond ``limit`` characters
    (a hostile name of thousands of characters would fill the window with one message)."""
    text = os.fspath(path)
    return text if len(text) <= limit else text[: limit // 2] + "…" + text[-(limit // 2 - 1):]


def _stamp(info: os.stat_result) -> Stamp:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def _stamp_now(path: Path) -> Stamp | None:
    try:
        return _stamp(os.stat(path))
    except OSError:
        return None


def bfloat16() -> np.dtype:
    """``ml_dtypes.bfloat16``, imported on first use: importing ml_dtypes 0.7 takes up to
    1.4 s here, most of a model capture's cold start when no file holds bfloat16."""
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16)


def to_bfloat16(dtype: np.dtype) -> np.dtype:
    """Map numpy's stand-in for bfloat16 (a 2-byte void, what ``np.save`` writes) to bfloat16.

    numpy has no bfloat16 of its own: an ``ml_dtypes.bfloat16`` array saved with ``np.save``
    comes back as ``|V2``. Any other dtype is returned unchanged.
    """
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


def _head_index(ndim: int, head: int) -> tuple[Any, ...]:
    return (head,) if ndim == 3 else (slice(None), head)


def _nbytes(shape: tuple[int, ...], dtype: np.dtype) -> int:
    return math.prod(shape) * dtype.itemsize


def _check_whole_read(name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Refuse to read a whole array larger than the memory budget (a declared size is a claim:
    a compressed archive member of a few KB may unpack to gigabytes)."""
    try:
        check_memory(_nbytes(shape, dtype), f"reading the whole array '{name}' {tuple(shape)}")
    except MemoryBudgetError as exc:
        raise TensorFileError(str(exc)) from exc


def _check_size(label: str, shape: tuple[int, ...], dtype: np.dtype, offset: int, held: int,
                where: str) -> None:
    """Refuse an array whose data is not exactly what its header declares (checked before it
    is read: a declared shape is a claim)."""
    declared = offset + _nbytes(shape, dtype)
    if declared != held:
        raise TensorFileError(
            f"{label}: its header declares shape {shape} ({declared} bytes with the header), "
            f"but {where} holds {held}" + ("; it is truncated" if held < declared else ""))


def _check_count(what: str, count: int) -> None:
    if count > MAX_ARRAYS:
        raise TensorFileError(f"{count} {what}; at most {MAX_ARRAYS} arrays are read")


def _npy_header(fh: Any, label: str) -> tuple[tuple[int, ...], bool, np.dtype]:
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
            "or as JSON"
        )
    return tuple(shape), bool(fortran), dtype


def _read_exactly(fh: Any, nbytes: int) -> bytes | bytearray:
    """Up to ``nbytes`` from ``fh`` (fewer at its end), in chunks into one buffer."""
    if nbytes <= _CHUNK:
        return fh.read(nbytes)
    out = bytearray(nbytes)
    view = memoryview(out)
    done = 0
    while done < nbytes:
        chunk = fh.read(min(_CHUNK, nbytes - done))
        if not chunk:
            return out[:done]
        view[done:done + len(chunk)] = chunk
        done += len(chunk)
    return out


class _NpyFolder:
    """A folder of ``NAME.npy`` files, each memory-mapped so only the touched pages are read.

    Only regular files inside the folder are read: a FIFO would block forever, and a symbolic
    link that leads out of the folder is refused rather than followed silently.
    """

    def __init__(self, folder: Path, single: Path | None = None) -> None:
        self.text: dict[str, str] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self._stamps: dict[str, tuple[Path, Stamp]] = {}
        # A single .npy file (one stacked array of attention weights) is its own folder.
        files = [single] if single is not None else sorted(folder.glob("*.npy"))
        _check_count(".npy files", len(files))
        inside = folder.resolve()
        for file in files:
            label = f"array '{file.stem}' ({file.name})"
            try:
                target = file.resolve()
            except (OSError, RuntimeError) as exc:  # RuntimeError: a symbolic link loop
                raise TensorFileError(f"{label}: a symbolic link that cannot be followed "
                                      f"({' '.join(str(exc).split())})") from None
            if single is None and file.is_symlink() and inside not in target.parents:
                raise TensorFileError(
                    f"{label}: a symbolic link to {shown(target)}, outside the folder; copy "
                    "the file into the folder instead")
            try:
                info = check_regular_file(target, ".npy file")
            except OSError as exc:
                raise TensorFileError(f"{label}: {describe_os_error(exc)}") from exc
            if info.st_size == 0:
                raise TensorFileError(f"{label}: the file is empty (0 bytes)")
            try:
                with target.open("rb") as fh:
                    shape, _, dtype = _npy_header(fh, label)
                    offset = fh.tell()
            except OSError as exc:
                raise TensorFileError(f"{label}: cannot read: {describe_os_error(exc)}") from exc
            _check_size(label, shape, dtype, offset, info.st_size, "the file")
            try:
                arr = np.load(target, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise TensorFileError(f"{label}: cannot read: {exc}") from exc
            self.arrays[file.stem] = arr
            self._stamps[file.stem] = (target, _stamp(info))
        self.info = {k: (a.shape, to_bfloat16(a.dtype)) for k, a in self.arrays.items()}

    def unchanged(self, names: Iterable[str]) -> bool:
        # Only the files read: stat-ing every file of the folder per head took 9 s for 500
        # layers. Checked before a mapped file is touched: reading a page of a file truncated
        # since it was mapped kills the process (SIGBUS).
        return all(_stamp_now(path) == stamp
                   for path, stamp in (self._stamps[name] for name in names))

    def read_head(self, name: str, head: int) -> np.ndarray:
        arr = self.arrays[name]
        return np.array(arr[_head_index(arr.ndim, head)]).view(self.info[name][1])

    def read_all(self, name: str) -> np.ndarray:
        _check_whole_read(name, *self.info[name])
        return np.array(self.arrays[name]).view(self.info[name][1])

    def read_part(self, name: str, index: tuple[int, ...]) -> np.ndarray:
        return np.array(self.arrays[name][index]).view(self.info[name][1])


class MemorySource:
    """Arrays already in memory (a capture from a model), read like a file's arrays."""

    def __init__(self, arrays: dict[str, np.ndarray], text: dict[str, str]) -> None:
        self.arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
        for arr in self.arrays.values():
            arr.flags.writeable = False
        self.info: dict[str, ArrayInfo] = {name: (a.shape, a.dtype)
                                           for name, a in self.arrays.items()}
        self.text = dict(text)

    def unchanged(self, names: Iterable[str]) -> bool:
        return True

    def read_head(self, name: str, head: int) -> np.ndarray:
        arr = self.arrays[name]
        return np.array(arr[_head_index(arr.ndim, head)])

    def read_all(self, name: str) -> np.ndarray:
        return np.array(self.arrays[name])

    def read_part(self, name: str, index: tuple[int, ...]) -> np.ndarray:
        return np.array(self.arrays[name][index])


#: What zipfile raises for members it cannot unpack: encrypted (RuntimeError), an unknown
#: compression (NotImplementedError), damaged data (BadZipFile, zlib.error, EOFError).
_MEMBER_ERRORS = (RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error, EOFError)
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


class _Member(NamedTuple):
    """Where an array lies in an archive."""

    filename: str  # the member's name
    offset: int  # of the array data inside the unpacked member (after the .npy header)
    fortran: bool
    start: int | None  # of the member's data in the archive file; None when compressed
    size: int  # of the unpacked member


class _Stored:
    """Seek and read inside a stored (uncompressed) member with ``os.pread``.

    A zipfile handle reaches a position by reading everything before it, so each head cost
    reading the member up to that head; ``pread`` reads the head's bytes only.
    """

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


class _Npz:
    """A ``.npz`` zip archive; a head is read by seeking inside the member, never the whole.

    The archive stays open: one reader for every head (re-opening it per head re-read the
    whole directory each time), its reads serialised by a lock.
    """

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
            self._stamp = _stamp(info)
            self._zip = zipfile.ZipFile(self._file)
            members = [m for m in self._zip.infolist() if m.filename.endswith(".npy")]
            _check_count("arrays in the archive", len(members))
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
                shape, fortran, dtype = _npy_header(fh, label)
                offset = fh.tell()
        except _MEMBER_ERRORS as exc:
            raise TensorFileError(f"{label}: cannot unpack it: {exc}") from exc
        dtype = to_bfloat16(dtype)
        _check_size(label, shape, dtype, offset, member.file_size, "the archive member")
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
        return _stamp_now(self.path) == self._stamp

    def _read(self, name: str, start: int, count: int, fh: Any) -> np.ndarray:
        """``count`` elements of ``name`` from element ``start`` on, through ``fh``."""
        dtype = self.info[name][1]
        nbytes = count * dtype.itemsize
        fh.seek(self._layout[name].offset + start * dtype.itemsize)
        data = _read_exactly(fh, nbytes)
        if len(data) != nbytes:
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
        size = _nbytes(shape, dtype)
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
            return np.ascontiguousarray(self._whole_array(name)[_head_index(len(shape), head)])
        batch, heads = (1, shape[0]) if len(shape) == 3 else shape[:2]
        block = math.prod(shape[-2:])
        with self._member(name) as fh:
            parts = [self._read(name, (b * heads + head) * block, block, fh) for b in range(batch)]
        out = np.stack(parts).reshape((batch, *shape[-2:]))
        return out[0] if len(shape) == 3 else out

    def read_all(self, name: str) -> np.ndarray:
        shape, dtype = self.info[name]
        _check_whole_read(name, shape, dtype)
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


class _Safetensors:
    """A ``.safetensors`` file read through ``safe_open(framework="np")``, slice by slice.

    The headers are read once when the file is opened; the handle that reads the tensors is
    opened at the first read and kept (opening one parses the whole header again: 2.5 ms for
    1,000 tensors, per head).
    """

    _DTYPES: ClassVar[dict[str, Any]] = {
        "F16": np.float16, "BF16": "bfloat16", "F32": np.float32, "F64": np.float64,
        "U8": np.uint8, "I8": np.int8, "I16": np.int16, "I32": np.int32, "I64": np.int64,
        "U16": np.uint16, "U32": np.uint32, "U64": np.uint64, "BOOL": np.bool_,
    }

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._handle: Any = None
        self._stamp = _stamp(os.stat(path))
        with path.open("rb") as fh:
            length = int.from_bytes(fh.read(8), "little")
        if length > MAX_HEADER_BYTES:
            raise TensorFileError(f"{shown(path.name)}: a safetensors header of {length} bytes; at "
                                  f"most {MAX_HEADER_BYTES} are read")
        with self._open() as f:
            self.text = dict(f.metadata() or {})
            self.info = {}
            names = list(f.keys())
            _check_count("tensors", len(names))
            for name in names:
                sl = f.get_slice(name)
                code = sl.get_dtype()
                if code not in self._DTYPES:
                    raise TensorFileError(
                        f"array '{name}': unsupported dtype {code}; use F16, BF16, F32 or F64"
                    )
                dtype = bfloat16() if code == "BF16" else np.dtype(self._DTYPES[code])
                self.info[name] = (tuple(sl.get_shape()), dtype)

    @contextmanager
    def _open(self) -> Iterator[Any]:
        try:
            with safe_open(str(self.path), framework="np") as f:
                yield f
        except SafetensorError as exc:
            raise TensorFileError(
                f"{shown(self.path.name)}: not a readable safetensors file: {exc}"
            ) from exc

    @contextmanager
    def _reader(self) -> Iterator[Any]:
        """The kept read handle (opened on first use), with the lock held."""
        with self._lock:
            try:
                if self._handle is None:
                    opened = safe_open(str(self.path), framework="np")
                    self._handle = opened.__enter__()
                yield self._handle
            except SafetensorError as exc:
                raise TensorFileError(
                    f"{shown(self.path.name)}: not a readable safetensors file: {exc}") from exc

    def unchanged(self, names: Iterable[str]) -> bool:
        return _stamp_now(self.path) == self._stamp

    def _fix(self, name: str, arr: np.ndarray) -> np.ndarray:
        # Older safetensors releases hand bfloat16 back as raw 2-byte words: reinterpret them.
        want = self.info[name][1]
        return arr if arr.dtype == want else np.ascontiguousarray(arr).view(want)

    def read_head(self, name: str, head: int) -> np.ndarray:
        ndim = len(self.info[name][0])
        with self._reader() as f:
            return self._fix(name, f.get_slice(name)[_head_index(ndim, head)])

    def read_all(self, name: str) -> np.ndarray:
        _check_whole_read(name, *self.info[name])
        with self._reader() as f:
            return self._fix(name, f.get_tensor(name))

    def read_part(self, name: str, index: tuple[int, ...]) -> np.ndarray:
        with self._reader() as f:
            return self._fix(name, f.get_slice(name)[index])


#: What zipfile raises for a damaged directory: BadZipFile mostly, and for some damage a bare
#: ValueError, OverflowError, struct.error or UnicodeDecodeError (a member name flagged UTF-8).
_ARCHIVE_ERRORS = (*_MEMBER_ERRORS, ValueError, OverflowError, struct.error)


def _looks_like_safetensors(path: Path) -> bool:
    # The format starts with a little-endian u64 header length, then a JSON object.
    with path.open("rb") as fh:
        head = fh.read(9)
    return len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 1


def open_source(path: Path) -> tuple[str, Source]:
    """Open ``path`` as one of the three containers and return ``(format name, reader)``.

    Raises
    ------
    TensorFileError
        If the path does not exist, is not a regular file or folder (a FIFO, a device), is
        empty, cannot be read, or is none of the formats, or its header is damaged.
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise TensorFileError(f"{shown(path)}: no such file or folder") from None
    except OSError as exc:
        raise TensorFileError(f"{shown(path)}: cannot read it: {describe_os_error(exc)}") from None
    except ValueError as exc:  # a NUL character, or one the file system cannot encode
        raise TensorFileError(f"{shown(repr(str(path)))}: not a usable file name "
                              f"({' '.join(str(exc).split())})") from None
    if stat.S_ISDIR(info.st_mode):
        if not any(path.glob("*.npy")):
            raise TensorFileError(f"{shown(path)}: the folder holds no .npy files")
        return "npy", _NpyFolder(path)
    try:
        check_regular_file(path, "tensor file")
    except OSError as exc:
        raise TensorFileError(f"{shown(path)}: {describe_os_error(exc)}") from None
    if info.st_size == 0:  # also what /proc's files, generated as they are read, report
        raise TensorFileError(f"{shown(path.name)}: the file is empty (its size is 0 bytes); not a "
                              "tensor file")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
        if magic.startswith(b"PK"):
            try:
                return "npz", _Npz(path)
            except TensorFileError:
                raise
            except _ARCHIVE_ERRORS as exc:
                raise TensorFileError(f"{shown(path.name)}: damaged or truncated .npz archive: "
                                      f"{' '.join(str(exc).split())}") from exc
        if magic == b"\x93NUM":  # one array: only a stack of attention weights is one
            return "npy", _NpyFolder(path.parent, single=path)
        if _looks_like_safetensors(path):
            return "safetensors", _Safetensors(path)
    except OSError as exc:
        raise TensorFileError(f"{shown(path.name)}: cannot read it: {describe_os_error(exc)}"
                              ) from exc
    raise TensorFileError(f"{shown(path.name)}: not a tensor file (expected .npz, .safetensors or "
                          "a folder of .npy files)")
