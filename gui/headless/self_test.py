"""``--self-test DIR``: drive every control of the real window, export every view and check it.

Prints one line per step and ends with PASSED or FAILED and the reasons; never writes the
user's settings.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gui.headless.commands import (
    RESULT_TIMEOUT_MS,
    check_output_folder,
    close_window,
    prepare_application,
)

__all__ = ["check_exported_file", "check_png", "drive_panel", "self_test_command"]

#: A PNG passes the blankness check with at least this many colours and this share of pixels
#: that differ from the most common (background) colour.
MIN_COLORS = 16
MIN_NON_BACKGROUND = 0.02
#: Size of the exported images the self-test checks.
EXPORT_WIDTH, EXPORT_HEIGHT = 1000, 700


class _Report:
    """The self-test's printed lines and its failures."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.failures: list[str] = []

    def check(self, text: str, reason: str, failure: str = "") -> None:
        """Add ``text`` as an ok line, or as a FAIL line when there is a ``reason``; a FAIL
        counts as the failure ``failure`` (default: the reason)."""
        self.lines.append(f"{'ok  ' if not reason else 'FAIL'} {text}")
        if reason:
            self.failures.append(failure or reason)


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


def check_exported_file(path: Path, config: object) -> str:
    """Return "" if the exported ``path`` holds what its kind must, else the reason;
    ``session.json`` must hold ``config``."""
    if path.suffix == ".png":
        return check_png(path, EXPORT_WIDTH, EXPORT_HEIGHT)
    if path.suffix == ".svg":
        text = path.read_text(encoding="utf-8", errors="replace")
        return "" if "<svg" in text and len(text) > 2000 else f"{path.name}: empty SVG"
    if path.suffix == ".pdf":
        data = path.read_bytes()
        return ("" if data.startswith(b"%PDF") and b"/Page" in data and len(data) > 2000
                else f"{path.name}: empty PDF")
    if path.suffix == ".csv":
        rows = path.read_text(encoding="utf-8").splitlines()
        return "" if len(rows) >= 2 else f"{path.name}: no data rows"
    from gui.kit.session import load_session

    try:
        return "" if load_session(path).config == config else ("session.json does not match "
                                                               "the window")
    except ValueError as exc:
        return f"session.json: {exc}"


def drive_panel(window: Any) -> list[tuple[str, Callable[[], None]]]:
    """Return ``(name, action)`` steps that change every control of the panel once, in an
    order that keeps every intermediate configuration valid."""
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


def _drive_explorer(window: Any, report: _Report) -> None:
    """Change every control once (each must bring results for the new settings), then make
    an invalid heads/d_model combination, which the panel must refuse inline."""
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
        report.check(f"{name:<20} {time.perf_counter() - t0:6.3f} s  {reason}", reason,
                     f"{name}: {reason}")
    emitted: list[object] = []
    window.panel.configChanged.connect(emitted.append)
    d_model = window.panel.d_model.value()
    window.panel.heads.setValue(next(h for h in range(2, 64) if d_model % h))
    refused = bool(window.panel.error_text()) and not emitted
    report.check(f"invalid heads refused: {window.panel.error_text()!r}",
                 "" if refused else "an invalid heads/d_model combination was not refused")
    window.panel.configChanged.disconnect(emitted.append)
    window.panel.set_config(window.panel.config())
    if not window.wait_until_settled(RESULT_TIMEOUT_MS):
        report.failures.append("the final sweep did not finish")


def _drive_other_tabs(window: Any, model: str | None, report: _Report) -> None:
    """Press the Train tab's buttons and run its demo; open the sample tensors (and capture
    from ``model`` when given) in the Heads tab."""
    from gui.headless.sample_check import check_model_capture, check_sample_tensors
    from gui.headless.train_demo import drive_train_buttons, run_headless_demo

    window.mode_tabs.setCurrentWidget(window.train_tab)
    for name, reason in drive_train_buttons(window.train_tab):
        report.check(f"{name}  {reason}", reason, f"{name}: {reason}")
    problem = run_headless_demo(window.train_tab, RESULT_TIMEOUT_MS)
    report.check(f"train demo run and lr sweep  {problem}", problem)
    checks = [lambda: check_sample_tensors(window, RESULT_TIMEOUT_MS)]
    if model:
        checks.append(lambda: check_model_capture(window, model, RESULT_TIMEOUT_MS))
    for run_check in checks:
        lines, problem = run_check()
        report.lines += [f"ok   {line}" for line in lines]
        if problem:
            report.check(problem, problem)


def self_test_command(args: Any) -> int:
    """Open the real window, drive every control, export every view to ``args.self_test`` and
    check every file; the Train and Heads tabs run too (see :func:`_drive_other_tabs`). Exit
    code 1 when a check failed (the reasons are printed), 2 when the folder cannot be written.
    """
    from gui.app import has_display

    out = Path(args.self_test)
    problem = check_output_folder(out)
    if problem:  # before any window opens: the export at the end would fail
        print(f"error: --self-test: {problem}", file=sys.stderr)
        return 2
    _app = prepare_application(offscreen=args.headless or not has_display(), language=args.lang)
    from gui.main_window import MainWindow

    report = _Report()
    started = time.perf_counter()
    window = MainWindow(restore=False, persist=False)
    try:
        window.resize(1400, 900)
        window.show()
        if not window.wait_until_settled(RESULT_TIMEOUT_MS):
            report.failures.append("first results did not arrive")
        report.lines.append(f"first results in {time.perf_counter() - started:.2f} s")
        _drive_explorer(window, report)
        _drive_other_tabs(window, args.model, report)
        window.mode_tabs.setCurrentWidget(window.explorer_page)
        written = window.files.export_everything(out, EXPORT_WIDTH, EXPORT_HEIGHT)
        for path in written:
            report.check(path.name, check_exported_file(path, window.panel.config()))
        expected = {v.key for v in [*window.views, *window.train_tab.views, window.heads.view]}
        exported = {p.stem for p in written if p.suffix == ".png"}
        if exported != expected:
            report.failures.append(f"views not exported: {sorted(expected - exported)}")
    finally:
        t0 = time.perf_counter()
        if not close_window(window):
            report.failures.append("the worker thread was still running after close")
        report.lines.append(f"closed in {time.perf_counter() - t0:.3f} s")
    for line in report.lines:
        print(line)
    if report.failures:
        print(f"SELF-TEST FAILED ({len(report.failures)}): " + "; ".join(report.failures))
        return 1
    print(f"SELF-TEST PASSED: {len(expected)} views exported to {out} "
          f"in {time.perf_counter() - started:.1f} s")
    return 0
