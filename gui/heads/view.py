"""The Heads tab: every head of a real model's tensor file, diagnosed as the results stream in
(grid and table), flagged, and the head clicked replayed under the rules picked."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from engine.cli.inspect import COLUMNS, report_row
from engine.config import ScalingRule
from engine.io.tensors import TensorFile
from gui.heads.controller import HeadsController
from gui.heads.controls import HeadsControls
from gui.heads.figure import HeadsFigure
from gui.heads.grid import HeadsGrid
from gui.heads.replay import DEFAULT_REPLAY_RULES, ReplayView
from gui.heads.table_view import HeadsTable
from gui.heads.texts import (
    export_header,
    file_text,
    flagged_text,
    logits_text,
    meta_tooltip,
    replay_title,
    status_line,
)
from gui.heads.worker import Logits, ReplayReady
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import PlotView
from gui.kit.qt_lifetime import wait_until
from gui.kit.view_push import Throttle

__all__ = ["HeadsView"]


class HeadsView(PlotView):
    """The Heads tab (a plot view: it exports its grid and replay as PNG/SVG and CSV).

    Signals
    -------
    headChosen(int, int, int)
        The user picked (layer, head, batch entry) of the file shown.
    ruleChosen(int, int, int, str)
        The user clicked the replayed map of one rule: (layer, head, batch entry, rule).
    statusChanged(str)
        :meth:`status_line` has changed.
    preferencesChanged()
        The replayed rules or the hidden columns were changed by the user.
    """

    key = "heads"
    headChosen = Signal(int, int, int)
    ruleChosen = Signal(int, int, int, str)
    statusChanged = Signal(str)
    preferencesChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = HeadsController(self)
        self._replay: ReplayReady | None = None
        self._pending_select: tuple[int, int, int] | None = None
        self._error = ""  # the last failure, until the next request
        self._logits_note = ""  # "logits reset" once another file opened
        self._status = ""
        self._figure: HeadsFigure | None = None
        # Streamed diagnostics refresh the grid and the table at most 10 times a second.
        self._refresh_throttle = Throttle(100, self._refresh, self)
        self._build()
        controller = self.controller
        controller.fileOpened.connect(self._on_file_opened)
        controller.recordsChanged.connect(self._refresh_throttle.trigger)
        controller.progressChanged.connect(self.controls.show_progress)
        controller.replayReady.connect(self._on_replay)
        controller.busyChanged.connect(self._on_busy)
        controller.errorOccurred.connect(self._on_error)
        controller.busyChanged.connect(self._update_status)
        self._apply_language()

    def _build(self) -> None:
        self._file_label = _text_label(selectable=True)
        self._layout.addWidget(self._file_label)
        self.controls = HeadsControls()
        self._layout.addWidget(self.controls)
        self.grid = HeadsGrid()
        self.replay = ReplayView()
        self.table = HeadsTable()
        self._flagged = _text_label(selectable=True)
        self._legend = _text_label(selectable=False)
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.table, 1)
        side_layout.addWidget(self._flagged)
        side_layout.addWidget(self._legend)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.grid)
        top.addWidget(side)
        top.setStretchFactor(0, 2)
        top.setStretchFactor(1, 3)
        top.setSizes([400, 600])
        # The replay spans the tab's width below the grid and the table, so that its maps are
        # large enough to show a one-column sink.
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(top)
        splitter.addWidget(self.replay)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)
        splitter.setSizes([260, 370])
        self._layout.addWidget(splitter, 1)

        self.grid.cellClicked.connect(self.choose_head)
        self.table.headClicked.connect(self.choose_head)
        self.table.columnsChanged.connect(self.preferencesChanged)
        self.replay.ruleClicked.connect(self._on_rule_clicked)
        self.controls.colour_by.currentIndexChanged.connect(self._refresh_throttle.trigger)
        self.controls.logitsChanged.connect(self._on_logits_changed)
        self.controls.batch.valueChanged.connect(self._on_batch_changed)
        self.controls.replayRulesChanged.connect(self._on_replay_rules_changed)
        self.controls.cancel.clicked.connect(self.controller.cancel)

    # ----------------------------------------------------------------------------- contract
    def title(self) -> str:
        return translate("HeadsView", "Heads")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        self.controls.retranslate_ui()
        self.replay.setToolTip(translate("HeadsView", "Click a rule's map to open it in the "
                                         "explorer (that head, that rule)"))
        self._legend.setText(translate(
            "HeadsView", "Grid letters: S saturated, P sharp, K sink, U near-uniform (a dot where "
            "a cell is too small for letters)."))
        self.table.retranslate_ui()
        self.grid.label_axes()
        self._refresh()

    def export_item(self) -> HeadsFigure:
        """The exported figure: a header naming the file, the logits and the batch entry,
        the grid and the replay of the picked rules (built on first use, filled now)."""
        if self._figure is None:
            self._figure = HeadsFigure()
            self._figure.resize(max(self.width(), 640), max(self.height(), 480))
        tf, selected = self.controller.tensor_file(), self.controller.selected()
        replay, metric = self._replay, self.controls.current_metric()
        selection = ((tf.layers.index(selected[0]), selected[1])
                     if tf is not None and selected is not None else (None, None))
        grid = ((tf.layers, tf.heads, self.controller.records(), metric) if tf is not None
                else ((), 0, (), metric))
        self._figure.show_state(
            export_header(tf, self.controller.logits(), replay), grid, selection,
            self.controls.replay_rules(), self.replays(),
            replay_title(replay) if replay is not None else "",
            replay.tensor_file.tokens if replay is not None else None)
        return self._figure

    def reset_view(self) -> None:
        """Show the whole grid and every replayed map again."""
        self._refresh()

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        """Every head's diagnostics (``table`` "heads"; the selected one marked) and the
        selected head's under every rule the file can replay (``table`` "replay")."""
        tf = self.controller.tensor_file()
        header = ["file", "table", "batch_entry", *COLUMNS, "selected"]
        if tf is None:
            return header, []
        selected = self.controller.selected()
        chosen = selected[:2] if selected is not None else None
        rows: list[list[float | str]] = [
            [str(tf.path), "heads", "all", *report_row(r.layer, r.head, r.diagnostics),
             int((r.layer, r.head) == chosen)] for r in self.controller.records()]
        replay = self._replay
        rows += [[str(tf.path), "replay", replay.batch_entry,
                  *report_row(replay.layer, replay.head, item.diagnostics), 1]
                 for item in self.replays() if item.diagnostics is not None]
        return header, rows

    def replays(self) -> tuple:
        """Every rule replayed on the selected head (``RuleReplay``; shown or not)."""
        return self._replay.replays if self._replay is not None else ()

    def set_replay_rules(self, rules: tuple[ScalingRule | str, ...]) -> None:
        """Show the maps of ``rules`` (at least one; unknown names are ignored)."""
        known = {rule.value for rule in ScalingRule}
        wanted = tuple({ScalingRule(r) for r in rules if r in known}) or DEFAULT_REPLAY_RULES
        self.controls.show_replay_rules(wanted)
        self.replay.panel.set_rules(wanted)

    def status_line(self) -> str:
        """What the tab is doing, for the window's status bar (translated)."""
        return self._status

    def status_text(self) -> str:
        """The line naming the file shown (or how to open one)."""
        return self._file_label.text()

    def flagged_text(self) -> str:
        """The list of flagged heads under the table."""
        return self._flagged.text()

    # ------------------------------------------------------------------------------ actions
    def open_file(self, path: str | Path, select: tuple[int, int, int] | None = None,
                  logits: Logits | None = None) -> None:
        """Open and diagnose the tensor file ``path`` (the file shown stays if it fails) and
        choose ``select`` (layer, head, batch entry) once it has opened; at its own scale unless
        ``logits`` (a session's) say otherwise: one model's rule is not carried to the next."""
        self._pending_select = select
        self.controller.open_file(str(path), self._logits_for_new_file(logits))
        self._update_status()

    def capture_model(self, path: str | Path, text: str, *, max_tokens: int | None = None,
                      layers: str = "", keep_v: bool = False,
                      memory_budget: int | None = None) -> None:
        """Run the model at ``path`` on ``text`` (on the capture worker) and open its q and k
        here, at the model's own scale; ``layers`` as typed ("0,2,5-7", "" for all);
        ``memory_budget`` in bytes (default the engine's)."""
        self._pending_select = None
        self.controller.capture_model(str(path), text, max_tokens=max_tokens, layers=layers,
                                      keep_v=keep_v, logits=self._logits_for_new_file(None),
                                      memory_budget=memory_budget)

    @Slot(int, int)
    def choose_head(self, layer: int, head: int) -> None:
        """Select (layer, head): replay it and emit :attr:`headChosen`."""
        tf = self.controller.tensor_file()
        if tf is None:
            return
        batch_entry = min(self.controls.batch.value(), tf.batch - 1)
        self.controller.select_head(layer, head, batch_entry)
        self._show_selection(tf, layer, head)
        self.headChosen.emit(layer, head, batch_entry)

    def wait_idle(self, timeout_ms: int = 30_000) -> bool:
        """Run a local event loop until no scan, replay or save of a capture runs and the grid
        and the replay's maps are up to date."""
        controller = self.controller
        panel = self.replay.panel
        signals = (controller.busyChanged, controller.recordsChanged, controller.replayReady,
                   controller.errorOccurred, controller.captureSaved,
                   controller.captureSaveFailed, panel.filled)

        def idle() -> bool:
            return (not controller.is_busy() and not controller.is_saving()
                    and not panel.is_filling())

        wait_until(idle, signals, timeout_ms)
        self._refresh()
        return idle()

    # ------------------------------------------------------------------------------- private
    def _logits_for_new_file(self, logits: Logits | None) -> Logits:
        self._error = self._logits_note = ""
        if logits is not None:
            return logits
        current = self.controller.logits()
        if not current.own_scale:
            self._logits_note = translate(
                "HeadsView", "Logits reset to the file's own scale (were {0}) for the "
                "new file.").format(style.rule_name(current.rule.kind))
        return Logits(current.rule, own_scale=True)

    def _show_selection(self, tf: TensorFile, layer: int, head: int) -> None:
        self.grid.set_selection(tf.layers.index(layer), head)
        self.table.select_head(layer, head)

    @Slot()
    def _on_logits_changed(self) -> None:
        self._error = self._logits_note = ""
        self.controller.set_logits(self.controls.logits())
        self._update_status()

    @Slot()
    def _on_replay_rules_changed(self) -> None:
        self.replay.panel.set_rules(self.controls.replay_rules())
        self.preferencesChanged.emit()

    @Slot(str)
    def _on_rule_clicked(self, rule: str) -> None:
        replay = self._replay
        if replay is None:
            return
        if replay.tensor_file.kind == "weights":  # the explorer computes from q and k
            self._logits_note = translate(
                "HeadsView", "The explorer needs q and k; this file holds attention weights "
                "only, so its replay stays in this tab.")
            self._refresh()
            return
        self.ruleChosen.emit(replay.layer, replay.head, replay.batch_entry, rule)

    @Slot(int)
    def _on_batch_changed(self, _value: int) -> None:
        selected = self.controller.selected()
        if selected is not None:
            self.choose_head(selected[0], selected[1])

    @Slot(object)
    def _on_file_opened(self, tf: TensorFile) -> None:
        self._replay = None
        self._error = ""
        self.controls.show_logits(self.controller.logits())
        self.controls.batch.setRange(0, tf.batch - 1)
        self.controls.batch.setEnabled(tf.batch > 1)
        self.grid.set_selection(None, None)
        self._refresh()
        self.replay.panel.prepare()  # a head will be picked next: have its maps ready
        select, self._pending_select = self._pending_select, None
        if select is None:
            return
        layer, head, batch_entry = select
        if layer in tf.layers and 0 <= head < tf.heads and 0 <= batch_entry < tf.batch:
            self.controls.batch.setValue(batch_entry)
            self.choose_head(layer, head)
        else:
            self._on_error(translate("HeadsView", "The file has no layer {0} head {1} "
                                     "batch entry {2}.").format(layer, head, batch_entry))

    def _refresh(self) -> None:
        self._update_status()
        tf = self.controller.tensor_file()
        if tf is None:
            self._file_label.setText(translate(
                "HeadsView", "No tensor file open. File › Open model… (Ctrl+M) runs a Hugging "
                "Face model folder or a GGUF file on your text; File › Open tensors… "
                "(Ctrl+Shift+O) opens a .npz, .safetensors or .npy file (or a folder of .npy "
                "files). Both can be dropped on the window; Help › Open sample tensors and Open "
                "sample model have examples."))
            self.replay.panel.clear_replay("")
            return
        records = self.controller.records()
        self.table.show_records(tf, records)
        self.grid.show_grid(tf.layers, tf.heads, records, self.controls.current_metric())
        self._file_label.setText(file_text(tf) + " · " + logits_text(self.controller.logits()))
        self._file_label.setToolTip(meta_tooltip(tf))
        flagged = flagged_text(records, done=not self.controller.is_busy())
        notes = [note for note in (self._error, self._logits_note) if note]
        self._flagged.setText("\n".join([*notes, flagged]))
        selected = self.controller.selected()
        if selected is not None:
            self._show_selection(tf, selected[0], selected[1])  # a model reset drops it
        if self._replay is None:
            self.replay.panel.clear_replay(translate(
                "HeadsView", "Click a head to replay it under every scaling rule."))
        else:
            self.replay.panel.retitle(replay_title(self._replay))

    @Slot(bool)
    def _on_busy(self, busy: bool) -> None:
        self.controls.set_busy(busy)
        if not busy:
            self._refresh()

    @Slot(object)
    def _on_replay(self, message: ReplayReady) -> None:
        self._replay = message
        self.replay.panel.show_replay(message.replays, replay_title(message),
                                      message.tensor_file.tokens)
        self._update_status()

    @Slot(str)
    def _on_error(self, message: str) -> None:
        self._error = translate("HeadsView", "Error: {0}").format(message)
        self._refresh()

    @Slot()
    def _update_status(self, *_args: object) -> None:
        controller = self.controller
        text = status_line(controller.tensor_file(), controller.pending_path(),
                           len(controller.records()), controller.is_busy(),
                           self._error, self._replay)
        if text != self._status:
            self._status = text
            self.statusChanged.emit(text)

    def _apply_language(self) -> None:
        self.retranslate_ui()
        style.relayout(self.grid)
        style.relayout(self.replay)


def _text_label(*, selectable: bool) -> QLabel:
    label = QLabel()
    label.setWordWrap(True)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label
