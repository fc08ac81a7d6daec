"""``export --out DIR``, and what it shares with ``--self-test DIR`` (gui/headless/self_test.py).

Both run the real window on Qt's offscreen platform (unless a display is available for the
self-test), wait for results with a ``QEventLoop`` plus timeout (never by spinning
``processEvents``), render on the GUI thread, and never write the user's settings.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["RESULT_TIMEOUT_MS", "check_output_folder", "close_window", "export_command",
           "parse_head", "prepare_application"]

#: Seconds to wait for all results (incl. the sweep) before giving up.
RESULT_TIMEOUT_MS = 120_000


def prepare_application(offscreen: bool, language: str | None = None) -> Any:
    """The application for a command, in ``language`` (``--lang``) when given; the saved
    language setting is not changed."""
    from gui.app import create_application, quiet_offscreen_warnings

    app = create_application(headless=offscreen, language=language)
    if language:  # also when the application already existed (tests run commands in-process)
        from gui.kit.i18n import set_language

        set_language(language, app)
    quiet_offscreen_warnings()  # the commands print their own lines only
    return app


def close_window(window: Any) -> bool:
    """Close the window (stopping the worker) and free it; return True if no thread was left."""
    from gui.app import dispose_window

    window.close()
    running = window.controller.is_running()
    dispose_window(window)
    return not running


def check_output_folder(folder: str | Path, *, allow_files: bool = True) -> str:
    """Return "" if ``folder`` is (or can be created as) a writable folder, else the reason.

    Creates the folder when it is missing and probes it with a temporary file (permission bits
    lie for root and on some network mounts). With ``allow_files=False`` a folder that already
    holds anything is refused, so that an export never replaces files silently.
    """
    path = Path(folder)
    if path.exists() and not path.is_dir():
        return f"{folder} is a file, not a folder"
    if path.is_dir() and not allow_files and any(path.iterdir()):
        return (f"{folder} already holds files; choose a new or empty folder, or add --force "
                "to replace files of the same name")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".write-test-"):
            pass
    except OSError as exc:
        return f"cannot create files in {folder}: {exc.strerror or exc}"
    return ""


#: What ``export`` writes into its folder: an input of the same kind there could be replaced.
_EXPORTED_SUFFIXES = (".png", ".svg", ".pdf", ".csv", ".json")


def _input_in_output(folder: str, inputs: list[str | None]) -> str:
    """"" unless an input file lies in ``folder`` where an exported file could replace it."""
    from engine.io.files import OutputIsInputError, check_output_not_input

    try:
        check_output_not_input(folder, inputs)  # the folder is an input, or lies inside one
    except OutputIsInputError as exc:
        return str(exc)
    out = Path(folder).resolve()
    for given in inputs:
        if given is None:
            continue
        source = Path(given).resolve()
        if source.parent == out and source.suffix in _EXPORTED_SUFFIXES:
            return (f"{folder} holds the input {given}, which the export could replace; "
                    "export into another folder")
    return ""


def parse_head(tensors: str | None, head: str | None, batch: int | None) -> Any:
    """The ``HeadRef`` of ``export --tensors FILE --head L,H [--batch B]`` (``None`` without
    ``--tensors``), checked against the file and the explorer's limits; ``ValueError`` with
    a one-line reason naming the option."""
    if tensors is None:
        if head is not None or batch is not None:
            raise ValueError("--head and --batch need --tensors FILE")
        return None
    if head is None:
        raise ValueError("--tensors needs --head L,H (layer and head as `inspect` lists them)")
    from engine.analysis.real_head import HeadRef, explorer_config_for
    from engine.config import AttentionConfig
    from engine.io.tensors import load_tensors

    try:
        layer, index = (int(part) for part in head.split(","))
    except ValueError:
        raise ValueError(f"--head: expected L,H (two integers), got {head!r}") from None
    try:
        file = load_tensors(tensors)
    except ValueError as exc:
        raise ValueError(f"--tensors: {exc}") from None
    try:
        ref = HeadRef(file, layer, index, 0 if batch is None else batch)
    except ValueError as exc:
        raise ValueError(f"--head: {exc}") from None
    explorer_config_for(ref, AttentionConfig())  # range and memory, with the head's name
    return ref


def export_command(args: Any) -> int:
    """Render every view of a session (or the defaults) to ``args.out``.

    Everything the user gave is checked before Qt starts: the session, the tensor file and
    head, and the output folder (new or empty unless ``--force``). With ``--tensors FILE
    --head L,H`` the explorer views show that real head and only they are written (the Train
    views do not depend on it). Exit code 1 when results did not arrive or an export failed,
    2 for bad input.
    """
    from gui.kit.session import SessionError, load_session

    session = None
    if args.session:
        try:
            session = load_session(args.session)
        except SessionError as exc:
            print(f"error: --session: {exc}", file=sys.stderr)
            return 2
    try:
        head = parse_head(args.tensors, args.head, args.batch)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problem = (check_output_folder(args.out, allow_files=args.force)
               or _input_in_output(args.out, [args.session, args.tensors]))
    if problem:
        print(f"error: --out: {problem}", file=sys.stderr)
        return 2
    _app = prepare_application(offscreen=True, language=args.lang)
    from gui.headless.train_demo import run_headless_demo
    from gui.main_window import MainWindow

    window = MainWindow(restore=False, persist=False, start=False,
                        config=session.config if session else None)
    try:
        window.resize(args.width, args.height)
        window.show()
        if session is not None:
            window.files.apply_session(session)
        if head is not None:
            window.controller.set_real_head(head)
        elif session is None:
            window.controller.start()
        if not window.wait_until_settled(RESULT_TIMEOUT_MS):
            problem = "results did not arrive in time"
        elif head is None:
            # The training views need data: a short real run and lr sweep (a few seconds).
            problem = window.controller.last_error() or run_headless_demo(
                window.train_tab, RESULT_TIMEOUT_MS)
        else:
            problem = window.controller.last_error()
            window.controller.refresh_views()
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 1
        return _write_and_list(window, args, explorer_only=head is not None)
    finally:
        close_window(window)


def _write_and_list(window: Any, args: Any, explorer_only: bool) -> int:
    """Write the views (the explorer's only when ``explorer_only``) and session.json to
    ``args.out`` and print each path written; 1 on failure."""
    from gui.kit import export

    try:
        if explorer_only:
            written = export.export_all(window.views, args.out, window.files.current_session(),
                                        args.width, args.height, formats=args.formats)
        else:
            written = window.files.export_everything(args.out, args.width, args.height,
                                                     formats=args.formats)
    except (OSError, ValueError) as exc:
        print(f"error: export failed: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0
