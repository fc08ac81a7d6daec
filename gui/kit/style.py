"""Shared look of every view: one colour, marker and line style per scaling rule, fonts, pens.

Rule colours are the Okabe–Ito palette (distinguishable under the common colour-vision
deficiencies), and each rule has its own marker so that greyscale print-outs stay readable;
views never pick colours themselves. The plots keep a light theme of their own (dark on white
survives projectors and exported PNGs best).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsWidget

from engine.config import RULES, ScalingRule
from gui.kit.axes import PlotAxis
from gui.kit.cell_items import CellLegend, WrappingLabel
from gui.kit.i18n import translate
from gui.kit.presentation import ScalableLayoutWidget

__all__ = [
    "BACKGROUND", "DENSE_CURVE", "FOREGROUND", "HEATMAP_COLORMAP", "HIGHLIGHT_COLOR",
    "LABEL_PT", "MARKER_MAX_POINTS", "RULE_COLORS", "RULE_WORDS", "TEXT_PT", "THEORY_COLOR",
    "TITLE_PT", "axis_label_html", "font", "label_plot", "layer_name", "log_axis_items",
    "make_label", "make_layout_widget", "make_legend", "make_text_item", "ordered_rules",
    "relayout", "rule_brush", "rule_color", "rule_curve", "rule_name", "rule_pen",
    "rule_symbol", "set_log_mode", "set_markers", "style_plot",
]

#: Plot background and text colours (light theme, chosen for projectors and PNG export).
BACKGROUND = "#ffffff"
FOREGROUND = "#1a1a1a"
#: Muted grey for theory curves and reference lines that belong to no single rule.
THEORY_COLOR = "#555555"
#: Outline of the selected query row in the heatmaps (Okabe–Ito vermillion would clash with
#: the "none" rule, so the highlight uses a saturated magenta that viridis never contains).
HIGHLIGHT_COLOR = "#ff00ff"
#: Perceptually uniform colormap for probabilities in [0, 1].
HEATMAP_COLORMAP = "viridis"
GRID_ALPHA = 0.25

#: Point sizes: ticks, axis labels, titles, free text (all ≥ 10 pt for projection).
TICK_PT = 10
LABEL_PT = 11
TITLE_PT = 12
TEXT_PT = 10

# Each rule's colour (Okabe & Ito's colour-blind-safe palette, then Paul Tol's), marker and dash
# are declared with the rule (engine.config.RULES).
RULE_COLORS: dict[ScalingRule, str] = {rule: spec.color for rule, spec in RULES.items()}

_RULE_SYMBOLS: dict[ScalingRule, str] = {rule: spec.marker for rule, spec in RULES.items()}

#: Options of curves with one point per key (up to n = 8192, redrawn on every change).
#: Antialiased pens wider than one pixel go through Qt's general stroker, an order of magnitude
#: slower, so these curves are drawn aliased; at one point per key their steps hide the jaggies.
DENSE_CURVE: dict[str, object] = {"antialias": False}
#: Rows longer than this are drawn without markers (they would merge into a band).
MARKER_MAX_POINTS = 64

# Rules that coincide with another at a parameter's default get a dash that keeps both curves
# visible (temperature T = √d_k and YaRN f = 1 with 1/√d_k, SSMax s = 1 with ln n/√d_k).
_DASHES = {"": Qt.PenStyle.SolidLine, "dash": Qt.PenStyle.DashLine, "dot": Qt.PenStyle.DotLine,
           "dashdot": Qt.PenStyle.DashDotLine}
_RULE_LINE_STYLES: dict[ScalingRule, Qt.PenStyle] = {
    rule: _DASHES[spec.dash] for rule, spec in RULES.items()}


def ordered_rules(rules: object) -> list[ScalingRule]:
    """Return the rules in ``rules`` (any iterable of rules or their values) in display order,
    the enum's: none, 1/√d_k, 1/d_k, ..."""
    present = {ScalingRule(r) for r in rules}  # type: ignore[attr-defined]
    return [rule for rule in ScalingRule if rule in present]


def rule_color(rule: ScalingRule | str, alpha: int = 255) -> QColor:
    """Return the colour of ``rule`` with the given alpha (0–255)."""
    color = QColor(RULE_COLORS[ScalingRule(rule)])
    color.setAlpha(alpha)
    return color


def rule_pen(
    rule: ScalingRule | str, width: float = 2.0, style: Qt.PenStyle | None = None
) -> QPen:
    """Return the cosmetic pen of ``rule`` (its own dash style unless ``style`` is given)."""
    rule = ScalingRule(rule)
    pen = pg.mkPen(rule_color(rule), width=width)
    pen.setStyle(style if style is not None else _RULE_LINE_STYLES.get(rule, Qt.PenStyle.SolidLine))
    pen.setCosmetic(True)
    return pen


def rule_brush(rule: ScalingRule | str, alpha: int = 255) -> QBrush:
    """Return a brush of ``rule``'s colour (use a low ``alpha`` for bands and fills)."""
    return pg.mkBrush(rule_color(rule, alpha))


def rule_symbol(rule: ScalingRule | str) -> str:
    """Return the pyqtgraph marker symbol of ``rule``."""
    return _RULE_SYMBOLS[ScalingRule(rule)]


def rule_curve(rule: ScalingRule | str, *, width: float = 2.0, symbol_size: int = 7,
               **options: Any) -> pg.PlotDataItem:
    """Return a curve through ``rule``'s points (a sweep's): its pen and marker, a gap at
    each NaN; ``options`` override any of these."""
    return pg.PlotDataItem(**{
        "pen": rule_pen(rule, width=width), "symbol": rule_symbol(rule),
        "symbolSize": symbol_size, "symbolPen": rule_pen(rule, width=1),
        "symbolBrush": rule_brush(rule, 200), "connect": "finite", **options})


def set_markers(curve: pg.PlotDataItem, rule: ScalingRule | str, points: int) -> None:
    """Show ``rule``'s markers on ``curve`` only while it has at most
    :data:`MARKER_MAX_POINTS` points."""
    markers = points <= MARKER_MAX_POINTS
    if (curve.opts["symbol"] is not None) != markers:
        curve.setSymbol(rule_symbol(rule) if markers else None)


#: The rule labels that are words, marked for translation where the rules are declared
#: (engine.config.RULES); math labels such as 1/√d_k and YaRN read the same in every language.
RULE_WORDS: tuple[str, ...] = tuple(
    spec.name for spec in RULES.values() if not isinstance(spec.label, str))


def layer_name(file: Any, layer: int) -> str:
    """The readable name of ``layer`` of an ``engine.io.tensors.TensorFile`` (``file`` None:
    the name of a layer that has none, "layer L"), in the current language.

    The mini-trainer names each layer by the id of the rule it was trained with ("none",
    "qk_norm", and ``meta.layers[L].rule`` says so): shown as "trained with QK-norm".
    """
    plain = translate("RealHead", "layer {0}").format(layer)
    if file is None:
        return plain
    name = file.layer_name(layer)
    if name == f"layer {layer}":
        return plain
    layers = file.meta.get("layers")
    entry = layers.get(str(layer)) if isinstance(layers, Mapping) else None
    rule = entry.get("rule") if isinstance(entry, Mapping) else None
    if isinstance(rule, str) and name == rule and rule in {r.value for r in ScalingRule}:
        return translate("RealHead", "trained with {0}").format(rule_name(rule))
    return name


def rule_name(rule: ScalingRule | str) -> str:
    """Return the translated legend name of ``rule`` (math labels such as 1/√d_k stay as is)."""
    return translate("ScalingRule", ScalingRule(rule).label)


def font(point_size: int = TEXT_PT, bold: bool = False) -> QFont:
    """Return the application font at ``point_size`` points."""
    f = QFont()
    f.setPointSize(point_size)
    f.setBold(bold)
    return f


def axis_label_html(text: str) -> str:
    """Wrap an axis label in a span of the label size and colour."""
    return f'<span style="color:{FOREGROUND}; font-size:{LABEL_PT}pt">{text}</span>'


def make_layout_widget() -> ScalableLayoutWidget:
    """Return a GraphicsLayoutWidget with the views' background (and a presentation scale)."""
    widget = ScalableLayoutWidget()
    widget.setBackground(BACKGROUND)
    return widget


def style_plot(plot: pg.PlotItem, *, title: str | None = None, left: str | None = None,
               bottom: str | None = None, grid: bool = True) -> None:
    """Apply the shared fonts, colours, labels (see :func:`label_plot`) and, with ``grid``,
    a light grid to ``plot``."""
    pen = pg.mkPen(FOREGROUND, width=1)
    for name in ("left", "bottom", "right", "top"):
        axis = plot.getAxis(name)
        axis.setPen(pen)
        axis.setTextPen(pen)
        axis.setTickFont(font(TICK_PT))
        # An automatic "(x0.001)" prefix next to a probability reads as a unit: show raw values.
        axis.enableAutoSIPrefix(False)
        # Major and minor ticks only: the third level's faint grid lines are invisible at
        # GRID_ALPHA but cost a large share of every repaint (benchmarks/bench_gui.py).
        axis.setStyle(maxTickLevel=1)
        # An axis draws its grid across the whole plot, one raster span per pixel row for each
        # vertical line: cache the result while the range stays (half of the laws view's
        # repaint). The cache is redrawn at the device's resolution, so exports stay sharp.
        axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
    label_plot(plot, title=title, left=left, bottom=bottom)
    if grid:
        plot.showGrid(x=True, y=True, alpha=GRID_ALPHA)


def label_plot(plot: pg.PlotItem, *, title: str | None = None, left: str | None = None,
               bottom: str | None = None) -> None:
    """Set the title and axis labels (HTML allowed) of ``plot`` in the shared style (None
    leaves one as is).

    Views call this from ``retranslate_ui`` to switch the language of a plot already built.
    """
    shown = plot.titleLabel
    if title is not None and not (shown.isVisible() and shown.text == title):
        # Setting a label re-lays out its plot: skipped when the text is already shown, as
        # views re-title on every update and most updates keep the title.
        plot.setTitle(title, color=FOREGROUND, size=f"{TITLE_PT}pt")
    if left is not None:
        plot.setLabel("left", axis_label_html(left))
    if bottom is not None:
        plot.setLabel("bottom", axis_label_html(bottom))


def relayout(widget: pg.GraphicsLayoutWidget) -> None:
    """Lay out ``widget``'s plots, legends and labels again now, innermost first.

    Qt re-runs graphics layouts from the event loop; pyqtgraph does it at once only in
    ``addItem``. Texts set later (translations) change axis widths and legend cells, and a view
    exported before it was ever shown would otherwise keep the old geometry.
    """
    def depth(item: QGraphicsItem) -> int:
        level = 0
        while (item := item.parentItem()) is not None:
            level += 1
        return level

    items = [item for item in widget.scene().items() if isinstance(item, QGraphicsWidget)]
    for item in sorted(items, key=depth, reverse=True):
        layout = QGraphicsWidget.layout(item)
        if layout is not None:
            layout.activate()
        if isinstance(item, pg.LegendItem):
            item.updateSize()


def make_legend(col_count: int = 1) -> pg.LegendItem:
    """Return a framed, nearly opaque legend in the shared text size.

    Views place legends in their own layout cell (beside or above the plots) rather than
    inside a view box, so that no legend can hide data.
    """
    legend = CellLegend(
        pen=pg.mkPen("#999999"),
        brush=pg.mkBrush(255, 255, 255, 235),
        labelTextColor=FOREGROUND,
        labelTextSize=f"{TEXT_PT}pt",
        colCount=col_count,
        horSpacing=12,
    )
    # In a layout cell the legend is laid out like the plots, so it scales with them (a
    # magnified presentation view); pyqtgraph's floating legends keep a fixed pixel size.
    legend.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations, False)
    legend.most_columns = col_count
    return legend


def set_line_label(line: pg.InfiniteLine, text: str) -> None:
    """Label ``line`` with the fixed ``text``, also while the line is hidden (pyqtgraph's
    ``setFormat`` alone re-words only a visible line's label)."""
    line.label.setFormat(text)
    line.label.setText(text)


def theory_pen(width: float, dash: Qt.PenStyle) -> QPen:
    """Return the grey pen of theory curves and reference lines (no single rule's)."""
    return pg.mkPen(THEORY_COLOR, width=width, style=dash)


def reference_line(width: float, dash: Qt.PenStyle, label: str | None = None,
                   position: float = 0.5, anchor: tuple[float, float] = (0, 1),
                   **options: Any) -> pg.InfiniteLine:
    """Return a grey horizontal reference line (:func:`theory_pen`), its ``label`` (None: none)
    in the same grey at ``position`` along the line, anchored at ``anchor`` on both sides;
    ``options`` override any of these (``angle=90``: a vertical line)."""
    return pg.InfiniteLine(**{
        "angle": 0, "pen": theory_pen(width, dash), "label": label,
        "labelOpts": {"position": position, "color": THEORY_COLOR, "anchors": [anchor, anchor]},
        **options})


def make_text_item(anchor: tuple[float, float] = (0.0, 0.0)) -> pg.TextItem:
    """Return a text item for in-plot read-outs (shared colour, font and translucent fill)."""
    item = pg.TextItem(
        color=FOREGROUND,
        anchor=anchor,
        fill=pg.mkBrush(255, 255, 255, 220),
        border=pg.mkPen("#999999"),
    )
    item.setFont(font(TEXT_PT))
    return item


def make_label(text: str = "", *, size: int = TEXT_PT, justify: str = "left") -> WrappingLabel:
    """Return a layout-cell text label that wraps to its cell (notes and read-outs that must
    never cover data)."""
    return WrappingLabel(text, color=FOREGROUND, size=f"{size}pt", justify=justify)


class LogAxisItem(PlotAxis):
    """Axis whose log mode puts decades and the 2…9 minor ticks on separate levels.

    pyqtgraph puts every tick of a log axis spanning a few decades on one level, whose labels
    then run together; here :func:`set_log_mode`'s fill limits label the minor ticks only
    when fewer than two decades show. The room for tick text only grows, in steps of
    :data:`AXIS_TEXT_STEP`, so that a sweep's widening range does not re-lay out the view at
    every few pixels.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.setStyle(autoReduceTextSpace=False)

    def logTickValues(self, minVal, maxVal, size, stdTicks):
        if any(spacing >= 1.0 for spacing, _ in stdTicks):
            return super().logTickValues(minVal, maxVal, size, stdTicks)
        low, high = math.floor(minVal), math.ceil(maxVal)
        decades = [float(v) for v in range(low, high + 1) if minVal <= v <= maxVal]
        minor = [
            v + math.log10(k)
            for v in range(low, high)
            for k in range(2, 10)
            if minVal < v + math.log10(k) < maxVal
        ]
        return [(1.0, decades), (None, minor)]

    def _updateMaxTextSize(self, x: int) -> None:  # pyqtgraph override
        super()._updateMaxTextSize(math.ceil(x / AXIS_TEXT_STEP) * AXIS_TEXT_STEP)


#: Step (px) in which a log axis's room for tick text changes (see ``LogAxisItem``).
AXIS_TEXT_STEP = 16


def log_axis_items() -> dict[str, pg.AxisItem]:
    """Return fresh bottom and left axes for a plot that may use log mode."""
    return {"bottom": LogAxisItem("bottom"), "left": LogAxisItem("left")}


def set_log_mode(plot: pg.PlotItem, x: bool, y: bool) -> None:
    """Put ``plot`` in log mode; label minor ticks only when few decades show."""
    plot.setLogMode(x=x, y=y)
    for name, on in (("bottom", x), ("top", x), ("left", y), ("right", y)):
        if on:
            plot.getAxis(name).setStyle(textFillLimits=[(0, 0.8), (2, 0.5), (4, 0.0)])
