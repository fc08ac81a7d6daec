"""The Heads view's replay: the selected head's attention weights under each scaling rule.

:class:`ReplayPanel` is a graphics layout (a title, then one map per shown rule with query and
key axes, titled with the rule and its mean entropy and p_max) placed both in the tab's
:class:`ReplayView` widget and in the exported figure (:mod:`gui.heads.figure`). The worker
replays every rule; the panel shows the ones the user picked, so that the maps stay large
enough to show a single sink column (a one-column sink at n = 128 is 1/128 of the map's side).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, QTimer, Signal

from engine.analysis.head_scan import RuleReplay
from engine.config import ScalingRule
from gui.heads.texts import missing_text
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.token_axis import TokenAxis

__all__ = ["DEFAULT_REPLAY_RULES", "ReplayPanel", "ReplayView"]

#: The rules shown until the user picks others: the three fixed scales and QK-norm, the four
#: the tab's question is about (is the model's scale the right one, and what would the others do).
DEFAULT_REPLAY_RULES = (ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR,
                        ScalingRule.QK_NORM)
#: Most maps in one row (more rules wrap to a second row).
_MAX_COLUMNS = 5
#: Least width of a map's column (its two-line title), and the room its axes and title take
#: beside and above the map, in pixels.
_COLUMN_PX = 190.0
_AXES_PX = 45.0
_TITLE_PX = 75.0


#: Time between two maps built ahead of the first replay, so they never add up to a pause.
_PREPARE_GAP_MS = 60


class ReplayPanel(pg.GraphicsLayout):
    """A title and one attention map per shown rule; :attr:`filled` once every map shown has
    its replay (progressive panels fill one map per event)."""

    filled = Signal()

    def __init__(self, *, progressive: bool = False) -> None:
        super().__init__()
        #: Fill one map per event (the tab's panel, so that no event holds the window long);
        #: an exported figure fills at once.
        self._progressive = progressive
        self._fill_queue: list[ScalingRule] = []
        self.title = style.make_label()
        self.addItem(self.title, row=0, col=0, colspan=_MAX_COLUMNS)
        self._colormap = pg.colormap.get(style.HEATMAP_COLORMAP)
        self._plots: dict[ScalingRule, pg.PlotItem] = {}
        self._images: dict[ScalingRule, pg.ImageItem] = {}
        self._placed: list[ScalingRule] = []
        self._rules: tuple[ScalingRule, ...] = DEFAULT_REPLAY_RULES
        self._replays: dict[ScalingRule, RuleReplay] = {}  # the replays shown, by rule
        self._tokens: tuple[str, ...] | None = None
        self._columns = 0
        self._room = (0.0, 0.0)
        self._preparing = False

    # ------------------------------------------------------------------------------ state
    def set_rules(self, rules: tuple[ScalingRule, ...]) -> None:
        """Show the maps of ``rules`` (in the order of :class:`ScalingRule`)."""
        order = list(ScalingRule)
        self._rules = tuple(sorted({ScalingRule(r) for r in rules}, key=order.index))
        self._place()

    def prepare(self) -> None:
        """Build the maps of the picked rules that do not exist yet, one every
        :data:`_PREPARE_GAP_MS`, so that the first replay only fills them: a map costs the GUI
        thread ~8 ms to build, and four built inside the first replay paused the window ~70 ms."""
        if not self._preparing and any(rule not in self._plots for rule in self._rules):
            self._preparing = True
            QTimer.singleShot(_PREPARE_GAP_MS, self, self._prepare_next)

    def _prepare_next(self) -> None:
        missing = [rule for rule in self._rules if rule not in self._plots]
        if missing:
            self._plot(missing[0])
            QTimer.singleShot(_PREPARE_GAP_MS, self, self._prepare_next)
        else:
            self._preparing = False

    def show_replay(self, replays: tuple[RuleReplay, ...], title: str,
                    tokens: Sequence[str] | None = None) -> None:
        """Show the weights of the replayed rules that are picked, under ``title``, with
        ``tokens`` (the file's) on the axes, else positions."""
        self._replays = {replay.rule: replay for replay in replays}
        self._tokens = None if tokens is None else tuple(tokens)
        self.title.setText(title)
        self._place()

    def clear_replay(self, title: str) -> None:
        """Hide the maps and show ``title`` instead."""
        self._replays = {}
        self._tokens = None
        self._set_title(title)
        self._place()

    def retitle(self, title: str) -> None:
        """Set the title and the maps' titles and axes in the current language."""
        self._set_title(title)
        for rule in self._placed:
            self._label(rule)

    # ---------------------------------------------------------------------------- reading
    def shown(self) -> list[RuleReplay]:
        """The replays drawn, in rule order."""
        return [self._replays[rule] for rule in self._placed]

    def replay_images(self) -> list[pg.ImageItem]:
        """The images drawn, in rule order."""
        return [self._images[rule] for rule in self._placed]

    def replay_rects(self) -> list[tuple[QRectF, QRectF]]:
        """Where each drawn map's title and image are (scene coordinates), in rule order."""
        return [(self._plots[rule].titleLabel.sceneBoundingRect(),
                 self._images[rule].sceneBoundingRect()) for rule in self._placed]

    def rule_at(self, scene_pos: QPointF) -> ScalingRule | None:
        """The rule whose map is drawn at ``scene_pos``, or None (also for a rule the file
        cannot replay: it has no map)."""
        for rule in self._placed:
            if self._replays[rule].weights is None:
                continue
            if self._images[rule].sceneBoundingRect().contains(scene_pos):
                return rule
        return None

    # ---------------------------------------------------------------------------- private
    def _plot(self, rule: ScalingRule) -> pg.PlotItem:
        # Made on first use: nine plots built up front would slow every window's start.
        if rule not in self._plots:
            plot = pg.PlotItem(axisItems={"bottom": TokenAxis("bottom"),
                                          "left": TokenAxis("left")}, enableMenu=False)
            style.style_plot(plot, grid=False)
            policy = plot.sizePolicy()
            policy.setRetainSizeWhenHidden(True)  # the layout stays put while maps appear
            plot.setSizePolicy(policy)
            plot.hideButtons()
            plot.setMouseEnabled(x=False, y=False)
            plot.invertY(True)  # query 0 at the top, as in the explorer's heatmap
            plot.setAspectLocked(True)
            image = pg.ImageItem(axisOrder="row-major")
            image.setColorMap(self._colormap)
            plot.addItem(image)
            self._plots[rule], self._images[rule] = plot, image
        return self._plots[rule]

    def fit(self, width: float, height: float) -> None:
        """Arrange the maps for a widget of ``width × height`` pixels (the largest maps)."""
        self._room = (float(width), float(height))
        if self._columns_for(len(self._placed)) != self._columns:
            self._place(force=True)

    def _columns_for(self, count: int) -> int:
        # The number of columns that gives the largest maps whose titles fit side by side
        # (the layout's own minimum sizes would otherwise widen it past its widget).
        width, height = self._room
        if count <= 1 or width <= 0:
            return max(1, min(count, _MAX_COLUMNS))
        options = [c for c in range(1, min(count, _MAX_COLUMNS) + 1)
                   if width / c >= _COLUMN_PX] or [1]

        def side(columns: int) -> float:
            rows = math.ceil(count / columns)
            return min(width / columns - _AXES_PX, (height - 30.0) / rows - _TITLE_PX)

        best = max(side(c) for c in options)
        # Among equally good choices, the fewest columns (rows of equal length read better).
        return min(c for c in options if side(c) >= best - 0.5)

    def _set_title(self, title: str) -> None:
        # The Heads tab re-titles on every batch of streamed diagnostics; setting a label
        # re-lays out and repaints every map and axis of the panel even when nothing changed.
        if title != self.title.text:
            self.title.setText(title)

    def _place(self, force: bool = False) -> None:
        wanted = [rule for rule in self._rules if rule in self._replays]
        if force or wanted != self._placed:
            for rule in self._placed:
                self.removeItem(self._plots[rule])
            columns = self._columns_for(len(wanted))
            for index, rule in enumerate(wanted):
                row, column = divmod(index, columns)
                plot = self._plot(rule)
                # Placed maps appear as they are filled, one event each.
                plot.setVisible(not self._progressive)
                self.addItem(plot, row=1 + row, col=column)
            self._placed = wanted
            self._columns = columns
        first_fill = not self._fill_queue
        self._fill_queue = list(wanted)
        if not self._progressive:
            while self._fill_queue:
                self._fill(self._fill_queue.pop(0))
        elif self._fill_queue and first_fill:
            self._fill_next()

    def is_filling(self) -> bool:
        """True while maps of the replay shown are still to be filled (one per event)."""
        return bool(self._fill_queue)

    def _fill_next(self) -> None:
        if self._fill_queue:
            self._fill(self._fill_queue.pop(0))
        if self._fill_queue:
            QTimer.singleShot(1, self, self._fill_next)
        else:
            self.filled.emit()

    def _fill(self, rule: ScalingRule) -> None:
        if rule not in self._placed or rule not in self._replays:
            return
        image = self._images[rule]
        self._plots[rule].setVisible(True)
        if self._replays[rule].weights is None:  # the file cannot replay it: no map, a reason
            image.clear()
            self._plots[rule].setRange(xRange=(0, 1), yRange=(0, 1), padding=0.0)
            self._label(rule)
            return
        weights = np.asarray(self._replays[rule].weights)
        n_q, n_k = weights.shape
        image.setImage(weights, autoLevels=False, levels=(0.0, 1.0))
        image.setRect(QRectF(0.0, 0.0, float(n_k), float(n_q)))
        tokens = self._tokens if self._tokens is not None and len(self._tokens) == n_k \
            else None
        for name in ("bottom", "left"):
            self._plots[rule].getAxis(name).set_tokens(tokens)
        self._plots[rule].setRange(xRange=(0, n_k), yRange=(0, n_q), padding=0.0)
        self._label(rule)

    def _label(self, rule: ScalingRule) -> None:
        plot = self._plots[rule]
        replay = self._replays.get(rule)
        drawn = [r for r in self._placed
                 if r in self._replays and self._replays[r].weights is not None]
        first = bool(drawn) and rule == drawn[0]
        # Axis names on the first map only: the others have the same axes, and two label
        # lines per map cost the maps ~20 px each where the tab is short.
        style.label_plot(plot, bottom=translate("HeadsView", "key j") if first else "",
                         left=translate("HeadsView", "query i") if first else "")
        for name in ("left", "bottom"):
            plot.getAxis(name).showLabel(first)
            # A rule the file cannot replay has no map: no axes either, only its reason.
            plot.showAxis(name, replay is None or replay.weights is not None)
        if replay is None:
            return
        diag = replay.diagnostics
        if diag is None:
            stats = missing_text(replay.missing)
        else:
            stats = translate("HeadsView", "H {0} · p̄max {1}").format(
                f"{diag.entropy_mean:.2f}", f"{diag.p_max_mean:.2f}")
        color = style.RULE_COLORS[ScalingRule(rule)]
        plot.setTitle(f'<span style="color:{color}"><b>{style.rule_name(rule)}</b></span>'
                      f'<br><span style="color:{style.FOREGROUND}">{stats}</span>',
                      size=f"{style.TEXT_PT}pt")
        # pyqtgraph gives a title row 30 px, one line: room for the stats line too.
        height = plot.titleLabel.item.boundingRect().height() + 2.0
        plot.titleLabel.setMaximumHeight(height)
        plot.layout.setRowFixedHeight(0, height)


class ReplayView(pg.GraphicsLayoutWidget):
    """The tab's replay widget (a :class:`ReplayPanel`); emits :attr:`ruleClicked` (rule)."""

    ruleClicked = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.setBackground(style.BACKGROUND)
        self.panel = ReplayPanel(progressive=True)
        self.ci.addItem(self.panel, row=0, col=0)
        self.scene().sigMouseClicked.connect(self._on_clicked)

    def resizeEvent(self, event: object) -> None:  # Qt override
        panel = getattr(self, "panel", None)  # Qt resizes the widget while it is being built
        if panel is not None:
            panel.fit(self.width(), self.height())
        super().resizeEvent(event)

    def _on_clicked(self, event: object) -> None:
        rule = self.panel.rule_at(event.scenePos())  # type: ignore[attr-defined]
        if rule is not None:
            self.ruleClicked.emit(rule.value)
