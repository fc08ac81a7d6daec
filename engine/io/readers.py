"""Low-level readers for the three tensor-file containers: ``.npz``, ``.safetensors`` and a
folder of ``.npy`` files.

Each reader lists the arrays with their shape and dtype from the file headers alone and reads
one head of one array at a time, so a file larger than memory can be inspected head by head.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Protocol

import ml_dtypes
import numpy as np
from safetensors import SafetensorError, safe_open

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


class _NpyFolder:
    """A folder of ``NAME.npy`` files, each memory-mapped so only the touched pages are read."""

    def __init__(self, folder: Path) -> None:
        self.text: dict[str, str] = {}
        self.arrays: dict[str, np.ndarray] = {}
        for file in sorted(folder.glob("*.npy")):
            try:
                arr = np.load(file, mmap_mode="r", allow_pickle=False)
            except (ValueError, OSError) as exc:  # truncated data, or a pickled object array
                raise TensorFileError(
                    f"array '{file.stem}' ({file.name}): cannot read: {exc}"
                ) from exc
            self.arrays[file.stem] = arr
        self.info = {k: (a.shape, to_bfloat16(a.dtype)) for k, a in self.arrays.items()}

    def read_head(self, name: str, head: int) -> np.ndarray:
        arr = self.arrays[name]
        return np.array(arr[_head_index(arr.ndim, head)]).view(self.info[name][1])

    def read_all(self, name: str) -> np.ndarray:
        return np.array(self.arrays[name]).view(self.info[name][1])


class _Npz:
    """A ``.npz`` zip archive; a head is read by seeking inside the member, never the whole."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.text: dict[str, str] = {}
        self.info: dict[str, ArrayInfo] = {}
        # member name -> (offset of the data inside the member, Fortran order)
        self._layout: dict[str, tuple[str, int, bool]] = {}
        with zipfile.ZipFile(path) as zf:
            for member in zf.namelist():
                if not member.endswith(".npy"):
                    continue
                name = member[: -len(".npy")]
                with zf.open(member) as fh:
                    try:
                        version = np.lib.format.read_magic(fh)
                        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                       else np.lib.format.read_array_header_2_0)
                        shape, fortran, dtype = read_header(fh)
                    except (ValueError, EOFError) as exc:
                        raise TensorFileError(f"array '{name}': bad .npy header: {exc}") from exc
                    if dtype.hasobject:
                        raise TensorFileError(
                            f"array '{name}': object (pickled) arrays are not read; "
                            "store strings as a string array or as JSON"
                        )
                    self.info[name] = (tuple(shape), to_bfloat16(dtype))
                    self._layout[name] = (member, fh.tell(), fortran)

    def _read(self, name: str, start: int, count: int, fh: Any) -> np.ndarray:
        _, offset, _ = self._layout[name]
        dtype = self.info[name][1]
        fh.seek(offset + start * dtype.itemsize)
        data = fh.read(count * dtype.itemsize)
        if len(data) != count * dtype.itemsize:
            raise TensorFileError(f"array '{name}': the file is truncated")
        return np.frombuffer(data, dtype=dtype)

    def read_head(self, name: str, head: int) -> np.ndarray:
        shape, _ = self.info[name]
        member, _, fortran = self._layout[name]
        if fortran:  # rare: a Fortran-order head is not contiguous, so read the array
            return np.ascontiguousarray(self.read_all(name)[_head_index(len(shape), head)])
        batch, heads = (1, shape[0]) if len(shape) == 3 else shape[:2]
        block = int(np.prod(shape[-2:]))
        with zipfile.ZipFile(self.path) as zf, zf.open(member) as fh:
            parts = [self._read(name, (b * heads + head) * block, block, fh) for b in range(batch)]
        out = np.stack(parts).reshape((batch, *shape[-2:]))
        return out[0] if len(shape) == 3 else out

    def read_all(self, name: str) -> np.ndarray:
        shape, _ = self.info[name]
        member, _, fortran = self._layout[name]
        with zipfile.ZipFile(self.path) as zf, zf.open(member) as fh:
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
        If the path does not exist, or is none of the formats, or its header is damaged.
    """
    if not path.exists():
        raise TensorFileError(f"{path}: no such file or folder")
    if path.is_dir():
        if not any(path.glob("*.npy")):
            raise TensorFileError(f"{path}: the folder holds no .npy files")
        return "npy", _NpyFolder(path)
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic.startswith(b"PK"):
        try:
            return "npz", _Npz(path)
        except (zipfile.BadZipFile, EOFError, OSError) as exc:
            raise TensorFileError(f"{path.name}: damaged or truncated .npz archive: {exc}") from exc
    if magic == b"\x93NUM":
        raise TensorFileError(
            f"{path.name}: a single .npy file; put one .npy per array in a folder, or use .npz"
        )
    if _looks_like_safetensors(path):
        return "safetensors", _Safetensors(path)
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
