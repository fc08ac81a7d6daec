"""Where and when Qt objects die: GUI-thread garbage collection and deterministic waits.

pyqtgraph keeps Python-owned Qt objects in reference cycles, and a cycle freed by a collection
that happens to run on a worker thread can deadlock or crash the process. So
:class:`GuiThreadCollector` runs the cyclic collector on a GUI-thread timer only, and
:func:`wait_until` and :func:`release_qt_objects` destroy the Qt objects made in bulk
deterministically. The full story: docs/design-notes.md, "Qt objects die on the GUI thread".
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterable

from PySide6.QtCore import QCoreApplication, QEvent, QEventLoop, QObject, QThread, QTimer, Slot

__all__ = [
    "GuiThreadCollector",
    "freeze_the_built_window",
    "install_gui_thread_collector",
    "release_qt_objects",
    "wait_until",
]

#: How often the GUI thread checks whether a collection is due. Collections are by generation
#: and only when its count passed CPython's threshold, so a check that finds nothing is cheap.
COLLECT_INTERVAL_MS = 250
#: Full collections are at least this far apart (seconds) ...
MIN_FULL_INTERVAL_S = 2.0
#: ... and take at most this share of the GUI thread's time.
FULL_COLLECTION_SHARE = 0.02


class GuiThreadCollector(QObject):
    """Runs Python's cyclic garbage collector on the GUI thread only.

    On :meth:`start`, automatic collection is disabled process-wide and a timer in the GUI
    thread (every ``interval_ms``) collects each generation whose allocation count passed its
    threshold: the rule CPython applies, just in a known thread.
    """

    def __init__(self, interval_ms: int = COLLECT_INTERVAL_MS,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect_due)
        self._next_full_at = 0.0  # perf_counter() before which no full collection runs
        #: Collections run by this object, per generation (for tests and the stress script).
        self.collections = [0, 0, 0]
        #: Freeze what exists once the window is built (:meth:`collect_young`); set by the
        #: program (:func:`freeze_the_built_window`), not by the tests' many windows.
        self.freeze_built = False
        self._frozen_before: int | None = None  # objects frozen by others when this froze

    def start(self) -> None:
        """Disable automatic collection and start collecting from the GUI-thread timer."""
        if not self._timer.isActive():
            gc.disable()
            self._timer.start()

    def is_active(self) -> bool:
        """True while collection is done by this object's timer."""
        return self._timer.isActive()

    @Slot()
    def collect_young(self) -> None:
        """Collect generations 0 and 1 now (GUI thread only).

        Call it once the window is built: its tens of thousands of long-lived objects then
        reach the oldest generation, which is collected rarely, instead of waiting in the
        middle one until a young collection walks them all, a pause at an arbitrary moment.
        """
        gc.collect(1)
        self.collections[1] += 1
        if self.freeze_built and self._frozen_before is None:
            # A full collection walks every tracked object: the built window's ~100k took
            # 31-45 ms of CPU, a pause of the window whenever one fell due (96-101 ms under load)
            # (benchmarks/bench_model_gui.py counts them). They live as long as the window:
            # frozen, full collections walk only what came after.
            self._frozen_before = gc.get_freeze_count()
            gc.freeze()

    def thaw(self) -> bool:
        """Give back to the collector what :meth:`collect_young` froze (before the window's
        objects are released: a frozen cycle would outlive Qt). True when something else had
        frozen objects before (the caller may freeze the survivors again)."""
        frozen_before, self._frozen_before = self._frozen_before, None
        if frozen_before is None:
            return False
        gc.unfreeze()
        return frozen_before > 0

    @Slot()
    def collect_due(self) -> None:
        """Collect the oldest generation whose count passed its threshold (GUI thread only).

        A full (generation 2) collection walks every tracked object; CPython avoids running
        it too often by a rule this object cannot see (the share of objects pending since the
        last one). Instead, full collections are spaced so that they take at most
        :data:`FULL_COLLECTION_SHARE` of the GUI thread's time.
        """
        counts, thresholds = gc.get_count(), gc.get_threshold()
        generation = -1
        for gen in range(3):
            if counts[gen] > thresholds[gen]:
                generation = gen
            else:
                break
        if generation == 2 and time.perf_counter() < self._next_full_at:
            generation = 1
        if generation < 0:
            return
        started = time.perf_counter()
        gc.collect(generation)
        self.collections[generation] += 1
        if generation == 2:
            elapsed = time.perf_counter() - started
            self._next_full_at = started + max(MIN_FULL_INTERVAL_S,
                                               elapsed / FULL_COLLECTION_SHARE)


def install_gui_thread_collector(app: QCoreApplication) -> GuiThreadCollector:
    """Return the application's :class:`GuiThreadCollector`, creating and starting it once.

    Must be called from the GUI thread after the ``QApplication`` exists.
    """
    if QThread.currentThread() is not app.thread():
        raise RuntimeError("the garbage collector must be installed from the GUI thread")
    existing = app.findChild(GuiThreadCollector)
    if existing is not None:
        existing.start()
        return existing
    collector = GuiThreadCollector(parent=app)
    collector.start()
    return collector


def _collector() -> GuiThreadCollector | None:
    app = QCoreApplication.instance()
    return app.findChild(GuiThreadCollector) if app is not None else None


def freeze_the_built_window() -> None:
    """Have the application's collector freeze what exists once the window is built (the
    program's one window; see :meth:`GuiThreadCollector.collect_young`)."""
    collector = _collector()
    if collector is not None:
        collector.freeze_built = True


def collect_young_soon() -> None:
    """Have the application's :class:`GuiThreadCollector` (if it runs) collect the young
    generations once the current event is handled (see :meth:`GuiThreadCollector.collect_young`)."""
    collector = _collector()
    if collector is not None and collector.is_active():
        QTimer.singleShot(0, collector, collector.collect_young)


def release_qt_objects(rounds: int = 3) -> None:
    """Delete what ``deleteLater`` queued and collect cycles, on the GUI thread, now.

    Call it after closing windows and stopping worker threads, while the ``QApplication`` still
    exists (before the interpreter's own teardown, which would otherwise free the remaining
    cycles after Qt's). Several rounds because freeing one cycle can queue further deletions.
    """
    app = QCoreApplication.instance()
    if app is None:
        gc.collect()
        return
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("release_qt_objects must run on the GUI thread")
    collector = _collector()
    refreeze = collector is not None and collector.thaw()
    for _ in range(rounds):
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        QCoreApplication.processEvents()
        if gc.collect() == 0:
            QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
            break
    if refreeze:
        gc.freeze()  # what survives lives on, as what was frozen before did


class _Waker(QObject):
    """Quits a local event loop once a condition holds (checked on GUI-thread signals)."""

    def __init__(self, loop: QEventLoop, condition: Callable[[], bool]) -> None:
        super().__init__()
        self._loop, self._condition = loop, condition

    @Slot()
    @Slot(object)
    @Slot(bool)
    @Slot(str)
    @Slot(int, int)
    @Slot(float, float)
    def check(self, *_args: object) -> None:
        if self._condition():
            self._loop.quit()


def wait_until(condition: Callable[[], bool] | None, signals: Iterable[object],
               timeout_ms: int) -> bool:
    """Run a local event loop until ``condition()`` holds or ``timeout_ms`` passes.

    The condition is checked whenever one of ``signals`` (GUI-thread signals, e.g. a
    controller's ``resultsShown``) fires, never by spinning ``processEvents``. ``None`` waits
    the whole ``timeout_ms``. The loop, its timer and the waker are deleted before returning,
    so that a thousand waits leave nothing behind for the garbage collector. Returns the
    condition's value at the end (True for ``None``).
    """
    if condition is not None and condition():
        return True
    check = condition if condition is not None else (lambda: False)
    loop = QEventLoop()
    timer = QTimer()
    timer.setSingleShot(True)
    timer.timeout.connect(loop.quit)
    waker = _Waker(loop, check)
    connected = []
    try:
        for signal in signals:
            signal.connect(waker.check)  # type: ignore[attr-defined]
            connected.append(signal)
        timer.start(timeout_ms)
        loop.exec()
    finally:
        timer.stop()
        for signal in connected:
            signal.disconnect(waker.check)  # type: ignore[attr-defined]
        # Parentless and Python-owned: dropping the last references destroys them here, now.
        del waker, timer, loop
    return condition() if condition is not None else True
