"""Live attention maps of the fixed probe example (held-out example 0), one panel per rule."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from engine.config import ScalingRule
from engine.trainer_config import TaskKind
from gui.i18n import translate
from gui.train.results import TrainResults
from gui.views import style
from gui.views.base import ExplorerView

__all__ = ["ProbeView", "probe_targets"]

_CTX = "ProbeView"


def probe_targets(snap: object) -> list[tuple[int, int]]:
    """``(row, key)`` cells a perfect model attends to in the probe map of one head.

    Rows are the target positions. Retrieval: the key position whose key id equals the query's
    (the first id channel); copy-back: position t − offset. Read from the task's token ids,
    not computed from the model.
    """
    config = snap.config  # type: ignore[attr-defined]
    ids = np.asarray(snap.probe_ids)  # type: ignore[attr-defined]
    cells = []
    for row, t in enumerate(snap.target_positions):  # type: ignore[attr-defined]
        if config.task is TaskKind.RETRIEVAL:
            match = np.flatnonzero(ids[: config.n, 0] == ids[t, 0])
            cells.extend((row, int(j)) for j in match[:1])
        else:
            cells.append((row, int(t) - config.offset))
    return cells


class ProbeView(ExplorerView):
    """Attention weights of the probe example's target rows, per rule and head.

    Each panel stacks the heads vertically (rows: target positions of head 0, then head 1, …;
    columns: key positions) on a shared viridis scale p ∈ [0, 1]. Magenta squares mark the
    key that solves the task, so a sharp, correct map puts its bright cell inside them.
    """

    key = "train_probe"
    #: At most 5 updates per second (see gui/train/controller.py): a map of attention weights
    #: changes slowly, and every repaint takes the GIL from the training thread.
    push_interval_s = 0.2

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._widget = style.make_layout_widget()
        self._layout.addWidget(self._widget)
        self._colormap = pg.colormap.get(style.HEATMAP_COLORMAP)
        self._colorbar = pg.ColorBarItem(
            values=(0.0, 1.0),
            colorMap=self._colormap,
            interactive=False,
            width=18,
            colorMapMenu=False,
        )
        style.style_plot(self._colorbar, grid=False)
        self._colorbar.getAxis("left").setLabel(style.axis_label_html("p"))
        self._note = style.make_label()
        self._panels: dict[ScalingRule, tuple[pg.PlotItem, pg.ImageItem, pg.ScatterPlotItem]] = {}
        self._rules: tuple[ScalingRule, ...] = ()
        self._snapshot: object = None
        self._empty_plot: pg.PlotItem | None = None  # the axes shown before the first run
        self._extent = (0, 0)  # (image rows, key positions) the axes are set up for
        self.retranslate_ui()
        self.clear()

    # -- contract -----------------------------------------------------------------------------
    def title(self) -> str:
        return translate("ProbeView", "Probe attention")

    def retranslate_ui(self) -> None:
        """Re-label the panels; the captions and the note follow with the next push (the base
        class drops the cache of what was shown)."""
        super().retranslate_ui()
        self._label_panels()

    def export_item(self) -> pg.GraphicsLayoutWidget:
        return self._widget

    def show_results(self, results: object) -> None:
        """Explorer results do not concern this view (it is fed by the training controller)."""

    def show_train(self, results: TrainResults) -> None:
        """Show the probe maps of the latest snapshot."""
        snap = results.snapshot
        if not self._is_new("snapshot", snap):
            return
        self._snapshot = snap
        if snap is None:
            self._build(())
            self._note.setText(
                translate(
                    "ProbeView",
                    "The attention map of one fixed held-out example "
                    "appears here while training runs.",
                )
            )
            return
        rules = tuple(snap.rules)
        if rules != self._rules:
            self._build(rules)
        cells = probe_targets(snap)
        heads = snap.config.heads
        self._set_extent(snap)
        for rule, st in snap.rules.items():
            plot, image, targets = self._panels[rule]
            w = np.asarray(st.probe_weights, dtype=np.float64)
            rows = w.reshape(-1, w.shape[-1])
            image.setImage(rows, autoLevels=False, levels=(0.0, 1.0))
            per_head = w.shape[1]
            spots = [(j + 0.5, h * per_head + r + 0.5) for h in range(heads) for r, j in cells]
            targets.setData(pos=spots)
            entropy = float(np.mean(st.entropy)) if len(st.entropy) else float("nan")
            if st.diverged:
                caption = translate("ProbeView", "{0}: diverged at step {1}").format(
                    style.rule_name(rule), st.diverged_at
                )
            else:
                caption = translate("ProbeView", "{0}: H = {1:.2f} nats").format(
                    style.rule_name(rule), entropy
                )
            plot.setTitle(caption, color=style.FOREGROUND, size=f"{style.TITLE_PT}pt")
        self._note.setText(
            translate(
                "ProbeView",
                "Step {0}. Rows: target positions{1}; columns: key positions 0…{2}. "
                "Magenta squares: the key that answers the probe.",
            ).format(
                snap.step,
                translate("ProbeView", " of each head, heads stacked top to bottom")
                if heads > 1
                else "",
                int(np.asarray(snap.probe_ids).shape[0]) - 1,
            )
        )

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        header = ["rule", "head", "query_position", "key_position", "p"]
        rows: list[list[float | str]] = []
        snap = self._snapshot
        if snap is None:
            return header, rows
        for rule, st in snap.rules.items():  # type: ignore[attr-defined]
            w = np.asarray(st.probe_weights, dtype=np.float64)
            for h in range(w.shape[0]):
                for r, t in enumerate(snap.target_positions):  # type: ignore[attr-defined]
                    for j in range(w.shape[2]):
                        rows.append([rule.value, h, int(t), j, float(w[h, r, j])])
        return header, rows

    def reset_view(self) -> None:
        rows, keys = self._extent
        for plot, _image, _targets in self._panels.values():
            if rows:
                plot.setRange(xRange=(0, keys), yRange=(0, rows), padding=0)
            else:
                plot.autoRange()

    # -- helpers ------------------------------------------------------------------------------
    def clear(self) -> None:
        """Remove every map (Reset)."""
        self._forget()
        self.show_train(TrainResults())

    def image(self, rule: ScalingRule | str) -> pg.ImageItem:
        """The image item of ``rule``."""
        return self._panels[ScalingRule(rule)][1]

    def _set_extent(self, snap: object) -> None:
        """Label the rows by target position (and head) and fit the axes to the map."""
        positions = tuple(snap.target_positions)  # type: ignore[attr-defined]
        heads = snap.config.heads  # type: ignore[attr-defined]
        keys = int(np.asarray(snap.probe_ids).shape[0])  # type: ignore[attr-defined]
        extent = (heads * len(positions), keys)
        if extent == self._extent:
            return
        self._extent = extent
        ticks = [
            (h * len(positions) + r + 0.5, f"{t}" if heads == 1 else f"h{h}·{t}")
            for h in range(heads)
            for r, t in enumerate(positions)
        ]
        ticks = ticks[:: max(1, len(ticks) // 16)]
        columns = [(j + 0.5, str(j)) for j in range(0, keys, max(1, keys // 20))]
        for plot, _image, _targets in self._panels.values():
            plot.getAxis("left").setTicks([ticks, []])
            plot.getAxis("bottom").setTicks([columns, []])
        self.reset_view()

    def _build(self, rules: tuple[ScalingRule, ...]) -> None:
        self._widget.clear()
        self._panels = {}
        self._empty_plot = None
        self._rules = rules
        self._extent = (0, 0)
        for col, rule in enumerate(rules):
            plot = self._widget.addPlot(row=0, col=col)
            style.style_plot(plot, grid=False)
            plot.invertY(True)  # matrix convention: first target row at the top
            image = pg.ImageItem(axisOrder="row-major")
            image.setColorMap(self._colormap)
            plot.addItem(image)
            pen = pg.mkPen(style.HIGHLIGHT_COLOR, width=2)
            targets = pg.ScatterPlotItem(symbol="s", size=1.0, pxMode=False, pen=pen, brush=None)
            targets.setZValue(10)
            plot.addItem(targets)
            self._panels[rule] = (plot, image, targets)
        if rules:
            self._colorbar.setImageItem([p[1] for p in self._panels.values()])
            self._widget.addItem(self._colorbar, row=0, col=len(rules))
        else:
            # Before the first run: empty axes, so the tab (and an export) shows where maps go.
            self._empty_plot = self._widget.addPlot(row=0, col=0)
            style.style_plot(self._empty_plot)
        self._widget.addItem(self._note, row=1, col=0, colspan=max(len(rules), 1) + 1)
        self._label_panels()

    def _label_panels(self) -> None:
        """Axis labels of the panels (and the placeholder's title) in the current language."""
        keys = translate("ProbeView", "key position")
        queries = translate("ProbeView", "query position")
        for col, (plot, _image, _targets) in enumerate(self._panels.values()):
            style.label_plot(plot, bottom=keys, left=queries if col == 0 else None)
        if not self._panels and self._empty_plot is not None:
            style.label_plot(
                self._empty_plot,
                title=translate("ProbeView", "No training run yet"),
                bottom=keys,
                left=queries,
            )
