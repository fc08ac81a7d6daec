"""``main.py --headless [--session FILE] [--tensors FILE]``: check that the window starts, and exit.

The window is built as ``python main.py`` builds it (the user's saved settings are read, not
written), offscreen; the session and the tensor file of the command line are opened in it; the
check waits until the explorer has shown its first results (sweep included) and the Heads tab
has diagnosed every head, prints one line per step on stdout and closes the window. Exit code 0,
or 1 with the reason on stderr when a result did not arrive or the window reported a problem.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["headless_command", "run_startup_check"]

#: Longest wait for the explorer's results and the Heads tab's diagnosis (ms).
CHECK_TIMEOUT_MS = 120_000


def headless_command(args: Any) -> int:
    """Run ``main.py --headless``: build the window offscreen, check it, close it; exit code 1
    when a result did not arrive or a file the program needs is damaged."""
    from gui.app import (
        create_application,
        dispose_window,
        quiet_offscreen_warnings,
        report_startup_error,
    )
    from gui.kit.resources import ResourceError

    try:
        create_application(headless=True, language=getattr(args, "lang", None))
        quiet_offscreen_warnings()  # the check prints its own lines only
        from gui.main_window import MainWindow

        # Reads the user's settings like the window does, but never writes them.
        window = MainWindow(persist=False)  # stops its threads itself when it cannot be built
    except ResourceError as exc:
        report_startup_error(exc)
        return 1
    try:
        return run_startup_check(window, args)
    finally:
        dispose_window(window)


def run_startup_check(window: Any, args: Any) -> int:
    """Open ``args.session`` / ``args.tensors`` in ``window`` (not yet shown), wait for the
    results and report them; exit code 0 when everything arrived without a problem, else 1."""
    from PySide6.QtGui import QGuiApplication

    started = time.perf_counter()
    problems: list[str] = []  # the messages the window would have shown in a dialog
    window.controller.errorOccurred.connect(problems.append)
    window.heads.view.controller.errorOccurred.connect(problems.append)
    from gui.kit.i18n import LANGUAGES, current_language

    lines = [f"window built on Qt's {QGuiApplication.platformName()} platform, UI language "
             f"{LANGUAGES[current_language()]} ({current_language()})"]
    session = getattr(args, "session", None)
    if session and not window.files.open_session(session):
        problems.append(f"--session {session}: could not be opened")
    tensors = getattr(args, "tensors", None)
    if tensors:
        window.heads.open_tensors(tensors)
    window.show()
    if window.wait_until_settled(CHECK_TIMEOUT_MS):
        lines.append(f"explorer results in {time.perf_counter() - started:.2f} s "
                     f"({len(window.views)} views)")
    else:
        problems.append("the explorer's results did not arrive in time")
    if session:
        lines.append(f"session {Path(session).name}: opened, explorer view "
                     f"{window.view_tabs.current_view().key}")
    if tensors:
        lines.append(_tensors_line(window, tensors, problems))
    t0 = time.perf_counter()
    window.close()
    lines.append(f"closed in {time.perf_counter() - t0:.2f} s")
    for line in lines:
        print(line, flush=True)
    for message in problems:
        print(f"error: {message}", file=sys.stderr, flush=True)
    return 1 if problems else 0


def _tensors_line(window: Any, path: str, problems: list[str]) -> str:
    """Wait for the Heads tab's diagnosis of ``path`` and describe it."""
    view = window.heads.view
    if not view.wait_idle(CHECK_TIMEOUT_MS):
        problems.append(f"--tensors {path}: the Heads tab did not finish in time")
        return f"tensors {Path(path).name}: not finished"
    tensor_file = view.controller.tensor_file()
    if tensor_file is None:
        if not problems:
            problems.append(f"--tensors {path}: not opened")
        return f"tensors {Path(path).name}: not opened"
    records = view.controller.records()
    flagged = sum(1 for record in records if record.diagnostics.flags)
    return (f"tensors {tensor_file.path.name}: {len(records)} heads diagnosed "
            f"({len(tensor_file.layers)} layers × {tensor_file.heads}), {flagged} flagged")
