"""The Train tab in the headless commands: the demo run of ``export`` and ``--self-test``, and
driving the tab's buttons once (Start, Pause, Resume, Stop) for ``--self-test``.

Waits run a ``QEventLoop`` bounded by a timer and woken by the controller's GUI-thread
signals (never by spinning ``processEvents``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from engine.config.train import TrainConfig
from gui.kit.qt_lifetime import wait_until
from gui.train.state import TrainState
from gui.train.tab import DEMO_CONFIG, TrainTab

__all__ = ["HEADLESS_DEMO_CONFIG", "HEADLESS_DEMO_LRS", "HEADLESS_DEMO_SEEDS",
           "drive_train_buttons", "run_headless_demo", "wait_for"]

#: The Train views of ``export`` and ``--self-test`` show this run and sweep: docs/training.md's
#: retrieval task shrunk to run in a few seconds (d_model 32, n 8, 150 steps, 2 seeds
#: instead of d_model 64, n 16, 500 steps, 3 seeds). It still shows docs/training.md's d_k 16 row:
#: the largest stable lr is 0.01 without scaling, 0.03 for 1/√d_k and 1/d_k, and every rule
#: fails at 0.1. (A 60-step run with lrs up to 3 found "no stable lr" for none, contradicting
#: docs/training.md.) The sweep view's caption states d_k, seeds and steps.
HEADLESS_DEMO_CONFIG = TrainConfig(
    d_k=16, d_model=32, n=8, vocab=16, batch=32, steps=150, lr=0.01, eval_size=64
)
HEADLESS_DEMO_LRS: tuple[float, ...] = (0.01, 0.03, 0.1)
HEADLESS_DEMO_SEEDS = 2

#: Long enough that the run is still going when Stop is pressed.
_LONG_STEPS = 100_000


def wait_for(tab: TrainTab, condition: Callable[[], bool] | None, timeout_ms: int) -> bool:
    """Run an event loop until ``condition()`` holds (checked on every push and state change)
    or ``timeout_ms`` passes; ``None`` just waits ``timeout_ms``. Returns the final condition.
    """
    controller = tab.controller
    return wait_until(condition, (controller.resultsShown, controller.stateChanged), timeout_ms)


def drive_train_buttons(tab: TrainTab, timeout_ms: int = 20_000) -> list[tuple[str, str]]:
    """Press Start, Pause, Resume and Stop once; return ``(step name, failure reason)`` pairs
    (reason "" when the step passed; the Stop step's name carries the measured time).
    """
    panel, controller = tab.panel, tab.controller
    out: list[tuple[str, str]] = []

    def step() -> int:
        snap = controller.results().snapshot
        return -1 if snap is None else int(snap.step)

    panel.set_config(DEMO_CONFIG.replace(steps=_LONG_STEPS))
    panel.start_button.click()
    ok = wait_for(tab, lambda: step() >= 20, timeout_ms)
    out.append(("train Start", "" if ok else "no training progress after Start"))
    if not ok:
        controller.stop()
        tab.wait_until_idle(timeout_ms)
        return out
    panel.pause_button.click()
    wait_for(tab, None, 100)  # a snapshot already in flight may still arrive
    held = step()
    wait_for(tab, None, 250)
    paused = controller.state() == TrainState.PAUSED and step() == held
    out.append(("train Pause", "" if paused else f"step moved while paused ({held} → {step()})"))
    panel.resume_button.click()
    ok = wait_for(tab, lambda: step() > held, timeout_ms)
    out.append(("train Resume", "" if ok else "no progress after Resume"))
    t0 = time.perf_counter()
    panel.stop_button.click()
    idle = tab.wait_until_idle(timeout_ms)
    elapsed = time.perf_counter() - t0
    reason = "" if idle and step() < _LONG_STEPS else "the run did not stop"
    out.append((f"train Stop ({1000 * elapsed:.0f} ms)", reason))
    panel.reset_button.click()
    return out


def run_headless_demo(tab: TrainTab, timeout_ms: int = 60_000) -> str:
    """Train :data:`HEADLESS_DEMO_CONFIG` and sweep :data:`HEADLESS_DEMO_LRS` through the real
    worker, so that the training views hold real data; return "" on success, else the reason.
    """
    tab.panel.set_config(HEADLESS_DEMO_CONFIG)
    tab.panel.set_sweep_settings(HEADLESS_DEMO_LRS, HEADLESS_DEMO_SEEDS)
    for start, what in (
        (tab.start_training, "training"),
        (tab.start_lr_sweep, "learning-rate sweep"),
    ):
        if not start():
            return f"{what} did not start: {tab.panel.error_text() or 'busy'}"
        if not tab.wait_until_idle(timeout_ms):
            return f"{what} did not finish in time"
        if tab.controller.last_error():
            return f"{what} failed: {tab.controller.last_error()}"
    tab.show_view(tab.curves.key)
    results = tab.controller.results()
    if results.snapshot is None or not results.snapshot.done:
        return "the training run did not finish"
    if results.sweep_result is None:
        return "the learning-rate sweep did not finish"
    return ""
