"""The ``--out`` stream of the commands that write a CSV or JSON file (``sweep``, ``inspect``,
``lr-sweep``, ``intervene``), and how every command ends on a refusal."""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Callable
from typing import TextIO

from engine.io.files import atomic_output, describe_os_error

__all__ = ["EXIT_INTERRUPTED", "EXIT_REFUSED", "interrupted", "open_output", "output_error",
           "readable_number", "refused", "write_streamed"]

#: Exit status of a refused input or an output that could not be written (one line on stderr).
EXIT_REFUSED = 2
#: Exit status after Ctrl-C (128 + SIGINT, as the shell reports it).
EXIT_INTERRUPTED = 130


def refused(message: str) -> int:
    """Print ``error: message`` on stderr; return :data:`EXIT_REFUSED`."""
    print(f"error: {message}", file=sys.stderr)
    return EXIT_REFUSED


def interrupted() -> int:
    """After Ctrl-C in a command that writes only when complete: say that nothing was
    written on stderr; return :data:`EXIT_INTERRUPTED`."""
    print("interrupted: nothing written", file=sys.stderr)
    return EXIT_INTERRUPTED


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


def write_streamed(
    path: str,
    write: Callable[[TextIO], None],
    *,
    finish: Callable[[bool], None] = lambda complete: None,
    errors: tuple[type[Exception], ...] = (ValueError,),
    describe: Callable[[Exception], str] = str,
    end: Callable[[], None] = lambda: None,
    stopped: Callable[[bool], str],
) -> int:
    """Stream rows to ``--out path`` with ``write(out)``, then ``finish(complete)``; return the
    exit status (0, or after one line on stderr :data:`EXIT_REFUSED` / :data:`EXIT_INTERRUPTED`).

    Ctrl-C during ``write`` keeps the finished rows (the line is ``stopped(True)``); a second one
    while they are finished leaves ``--out`` as it was (``stopped(False)``). An exception of
    ``errors`` is reported as ``describe(exc)``; ``end`` ends the progress line first.
    """
    interrupted, kept, error = False, True, None
    try:
        with contextlib.ExitStack() as stack:
            out = open_output(stack, path)
            if out is None:
                return EXIT_REFUSED
            try:
                write(out)
            except KeyboardInterrupt:
                interrupted = True  # the finished rows are kept: the file is completed
            finish(not interrupted)
    except KeyboardInterrupt:  # a second Ctrl-C while the file was being completed
        interrupted, kept = True, False
    except errors as exc:  # e.g. MemoryBudgetError for huge sample counts
        error = describe(exc)
    except OSError as exc:  # the disk filled up: the old --out file is left as it was
        if path == "-":
            raise  # stdout closed by its reader (BrokenPipeError): main.run ends quietly
        error = output_error(path, exc)
    end()
    if error is not None:
        return refused(error)
    if interrupted:
        print(stopped(kept), file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0


def readable_number(value: float, missing: str = "-") -> str:
    """Three significant figures without an exponent (0.0123, 4.08, 49.0, 997, 1097): a
    terminal table's logits, which span 0.01 to thousands. ``missing`` where not finite."""
    if not math.isfinite(value):
        return missing
    if value == 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"
