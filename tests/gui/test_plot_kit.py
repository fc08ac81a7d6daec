"""The plot kit's axis and note draw what pyqtgraph would, without moving the layout."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter

from gui.kit import style
from gui.kit.axes import PlotAxis

WIDTH, HEIGHT = 420, 300


def render_grid(qtbot, axis_class: type[pg.AxisItem], scale: int) -> np.ndarray:
    """A styled plot (grid on) of fixed ranges, rendered at ``scale`` × its size: grey levels."""
    widget = pg.PlotWidget(axisItems={"left": axis_class("left"),
                                      "bottom": axis_class("bottom")})
    qtbot.addWidget(widget)
    widget.setBackground(style.BACKGROUND)
    plot = widget.getPlotItem()
    style.style_plot(plot)
    plot.setXRange(0.0, 10.0, padding=0)
    plot.setYRange(0.0, 7.0, padding=0)
    widget.resize(WIDTH, HEIGHT)
    widget.show()
    qtbot.waitExposed(widget)
    image = QImage(WIDTH * scale, HEIGHT * scale, QImage.Format.Format_ARGB32)
    image.fill(0xFFFFFFFF)
    painter = QPainter(image)
    widget.scene().render(painter, QRectF(image.rect()), widget.sceneRect())
    painter.end()
    image = image.convertToFormat(QImage.Format.Format_Grayscale8)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(),
                                                              image.bytesPerLine())
    return rows[:, :image.width()].astype(int)


def near(mask: np.ndarray, other: np.ndarray, pixels: int) -> float:
    """Share of ``mask``'s pixels that have a pixel of ``other`` within ``pixels``."""
    grown = other.copy()
    for dy in range(-pixels, pixels + 1):
        for dx in range(-pixels, pixels + 1):
            grown |= np.roll(np.roll(other, dy, axis=0), dx, axis=1)
    return float((mask & grown).sum() / max(mask.sum(), 1))


@pytest.mark.parametrize("scale", [1, 2])
def test_filled_grid_lines_cover_the_pixels_pyqtgraph_strokes(qtbot, scale):
    stroked = render_grid(qtbot, pg.AxisItem, scale)
    filled = render_grid(qtbot, PlotAxis, scale)
    # The faint grid: pixels a little darker than the white background.
    grid_stroked = (stroked < 250) & (stroked > 150)
    grid_filled = (filled < 250) & (filled > 150)
    assert grid_stroked.sum() > 1000 * scale
    assert near(grid_stroked, grid_filled, 1) > 0.97
    assert near(grid_filled, grid_stroked, 1) > 0.97
    # As light as before, and one device pixel thick at every scale (cosmetic, like a line).
    assert abs(filled[grid_filled].mean() - stroked[grid_stroked].mean()) < 6
    assert abs(int(grid_filled.sum()) - int(grid_stroked.sum())) < 0.05 * grid_stroked.sum()


def test_a_log_axis_keeps_its_room_for_text_when_the_labels_shrink(qtbot):
    widget = pg.PlotWidget(axisItems=style.log_axis_items())
    qtbot.addWidget(widget)
    plot = widget.getPlotItem()
    style.style_plot(plot)
    style.set_log_mode(plot, x=True, y=True)
    widget.resize(WIDTH, HEIGHT)
    widget.show()
    qtbot.waitExposed(widget)
    axis = plot.getAxis("left")
    widths = []
    for low, high in ((0.0, 1.0), (-4.0, 4.0), (0.0, 1.0), (-6.0, 6.0)):
        plot.setYRange(low, high, padding=0)
        widget.grab()  # paints, which lays the tick text out
        qtbot.wait(20)
        widths.append(axis.width())
    assert widths[1] > widths[0]  # "0.0001" needs more room than "1"
    assert widths == sorted(widths)  # and the room never shrinks back
    assert len(set(widths)) <= 3


def test_a_note_with_reserved_text_keeps_its_height(qtbot):
    widget = pg.GraphicsLayoutWidget()
    qtbot.addWidget(widget)
    plot = widget.addPlot(row=0, col=0)
    note = style.make_label()
    widget.addItem(note, row=1, col=0)
    widget.resize(500, 400)
    widget.show()
    qtbot.waitExposed(widget)
    short = "Markers: Monte Carlo."
    long = short + " Sweep running: 44 of 44 points." * 6
    note.setText(short)
    qtbot.wait(20)
    short_height = note.geometry().height()
    note.setText(long)
    qtbot.wait(20)
    long_height = note.geometry().height()
    assert long_height > short_height  # the long text wraps to more lines
    note.reserve_text(long)
    note.setText(short)
    qtbot.wait(20)
    plot_rect = plot.geometry()
    assert note.geometry().height() == pytest.approx(long_height, abs=0.5)
    note.setText(short + " Sweep running: 3 of 44 points.")
    qtbot.wait(20)
    assert note.geometry().height() == pytest.approx(long_height, abs=0.5)
    assert plot.geometry() == plot_rect  # the plot above it did not move
    note.reserve_text("")
    note.setText(short)
    qtbot.wait(20)
    assert note.geometry().height() == pytest.approx(short_height, abs=0.5)
