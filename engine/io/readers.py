"""Open a tensor file as one of its containers: ``.npz`` (:mod:`engine.io.npz`),
``.safetensors``, or a folder of ``.npy`` files (or one ``.npy`` file).

Each reader lists the arrays with shape and dtype from the headers alone, then reads one head
of one array at a time, so a file larger than memory is inspected head by head; it is opened
once per file and serves every head. What a file declares is checked before any data is read,
so a small hostile file costs no time or memory out of proportion to its size:

* only regular files are opened (a FIFO blocks, a device never ends), and a ``.npy`` folder's
  symbolic links must lead inside the folder;
* every array holds exactly the bytes its header declares;
* at most :data:`~engine.io.source.MAX_ARRAYS` arrays, a safetensors header of at most
  :data:`~engine.io.source.MAX_HEADER_BYTES`;
* an array read whole (``tokens``, ``meta``, a Fortran-order array) must fit the memory budget.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from engine.io.files import check_regular_file, describe_os_error, map_regular
from engine.io.npz import ARCHIVE_ERRORS, Npz
from engine.io.safetensors_file import SafetensorsFile
from engine.io.source import (
    ArraySource,
    Source,
    Stamp,
    TensorFileError,
    check_count,
    check_size,
    npy_header,
    shown,
    stamp,
    stamp_now,
    to_bfloat16,
)

__all__ = ["open_source"]


class _NpyFolder(ArraySource):
    """A folder of ``NAME.npy`` files, each memory-mapped so only the touched pages are read."""

    def __init__(self, folder: Path, single: Path | None = None) -> None:
        self.text: dict[str, str] = {}
        self.arrays: dict[str, np.ndarray] = {}
        self._stamps: dict[str, tuple[Path, Stamp]] = {}
        # A single .npy file (one stacked array of attention weights) is its own folder.
        files = [single] if single is not None else sorted(folder.glob("*.npy"))
        check_count(".npy files", len(files))
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
                    shape, _, dtype = npy_header(fh, label)
                    offset = fh.tell()
            except OSError as exc:
                raise TensorFileError(f"{label}: cannot read: {describe_os_error(exc)}") from exc
            check_size(label, shape, dtype, offset, info.st_size, "the file")
            try:
                arr = np.load(target, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError, EOFError) as exc:
                raise TensorFileError(f"{label}: cannot read: {exc}") from exc
            self.arrays[file.stem] = arr
            self._stamps[file.stem] = (target, stamp(info))
        self.info = {k: (a.shape, to_bfloat16(a.dtype)) for k, a in self.arrays.items()}

    def unchanged(self, names: Iterable[str]) -> bool:
        # Only the files read (stat-ing the whole folder per head is slow), and before a mapped
        # file is touched: reading a page of a file truncated since it was mapped is a SIGBUS.
        return all(stamp_now(path) == saved
                   for path, saved in (self._stamps[name] for name in names))

    def _array(self, name: str) -> np.ndarray:
        return self.arrays[name]


class _Safetensors(ArraySource):
    """A ``.safetensors`` file, mapped, its header checked by :mod:`engine.io.safetensors_file`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp = stamp(os.stat(path))
        self.file = SafetensorsFile(map_regular(path, "tensor file"), shown(path.name))
        self.text = self.file.metadata
        check_count("tensors", len(self.file.tensors))
        self.info = {}
        for name, (code, shape, _) in self.file.tensors.items():
            dtype = self.file.dtype(name)
            if dtype is None:  # the 8-bit floats numpy cannot hold
                raise TensorFileError(f"array '{name}': unsupported dtype {code}; use F16, "
                                      "BF16, F32 or F64")
            self.info[name] = (shape, dtype)

    def unchanged(self, names: Iterable[str]) -> bool:
        return stamp_now(self.path) == self._stamp

    def _array(self, name: str) -> np.ndarray:
        return self.file.array(name)


def _looks_like_safetensors(path: Path) -> bool:
    # The format starts with a little-endian u64 header length, then a JSON object.
    with path.open("rb") as fh:
        head = fh.read(9)
    return len(head) == 9 and head[8:9] == b"{" and int.from_bytes(head[:8], "little") > 1


def open_source(path: Path) -> tuple[str, Source]:
    """Open ``path`` as one of the three containers and return ``(format name, reader)``.

    Raises :class:`TensorFileError` if the path does not exist, is not a regular file or
    folder, is empty, cannot be read, is none of the formats, or its header is damaged.
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
                return "npz", Npz(path)
            except TensorFileError:
                raise
            except ARCHIVE_ERRORS as exc:
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
