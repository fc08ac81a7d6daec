"""Qt object lifetimes: garbage is collected on the GUI thread only, waits and language switches
leave nothing behind, and closing the window never blocks on a long engine call."""

from __future__ import annotations

import gc
import sys
import threading
from collections import Counter

import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QTimer, QTranslator

from engine.config import AttentionConfig
from engine.config.train import TrainConfig
from gui import window_close
from gui.kit.qt_lifetime import release_qt_objects, wait_until
from tests.gui.conftest import HANG_MS

SMALL_CONFIG = AttentionConfig(n_tokens=24, d_k=16, d_model=16, samples=300)  # = conftest's


def _wrappers_of(kind: type) -> int:
    return sum(isinstance(w, kind) for w in shiboken6.getAllValidWrappers())


def _census(objects) -> Counter[str]:
    """``objects`` by class and their parent's class: what a failure names as gone or new."""
    return Counter(f"{type(o).__name__} in {type(o.parent()).__name__}" for o in objects)


def _change(before: Counter[str], after: Counter[str]) -> str:
    return f"gone: {dict(before - after)}, new: {dict(after - before)}"


@pytest.fixture
def collections_by_thread():
    """Record the thread of every cyclic collection while the test runs (low thresholds).

    With CPython's default thresholds a worker thread starts a collection only now and then;
    a threshold of 50 makes every thread that allocates cross it within milliseconds, so
    automatic collection left on would be caught in a worker thread at once.
    """
    seen: list[str] = []

    def record(phase: str, info: dict) -> None:
        if phase == "start":
            seen.append(threading.current_thread().name)

    old = gc.get_threshold()
    gc.set_threshold(50, 5, 5)
    gc.callbacks.append(record)
    try:
        yield seen
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*old)


def test_garbage_is_collected_on_the_gui_thread_only(make_window, collections_by_thread):
    window = make_window(SMALL_CONFIG.replace(n_tokens=64, samples=2000), settle=False)
    assert window.wait_until_settled(HANG_MS)
    tab = window.train_tab
    assert tab.start_training()
    assert tab.wait_until_idle(60_000)
    for seed in range(1, 6):  # sweeps and snapshots in the explorer worker thread
        window.panel.seed.setValue(seed)
        assert window.wait_until_settled(HANG_MS)
    main = threading.main_thread().name
    assert collections_by_thread, "the GUI-thread collector never ran"
    elsewhere = [name for name in collections_by_thread if name != main]
    assert not elsewhere, f"cyclic GC ran outside the GUI thread: {sorted(set(elsewhere))}"


def test_the_built_window_ages_its_objects_once_its_first_results_show(make_window):
    from gui.kit.qt_lifetime import install_gui_thread_collector

    collector = install_gui_thread_collector(QCoreApplication.instance())
    young_before = collector.collections[1]
    window = make_window(SMALL_CONFIG, settle=False)
    assert window.wait_until_settled(HANG_MS)
    assert wait_until(lambda: collector.collections[1] > young_before, (), 2_000)
    # What the window built (~60k objects) waits in the oldest generation, not in the middle
    # one, where the next young collection would walk it all (38 ms, measured).
    assert len(gc.get_objects(1)) < 10_000


def test_the_app_hands_the_interpreter_lock_over_within_a_millisecond(qapp):
    from gui.app import GUI_SWITCH_INTERVAL_S, create_application

    sys.setswitchinterval(0.005)  # CPython's default
    try:
        assert create_application(headless=True) is qapp
        assert sys.getswitchinterval() == GUI_SWITCH_INTERVAL_S <= 0.001
    finally:
        sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)


def test_the_heads_table_leaves_no_wrapper_of_an_item_it_deleted(qapp):
    """Rows the table replaces are deleted by Qt; their Python wrappers must know it.

    Items built in C++ (``QStandardItem.clone()``) have no wrapper class that tells Shiboken
    when the model deletes them: their wrappers stayed "valid", mapped to freed memory, and a
    pyqtgraph item later allocated at such an address died twice (a segfault in
    ``BindingManager::releaseWrapper``, 2 in 8 stress runs of seed 2).
    """
    from engine.analysis.head_scan import iter_file_diagnostics
    from engine.io.tensors import load_tensors
    from gui.heads.table import HeadsTableModel
    from gui.kit.resources import sample_tensors_path

    records = tuple(iter_file_diagnostics(load_tensors(sample_tensors_path())))[:4]
    model = HeadsTableModel()
    model.set_records(records, {})
    shown = [model.item(row, column) for row in range(model.rowCount())
             for column in range(model.columnCount())]
    assert shown and all(shiboken6.isValid(item) for item in shown)
    model.set_records(records[1:], {})  # not a continuation: every row is replaced
    assert model.rowCount() == len(records) - 1
    assert not any(shiboken6.isValid(item) for item in shown)


def test_waiting_for_results_leaves_no_qt_objects_behind(shared_window):
    window = shared_window
    seed = window.panel.config().seed
    children_before = _census(window.findChildren(QObject))
    loops_before, timers_before = _wrappers_of(QEventLoop), _wrappers_of(QTimer)
    waits_before = _census(w for w in shiboken6.getAllValidWrappers()
                           if isinstance(w, QEventLoop | QTimer))
    for other in range(seed + 1, seed + 11):  # a leak of one object per wait shows at once
        window.panel.seed.setValue(other)
        assert window.wait_until_settled(HANG_MS)
    window.panel.seed.setValue(seed)
    assert window.wait_until_settled(HANG_MS)
    # The messages name what changed: a failure seen once could not be explained by its counts.
    children = _census(window.findChildren(QObject))
    assert children.total() <= children_before.total(), _change(children_before, children)
    waits = _census(w for w in shiboken6.getAllValidWrappers()
                    if isinstance(w, QEventLoop | QTimer))
    assert _wrappers_of(QEventLoop) == loops_before, _change(waits_before, waits)
    assert _wrappers_of(QTimer) == timers_before, _change(waits_before, waits)


def test_wait_until_deletes_its_loop_even_on_timeout(qapp):
    before = _wrappers_of(QEventLoop), _wrappers_of(QTimer)
    for _ in range(20):
        assert not wait_until(lambda: False, (), 1)
        assert wait_until(None, (), 1)
    assert (_wrappers_of(QEventLoop), _wrappers_of(QTimer)) == before


def test_switching_language_keeps_one_catalogue(shared_window):
    window = shared_window
    app = QCoreApplication.instance()
    for _ in range(6):
        for code in ("zh_CN", "en"):
            assert window.language.set_language(code)
    window.language.set_language("zh_CN")
    release_qt_objects()
    translators = [c for c in app.children() if isinstance(c, QTranslator)]
    assert 1 <= len(translators) <= 2, translators  # ours, and Qt's own where it has one
    window.language.set_language("en")


#: A model whose optimisation step of one rule (Stop is checked between rules) lasts 0.1-0.4 s
#: here, yet fits the memory budget.
SLOW_STEP = TrainConfig(rules=("none", "sqrt", "linear"), d_k=512, heads=2, n=16, batch=512,
                        steps=1000, eval_size=16)


def test_closing_during_a_long_training_step_does_not_freeze(make_window, monkeypatch):
    # A step outlasts the close's wait here by construction: with the real 100 ms wait it did
    # only by a margin of 0-300 ms, which a late first snapshot (the test's process busy)
    # used up: in 8 of 12 runs with 0.1-0.4 s slept before close(), the step ended inside it.
    monkeypatch.setattr(window_close, "CLOSE_WAIT_MS", 0)
    window = make_window()
    tab = window.train_tab
    tab.panel.set_config(SLOW_STEP)
    assert tab.start_training()
    controller = tab.controller
    # The first snapshot (step 0) arrives after the initial evaluation; the next step starts
    # right away, so the close below lands inside a long step.
    assert wait_until(lambda: controller.results().snapshot is not None,
                      (controller.resultsShown,), 60_000)
    window.close()
    # close() returned inside the step, and the window says why it has not closed yet.
    assert window.workers_running()
    assert window.isVisible() and not window.isEnabled()
    assert "waiting" in window.status.label.text()
    assert wait_until(lambda: not window.workers_running() and not window.isVisible(),
                      (controller.workerStopped, window.controller.workerStopped), 60_000)


def test_training_too_large_for_memory_is_refused_with_a_message(make_window):
    window = make_window()
    tab = window.train_tab
    tab.panel.set_config(TrainConfig(d_k=1024, heads=16))
    assert not tab.start_training()
    assert not tab.start_lr_sweep()
    shown = tab.panel.error_text()
    assert "memory budget" in shown and "d_k 1024" in shown
    assert tab.controller.results().snapshot is None


def test_the_programs_window_is_left_out_of_full_collections_until_released(qapp):
    """The program freezes its built window (gui.app.run_app): a full collection, which walks
    every tracked object, then skips its ~100k long-lived ones (31-45 ms of the GUI thread
    each time, measured); releasing the window gives them back, so its cycles are freed."""
    import weakref

    from gui.kit.qt_lifetime import freeze_the_built_window, install_gui_thread_collector
    from tests.gui.conftest import _close_window, _open_window

    collector = install_gui_thread_collector(qapp)
    frozen = gc.get_freeze_count()
    freeze_the_built_window()
    try:
        window = _open_window(SMALL_CONFIG)
        try:
            assert wait_until(lambda: gc.get_freeze_count() > frozen + 10_000, (), 2_000)
        finally:
            _close_window(window)
    finally:
        collector.freeze_built = False
    gone = weakref.ref(window)
    del window
    release_qt_objects()
    assert gone() is None, "the released window's objects stayed frozen"
