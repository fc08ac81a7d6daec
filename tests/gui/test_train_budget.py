"""The training views' time budget: a slow view is pushed less often, never at the cost of
the final state or a prompt Stop."""

from __future__ import annotations

import time

import pytest

from engine.config.train import TrainConfig
from gui.train.controller import VIEW_SHARE, TrainController
from gui.train.state import TrainState

LONG = TrainConfig(rules=("none", "sqrt"), d_k=16, d_model=32, n=8, vocab=16, batch=32,
                   steps=100_000, lr=0.01, eval_size=64)

#: Seconds one push to the slow view takes (like the curves' update and paint under load).
SLOW_S = 0.04


class SlowView:
    """Records the step of every snapshot it is shown, taking ``SLOW_S`` for each."""

    def __init__(self) -> None:
        self.steps: list[int] = []

    def show_results(self, results) -> None:
        if results.snapshot is not None:
            self.steps.append(int(results.snapshot.step))
            time.sleep(SLOW_S)

    def clear(self) -> None:
        self.steps.clear()


@pytest.fixture
def slow(qtbot):
    view = SlowView()
    controller = TrainController([view])
    yield controller, view
    assert controller.shutdown(5000)
    assert not controller.is_running()


def test_a_slow_view_gets_its_share_and_the_final_state(slow, qtbot):
    controller, view = slow
    assert controller.start_training(LONG)
    qtbot.waitUntil(lambda: len(view.steps) >= 1, timeout=20_000)
    start, pushes0 = time.perf_counter(), len(view.steps)
    qtbot.wait(2000)
    elapsed = time.perf_counter() - start
    pushes = len(view.steps) - pushes0
    # Each push takes ≥ SLOW_S, so the budget spaces them ≥ SLOW_S / VIEW_SHARE apart (0.67 s);
    # without it they would come every DEFAULT_PUSH_INTERVAL_MS (~20 in these 2 s).
    assert pushes <= elapsed * VIEW_SHARE / SLOW_S + 1, (pushes, elapsed)
    # After Stop the view ends on the last snapshot, whatever the budget still owed.
    controller.stop()
    qtbot.waitUntil(lambda: controller.state() == TrainState.IDLE, timeout=5000)
    assert view.steps[-1] == controller.results().snapshot.step > view.steps[pushes0]

