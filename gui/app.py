"""Application start-up: Qt platform, QApplication, pyqtgraph options, translator, window."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["configure_pyqtgraph", "create_application", "has_display", "run_app",
           "use_offscreen"]

APP_NAME = "Attention Scale Explorer"
_translator: Any = None  # kept alive for the lifetime of the application


def has_display() -> bool:
    """Return True when a window system is available (always True off Linux/BSD)."""
    if not sys.platform.startswith(("linux", "freebsd")):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def use_offscreen() -> None:
    """Select Qt's offscreen platform; must run before the QApplication exists."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"


def configure_pyqtgraph() -> None:
    """Set the pyqtgraph options every view relies on (row-major images, antialiasing)."""
    # gui/__init__.py already pins PYQTGRAPH_QT_LIB=PySide6 so pyqtgraph never probes PyQt.
    import pyqtgraph as pg

    pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)


def create_application(argv: list[str] | None = None, *, headless: bool = False) -> Any:
    """Return the QApplication (created on first call) with options and translator set.

    Parameters
    ----------
    argv
        Arguments for Qt (default ``sys.argv[:1]``: our own flags are parsed by argparse).
    headless
        Use the offscreen platform (only effective before the application exists).
    """
    global _translator
    if headless:
        use_offscreen()
    configure_pyqtgraph()
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
        app.setOrganizationName("AttentionScaleExplorer")
        app.setApplicationName(APP_NAME)
        from gui.i18n import install_translator

        _translator = install_translator(app)
    return app


def run_app(args: Any) -> int:
    """Open the explorer window (``python main.py``) and run the event loop.

    Parameters
    ----------
    args
        Parsed command line (``headless`` and ``session`` are used).

    Returns
    -------
    int
        The process exit code.
    """
    headless = bool(getattr(args, "headless", False))
    if not headless and not has_display() and not os.environ.get("QT_QPA_PLATFORM"):
        print("No display found (DISPLAY/WAYLAND_DISPLAY unset). Use --headless, "
              "'export --out DIR' or '--self-test DIR' to run without a display.",
              file=sys.stderr)
        return 2
    app = create_application(headless=headless)
    from gui.main_window import MainWindow

    window = MainWindow()
    session = getattr(args, "session", None)
    if session:
        window.open_session(session)
    window.show()
    return int(app.exec())
