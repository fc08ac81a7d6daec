"""What every explorer view shares: the registry, the plot-view contract, the rule styles,
Reset view, legends that keep their place, and CSV numbers written as the engine writes them."""

from __future__ import annotations

import csv
import dataclasses
import io
import math

import numpy as np
import pytest
from PySide6.QtGui import QImage

from engine.analysis.sweep import SWEEP_CSV_COLUMNS, write_sweep_csv
from engine.config import ScalingRule
from gui.explorer.views import (
    ALL_VIEWS,
    CorrelationView,
    ExplorerView,
    GradientView,
    HistogramView,
    LawsView,
    SoftmaxView,
    TemperatureView,
    view_class,
)
from gui.kit import export, style
from gui.kit.plot_view import PlotView
from gui.kit.session import VIEW_KEYS
from gui.train.results import TrainResults
from gui.train.view import TrainView
from tests.gui.view_results import build, make_results


def test_registry_lists_every_view_once_in_display_order(qtbot):
    keys = [cls.key for cls in ALL_VIEWS]
    # The session's registry of view keys lists the explorer's first, in display order.
    assert keys == list(VIEW_KEYS[:len(keys)]) and len(set(keys)) == len(keys)
    assert view_class("laws") is LawsView
    with pytest.raises(ValueError, match="unknown view key"):
        view_class("nope")
    for cls in ALL_VIEWS:
        view = build(qtbot, cls)
        assert isinstance(view, ExplorerView) and not isinstance(view, TrainView)
        assert view.title().strip()
        # Before any results: no data, but the contract calls work.
        header, rows = view.data_table()
        assert header and rows == []
        view.reset_view()


def test_train_views_are_train_plot_views(qtbot):
    from gui.train.curves import TrainCurvesView
    from gui.train.lr_sweep_view import LrSweepView
    from gui.train.probe import ProbeView

    for cls in (TrainCurvesView, ProbeView, LrSweepView):
        view = cls()
        qtbot.addWidget(view)
        assert isinstance(view, TrainView) and isinstance(view, PlotView)
        assert not isinstance(view, ExplorerView)
        view.show_results(TrainResults())  # nothing trained yet: empty plots
        header, rows = view.data_table()
        assert header and rows == []


def test_every_rule_has_its_own_colour_and_symbol():
    colours = {style.RULE_COLORS[r] for r in ScalingRule}
    symbols = {style.rule_symbol(r) for r in ScalingRule}
    assert len(colours) == len(ScalingRule) and len(symbols) == len(ScalingRule)


@pytest.mark.parametrize("cls", [SoftmaxView, HistogramView, CorrelationView, LawsView])
def test_reset_view_undoes_a_zoom_on_every_plot(qtbot, cls):
    view = build(qtbot, cls)
    view.show_results(make_results())
    plots = view.plots()
    assert plots
    for plot in plots:
        plot.setRange(xRange=(1e-3, 2e-3), yRange=(1e-3, 2e-3), padding=0)
        assert not any(plot.vb.autoRangeEnabled())
    view.reset_view()
    for plot in plots:
        x_range = plot.vb.viewRange()[0]
        assert x_range[1] - x_range[0] > 2e-3  # no longer the tiny zoom window


def _frame_edges(image: QImage, top_px: int = 140, run_px: int = 150) -> tuple[int, int]:
    """First row and column, in the image's top band, crossed by a long line of frame grey.

    The legends' frame (pen #999999, 1 px) is a neutral grey line, or two lighter ones where
    it is antialiased across pixels; the band above the plots holds nothing else that long and
    grey. -1 when there is none.
    """
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    width = image.width()
    pixels = np.frombuffer(image.constBits(), dtype=np.uint8,
                           count=width * image.height() * 4).reshape(-1, width, 4)
    band = pixels[:top_px, :, :3].astype(int)
    grey = ((band >= 140) & (band <= 230)).all(axis=-1) & (np.ptp(band, axis=-1) <= 4)

    def lines(mask: np.ndarray, length: int) -> np.ndarray:
        sums = np.cumsum(np.pad(mask, ((0, 0), (1, 0))), axis=1)
        return np.nonzero((sums[:, length:] - sums[:, :-length] == length).any(axis=1))[0]

    rows, cols = lines(grey, run_px), lines(grey.T, 20)
    return (int(rows[0]) if rows.size else -1), (int(cols[0]) if cols.size else -1)


@pytest.mark.parametrize("cls", [SoftmaxView, TemperatureView, CorrelationView, LawsView,
                                 GradientView], ids=lambda cls: cls.key)
def test_a_relabelled_legend_keeps_its_place_on_screen_and_in_the_png(qtbot, cls, tmp_path):
    # Results relabel the legend; pyqtgraph then moved it to its parent's corner, where its
    # frame's top and left lines fell outside the picture, until a resize laid the view out.
    view = build(qtbot, cls)
    view.show()
    qtbot.waitExposed(view)
    view.show_results(make_results())
    qtbot.wait(50)  # a few frames: the screen shows the layout that the events leave
    screen = view.export_item().grab().toImage()
    path = export.export_png(view.export_item(), tmp_path / f"{cls.key}.png", 1000, 700)
    for name, image in (("screen", screen), ("png", QImage(str(path)))):
        top, left = _frame_edges(image)
        assert top >= 2 and left >= 2, f"{name}: legend frame starts at row {top}, col {left}"


def test_a_view_csv_writes_sweep_numbers_as_the_engine_sweep_csv_does(qtbot, tmp_path):
    points = make_results().sweep_points
    missing = dataclasses.replace(points[0], logit_var=math.nan)
    view = build(qtbot, LawsView)
    view.show_results(make_results(sweep_points=(missing, *points[1:])))
    header, rows = view.data_table()
    path = export.export_csv(header, rows, tmp_path / "laws.csv")
    text = path.read_text(encoding="utf-8")
    assert "\r" not in text
    ours = next(row for row in csv.DictReader(io.StringIO(text)) if row["logit_var"] == "nan")
    engine_csv = io.StringIO()
    write_sweep_csv([missing], engine_csv)
    theirs = next(csv.DictReader(io.StringIO(engine_csv.getvalue())))
    assert set(SWEEP_CSV_COLUMNS) >= {"rule", "logit_var", "entropy_mean", "p_max_mean"}
    for column in ("rule", "logit_var", "entropy_mean", "p_max_mean", "saturated_share"):
        assert ours[column] == theirs[column], column
