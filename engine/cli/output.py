"""The ``--out`` stream of the commands that write a CSV (``sweep``, ``inspect``, ``lr-sweep``)."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from typing import TextIO

from engine.io.files import atomic_output, describe_os_error

__all__ = ["open_output", "output_error", "readable_number"]


def output_error(path: str, exc: OSError, option: str = "--out") -> str:
    """The one-line message for an output that could not be written."""
    return f"cannot write {option} {path!r}: {describe_os_error(exc)}"


def open_output(stack: contextlib.ExitStack, path: str) -> TextIO | None:
    """Return the stream ``--out path`` names: stdout for ``-``, else a file closed by ``stack``.

    The file is written beside ``path`` and renamed onto it when ``stack`` closes without an
    exception, so a failure half-way (a full disk, a bad head) leaves an existing file as it
    was and nothing behind. Returns ``None`` after printing ``error: cannot write --out …``
    on stderr when the file cannot be created; the caller then exits with status 2. A write
    that fails later raises ``OSError``; report it with :func:`output_error`.
    """
    if path == "-":
        return sys.stdout
    if os.path.isdir(path):
        print(f"error: cannot write --out {path!r}: it is a folder; name a file",
              file=sys.stderr)
        return None
    try:
        return stack.enter_context(atomic_output(path, "w"))
    except OSError as exc:
        print(f"error: {output_error(path, exc)}", file=sys.stderr)
        return None


def readable_number(value: float, missing: str = "-") -> str:
    """Three significant figures without an exponent (0.0123, 4.08, 49.0, 997, 1097): a
    terminal table's logits, which span 0.01 to thousands. ``missing`` where not finite."""
    if not math.isfinite(value):
        return missing
    if value == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"
