"""Application start-up: Qt platform, QApplication, pyqtgraph options, translator, window."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["check_resources", "configure_pyqtgraph", "create_application", "has_display",
           "report_startup_error", "run_app", "use_offscreen"]

APP_NAME = "Attention Scale Explorer"
#: How long a thread may keep the interpreter lock while another waits (CPython: 5 ms).
GUI_SWITCH_INTERVAL_S = 0.001


def has_display() -> bool:
    """Return True when a window system is available (always True off Linux/BSD)."""
    if not sys.platform.startswith(("linux", "freebsd")):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def use_offscreen() -> None:
    """Select Qt's offscreen platform; must run before the QApplication exists."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"


# What Qt's offscreen platform plugin logs when a main window with docks is shown: it has no
# window manager to pass size hints to. It says nothing about the program.
OFFSCREEN_NOISE = "This plugin does not support propagateSizeHints()"
_handler_state: dict[str, object] = {}


def quiet_offscreen_warnings() -> None:
    """Keep the output of a headless command to its own lines: drop :data:`OFFSCREEN_NOISE`.

    Installs a Qt message handler (once) that forwards every other message as Qt would print
    it (``qFormatLogMessage``) to stderr, or to the handler installed before.
    """
    if "previous" in _handler_state:
        return
    from PySide6.QtCore import qFormatLogMessage, qInstallMessageHandler

    def handler(mode: Any, context: Any, message: str) -> None:
        if message == OFFSCREEN_NOISE:
            return
        previous = _handler_state.get("previous")
        if callable(previous):
            previous(mode, context, message)
        else:
            print(qFormatLogMessage(mode, context, message), file=sys.stderr, flush=True)

    _handler_state["previous"] = qInstallMessageHandler(handler)


def configure_pyqtgraph() -> None:
    """Set the pyqtgraph options every view relies on (row-major images, antialiasing)."""
    # gui/__init__.py already pins PYQTGRAPH_QT_LIB=PySide6 so pyqtgraph never probes PyQt.
    import pyqtgraph as pg

    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)
    # The plots' right-click Export… dialog: SVG drawn like the File menu's.
    from gui.kit.svg_export import install_svg_exporter

    install_svg_exporter()


def check_resources() -> None:
    """Check the shipped resource files and register the CJK font; needs the QApplication.

    Checks that every file of :data:`gui.kit.resources.RESOURCE_FILES` exists, that Qt can load the
    font (registered here, first, so Chinese renders even where no system font has it) and
    every translation catalogue. The tour texts are parsed where they are read, in the window
    (:func:`gui.tour.content.load_tour`), which stops its threads when that fails.

    Raises
    ------
    gui.kit.resources.ResourceError
        Naming the files that are missing or that Qt could not load.
    """
    from PySide6.QtCore import QTranslator

    from gui.kit.fonts import CJK_FONT_FILE, register_cjk_font
    from gui.kit.i18n import CATALOGUE, DEFAULT_LANGUAGE, LANGUAGES
    from gui.kit.resources import ResourceError, i18n_dir, missing_resources, resource_path

    missing = missing_resources()
    if missing:
        raise ResourceError("missing resource files: " + ", ".join(map(str, missing)))
    if register_cjk_font() is None:
        raise ResourceError(f"damaged font file {resource_path('fonts', CJK_FONT_FILE)}: "
                            "Qt could not load it")
    for code in LANGUAGES:
        if code != DEFAULT_LANGUAGE and not QTranslator().load(f"{CATALOGUE}_{code}",
                                                                  str(i18n_dir())):
            raise ResourceError(f"damaged translation catalogue "
                                f"{i18n_dir() / f'{CATALOGUE}_{code}.qm'}: Qt could not load it")


def create_application(argv: list[str] | None = None, *, headless: bool = False,
                       language: str | None = None) -> Any:
    """Return the QApplication (created on first call) with options and translator set.

    Parameters
    ----------
    argv
        Arguments for Qt (default ``sys.argv[:1]``: our own flags are parsed by argparse).
    headless
        Use the offscreen platform (only effective before the application exists).
    language
        The UI language for this run (``--lang``; a key of :data:`gui.kit.i18n.LANGUAGES`),
        instead of the one saved in the settings, which stays as it was. ``None``: the saved
        one (or the system's). Only effective when the application is created.
    """
    if headless:
        use_offscreen()
    configure_pyqtgraph()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        from engine.core.memory import tune_allocator

        tune_allocator()  # main.py did it already; a window made elsewhere gets the same
        app = QApplication(argv if argv is not None else sys.argv[:1])
        app.setOrganizationName("AttentionScaleExplorer")
        app.setApplicationName(APP_NAME)
        from gui.kit.i18n import resolve_language, set_language
        from gui.kit.settings import open_settings

        # Before anything else reads them: a damaged installation stops here with a message
        # (ResourceError), while no window and no worker thread exist yet.
        check_resources()
        set_language(language or resolve_language(open_settings().get("ui/language")), app)
        from PySide6.QtGui import QPixmapCache

        # Plot axes cache their grid as pixmaps (gui.kit.style.style_plot); Qt's default
        # 10 MiB holds only about a dozen plot-sized ones, and seven views hold ~30 axes.
        QPixmapCache.setCacheLimit(64 * 1024)  # KiB
        from gui.kit.qt_lifetime import install_gui_thread_collector

        # Cycles holding Qt objects must never be freed in a worker thread (gui/kit/qt_lifetime.py).
        install_gui_thread_collector(app)
    favour_the_gui_thread()
    return app


def favour_the_gui_thread() -> None:
    """Let a thread keep Python's interpreter lock for :data:`GUI_SWITCH_INTERVAL_S` at most
    while another waits for it.

    A worker running Python code (a GGUF header's 100k strings, the head scan's small numpy
    steps) keeps the lock for the whole interval each time the GUI thread asks for it, and one
    event asks for it many times, so CPython's 5 ms default makes the window pause visibly while
    a GGUF header is read (benchmarks/bench_heads_gui.py prints the pauses).
    """
    sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)


def run_app(args: Any) -> int:
    """Open the explorer window (``python main.py``) with the parsed command line's
    ``session``, ``tensors``, ``model`` and ``lang``; run the event loop; return the exit code."""
    if not has_display() and not os.environ.get("QT_QPA_PLATFORM"):
        print("No display found (DISPLAY/WAYLAND_DISPLAY unset), so the window cannot open. "
              "Without a display: 'export --out DIR' renders every view to files, "
              "'--self-test DIR' drives and checks the whole window, and '--headless' checks "
              "that the window starts (with --session/--tensors) and exits.",
              file=sys.stderr)
        return 2
    from gui.kit.resources import ResourceError

    try:
        app = create_application(language=getattr(args, "lang", None))
        from gui.kit.qt_lifetime import freeze_the_built_window
        from gui.main_window import MainWindow

        freeze_the_built_window()  # full collections then skip the window's long-lived objects

        window = MainWindow()  # stops its worker threads itself when it cannot be built
    except ResourceError as exc:
        report_startup_error(exc)
        return 1
    try:
        session = getattr(args, "session", None)
        if session:
            window.files.open_session(session)
        tensors = getattr(args, "tensors", None)
        if tensors:
            window.heads.open_tensors(tensors)
        model = getattr(args, "model", None)
        if model:
            window.heads.open_model(model)
        window.show()
        if os.environ.get(EXIT_AFTER_SHOW_ENV, "") not in ("", "0"):
            _report_first_paint_and_close(window)
        return int(app.exec())
    finally:
        dispose_window(window)


def dispose_window(window: Any) -> None:
    """Stop ``window``'s threads and free every Qt object now, on this thread.

    Already done by closeEvent on a normal exit; this also stops the threads on any other way
    out, and frees the objects before the interpreter's teardown, which would come after Qt's.
    """
    from shiboken6 import isValid

    if isValid(window):
        window.shutdown()
        window.deleteLater()
    del window
    from gui.kit.qt_lifetime import release_qt_objects

    release_qt_objects()


def report_startup_error(error: BaseException) -> None:
    """Tell the user why the program cannot start: stderr always, a dialog on a real screen.

    On the offscreen/minimal platforms (tests, CI, ``--headless``) no dialog is shown, since
    nobody could close it.
    """
    print(f"attention-explorer: cannot start: {error}", file=sys.stderr, flush=True)
    from PySide6.QtGui import QGuiApplication

    if QGuiApplication.instance() is None or QGuiApplication.platformName() in (
            "offscreen", "minimal"):
        return
    from PySide6.QtWidgets import QMessageBox

    from gui.kit.i18n import translate

    QMessageBox.critical(
        None,
        translate("Startup", "Attention Scale Explorer cannot start"),
        translate("Startup", "A file the program needs is missing or cannot be read. "
                  "Reinstall the program.") + "\n\n" + str(error),
    )


#: Start-up benchmark hook (benchmarks/bench_startup.py): when set to anything but "" or "0",
#: run_app prints one timing line once the window has painted its first frame, then closes it.
EXIT_AFTER_SHOW_ENV = "ATTENTION_EXPLORER_EXIT_AFTER_SHOW"


def _seconds_since_process_start() -> float:
    """Seconds since this process was created (Linux ``/proc``, 10 ms ticks), else NaN."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat, \
                open("/proc/uptime", encoding="ascii") as uptime:
            start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
            return float(uptime.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _report_first_paint_and_close(window: Any) -> None:
    """After the first paint of ``window``, print when it happened and close the window.

    The line carries the wall-clock time so the caller can subtract its own launch time, which
    also covers what precedes this process (a onefile bundle unpacks in a parent process).
    Closing (not ``app.quit()``) runs the window's normal shutdown, which stops the worker.
    """
    import time

    from PySide6.QtCore import QEvent, QObject, QTimer

    def report() -> None:
        print(f"{EXIT_AFTER_SHOW_ENV}: first paint at unix time {time.time():.6f}, "
              f"{_seconds_since_process_start():.3f} s after process start", flush=True)
        window.close()

    class _FirstPaint(QObject):
        def eventFilter(self, watched: Any, event: Any) -> bool:  # Qt override
            if event.type() == QEvent.Type.Paint:
                watched.removeEventFilter(self)
                QTimer.singleShot(0, report)  # once this paint has been flushed
            return False

    window.installEventFilter(_FirstPaint(window))
