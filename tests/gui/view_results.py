"""Explorer results from real engine output for a small configuration, and what a user reads
off a view: its notes, legends and reference lines (the explorer view tests share them)."""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QTextDocument

from engine.analysis.correlation import correlation_rms
from engine.analysis.experiment import run_experiment, temperature_comparison
from engine.analysis.sweep import run_sweep
from engine.config import AttentionConfig, ScalingRule, SweepConfig
from gui.explorer.results import ExplorerResults
from gui.explorer.views import ExplorerView
from gui.kit.cell_items import WrappingLabel

CONFIG = AttentionConfig(n_tokens=16, d_k=16, heads=2, d_model=32, query_row=5, samples=200)
SWEEP = SweepConfig(values=(1, 4, 16, 64, 256),
                    rules=(ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR),
                    n_tokens=16, samples=200)
CORR_D_K = (1, 4, 16, 64, 256)
T_SQRT = math.sqrt(CONFIG.d_k)


@functools.cache
def engine_parts() -> dict[str, object]:
    """Real engine output for :data:`CONFIG` (pure numpy, computed once per test run)."""
    return {
        "snapshot": run_experiment(CONFIG, rules=tuple(ScalingRule)),
        "sweep": tuple(run_sweep(SWEEP)),
        "temperature_sqrt": temperature_comparison(CONFIG, T_SQRT),
        "temperature_3": temperature_comparison(CONFIG, 3.0),
        "correlation": correlation_rms(CORR_D_K, CONFIG.rho, 2000, CONFIG.seed),
        "correlation_rho": correlation_rms(CORR_D_K, 0.6, 2000, CONFIG.seed),
    }


def make_results(**changes: object) -> ExplorerResults:
    """Results of :data:`CONFIG` with the snapshot, sweep, temperature and correlation done."""
    parts = engine_parts()
    return ExplorerResults(
        config=CONFIG, snapshot=parts["snapshot"], temperature=T_SQRT,
        temperature_comparison=parts["temperature_sqrt"], sweep_points=parts["sweep"],
        sweep_done=True, correlation=parts["correlation"],
    ).replace(**changes)


def build(qtbot, cls: type[ExplorerView]) -> ExplorerView:
    view = cls()
    qtbot.addWidget(view)
    view.resize(1000, 700)
    return view


def sweep_values(points, rule: ScalingRule, field: str) -> tuple[np.ndarray, np.ndarray]:
    """The values and ``field`` of ``rule``'s sweep points, by value."""
    pts = sorted((p for p in points if p.rule == rule), key=lambda p: p.value)
    return (np.array([p.value for p in pts], dtype=float),
            np.array([getattr(p, field) for p in pts], dtype=float))


def notes(view: ExplorerView) -> list[str]:
    """The plain text of every note of the view (its layout-cell labels), as the user reads it."""
    document = QTextDocument()
    texts = []
    for item in view.export_item().scene().items():
        if isinstance(item, WrappingLabel):
            document.setHtml(item.text)
            texts.append(document.toPlainText())
    return texts


def legend_texts(view: ExplorerView) -> list[str]:
    """The entries of every legend of the view."""
    return [label.text for item in view.export_item().scene().items()
            if isinstance(item, pg.LegendItem) for _, label in item.items]


def reference_lines(plot: pg.PlotItem, angle: float = 0) -> list[float]:
    """The positions of the plot's visible straight reference lines (horizontal unless
    ``angle``)."""
    return [line.value() for line in plot.items if isinstance(line, pg.InfiniteLine)
            and line.angle == angle and line.isVisible()]


def point_at_cell(view: ExplorerView, panel: int, i: int, j: int) -> None:
    """Move the pointer over cell (query i, key j) of the heatmap's ``panel``."""
    box = view.panel_images()[panel].getViewBox()
    view.export_item().scene().sigMouseMoved.emit(box.mapViewToScene(QPointF(j + 0.5, i + 0.5)))
