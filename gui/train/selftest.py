"""Drive the Train tab's buttons once (Start, Pause, Resume, Stop) for ``--self-test``.

Waits run a ``QEventLoop`` bounded by a timer and woken by the controller's GUI-thread
signals (never by spinning ``processEvents``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gui.qt_lifetime import wait_until
from gui.train.controller import TrainState
from gui.train.tab import DEMO_CONFIG, TrainTab

__all__ = ["drive_train_buttons", "wait_for"]

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
