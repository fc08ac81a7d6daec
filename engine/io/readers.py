"""Low-level readers for the three tensor-file containers: ``.npz``, ``.safetensors`` and a
folder of ``.npy`` files.

Each reader lists the arrays with their shape and dtype from the file headers alone and reads
one head of one array at a time, so a file larger than memory can be inspected head by head.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Protocol

import ml_dtypes
import numpy as np
from safetensors import SafetensorError, safe_open

from engine.core.memory import MemoryBudgetError, check_memory
from engine.io.files import check_regular_file, describe_os_error

__all__ = [
    "ArrayInfo",
    "Source",
    "TensorFileError",
    "decode_json_array",
    "open_source",
    "to_bfloat16",
]


class TensorFileError(ValueError):
    """A tensor file cannot be used; the message names the file or array and the problem."""


ArrayInfo = tuple[tuple[int, ...], np.dtype]


def to_bfloat16(dtype: np.dtype) -> np.dtype:
    """Map numpy's stand-in for bfloat16 (a 2-byte void, what ``np.save`` writes) to bfloat16.

    numpy has no bfloat16 of its own: an ``ml_dtypes.bfloat16`` array saved with ``np.save``
    comes back as ``|V2``. Any other dtype is returned unchanged.
    """
    if dtype.kind == "V" and dtype.itemsize == 2 and dtype.names is None:
        return np.dtype(ml_dtypes.bfloat16)
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


def _head_index(ndim: int, head: int) -> tuple[Any, ...]:
    return (head,) if ndim == 3 else (slice(None), head)


def _check_whole_read(name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Refuse to read a whole array larger than the memory budget (a declared size is a claim:
    a compressed archive member of a few KB may unpack to gigabytes)."""
    try:
        check_memory(int(np.prod(shape, dtype=object)) * dtype.itemsize,
                     f"reading the whole array '{name}' {tuple(shape)}")
    except MemoryBudgetError as exc:
        raise TensorFileError(str(exc)) from exc


def _npy_header(fh: Any, label: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of the .npy stream ``fh``, refusing object arrays;
    ``label`` (e.g. ``array 'tokens'``) starts the message."""
    try:
        version = np.lib.format.read_magic(fh)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read_header(fh)
    except (ValueError, EOFError) as exc:
        raise TensorFileError(f"{label}: bad .npy header: {exc}") from exc
    if dtype.hasobject:
        raise TensorFileError(
            f"{label}: object (pickled) arrays are not read; store strings as a string array "
            "or as JSON"
        )
    return tuple(shape), bool(fortran), dtype


class _NpyFolder:
    """A folder of ``NAME.npy`` files, each memory-mapped so only the touched pages are read.

    Only regular files inside the folder are read: a FIFO would block forever, and a symbolic
    link that leads out of the folder is refused rather than followed silently.
    """

    def __init__(self, folder: Path) -> None:
        self.text: dict[str, str] = {}
        self.arrays: dict[str, np.ndarray] = {}
        inside = folder.resolve()
        for file in sorted(folder.glob("*.npy")):
            label = f"array '{file.stem}' ({file.name})"
            target = file.resolve()
            if file.is_symlink() and inside not in target.parents:
                raise TensorFileError(
                    f"{label}: a symbolic link to {target}, outside the folder; copy the file "
                    "into the folder instead")
            try:
                size = check_regular_file(target, ".npy file").st_size
            except OSError as exc:
                raise TensorFileError(f"{label}: {describe_os_error(exc)}") from exc
            if size == 0:
                raise TensorFileError(f"{label}: the file is empty (0 bytes)")
            try:
                with target.open("rb") as fh:
                    _npy_header(fh, label)
            except OSError as exc:
                raise TensorFileError(f"{label}: cannot read: {describe_os_error(exc)}") from exc
            try:
                arr = np.load(target, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:  # truncated data
                raise TensorFileError(f"{label}: cannot read: {exc}") from exc
            self.arrays[file.stem] = arr
        self.info = {k: (a.shape, to_bfloat16(a.dtype)) for k, a in self.arrays.items()}

    def read_head(self, name: str, head: int) -> np.ndarray:
        arr = self.arrays[name]
        return np.array(arr[_head_index(arr.ndim, head)]).view(self.info[name][1])

    def read_all(self, name: str) -> np.ndarray:
        _check_whole_read(name, *self.info[name])
        return np.array(self.arrays[name]).view(self.info[name][1])


#: What zipfile raises for members it cannot unpack: encrypted (RuntimeError), an unknown
#: compression (NotImplementedError), damaged data (BadZipFile, zlib.error, EOFError).
_MEMBER_ERRORS = (RuntimeError, NotImplementedError, zipfile.BadZipFile, zlib.error, EOFError)


#: Largest Fortran-order array read (whole, for every head it holds).
_FORTRAN_LIMIT = 64 << 20


class _Npz:
    """A ``.npz`` zip archive; a head is read by seeking inside the member, never the whole.

    The archive stays open (one reader, reads serialised by a lock): re-opening it for every
    head re-read the whole directory each time.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.text: dict[str, str] = {}
        self.info: dict[str, ArrayInfo] = {}
        self._lock = threading.Lock()
        # member name -> (offset of the data inside the member, Fortran order)
        self._layout: dict[str, tuple[str, int, bool]] = {}
        self._zip = zipfile.ZipFile(path)
        try:
            for member in self._zip.infolist():
                if not member.filename.endswith(".npy"):
                    continue
                name = member.filename[: -len(".npy")]
                try:
                    with self._zip.open(member) as fh:
                        shape, fortran, dtype = _npy_header(fh, f"array '{name}'")
                        offset = fh.tell()
                except _MEMBER_ERRORS as exc:
                    raise TensorFileError(f"array '{name}': cannot unpack it: {exc}") from exc
                dtype = to_bfloat16(dtype)
                declared = offset + int(np.prod(shape, dtype=object)) * dtype.itemsize
                if declared != member.file_size:
                    raise TensorFileError(
                        f"array '{name}': its header declares shape {shape} ({declared} bytes "
                        f"with the header), but the archive member holds {member.file_size}")
                self.info[name] = (shape, dtype)
                self._layout[name] = (member.filename, offset, fortran)
        except BaseException:
            self._zip.close()
            raise

    def _read(self, name: str, start: int, count: int, fh: Any) -> np.ndarray:
        _, offset, _ = self._layout[name]
        dtype = self.info[name][1]
        fh.seek(offset + start * dtype.itemsize)
        data = fh.read(count * dtype.itemsize)
        if len(data) != count * dtype.itemsize:
            raise TensorFileError(f"array '{name}': the file is truncated")
        return np.frombuffer(data, dtype=dtype)

    @contextmanager
    def _member(self, name: str) -> Iterator[Any]:
        member = self._layout[name][0]
        try:
            with self._lock, self._zip.open(member) as fh:
                yield fh
        except _MEMBER_ERRORS as exc:
            raise TensorFileError(f"array '{name}': cannot unpack it: {exc}") from exc

    def read_head(self, name: str, head: int) -> np.ndarray:
        shape, _ = self.info[name]
        _, _, fortran = self._layout[name]
        if fortran:  # rare: a Fortran-order head is not contiguous, so read the array
            size = int(np.prod(shape, dtype=object)) * self.info[name][1].itemsize
            if size > _FORTRAN_LIMIT:
                raise TensorFileError(
                    f"array '{name}': Fortran-order and {size} bytes: each head would unpack "
                    f"the whole array; save it in C order (np.ascontiguousarray) or keep it "
                    f"under {_FORTRAN_LIMIT} bytes")
            return np.ascontiguousarray(self.read_all(name)[_head_index(len(shape), head)])
        batch, heads = (1, shape[0]) if len(shape) == 3 else shape[:2]
        block = int(np.prod(shape[-2:]))
        with self._member(name) as fh:
            parts = [self._read(name, (b * heads + head) * block, block, fh) for b in range(batch)]
        out = np.stack(parts).reshape((batch, *shape[-2:]))
        return out[0] if len(shape) == 3 else out

    def read_all(self, name: str) -> np.ndarray:
        shape, dtype = self.info[name]
        _check_whole_read(name, shape, dtype)
        _, _, fortran = self._layout[name]
        with self._member(name) as fh:
            flat = self._read(name, 0, int(np.prod(shape)), fh)
        return flat.reshape(shape, order="F" if fortran else "C")


class _Safetensors:
    """A ``.safetensors`` file read through ``safe_open(framework="np")``, slice by slice."""

    _DTYPES: ClassVar[dict[str, Any]] = {
        "F16": np.float16, "BF16": ml_dtypes.bfloat16, "F32": np.float32, "F64": np.float64,
        "U8": np.uint8, "I8": np.int8, "I16": np.int16, "I32": np.int32, "I64": np.int64,
        "U16": np.uint16, "U32": np.uint32, "U64": np.uint64, "BOOL": np.bool_,
    }

    def __init__(self, path: Path) -> None:
        self.path = path
        with self._open() as f:
            self.text = dict(f.metadata() or {})
            self.info = {}
            for name in f.keys():
                sl = f.get_slice(name)
                code = sl.get_dtype()
                if code not in self._DTYPES:
                    raise TensorFileError(
                        f"array '{name}': unsupported dtype {code}; use F16, BF16, F32 or F64"
                    )
                self.info[name] = (tuple(sl.get_shape()), np.dtype(self._DTYPES[code]))

    @contextmanager
    def _open(self) -> Iterator[Any]:
        try:
            with safe_open(str(self.path), framework="np") as f:
                yield f
        except SafetensorError as exc:
            raise TensorFileError(
                f"{self.path.name}: not a readable safetensors file: {exc}"
            ) from exc

    def _fix(self, name: str, arr: np.ndarray) -> np.ndarray:
        # Older safetensors releases hand bfloat16 back as raw 2-byte words: reinterpret them.
        want = self.info[name][1]
        return arr if arr.dtype == want else np.ascontiguousarray(arr).view(want)

    def read_head(self, name: str, head: int) -> np.ndarray:
        ndim = len(self.info[name][0])
        with self._open() as f:
            return self._fix(name, f.get_slice(name)[_head_index(ndim, head)])

    def read_all(self, name: str) -> np.ndarray:
        _check_whole_read(name, *self.info[name])
        with self._open() as f:
            return self._fix(name, f.get_tensor(name))


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
        raise TensorFileError(f"{path}: no such file or folder") from None
    except OSError as exc:
        raise TensorFileError(f"{path}: cannot read it: {describe_os_error(exc)}") from None
    if stat.S_ISDIR(info.st_mode):
        if not any(path.glob("*.npy")):
            raise TensorFileError(f"{path}: the folder holds no .npy files")
        return "npy", _NpyFolder(path)
    try:
        check_regular_file(path, "tensor file")
    except OSError as exc:
        raise TensorFileError(f"{path}: {describe_os_error(exc)}") from None
    if info.st_size == 0:
        raise TensorFileError(f"{path.name}: the file is empty (0 bytes)")
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
        if magic.startswith(b"PK"):
            try:
                return "npz", _Npz(path)
            except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
                raise TensorFileError(
                    f"{path.name}: damaged or truncated .npz archive: {exc}") from exc
        if magic == b"\x93NUM":
            raise TensorFileError(
                f"{path.name}: a single .npy file; put one .npy per array in a folder, or use "
                ".npz"
            )
        if _looks_like_safetensors(path):
            return "safetensors", _Safetensors(path)
    except OSError as exc:
        raise TensorFileError(f"{path.name}: cannot read it: {describe_os_error(exc)}") from exc
    raise TensorFileError(
        f"{path.name}: not a tensor file (expected .npz, .safetensors or a folder of .npy files)"
    )


def decode_json_array(name: str, arr: np.ndarray) -> Any:
    """Decode a JSON text stored as a 0-d string array or a 1-D uint8 (UTF-8 bytes) array."""
    if arr.dtype == np.uint8 and arr.ndim == 1:
        text = arr.tobytes().decode("utf-8", errors="strict")
    elif arr.dtype.kind in "US" and arr.ndim == 0:
        text = arr.item().decode("utf-8") if arr.dtype.kind == "S" else str(arr.item())
    else:
        raise TensorFileError(
            f"array '{name}': expected JSON text (a string or uint8 array), "
            f"got dtype {arr.dtype} with shape {arr.shape}"
        )
    return json.loads(text)
