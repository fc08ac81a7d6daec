"""GUI test setup: offscreen Qt, isolated settings, small fast computations, no leaked threads."""

from __future__ import annotations

import os
from pathlib import Path

# Must happen before anything creates the QApplication (pytest-qt creates it lazily).
os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import pytest

from engine.config import AttentionConfig
from gui.app import configure_pyqtgraph
from gui.settings import SETTINGS_DIR_ENV

configure_pyqtgraph()

#: Small sweeps keep every GUI test well under a second of engine work.
FAST_CONTROLLER = {"sweep_values": (1, 4, 16, 64), "sweep_samples_cap": 200}
SMALL_CONFIG = AttentionConfig(n_tokens=24, d_k=16, d_model=16, samples=300)
#: The offscreen platform warns about a window-manager feature it lacks whenever a
#: QMainWindow with docks is shown; it says nothing about our code.
OFFSCREEN_NOISE = r"This plugin does not support propagateSizeHints\(\)"


_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """Ignore the offscreen plugin's window-manager warning in the GUI tests only."""
    for item in items:
        if _HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.qt_log_ignore(OFFSCREEN_NOISE))


@pytest.fixture
def small_config():
    """A configuration whose requests take a few milliseconds."""
    return SMALL_CONFIG


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    """Point QSettings at a fresh folder so tests never read or write the real settings."""
    folder = tmp_path / "settings"
    folder.mkdir()
    monkeypatch.setenv(SETTINGS_DIR_ENV, str(folder))
    return folder


@pytest.fixture
def make_window(qtbot):
    """Factory for main windows with small computations; closes them and checks the thread."""
    from gui.main_window import MainWindow

    windows = []

    def factory(config=SMALL_CONFIG, *, restore=False, show=True, settle=True, **options):
        controller_options = {**FAST_CONTROLLER, **options.pop("controller_options", {})}
        window = MainWindow(config=config, restore=restore,
                            controller_options=controller_options, **options)
        qtbot.addWidget(window)
        windows.append(window)
        if show:
            window.resize(1200, 800)
            window.show()
        if settle:
            assert window.wait_until_settled(20_000), "results did not arrive"
        return window

    yield factory
    for window in windows:
        window.close()
        assert not window.controller.is_running(), "a worker thread was left running"


@pytest.fixture
def window(make_window):
    """A shown main window whose first results (incl. the small sweep) are in."""
    return make_window()


@pytest.fixture
def settle():
    """Return ``settle(window)``: wait (QEventLoop on GUI-thread signals) for every result."""

    def wait(window, timeout_ms: int = 20_000, require_sweep: bool = True) -> None:
        assert window.wait_until_settled(timeout_ms, require_sweep), "results did not arrive"
        assert window.controller.last_error() == ""

    return wait


def pytest_sessionfinish(session, exitstatus):
    """Destroy leftover Qt objects while the QApplication still exists.

    Otherwise Python's final garbage collection at interpreter exit may destroy widgets and
    graphics items after Qt has begun its own teardown, which crashed the process after a
    fully passing run (seen once in about six full runs, never in a single test).
    """
    import gc

    from PySide6.QtCore import QCoreApplication, QEvent

    if QCoreApplication.instance() is None:
        return
    for _ in range(2):
        gc.collect()
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QCoreApplication.processEvents()
