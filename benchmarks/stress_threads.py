"""Stress the worker threads and Qt object lifetimes until something crashes (or nothing does).

Each cycle drives the real main window (offscreen) the way an impatient user does: changes
explorer parameters while sweeps run, starts and stops training runs and learning-rate sweeps at
random moments, steps through the guided tour (whose claims run on their own thread), opens the
sample tensor file in the Heads tab and picks heads while it is diagnosed (the explorer then
shows real q, k), captures from a tiny model (File › Open model…) and cancels or supersedes
the capture, saves it, switches
the interface language while the explorer computes, exports
a random view to PNG or SVG, forces ``gc.collect()`` on the GUI thread at random points (also
from timers that fire in the middle of a wait), and now and then closes the window mid-work and
opens a new one. Cycles run in child processes, ``--per-child`` at a
time, so that a segfault, an abort or a hang is counted instead of ending the run; each child
also fails if a worker thread or a Qt object outlives its window.

Run::

    python benchmarks/stress_threads.py [--cycles 200] [--per-child 10] [--seed 0]

The last line is exactly ``crashes=N cycles=M`` (a child that did not exit 0 counts as one
crash, and its cycles as run). CI runs a short version (``--cycles 20``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: A child gets this long per cycle (plus start-up) before it counts as hung.
SECONDS_PER_CYCLE = 30.0


def run_child(cycles: int, seed: int, automatic_gc: bool = False) -> int:
    """Run ``cycles`` stress cycles in this process; return 0 if everything ended cleanly."""
    import faulthandler
    import gc
    import random

    faulthandler.enable()
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from gui.kit.settings import SETTINGS_DIR_ENV

    settings_dir = tempfile.mkdtemp(prefix="stress-settings-")
    os.environ[SETTINGS_DIR_ENV] = settings_dir
    import numpy as np
    import shiboken6
    from PySide6.QtCore import QObject, QTimer
    from PySide6.QtWidgets import QGraphicsItem

    from engine.config import AttentionConfig, ScalingRule
    from engine.config.train import TrainConfig
    from engine.core.memory import tune_allocator
    from engine.io.tensors import write_tensors
    from gui.app import create_application
    from gui.kit import export, svg_export
    from gui.kit.qt_lifetime import release_qt_objects, wait_until
    from gui.kit.resources import sample_tensors_path
    from gui.main_window import MainWindow

    tune_allocator()  # the heap as main.py leaves it for the window
    app = create_application(headless=True)
    if automatic_gc:  # Python's own GC in any thread (the old crash), collecting often
        from gui.kit.qt_lifetime import GuiThreadCollector

        app.findChild(GuiThreadCollector).stop()
        gc.enable()
        gc.set_threshold(200, 5, 5)
    rng = random.Random(seed)
    out = Path(tempfile.mkdtemp(prefix="stress-export-"))
    base = AttentionConfig(n_tokens=32, d_k=16, d_model=16, samples=400)
    stress_rng = np.random.default_rng(seed)
    fixtures = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "models"
    models = [str(fixtures / "tiny-llama"), str(fixtures / "tiny-llama.gguf")]
    big = write_tensors(  # large enough that a scan is still running when heads are picked
        out / "big.npz", {f"layer{layer}.{part}": stress_rng.standard_normal((6, 192, 32))
                          for layer in range(4) for part in "qk"}, meta={"causal": True})
    files = (sample_tensors_path(), big)
    train = TrainConfig(rules=("none", "sqrt", "linear"), d_k=16, d_model=32, n=8, vocab=16,
                        batch=32, steps=200, eval_size=64)

    def pause(ms: int) -> None:
        """Let the event loop (and the workers) run for ``ms``, maybe collecting meanwhile."""
        if rng.random() < 0.5:
            QTimer.singleShot(rng.randrange(max(1, ms)), gc.collect)
        wait_until(None, (), ms)

    def new_window() -> MainWindow:
        window = MainWindow(config=base, restore=False, persist=False,
                            controller_options={"sweep_values": (1, 4, 16, 64, 256),
                                                "sweep_samples_cap": 400})
        window.resize(1024, 768)
        window.show()
        return window

    def close(window: MainWindow) -> None:
        window.close()
        window.shutdown()  # waits for an asynchronous close to finish
        if window.workers_running():
            raise RuntimeError("a worker thread outlived its window")
        window.deleteLater()

    window = new_window()
    for cycle in range(cycles):
        panel = window.panel
        for _ in range(rng.randrange(1, 6)):  # explorer: changes while the sweep streams
            config = base.replace(
                seed=rng.randrange(1000),
                n_tokens=rng.choice((8, 32, 128)),
                rule=rng.choice(list(ScalingRule)),
                rho=rng.choice((0.0, 0.3)),
            )
            window.controller.set_config(config)
            panel.set_config(config)
            pause(rng.randrange(0, 120))
            if rng.random() < 0.3:
                gc.collect()
        if rng.random() < 0.3:
            window.controller.cancel()
        tab = window.train_tab
        tab.panel.set_config(train.replace(seed=rng.randrange(100)))
        if tab.start_training():  # training, stopped at a random moment
            pause(rng.randrange(0, 300))
            if rng.random() < 0.3:
                tab.controller.pause()
                pause(rng.randrange(0, 50))
            tab.controller.stop()
            gc.collect()
            if not tab.wait_until_idle(20_000):
                raise RuntimeError("training did not stop")
        tab.panel.set_sweep_settings((0.003, 0.01, 0.03), 2)
        if tab.start_lr_sweep():  # a learning-rate sweep, stopped or left to run
            pause(rng.randrange(0, 300))
            if rng.random() < 0.7:
                tab.controller.stop()
            if not tab.wait_until_idle(60_000):
                raise RuntimeError("the learning-rate sweep did not end")
        if rng.random() < 0.4:  # a tour step: its claims evaluate on the tour's worker thread
            if not window.tour_dock.isVisible():
                window.tour_action.trigger()
            tour = window.tour_dock.panel
            tour.go_to(rng.randrange(tour.step_count()))
            pause(rng.randrange(0, 200))
            del tour
        if rng.random() < 0.5:  # the Heads tab: open a file, pick heads while it scans
            heads = window.heads.view
            heads.open_file(rng.choice(files))
            pause(rng.randrange(0, 60))
            if heads.controller.tensor_file() is not None:
                for _ in range(rng.randrange(1, 4)):
                    tf = heads.controller.tensor_file()
                    heads.choose_head(rng.choice(tf.layers), rng.randrange(tf.heads))
                    pause(rng.randrange(0, 80))
            if rng.random() < 0.3:
                heads.controller.cancel()
            if rng.random() < 0.3:
                window.controller.set_real_head(None)
            del heads
        if rng.random() < 0.4:  # File › Open model…: a capture, cancelled, superseded or not
            dialog = window.heads.open_model(rng.choice(models))
            dialog.set_values(text="The quick brown fox jumps over the lazy dog. "
                              * rng.randrange(1, 4))
            for _ in range(rng.randrange(1, 3)):
                dialog.findChild(object, "capture_button").click()
                pause(rng.randrange(0, 60))
            if rng.random() < 0.4:
                dialog.findChild(object, "close_button").click()  # Cancel while it runs
            pause(rng.randrange(0, 80))
            del dialog
            if rng.random() < 0.5:  # Save captured tensors… (on a worker), if one is shown
                window.heads.save_capture(out / f"capture-{cycle}.npz")
                pause(rng.randrange(0, 40))
        if rng.random() < 0.3:  # switch the language while the explorer computes
            window.controller.set_config(base.replace(seed=rng.randrange(1000)))
            window.language.set_language(rng.choice(("zh_CN", "en")))
            pause(rng.randrange(0, 100))
        views = [*window.views, *window.train_tab.views, window.heads.view]
        view = rng.choice(views)
        size = (rng.randrange(200, 900), rng.randrange(150, 700))
        if rng.random() < 0.5:
            export.export_png(view.export_item(), out / f"{cycle}.png", *size)
        else:
            svg_export.export_svg(view.export_item(), out / f"{cycle}.svg", *size)
        if rng.random() < 0.2:  # close mid-work now and then, and start over
            window.controller.set_config(base.replace(seed=rng.randrange(1000), samples=4000))
            if rng.random() < 0.5:
                tab.start_training()
            close(window)
            release_qt_objects()
            window = new_window()
        print(f"cycle {cycle + 1}/{cycles} ok", flush=True)
    window.language.set_language("en")  # English has no translator: any left is a leak
    close(window)
    del window, panel, tab, views, view
    release_qt_objects()
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(settings_dir, ignore_errors=True)
    left = [type(w).__name__ for w in shiboken6.getAllValidWrappers()
            if isinstance(w, QObject | QGraphicsItem) and w is not app
            and w is not app.thread() and type(w).__name__ != "GuiThreadCollector"
            and type(w.parent() if isinstance(w, QObject) else None).__name__
            != "GuiThreadCollector"]
    if left:
        print(f"Qt objects outlived the windows: {sorted(set(left))}", flush=True)
        return 3
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200, help="cycles in all")
    parser.add_argument("--per-child", type=int, default=10, help="cycles per child process")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first child")
    parser.add_argument("--automatic-gc", action="store_true",
                        help="leave Python's automatic GC on, with low thresholds (the "
                        "behaviour before the GUI-thread collector), to see what it did")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return run_child(args.cycles, args.seed, args.automatic_gc)
    crashes = done = 0
    child = 0
    started = time.perf_counter()
    while done < args.cycles:
        cycles = min(args.per_child, args.cycles - done)
        seed = args.seed + child
        command = [sys.executable, "-X", "faulthandler", str(Path(__file__).resolve()),
                   "--child", "--cycles", str(cycles), "--seed", str(seed)]
        if args.automatic_gc:
            command.append("--automatic-gc")
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
        try:
            result = subprocess.run(command, capture_output=True, text=True, env=env,
                                    timeout=20 + SECONDS_PER_CYCLE * cycles)
            code, output = result.returncode, result.stdout + result.stderr
        except subprocess.TimeoutExpired as exc:
            code = "hang"
            output = (exc.stdout or b"").decode(errors="replace") if isinstance(
                exc.stdout, bytes) else (exc.stdout or "")
        ok = code == 0
        crashes += not ok
        done += cycles
        child += 1
        print(f"child {child} (seed {seed}, {cycles} cycles): "
              f"{'ok' if ok else f'FAILED, exit {code}'}", flush=True)
        if not ok:
            print("  " + "\n  ".join(output.strip().splitlines()[-25:]), flush=True)
    print(f"{done} cycles in {time.perf_counter() - started:.0f} s", flush=True)
    print(f"crashes={crashes} cycles={done}")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
