"""Pushes to the training views: a slow view gets at most one push per interval and always the
final state; a push's paint comes one event-loop pass after its update."""

from __future__ import annotations

import time

import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView, QVBoxLayout, QWidget

from engine.config.train import TrainConfig
from gui.kit.axes import axis_items
from gui.kit.split_paint import SplitPaint
from gui.train.controller import DEFAULT_PUSH_INTERVAL_MS, TrainController
from gui.train.state import TrainState
from tests.gui.conftest import HANG_MS

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


def test_a_slow_view_is_pushed_at_most_once_per_interval_and_ends_on_the_final_state(slow, qtbot):
    controller, view = slow
    assert controller.start_training(LONG)
    qtbot.waitUntil(lambda: len(view.steps) >= 1, timeout=HANG_MS)
    start, pushes0 = time.perf_counter(), len(view.steps)
    # Until a dozen pushes arrived, however long a loaded machine takes for them: the bound
    # below is on the rate, so a slower machine only makes it easier to keep.
    qtbot.waitUntil(lambda: len(view.steps) >= pushes0 + 12, timeout=HANG_MS)
    elapsed = time.perf_counter() - start
    pushes = len(view.steps) - pushes0
    # Snapshots come every 50 ms; the pusher passes at most one per interval (100 ms + the
    # view's own 40 ms): about 7 a second, not 20.
    assert pushes <= elapsed / (DEFAULT_PUSH_INTERVAL_MS / 1000) + 1, (pushes, elapsed)
    assert view.steps == sorted(view.steps)
    # After Stop the view ends on the last snapshot.
    controller.stop()
    qtbot.waitUntil(lambda: controller.state() == TrainState.IDLE, timeout=HANG_MS)
    assert view.steps[-1] == controller.results().snapshot.step > view.steps[pushes0]


def test_the_scene_work_before_the_paint_counts_as_the_views_time(qtbot):
    # Between a push's update and its paint the scenes take in their changes (pyqtgraph's
    # Python runs there too): that is the views' time like the rest of the push.
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
    qtbot.waitUntil(lambda: graphics.viewport().updatesEnabled(), timeout=HANG_MS)


def test_a_split_paint_shows_the_new_range_on_the_axis_and_releases_the_viewport(qtbot):
    # The preparation passes redraw the axis for the new range before the paint: what the user
    # sees afterwards is the new data with ticks up to its new maximum.
    plot = pg.PlotWidget(axisItems=axis_items())
    qtbot.addWidget(plot)
    plot.resize(400, 300)
    plot.show()
    qtbot.waitExposed(plot)
    curve = plot.plot([0, 1, 2], [0, 1, 2])
    qtbot.wait(50)
    paint = SplitPaint()
    painted = []
    paint.painted.connect(lambda: painted.append(True))
    curve.setData([0, 1, 2], [0, 500, 1000])
    paint.paint_later([plot])
    assert paint.is_pending()
    qtbot.waitUntil(lambda: bool(painted), timeout=HANG_MS)
    assert not paint.is_pending() and plot.viewport().updatesEnabled()
    left = plot.getPlotItem().getAxis("left")
    low, high = left.range
    assert low <= 0 and high >= 1000
    ticks = [value for _spacing, values in left.tickValues(low, high, left.height())
             for value in values]
    assert max(ticks) >= 500  # drawn for the new range, not the old 0..2


def test_closing_a_split_paint_never_leaves_a_viewport_frozen(qtbot):
    plot = pg.PlotWidget(axisItems=axis_items())
    qtbot.addWidget(plot)
    plot.show()
    qtbot.waitExposed(plot)
    curve = plot.plot([0, 1], [0, 1])
    paint = SplitPaint()
    curve.setData([0, 1], [0, 9])
    paint.paint_later([plot])
    assert not plot.viewport().updatesEnabled()
    paint.close()
    assert plot.viewport().updatesEnabled() and not paint.is_pending()
