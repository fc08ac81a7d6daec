"""The ``--out`` stream of the commands that write a CSV (``sweep``, ``inspect``)."""

from __future__ import annotations

import contextlib
import sys
from typing import TextIO

__all__ = ["open_output"]


def open_output(stack: contextlib.ExitStack, path: str) -> TextIO | None:
    """Return the stream ``--out path`` names: stdout for ``-``, else the file, closed by ``stack``.

    Returns ``None`` after printing ``error: cannot write --out …`` on stderr when the file
    cannot be opened; the caller then exits with status 2.
    """
    if path == "-":
        return sys.stdout
    try:
        return stack.enter_context(open(path, "w", newline="", encoding="utf-8"))
    except OSError as exc:
        print(f"error: cannot write --out {path!r}: {exc}", file=sys.stderr)
        return None
