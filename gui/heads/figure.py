"""The Heads tab's exported figure: what file, rule and batch entry it shows, the grid, the
replay.

Built off screen from the same panels as the tab (:class:`~gui.heads.grid.GridPanel`,
:class:`~gui.heads.replay.ReplayPanel`) and filled from the tab's state when an export asks
for it, so a PNG or SVG dropped into a slide says by itself where its numbers came from.
"""

from __future__ import annotations

import pyqtgraph as pg

from engine.analysis.head_scan import HeadRecord, RuleReplay
from engine.config import ScalingRule
from gui.heads.grid import GridPanel
from gui.heads.metrics import Metric
from gui.heads.replay import ReplayPanel
from gui.kit import style

__all__ = ["HeadsFigure"]


class HeadsFigure(pg.GraphicsLayoutWidget):
    """A header line, the grid of every head and the selected head's replay."""

    def __init__(self) -> None:
        super().__init__()
        self.setBackground(style.BACKGROUND)
        self.header = style.make_label()
        self.ci.addItem(self.header, row=0, col=0)
        self.grid = GridPanel()
        self.ci.addItem(self.grid, row=1, col=0)
        self.replay = ReplayPanel()
        self.ci.addItem(self.replay, row=2, col=0)
        self.ci.layout.setRowStretchFactor(1, 2)
        self.ci.layout.setRowStretchFactor(2, 3)

    def resizeEvent(self, event: object) -> None:  # Qt override
        # The replay's row gets about 3/5 of the height (the row stretch factors).
        replay = getattr(self, "replay", None)  # Qt resizes the widget while it is being built
        if replay is not None:
            replay.fit(self.width(), self.height() * 0.6)
        super().resizeEvent(event)

    def show_state(
        self,
        header: str,
        grid: tuple[tuple[int, ...], int, tuple[HeadRecord, ...], Metric],
        selection: tuple[int | None, int | None],
        rules: tuple[ScalingRule, ...],
        replays: tuple[RuleReplay, ...],
        replay_title: str,
        tokens: tuple[str, ...] | None = None,
    ) -> None:
        """Draw the tab's state: ``header``, the grid (layers, heads, records, metric) with
        ``selection`` (row, head) outlined, and ``replays`` of the picked ``rules`` (with the
        file's ``tokens`` on their axes)."""
        self.header.setText(header)
        self.grid.show_grid(*grid)
        self.grid.label_axes()
        self.grid.set_selection(*selection)
        self.replay.set_rules(rules)
        if replays:
            self.replay.show_replay(replays, replay_title, tokens)
        else:
            self.replay.clear_replay(replay_title)
