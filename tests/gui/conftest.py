"""GUI test setup: offscreen Qt, isolated settings, small fast computations, no leaked threads."""

from __future__ import annotations

import gc
import os
from pathlib import Path

# Must happen before anything creates the QApplication (pytest-qt creates it lazily).
os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import pytest

from engine.config import AttentionConfig
from gui.app import configure_pyqtgraph
from gui.kit.settings import SETTINGS_DIR_ENV
from tests.run_failures import fail_run

configure_pyqtgraph()

#: Small sweeps keep every GUI test well under a second of engine work.
FAST_CONTROLLER = {"sweep_values": (1, 4, 16, 64), "sweep_samples_cap": 200,
                   "length_values": (16, 256, 4096)}
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


#: How long a wait for an event may take before the test calls it a hang. A guard, not a
#: budget: on a loaded 2-core machine the small sweeps alone have taken over 20 s.
HANG_MS = 180_000


def _open_window(config=SMALL_CONFIG, *, restore=False, show=True, settle=True, **options):
    """A main window with small computations: shown at 1200×800 and its results in, by default."""
    from gui.main_window import MainWindow

    controller_options = {**FAST_CONTROLLER, **options.pop("controller_options", {})}
    window = MainWindow(config=config, restore=restore, controller_options=controller_options,
                        **options)
    if show:
        window.resize(1200, 800)
        window.show()
    if settle:
        assert window.wait_until_settled(HANG_MS), "results did not arrive"
    return window


def _close_window(window) -> None:
    window.close()
    window.shutdown()  # waits if the close had to wait for a long engine call
    assert not window.workers_running(), "a worker thread was left running"
    window.deleteLater()


@pytest.fixture
def make_window(qtbot):
    """Factory for main windows with small computations; closes them and checks the thread."""
    windows = []

    def factory(*args, **kwargs):
        window = _open_window(*args, **kwargs)
        qtbot.addWidget(window)
        windows.append(window)
        return window

    yield factory
    for window in windows:
        _close_window(window)
    # Drop the wrappers too: they hold pyqtgraph's Python-owned menus alive.
    windows.clear()


@pytest.fixture(scope="module")
def module_window(qapp, tmp_path_factory):
    """One window (as ``window``) for a module's tests, through :func:`shared_window` only.

    Its settings live in a folder of its own and are never written (``persist=False``).
    """
    from gui.kit.qt_lifetime import release_qt_objects

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SETTINGS_DIR_ENV, str(tmp_path_factory.mktemp("settings")))
        window = _open_window(persist=False)
        yield window
        _close_window(window)
    release_qt_objects()


def window_state(window) -> dict:
    """What a test could leave changed in a window, as the user sees it."""
    from PySide6.QtWidgets import QApplication

    results = window.controller.results()
    return {
        "config": window.panel.config(), "results": (results.config, results.temperature),
        "real head": window.controller.real_head(), "view": window.current_view().key,
        "tab": window.mode_tabs.currentIndex(), "side by side": window.menu_actions[
            "side"].isChecked(), "menu title": window.menus["file"].title(),
        "session": window.files.session_path(), "train": window.train_tab.panel.config(),
        "tensors": window.heads.view.controller.tensor_file(), "enabled": window.isEnabled(),
        "size": window.size().toTuple(), "status": window.status.label.text(),
        "other windows": sorted(type(w).__name__ for w in QApplication.topLevelWidgets()
                                if w.isVisible() and w is not window),
    }


def back_to_start(window, settle) -> None:
    """Put the small configuration back into the panel (without signals) and the results."""
    window.panel.set_config(SMALL_CONFIG)
    window.controller.set_config(SMALL_CONFIG)
    settle(window)


@pytest.fixture
def shared_window(module_window):
    """The module's window, for a test that leaves it as it found it (checked afterwards):
    far cheaper than a window per test, and no test depends on another's leftovers."""
    before = window_state(module_window)
    yield module_window
    assert window_state(module_window) == before, "the test left the shared window changed"


@pytest.fixture
def make_train_tab(qtbot):
    """Factory for shown Train tabs (1100×700); shuts them down and checks their threads."""
    from gui.train import TrainTab

    tabs = []

    def factory(config):
        tab = TrainTab(config)
        qtbot.addWidget(tab)
        tab.resize(1100, 700)
        tab.show()
        tabs.append(tab)
        return tab

    yield factory
    for tab in tabs:
        tab.shutdown()
        assert not tab.controller.is_running(), "the training thread was left running"


@pytest.fixture
def window(make_window):
    """A shown main window whose first results (incl. the small sweep) are in."""
    return make_window()


@pytest.fixture
def settle():
    """Return ``settle(window)``: wait (QEventLoop on GUI-thread signals) for every result."""

    def wait(window, timeout_ms: int = HANG_MS, require_sweep: bool = True) -> None:
        assert window.wait_until_settled(timeout_ms, require_sweep), "results did not arrive"
        assert window.controller.last_error() == ""

    return wait


def _live_qt_wrappers() -> list[str]:
    """Describe every live QObject or graphics item wrapper except the application's own.

    Value types (QColor, QByteArray, static QMetaObjects) own no Qt-side lifetime and are
    left to Python; objects with an identity and a parent are what teardown order breaks on.
    """
    import shiboken6
    from PySide6.QtCore import QCoreApplication, QObject
    from PySide6.QtWidgets import QGraphicsItem

    from gui.kit.qt_lifetime import GuiThreadCollector

    app = QCoreApplication.instance()
    left = []
    for wrapper in shiboken6.getAllValidWrappers():
        if wrapper is app or wrapper is app.thread() or isinstance(wrapper, GuiThreadCollector):
            continue
        if isinstance(wrapper, QObject) and isinstance(wrapper.parent(), GuiThreadCollector):
            continue
        if not isinstance(wrapper, QObject | QGraphicsItem):
            continue
        left.append(f"{type(wrapper).__module__}.{type(wrapper).__qualname__}")
    return sorted(left)


@pytest.fixture(scope="session", autouse=True)
def qt_session(qapp):
    """Collect garbage on the GUI thread only, for the whole GUI session.

    Python's cyclic GC otherwise frees pyqtgraph's Qt objects in whatever thread allocates,
    worker threads included (gui/kit/qt_lifetime.py explains the crashes that caused).
    What exists when the GUI tests start (modules, collected tests) lives for the whole run:
    frozen, it is left out of the full collection after every test, which then walks only
    what the tests made. :func:`pytest_sessionfinish` unfreezes it for the last check.
    """
    from gui.app import favour_the_gui_thread
    from gui.kit.qt_lifetime import install_gui_thread_collector, release_qt_objects

    favour_the_gui_thread()  # as create_application does for the program
    collector = install_gui_thread_collector(qapp)
    release_qt_objects()
    gc.freeze()
    return collector


def pytest_sessionfinish(session, exitstatus):
    """Fail the run if any Qt object outlived the GUI tests (checked after every teardown).

    Every window and controller must have been shut down and deleted by its fixture: a
    wrapper still registered at interpreter exit is visited by PySide's teardown after the
    QApplication is gone (a segfault at exit). Runs after pytest dropped the last test's
    fixture values, so nothing legitimately holds a window any more.
    """
    from PySide6.QtCore import QCoreApplication

    if QCoreApplication.instance() is None:
        return
    from gui.kit.qt_lifetime import release_qt_objects

    gc.unfreeze()
    release_qt_objects()
    left = _live_qt_wrappers()
    if left:
        counts = {name: left.count(name) for name in sorted(set(left))}
        fail_run(session, f"Qt objects outlived the GUI tests ({len(left)}): {counts}")


@pytest.fixture(autouse=True)
def release_after_each_test(qt_session):
    """After a test's own fixtures closed its windows: free what they left, here and now."""
    from gui.kit.qt_lifetime import release_qt_objects

    yield
    release_qt_objects()
