"""Headless commands: ``export --out DIR`` and ``--self-test DIR``.

Both run the real window on Qt's offscreen platform (unless a display is available for the
self-test), wait for results with a ``QEventLoop`` plus timeout (never by spinning
``processEvents``), render on the GUI thread, and never write the user's settings.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["check_output_folder", "check_png", "drive_panel", "export_command",
           "parse_head", "self_test_command"]

#: Seconds to wait for all results (incl. the sweep) before giving up.
RESULT_TIMEOUT_MS = 120_000
#: A PNG passes the blankness check with at least this many colours and this share of pixels
#: that differ from the most common (background) colour.
MIN_COLORS = 16
MIN_NON_BACKGROUND = 0.02


def _prepare(offscreen: bool, language: str | None = None) -> Any:
    """The application for a command, in ``language`` (``--lang``) when given; the saved
    language setting is not changed."""
    from gui.app import create_application, quiet_offscreen_warnings

    app = create_application(headless=offscreen, language=language)
    if language:  # also when the application already existed (tests run commands in-process)
        from gui.kit.i18n import set_language

        set_language(language, app)
    quiet_offscreen_warnings()  # the commands print their own lines only
    return app


def _close(window: Any) -> bool:
    """Close the window (stopping the worker) and delete it; return True if no thread is left."""
    from gui.kit.qt_lifetime import release_qt_objects

    window.close()
    running = window.controller.is_running()
    window.deleteLater()
    del window
    release_qt_objects()  # while the QApplication exists, on this (the GUI) thread
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
    ``--tensors``), checked against the file and the explorer's limits.

    Raises
    ------
    ValueError
        A one-line reason naming the option: a missing partner option, ``--head`` not two
        integers, a file that cannot be read, a head not in the file, or a head too large for
        the explorer.
    """
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
    head, and the output folder (which must be new or empty unless ``args.force``);
    ``main.py``'s parser has already refused image sizes outside 16..8192 pixels. With
    ``--tensors FILE --head L,H`` the explorer views show that real head (the Train views,
    which do not depend on it, are not rendered).

    Parameters
    ----------
    args
        Parsed ``export`` arguments: ``out``, ``force``, ``session``, ``width``, ``height``,
        ``tensors``, ``head``, ``batch``.

    Returns
    -------
    int
        0 on success, 1 when results did not arrive or an export failed, 2 for bad input.
    """
    from gui.kit.session import SessionError, load_session

    session = None
    if getattr(args, "session", None):
        try:
            session = load_session(args.session)
        except SessionError as exc:
            print(f"error: --session: {exc}", file=sys.stderr)
            return 2
    try:
        head = parse_head(getattr(args, "tensors", None), getattr(args, "head", None),
                          getattr(args, "batch", None))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    problem = (check_output_folder(args.out, allow_files=bool(getattr(args, "force", False)))
               or _input_in_output(args.out, [getattr(args, "session", None),
                                              getattr(args, "tensors", None)]))
    if problem:
        print(f"error: --out: {problem}", file=sys.stderr)
        return 2
    _app = _prepare(offscreen=True, language=getattr(args, "lang", None))
    from gui.headless.train_demo import run_headless_demo
    from gui.main_window import MainWindow

    window = MainWindow(restore=False, persist=False, start=False,
                        config=session.config if session else None)
    try:
        window.resize(int(args.width), int(args.height))
        window.show()
        if session is not None:
            window.files.apply_session(session)
        if head is not None:
            window.controller.set_real_head(head)
        elif session is None:
            window.controller.start()
        if not window.wait_until_settled(RESULT_TIMEOUT_MS):
            print("error: results did not arrive in time", file=sys.stderr)
            return 1
        if window.controller.last_error():
            print(f"error: {window.controller.last_error()}", file=sys.stderr)
            return 1
        if head is not None:
            return _export_head_views(window, args)
        # The training views need data: a short real run and lr sweep (a few seconds).
        problem = run_headless_demo(window.train_tab, RESULT_TIMEOUT_MS)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 1
        return _write_and_list(lambda: window.files.export_everything(
            args.out, int(args.width), int(args.height), formats=_formats_of(args)))
    finally:
        _close(window)


def _export_head_views(window: Any, args: Any) -> int:
    """Write the explorer views of the real head on screen (and session.json) to args.out."""
    from gui.kit import export

    window.controller.refresh_views()
    return _write_and_list(lambda: export.export_all(
        window.views, args.out, window.files.current_session(), int(args.width),
        int(args.height), formats=_formats_of(args)))


def _formats_of(args: Any) -> tuple[str, ...]:
    """``--formats`` of the export command (every format when a caller has none)."""
    from gui.kit import export

    return tuple(getattr(args, "formats", None) or export.FORMATS)


def _write_and_list(write: Any) -> int:
    """Run ``write()`` (returning the paths written) and print each path; 1 on failure."""
    try:
        written = write()
    except (OSError, ValueError) as exc:
        print(f"error: export failed: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


def check_png(path: Path, width: int, height: int) -> str:
    """Return "" if the PNG at ``path`` has the given size and is not blank, else the reason."""
    from gui.kit.export import image_stats

    try:
        stats = image_stats(path)
    except ValueError as exc:
        return f"{path.name}: {exc}"
    if (stats["width"], stats["height"]) != (width, height):
        return (f"{path.name}: size {int(stats['width'])}×{int(stats['height'])}, "
                f"expected {width}×{height}")
    if stats["colors"] < MIN_COLORS or stats["non_background"] < MIN_NON_BACKGROUND:
        return (f"{path.name}: looks blank ({int(stats['colors'])} colours, "
                f"{stats['non_background']:.1%} non-background pixels)")
    return ""


def drive_panel(window: Any) -> list[tuple[str, Callable[[], None]]]:
    """Return ``(name, action)`` steps that change every control of the panel once.

    The order keeps every intermediate configuration valid, except for one deliberate
    invalid step (heads that do not divide d_model) that must be refused inline.
    """
    panel = window.panel
    rule_index = {panel.rule.itemData(i): i for i in range(panel.rule.count())}
    temperature_view = next(
        (v for v in window.views if hasattr(v, "temperatureChanged")), None)
    steps: list[tuple[str, Callable[[], None]]] = [
        ("n_tokens", lambda: panel.n_tokens.spin.setValue(48)),
        ("d_k", lambda: panel.d_k.slider.setValue(panel.d_k.slider.value() - 100)),
        ("heads", lambda: panel.heads.setValue(2)),
        ("d_model", lambda: panel.d_model.setValue(96)),
        ("link_heads", lambda: panel.link_heads.setChecked(True)),
        ("init_std", lambda: panel.init_std.spin.setValue(0.8)),
        ("use_projection", lambda: panel.use_projection.setChecked(True)),
        ("projection_std", lambda: panel.projection_std.spin.setValue(0.1)),
        ("rule", lambda: panel.rule.setCurrentIndex(rule_index["temperature"])),
        ("temperature", lambda: panel.temperature.spin.setValue(5.0)),
        ("rule", lambda: panel.rule.setCurrentIndex(rule_index["qk_norm"])),
        ("gain_default", lambda: panel.gain_default.setChecked(False)),
        ("gain", lambda: panel.gain.spin.setValue(3.0)),
        ("rule", lambda: panel.rule.setCurrentIndex(rule_index["softcap"])),
        ("cap", lambda: panel.cap.spin.setValue(4.0)),
        ("rho", lambda: panel.rho.spin.setValue(0.5)),
        ("mask", lambda: panel.mask.setCurrentIndex(1)),
        ("query_row", lambda: panel.query_row.spin.setValue(20)),
        ("seed", lambda: panel.seed.setValue(7)),
        ("samples", lambda: panel.samples.setValue(600)),
    ]
    if temperature_view is not None:
        steps.append(("temperature view T", lambda: temperature_view.set_temperature(3.0)))
    return steps


def self_test_command(args: Any) -> int:
    """Open the real window, drive every control, export every view to DIR and check it;
    also open the sample tensor file in the Heads tab, show its first flagged head in the
    explorer, capture from ``args.model`` when given (File › Open model…), and export the
    Heads tab with the rest (count and flags are printed).

    Parameters
    ----------
    args
        Parsed arguments; ``args.self_test`` is the output folder.

    Returns
    -------
    int
        0 when every check passed, 1 otherwise (the reasons are printed), 2 when DIR is a
        file or cannot be written (checked before anything opens).
    """
    from gui.app import has_display

    out = Path(args.self_test)
    problem = check_output_folder(out)
    if problem:  # before any window opens: the export at the end would fail
        print(f"error: --self-test: {problem}", file=sys.stderr)
        return 2
    _app = _prepare(offscreen=bool(getattr(args, "headless", False)) or not has_display(),
                    language=getattr(args, "lang", None))
    from gui.kit.session import load_session
    from gui.main_window import MainWindow

    failures: list[str] = []
    lines: list[str] = []
    started = time.perf_counter()
    window = MainWindow(restore=False, persist=False)
    try:
        window.resize(1400, 900)
        window.show()
        if not window.wait_until_settled(RESULT_TIMEOUT_MS):
            failures.append("first results did not arrive")
        lines.append(f"first results in {time.perf_counter() - started:.2f} s")

        for name, action in drive_panel(window):
            before = window.controller.results()
            t0 = time.perf_counter()
            action()
            settled = window.wait_until_current(RESULT_TIMEOUT_MS)
            results = window.controller.results()
            reason = ""
            if not settled:
                reason = "no results in time"
            elif window.panel.error_text():
                reason = f"panel refused: {window.panel.error_text()}"
            elif window.controller.last_error():
                reason = f"engine error: {window.controller.last_error()}"
            elif results is before:
                reason = "the views were not updated"
            elif results.config != window.panel.config():
                reason = "results are for another configuration"
            status = "ok  " if not reason else "FAIL"
            lines.append(f"{status} {name:<20} {time.perf_counter() - t0:6.3f} s  {reason}")
            if reason:
                failures.append(f"{name}: {reason}")

        # A deliberately invalid combination must be refused inline without a request.
        emitted: list[object] = []
        window.panel.configChanged.connect(emitted.append)
        d_model = window.panel.d_model.value()
        window.panel.heads.setValue(next(h for h in range(2, 64) if d_model % h))
        refused = bool(window.panel.error_text()) and not emitted
        lines.append(f"{'ok  ' if refused else 'FAIL'} invalid heads refused: "
                     f"{window.panel.error_text()!r}")
        if not refused:
            failures.append("an invalid heads/d_model combination was not refused")
        window.panel.configChanged.disconnect(emitted.append)
        window.panel.set_config(window.panel.config())

        if not window.wait_until_settled(RESULT_TIMEOUT_MS):
            failures.append("the final sweep did not finish")
        width, height = 1000, 700
        from gui.headless.train_demo import drive_train_buttons, run_headless_demo

        window.mode_tabs.setCurrentWidget(window.train_tab)
        for name, reason in drive_train_buttons(window.train_tab):
            lines.append(f"{'ok  ' if not reason else 'FAIL'} {name}  {reason}")
            if reason:
                failures.append(f"{name}: {reason}")
        problem = run_headless_demo(window.train_tab, RESULT_TIMEOUT_MS)
        lines.append(f"{'ok  ' if not problem else 'FAIL'} train demo run and lr sweep  {problem}")
        if problem:
            failures.append(problem)
        from gui.headless.sample_check import check_sample_tensors

        sample_lines, problem = check_sample_tensors(window, RESULT_TIMEOUT_MS)
        lines += [f"ok   {line}" for line in sample_lines]
        if problem:
            lines.append(f"FAIL {problem}")
            failures.append(problem)
        if getattr(args, "model", None):
            from gui.headless.sample_check import check_model_capture

            model_lines, problem = check_model_capture(window, args.model, RESULT_TIMEOUT_MS)
            lines += [f"ok   {line}" for line in model_lines]
            if problem:
                lines.append(f"FAIL {problem}")
                failures.append(problem)
        window.mode_tabs.setCurrentWidget(window.explorer_page)
        written = window.files.export_everything(out, width, height)
        for path in written:
            if path.suffix == ".png":
                reason = check_png(path, width, height)
            elif path.suffix == ".svg":
                text = path.read_text(encoding="utf-8", errors="replace")
                reason = "" if "<svg" in text and len(text) > 2000 else f"{path.name}: empty SVG"
            elif path.suffix == ".pdf":
                data = path.read_bytes()
                reason = ("" if data.startswith(b"%PDF") and b"/Page" in data
                          and len(data) > 2000 else f"{path.name}: empty PDF")
            elif path.suffix == ".csv":
                rows = path.read_text(encoding="utf-8").splitlines()
                reason = "" if len(rows) >= 2 else f"{path.name}: no data rows"
            else:
                try:
                    ok = load_session(path).config == window.panel.config()
                    reason = "" if ok else "session.json does not match the window"
                except ValueError as exc:
                    reason = f"session.json: {exc}"
            lines.append(f"{'ok  ' if not reason else 'FAIL'} {path.name}")
            if reason:
                failures.append(reason)
        expected = {v.key for v in [*window.views, *window.train_tab.views, window.heads.view]}
        exported = {p.stem for p in written if p.suffix == ".png"}
        if exported != expected:
            failures.append(f"views not exported: {sorted(expected - exported)}")
    finally:
        t0 = time.perf_counter()
        if not _close(window):
            failures.append("the worker thread was still running after close")
        lines.append(f"closed in {time.perf_counter() - t0:.3f} s")
    for line in lines:
        print(line)
    if failures:
        print(f"SELF-TEST FAILED ({len(failures)}): " + "; ".join(failures))
        return 1
    print(f"SELF-TEST PASSED: {len(expected)} views exported to {out} "
          f"in {time.perf_counter() - started:.1f} s")
    return 0
