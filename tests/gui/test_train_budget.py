"""The training views' time budget: a slow view is pushed less often, never at the cost of
the final state or a prompt Stop."""

from __future__ import annotations

import time

import pytest
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView, QVBoxLayout, QWidget

from engine.config.train import TrainConfig
from gui.train.budget import PushBudget, SplitPaint
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



def test_the_budget_counts_a_paint_that_comes_after_newer_results(qtbot):
    # A push is an update and, one pass of the event loop later, a paint. Results that arrive
    # in between see only the update's cost; the push they wait for must still pay for both.
    paint = SplitPaint()
    share = 0.1
    pushes: list[float] = []
    budget = PushBudget(paint, share, lambda: pushes.append(time.perf_counter()))
    budget.request()
    assert len(pushes) == 1  # nothing spent yet: at once
    budget.pushed()
    started = time.perf_counter()
    with paint.timed():  # the push's update
        time.sleep(0.01)
    budget.request()  # newer results, before the paint
    with paint.timed():  # the paint
        time.sleep(0.04)
    spent = paint.busy_s
    qtbot.waitUntil(lambda: len(pushes) == 2, timeout=5000)
    # Not 0.01 / share after the first push (the update alone), but spent / share.
    assert pushes[1] - started >= spent / share > 0.5


def test_the_scene_work_before_the_paint_counts_as_the_views_time(qtbot):
    # Between a push's update and its paint the scenes take in their changes (pyqtgraph's
    # Python runs there too): that is the views' time like the rest of the push, and counts.
    view = QWidget()
    graphics = QGraphicsView(QGraphicsScene(view))
    QVBoxLayout(view).addWidget(graphics)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    rect = graphics.scene().addRect(0, 0, 10, 10)
    paint = SplitPaint()
    rect.setRect(0, 0, 20, 20)  # a change for the scene to take in
    paint.paint_later([view])
    assert paint.busy_s > 0
    assert not graphics.viewport().updatesEnabled()
    qtbot.waitUntil(lambda: graphics.viewport().updatesEnabled(), timeout=2000)
