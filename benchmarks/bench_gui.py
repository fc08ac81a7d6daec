"""GUI responsiveness benchmark (offscreen).

Measures, in the real main window:

* latency from a parameter-panel change to every visible view updated and painted (the
  controller's ``resultsPainted``, after the split paint's last pass; median and p95) at
  n = 256 for d_k = 64 and d_k = 1024; the view in front cycles through all the explorer
  tabs, so every view's update and paint is part of the figures;
* for information, the tab switch before each change: from ``show_view`` to the new view
  shown and painted once, and until its last catch-up paint (no goal);
* the longest event-loop stall while a full d_k sweep (and the length view's n sweep)
  streams in, with each explorer view in front in turn: a 5 ms heartbeat ``QTimer`` records
  how late it fires; then the same sweeps with each push painted in the pass that made it
  (the split paint switched off), for the ratio printed at the end.

Goals: p95 latency ≤ 30 ms, stall ≤ 30 ms. Run::

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_gui.py [--repeats 20]

The last line is exactly ``latency_p95_ms=<x> max_stall_ms=<y>``. ``BENCH_VERBOSE=1`` prints
each change's latency with the view in front.
"""

from __future__ import annotations

import argparse
import contextlib
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
import pyqtgraph as pg  # noqa: E402
from PySide6.QtCore import QEvent, QEventLoop, QObject, Qt, QTimer, Slot  # noqa: E402

from engine.config import AttentionConfig  # noqa: E402
from gui.app import create_application  # noqa: E402
from gui.kit.settings import SETTINGS_DIR_ENV  # noqa: E402
from gui.kit.split_paint import SplitPaint  # noqa: E402

HEARTBEAT_MS = 5


class LatencyProbe(QObject):
    """Stops the clock when results for the expected config have been shown and painted."""

    def __init__(self, window) -> None:
        super().__init__()
        self.window = window
        self.expected = None
        self.t0 = 0.0
        self.shown = False
        self.latency = None
        self.loop: QEventLoop | None = None

    @Slot(object)
    def on_shown(self, results) -> None:
        if self.expected is None or results.config != self.expected or self.latency is not None:
            return
        self.shown = True

    @Slot()
    def on_painted(self) -> None:
        """The views' paint of a push (one or more event-loop passes after it) is done."""
        if not self.shown or self.latency is not None:
            return
        self.window.statusBar().repaint()
        self.latency = time.perf_counter() - self.t0
        if self.loop is not None:
            self.loop.quit()


def repaint_visible_plots(window) -> None:
    """Paint every visible plot now (see :meth:`LatencyProbe.on_shown`)."""
    for graphics_view in window.findChildren(pg.GraphicsView):
        if graphics_view.isVisible():
            graphics_view.viewport().repaint()


class PaintWatcher(QObject):
    """Records when any plot viewport of the window last received a paint event."""

    def __init__(self, window) -> None:
        super().__init__()
        self.last_paint = time.perf_counter()
        for graphics_view in window.findChildren(pg.GraphicsView):
            graphics_view.viewport().installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # Qt override
        if event.type() == QEvent.Type.Paint:
            self.last_paint = time.perf_counter()
        return False

    def wait_quiet(self, quiet_ms: int, timeout_ms: int = 5000) -> float:
        """Process events until no plot has painted for ``quiet_ms``; return when the last did."""
        deadline = time.perf_counter() + timeout_ms / 1000
        while time.perf_counter() < deadline:
            wait_ms(20)
            if time.perf_counter() - self.last_paint >= quiet_ms / 1000:
                break
        return self.last_paint


class Heartbeat(QObject):
    """A 5 ms timer that records how late each tick arrives."""

    def __init__(self) -> None:
        super().__init__()
        self.timer = QTimer(self)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(self.tick)
        self.last = 0.0
        self.lateness: list[float] = []

    def start(self) -> None:
        self.last = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    @Slot()
    def tick(self) -> None:
        now = time.perf_counter()
        self.lateness.append(max(0.0, now - self.last - HEARTBEAT_MS / 1000))
        self.last = now


def wait_ms(ms: int) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def measure_latency(window, probe: LatencyProbe, repeats: int,
                    switches: list[tuple[float, float]] | None = None) -> list[float]:
    """Alternate σ between two values (the sweep does not depend on σ and is reused).

    Before each change (outside the timed part) the next view is brought to the front; when
    ``switches`` is given, each switch appends (ms to the first paint, ms to the last paint).
    """
    latencies = []
    keys = [view.key for view in window.views]
    watcher = PaintWatcher(window)
    for i in range(repeats):
        t_switch = time.perf_counter()
        window.show_view(keys[i % len(keys)])
        repaint_visible_plots(window)
        first_paint = time.perf_counter() - t_switch
        # The newly shown tab catches up (a view hidden while results arrived shows them
        # now, and its first paints re-lay out the axes for the new tick text) before the
        # clock starts: the figure is a control change, not a tab switch.
        last_paint = watcher.wait_quiet(100) - t_switch
        wait_ms(50)
        if switches is not None:
            switches.append((first_paint * 1000, max(first_paint, last_paint) * 1000))
        target = 1.0 + 0.01 * ((i % 2) + 1)
        probe.expected = window.panel.config().replace(init_std=target)
        probe.latency = None
        probe.shown = False
        loop = QEventLoop()
        probe.loop = loop
        QTimer.singleShot(5000, loop.quit)
        probe.t0 = time.perf_counter()
        window.panel.init_std.spin.setValue(target)
        if probe.latency is None:
            loop.exec()
        probe.loop = None
        if probe.latency is None:
            raise RuntimeError("no results within 5 s")
        latencies.append(probe.latency * 1000)
        if os.environ.get("BENCH_VERBOSE"):
            print(f"      {keys[i % len(keys)]:12s} {probe.latency * 1000:6.1f} ms")
        window.wait_until_settled(60_000)
        wait_ms(80)  # let the input throttle window expire: measure isolated changes
    return latencies


def measure_stalls(window, heartbeat: Heartbeat, seed: int,
                   split: bool = True) -> dict[str, tuple[float, float]]:
    """Per explorer view in front: (max stall ms, sweep seconds) of a full sweep.

    ``split=False`` paints each push in the pass that made it (no :class:`SplitPaint`), for
    the comparison printed at the end.
    """
    stalls = {}
    for index, view in enumerate(window.views):
        window.show_view(view.key)
        window.wait_until_settled(60_000)
        wait_ms(100)
        with paint_split(split):
            stalls[view.key] = measure_stall(window, heartbeat, seed + index)
    return stalls


@contextlib.contextmanager
def paint_split(split: bool):
    """Within the block, pushes are painted split over passes (the app's way) or at once."""
    original = SplitPaint.paint_later
    if not split:
        SplitPaint.paint_later = lambda self, views: None
    try:
        yield
    finally:
        SplitPaint.paint_later = original


def measure_stall(window, heartbeat: Heartbeat, seed: int) -> tuple[float, float]:
    """Run a full sweep (new seed) with the heartbeat; return (max stall ms, sweep seconds)."""
    heartbeat.lateness.clear()
    heartbeat.start()
    t0 = time.perf_counter()
    window.panel.seed.setValue(seed)
    ok = window.wait_until_settled(120_000)
    elapsed = time.perf_counter() - t0
    heartbeat.stop()
    if not ok:
        raise RuntimeError("the sweep did not finish")
    return max(heartbeat.lateness) * 1000, elapsed


def engine_time_ms(config: AttentionConfig, temperature: float, repeats: int = 9) -> float:
    """Median time of the worker's fast part computed synchronously (same load, no Qt).

    Same work as the worker does for a σ change: BLAS limited to one thread, the
    correlation result re-used (it depends only on ρ, samples and seed).
    """
    from engine.analysis.explorer import (
        Computed,
        compute_correlation,
        iter_plan,
        plan_full,
        sweep_config_for,
    )
    from engine.core.threads import limit_blas_threads

    # σ enters neither the correlation nor the sweep: the plan re-uses both.
    computed = Computed(config, correlation=compute_correlation(config),
                        sweep=sweep_config_for(config))
    times = []
    with limit_blas_threads(1):
        for i in range(repeats):
            changed = config.replace(init_std=config.init_std * (1.0 + 0.001 * (i + 1)))
            t0 = time.perf_counter()
            for _part in iter_plan(plan_full(changed, temperature, computed)):
                pass
            times.append((time.perf_counter() - t0) * 1000)
    return float(np.median(times))


def grid_line_times(lines: int = 60, repeats: int = 15) -> tuple[float, float]:
    """Median ms to draw ``lines`` translucent horizontal grid lines of a 430 px plot as
    pyqtgraph strokes them (cosmetic, not antialiased) and as ``PlotAxis`` fills them."""
    from PySide6.QtCore import QPointF, QRectF
    from PySide6.QtGui import QColor, QImage, QPainter

    from gui.kit import style

    image = QImage(600, 400, QImage.Format.Format_ARGB32_Premultiplied)
    color = QColor(style.FOREGROUND)
    color.setAlpha(40)
    pen = pg.mkPen(color, width=1)

    def stroke(painter: QPainter, y: float) -> None:
        painter.setPen(pen)
        painter.drawLine(QPointF(50, y), QPointF(480, y))

    def fill(painter: QPainter, y: float) -> None:
        painter.fillRect(QRectF(50, y - 0.5, 431, 1), color)

    medians = []
    for draw in (stroke, fill):
        times = []
        for _ in range(repeats):
            painter = QPainter(image)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            t0 = time.perf_counter()
            for i in range(lines):
                draw(painter, 10.3 + i * 6.1)
            times.append((time.perf_counter() - t0) * 1000)
            painter.end()
        medians.append(float(np.median(times)))
    return medians[0], medians[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="changes per d_k")
    parser.add_argument("--n", type=int, default=256)
    args = parser.parse_args()

    settings_dir = tempfile.mkdtemp(prefix="bench-gui-settings-")
    os.environ[SETTINGS_DIR_ENV] = settings_dir  # never touch the user's settings
    app = create_application(headless=True)
    from gui.main_window import MainWindow

    window = MainWindow(config=AttentionConfig(n_tokens=args.n), restore=False, persist=False)
    window.resize(1280, 800)
    window.show()
    probe = LatencyProbe(window)
    window.controller.resultsShown.connect(probe.on_shown)
    window.controller.resultsPainted.connect(probe.on_painted)
    heartbeat = Heartbeat()
    all_latencies: list[float] = []
    stalls: list[float] = []
    unsplit_stalls: list[float] = []
    switches: list[tuple[float, float]] = []
    try:
        window.wait_until_settled(120_000)
        for d_k in (64, 1024):
            config = window.panel.config().replace(d_k=d_k, d_model=d_k, init_std=1.0)
            window.panel.set_config(config)
            window.controller.set_config(config)
            window.wait_until_settled(120_000)
            latencies = measure_latency(window, probe, args.repeats, switches)
            engine_ms = engine_time_ms(window.panel.config(), window.controller.temperature())
            per_view = measure_stalls(window, heartbeat, seed=d_k)
            # The same sweeps once more with every push painted in its own pass.
            unsplit = measure_stalls(window, heartbeat, seed=d_k, split=False)
            unsplit_stalls.append(max(worst for worst, _ in unsplit.values()))
            all_latencies.extend(latencies)
            stall = max(worst for worst, _ in per_view.values())
            stalls.append(stall)
            sweep_s = float(np.median([seconds for _, seconds in per_view.values()]))
            print(f"n={args.n} d_k={d_k}: latency median {np.median(latencies):.1f} ms, "
                  f"p95 {np.percentile(latencies, 95):.1f} ms, max {max(latencies):.1f} ms; "
                  f"sweep {sweep_s:.2f} s (median), max event-loop stall {stall:.1f} ms")
            print("    stall with the view in front: " + ", ".join(
                f"{key} {worst:.1f}" for key, (worst, _) in per_view.items()))
            print("    the same, each push painted in one pass (no split paint): " + ", ".join(
                f"{key} {worst:.1f}" for key, (worst, _) in unsplit.items()))
            print(f"    engine fast part alone (run_experiment + temperature comparison): "
                  f"median {engine_ms:.1f} ms -> GUI, thread hand-over and paint "
                  f"{np.median(latencies) - engine_ms:.1f} ms of the median latency")
    finally:
        window.close()
        window.deleteLater()
        app.processEvents()
    first, last = (np.array(column) for column in zip(*switches, strict=True))
    print(f"tab switch (no goal): shown and painted median {np.median(first):.1f} ms, "
          f"max {first.max():.1f} ms; last catch-up paint median {np.median(last):.1f} ms, "
          f"max {last.max():.1f} ms")
    stroked, filled = grid_line_times()
    print(f"60 translucent grid lines (no goal): stroked {stroked:.2f} ms, filled as PlotAxis "
          f"does {filled:.2f} ms, ratio {stroked / filled:.0f}")
    print(f"max stall split over passes {max(stalls):.1f} ms, painted in one pass "
          f"{max(unsplit_stalls):.1f} ms: ratio {max(stalls) / max(unsplit_stalls):.2f}")
    p95 = float(np.percentile(all_latencies, 95))
    print(f"goals: p95 <= 30 ms ({'met' if p95 <= 30 else 'NOT met'}), "
          f"stall <= 30 ms ({'met' if max(stalls) <= 30 else 'NOT met'})")
    print(f"latency_p95_ms={p95:.1f} max_stall_ms={max(stalls):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
