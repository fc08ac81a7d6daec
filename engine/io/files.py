"""Safe file handling: outputs that appear whole or not at all, and inputs that cannot hang.

Every file the program writes (CSV, tensor files, images, sessions) goes through
:func:`atomic_output` or :func:`write_bytes_atomic`: the data is written to a temporary file
in the destination's folder and renamed over the destination only once it is complete, so a
full disk or an interrupted run leaves the old file as it was and no fragment behind.
:func:`check_output_not_input` refuses an output path that would overwrite an input.
:func:`check_regular_file`, :func:`open_regular`, :func:`read_regular_file` and
:func:`read_text_limited` keep FIFOs, devices and endless files
(``/dev/zero``) from blocking or filling memory.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "OutputIsInputError",
    "atomic_output",
    "check_output_not_input",
    "check_regular_file",
    "describe_os_error",
    "map_regular",
    "open_regular",
    "probe_output",
    "read_regular_file",
    "read_text_limited",
    "write_bytes_atomic",
    "write_output",
]


class OutputIsInputError(ValueError):
    """An output path names a file (or lies in a folder) that the same command reads."""


def describe_os_error(exc: OSError) -> str:
    """The system's reason of ``exc`` without the path Python appends (``"No space left…"``)."""
    return exc.strerror or str(exc)


def _read_umask() -> int:
    # os.umask can only be read by setting it: done once, at import, because while it is 0 a
    # file another thread creates would get mode 0666.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


#: mkstemp creates 0600; a finished output gets the mode an ordinary open() would give it.
_OUTPUT_MODE = 0o666 & ~_read_umask()


@contextlib.contextmanager
def atomic_output(
    path: str | os.PathLike[str],
    mode: str = "w",
    *,
    encoding: str | None = "utf-8",
    newline: str | None = "",
) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success rename it onto ``path``.

    Parameters
    ----------
    path
        The destination; its folder must exist.
    mode
        ``"w"`` (text) or ``"wb"`` (binary).
    encoding, newline
        As for :func:`open` in text mode (ignored in binary mode).

    Yields
    ------
    file object
        Receives the whole content; if the block raises, ``path`` is left unchanged.

    Raises
    ------
    OSError
        If the temporary file cannot be created, written, flushed or renamed.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    target = Path(path)
    text: dict[str, Any] = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
    try:
        special = not stat.S_ISREG(os.stat(target).st_mode)
    except OSError:
        special = False  # missing: created below
    if special:
        # A device or FIFO (`--out /dev/null`) is written as it is: renaming a file over it
        # would replace the device itself.
        with open(target, mode, **text) as handle:
            yield handle
        return
    descriptor, temp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                             suffix=".part")
    temp = Path(temp_name)
    handle: IO[Any] | None = None
    try:
        os.chmod(descriptor, _OUTPUT_MODE)
        handle = os.fdopen(descriptor, mode, **text)
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        if handle is None:  # the file object owns (and has closed) the descriptor otherwise
            with contextlib.suppress(OSError):
                os.close(descriptor)
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def probe_output(path: str | os.PathLike[str]) -> None:
    """Check, before long work starts, that ``path`` can be written; touch nothing.

    A temporary file is created in the destination's folder and removed again (permission
    bits lie for root and on some network mounts); ``path`` itself is neither created nor
    changed.

    Raises
    ------
    OSError
        If ``path`` is a folder, or its folder is missing, read-only or full.
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "it is a folder; name a file", str(target))
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.",
                                     suffix=".probe"):
        pass


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through :func:`atomic_output`; return the path."""
    with atomic_output(path, "wb") as handle:
        handle.write(data)
    return Path(path)


def write_output(path: str | os.PathLike[str], data: bytes) -> Path:
    """:func:`write_bytes_atomic` for a file the user named: an ``OSError`` says
    "could not write <path>: <the system's reason>"."""
    try:
        return write_bytes_atomic(path, data)
    except OSError as exc:
        raise OSError(f"could not write {path}: {describe_os_error(exc)}") from exc


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def check_output_not_input(
    output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None],
    *, option: str = "--out",
) -> None:
    """Refuse an ``output`` that is one of ``inputs`` or lies inside an input folder.

    The same file reached through another name (a hard link, a symlink, ``./x``) counts.

    Raises
    ------
    OutputIsInputError
        With a message naming both.
    """
    out = Path(output)
    out_id = _identity(out)
    parents = {_identity(parent) for parent in Path(os.path.abspath(out)).parents}
    for given in inputs:
        if given is None:
            continue
        source = Path(given)
        source_id = _identity(source)
        if source_id is None:
            continue
        if source_id == out_id:
            raise OutputIsInputError(
                f"{option} {str(out)!r} is the input {str(source)!r}: writing it would destroy "
                "the input; choose another file")
        if source.is_dir() and source_id in parents:
            raise OutputIsInputError(
                f"{option} {str(out)!r} lies inside the input folder {str(source)!r}; "
                "write it elsewhere")


def check_regular_file(path: str | os.PathLike[str], what: str = "file") -> os.stat_result:
    """Return the status of ``path`` if it is a regular file; else raise ``OSError``.

    A FIFO, socket or device would block a reader forever or never end; they are refused
    before anything opens them.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    OSError
        If it is not a regular file (``strerror`` says what it is).
    """
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        kind = ("a folder" if stat.S_ISDIR(info.st_mode)
                else "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode)
                else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        raise OSError(0, f"{kind}, not a regular {what}", str(path))
    return info


def open_regular(path: str | os.PathLike[str], what: str = "file") -> tuple[int, os.stat_result]:
    """Open a regular file for reading; return its descriptor and status.

    The path is checked before it is opened, and the open itself does not wait (``O_NONBLOCK``:
    a FIFO swapped in between the check and the open would otherwise block it until a writer
    came); the opened descriptor is checked again. The caller closes the descriptor.

    Raises
    ------
    OSError
        If the path is missing, not a regular file, or cannot be opened.
    """
    check_regular_file(path, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    descriptor = os.open(path, flags)
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(0, f"it changed into something else than a regular {what} while "
                          "being opened", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)  # reads of a regular file never wait anyway
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, info


def read_regular_file(path: str | os.PathLike[str], limit: int, what: str = "file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Neither a FIFO, a device nor a socket is opened (nothing blocks), and the size is checked
    before and while reading, so files whose size the system reports as 0 (``/proc``) or that
    grow while read still stop at ``limit``.

    Raises
    ------
    OSError
        If the path is not a regular file, cannot be read, or holds more than ``limit`` bytes
        (``strerror`` says which, for a one-line message).
    """
    descriptor, info = open_regular(path, what)
    with os.fdopen(descriptor, "rb") as handle:
        if info.st_size > limit:
            raise OSError(0, f"{info.st_size} bytes is more than a {what} may hold "
                          f"({limit} bytes)", str(path))
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(0, f"more than a {what} may hold ({limit} bytes)", str(path))
    return data


def read_text_limited(path: str | os.PathLike[str], limit: int, what: str = "file") -> str:
    """Read a regular UTF-8 text file of at most ``limit`` bytes (see
    :func:`read_regular_file`).

    Raises
    ------
    OSError
        If the path is not a regular file, cannot be read, or holds more than ``limit`` bytes.
    UnicodeDecodeError
        If the bytes are not UTF-8.
    """
    return read_regular_file(path, limit, what).decode("utf-8")


def map_regular(path: str | os.PathLike[str], what: str = "file") -> mmap.mmap:
    """A regular, non-empty file mapped read-only (see :func:`open_regular`).

    Raises
    ------
    OSError
        If the path is not a regular file, is empty, or cannot be opened or mapped.
    """
    descriptor, info = open_regular(path, what)
    try:
        if info.st_size == 0:
            raise OSError(0, "the file is empty", str(path))
        return mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(descriptor)
