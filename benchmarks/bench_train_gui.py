"""Training in the GUI against training without it: steps/s ratio and event-loop stalls.

Trains the Train tab's default model (the panel's configuration with many steps) in the real
main window (offscreen) for ``--seconds`` with the Train tab and the chosen training view in
front, while a 5 ms heartbeat ``QTimer`` records how late it fires; the window trains in its
training process, and the seconds count from its first snapshot. Then runs the same
configuration through :func:`~engine.training.trainer.iter_training` alone in this process
(same thread count, snapshots and evaluations included, no Qt) for as long, and compares the
steps per second.

Goals: stall ≤ 30 ms, GUI steps/s ≥ 0.9 × engine-only (:data:`GOAL_RATIO`). Each repeat
brackets its GUI run with two engine-only runs and takes their mean, so both sides of a ratio
see the same load; the last line gives the medians over the repeats. Each GUI run also prints
the share of the time the views took (updates and paints) and the GUI thread's CPU share.
Run::

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_train_gui.py [--seconds 3] [--repeats 5]
        [--view curves]

The last line is exactly ``train_steps_ratio=<x> max_stall_ms=<y>``. Figures depend on the machine's
load: run ``uptime`` alongside.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ["QT_QPA_PLATFORM"] = "offscreen"

import numpy as np  # noqa: E402
from bench_gui import Heartbeat, wait_ms  # noqa: E402  (the 5 ms heartbeat of the explorer)

from engine.core.memory import tune_allocator  # noqa: E402
from engine.training.trainer import iter_training  # noqa: E402
from gui.app import create_application  # noqa: E402
from gui.kit.settings import SETTINGS_DIR_ENV  # noqa: E402

#: Steps of the benchmarked run: far more than fit into the measured seconds.
STEPS = 1_000_000
#: Time after the first snapshot that is not measured (first paints, caches).
WARMUP_S = 0.4
#: The goal: GUI steps/s ≥ this × engine-only steps/s.
GOAL_RATIO = 0.9


def current_step(tab) -> int:
    snap = tab.controller.results().snapshot
    return 0 if snap is None else int(snap.step)


def gui_run(window, config, seconds: float, view: str) -> dict[str, float]:
    """Train ``config`` in the window; steps/s over ``seconds`` after warm-up, stalls, stop."""
    tab = window.train_tab
    window.mode_tabs.setCurrentWidget(tab)
    tab.panel.set_config(config)
    heartbeat = Heartbeat()
    if not tab.start_training():
        raise RuntimeError(f"training did not start: {tab.panel.error_text()}")
    tab.show_view(f"train_{view}" if view != "curves" else "train_curves")
    # The training process starts with the first run (an interpreter and numpy to load).
    deadline = time.perf_counter() + 30
    while current_step(tab) == 0 and time.perf_counter() < deadline:
        wait_ms(20)
    wait_ms(round(WARMUP_S * 1000))
    step0, t0 = current_step(tab), time.perf_counter()
    pushes0, held0 = tab.controller.pushes, tab.controller.views_busy_s()
    gui_cpu0 = time.thread_time()  # this is the GUI thread
    heartbeat.lateness.clear()
    heartbeat.start()
    wait_ms(round(seconds * 1000))
    heartbeat.stop()
    step1, t1 = current_step(tab), time.perf_counter()
    gui_cpu = time.thread_time() - gui_cpu0
    pushes = tab.controller.pushes - pushes0
    held = tab.controller.views_busy_s() - held0
    t_stop = time.perf_counter()
    tab.controller.stop()
    if not tab.wait_until_idle(10_000):
        raise RuntimeError("training did not stop")
    stop_ms = (time.perf_counter() - t_stop) * 1000
    lateness = 1000 * np.asarray(heartbeat.lateness[1:])  # ms
    return {
        "steps_per_s": (step1 - step0) / (t1 - t0),
        "max_stall_ms": float(lateness.max()),
        "p99_stall_ms": float(np.percentile(lateness, 99)),
        "median_stall_ms": float(np.median(lateness)),
        "beats": float(lateness.size),
        "push_hz": pushes / (t1 - t0),
        # Where the GUI's cost comes from: the views' timed update and paint (the budget's
        # share), and all the CPU time of the GUI thread (heartbeat and result handling too).
        "held_share": held / (t1 - t0),
        "gui_cpu_share": gui_cpu / (t1 - t0),
        "stop_ms": stop_ms,
    }


def engine_run(config, seconds: float) -> float:
    """Steps/s of the engine generator alone (same thread, same snapshots), after warm-up."""
    step0 = t0 = None
    steps_per_s = 0.0
    for snap in iter_training(config):
        now = time.perf_counter()
        if t0 is None:
            t0, start = now, now
            continue
        if step0 is None:
            if now - start >= WARMUP_S:
                step0, t0 = snap.step, now
            continue
        steps_per_s = (snap.step - step0) / (now - t0)
        if now - t0 >= seconds:
            break
    return steps_per_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per run")
    parser.add_argument("--view", choices=("curves", "probe", "lr_sweep"), default="curves",
                        help="training view in front while training")
    parser.add_argument("--repeats", type=int, default=5,
                        help="GUI runs; the last line gives the medians")
    args = parser.parse_args()
    tune_allocator()  # malloc's thresholds as main.py sets them

    os.environ[SETTINGS_DIR_ENV] = tempfile.mkdtemp(prefix="bench-train-gui-settings-")
    app = create_application(headless=True)
    from gui.main_window import MainWindow

    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    window = MainWindow(restore=False, persist=False)
    window.resize(1280, 800)
    window.show()
    window.wait_until_settled(120_000)
    config = window.train_tab.panel.config().replace(steps=STEPS)
    print(f"config: {config.task.value}, rules {', '.join(r.value for r in config.rules)}, "
          f"d_k={config.d_k}, d_model={config.model_width}, n={config.n}, batch={config.batch}, "
          f"{config.optimizer.value}")
    ratios: list[float] = []
    stalls: list[float] = []
    try:
        for _ in range(args.repeats):
            # Engine-only before and after the GUI run: the machine's speed drifts (other
            # processes, CPU frequency), and the mean of both brackets the GUI run.
            before = engine_run(config, args.seconds)
            gui = gui_run(window, config, args.seconds, args.view)
            engine = 0.5 * (before + engine_run(config, args.seconds))
            ratios.append(gui["steps_per_s"] / engine)
            stalls.append(gui["max_stall_ms"])
            print(f"GUI ({args.view} in front): {gui['steps_per_s']:.0f} steps/s, "
                  f"pushes {gui['push_hz']:.1f} Hz, heartbeat {gui['beats']:.0f} beats: "
                  f"worst {gui['max_stall_ms']:.1f} ms, p99 {gui['p99_stall_ms']:.1f} ms, "
                  f"median {gui['median_stall_ms']:.2f} ms; Stop -> idle {gui['stop_ms']:.0f} ms; "
                  f"views took {100 * gui['held_share']:.1f} % of the time, "
                  f"GUI thread CPU {100 * gui['gui_cpu_share']:.1f} %")
            verdict = "PASS" if ratios[-1] >= GOAL_RATIO else "FAIL"
            print(f"engine only: {engine:.0f} steps/s -> ratio {ratios[-1]:.2f} ({verdict}, goal "
                  f"≥ {GOAL_RATIO}); load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        window.close()
        app.processEvents()
    # Medians over the repeats (one repeat: its own figures).
    print(f"train_steps_ratio={np.median(ratios):.2f} max_stall_ms={np.median(stalls):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
