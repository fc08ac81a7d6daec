"""The Heads tab: every head of a real model's tensor file, diagnosed, flagged and replayed.

The user opens a tensor file (File › Open tensors…, drag and drop, Help › Open sample tensors,
``main.py --tensors FILE``); a worker diagnoses each head and streams the results, which fill
the layers × heads grid and the sortable table as they arrive (with a progress bar and a
Cancel button). Clicking a head (grid cell or table row) replays it under every scaling rule
side by side (the rules picked under *Replay rules*) and emits :attr:`HeadsView.headChosen`,
which the window connects to the explorer so that its views show that head's real q and k;
clicking one rule's map emits :attr:`HeadsView.ruleChosen` (that rule, in the explorer).

The table lists the flags first; its columns can be hidden (right-click a header). The status
of the tab (opening, diagnosing, done, failed) is :meth:`HeadsView.status_line`, announced by
:attr:`HeadsView.statusChanged` for the window's status bar.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPoint, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine.cli.inspect import COLUMNS, report_row
from engine.config import ScalingRule
from engine.core.scaling import Rule
from engine.io.tensors import TensorFile
from gui.heads.controller import HeadsController
from gui.heads.figure import HeadsFigure
from gui.heads.grid import HeadsGrid
from gui.heads.metrics import METRICS
from gui.heads.replay import DEFAULT_REPLAY_RULES, ReplayView
from gui.heads.table import DEFAULT_HIDDEN_COLUMNS, HeadsTableModel, make_sorted_model
from gui.heads.texts import (
    export_header,
    file_text,
    flagged_text,
    layer_names,
    logits_text,
    meta_tooltip,
    replay_title,
    status_line,
)
from gui.heads.worker import Logits, ReplayReady
from gui.kit import style
from gui.kit.i18n import translate
from gui.kit.plot_view import PlotView

__all__ = ["HeadsView"]

#: Interval of the grid/table refresh while diagnostics stream in (the GUI stays responsive).
REFRESH_MS = 100


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
        self._build()
        self.controller.fileOpened.connect(self._on_file_opened)
        self.controller.recordsChanged.connect(self._schedule_refresh)
        self.controller.progressChanged.connect(self._on_progress)
        self.controller.replayReady.connect(self._on_replay)
        self.controller.busyChanged.connect(self._on_busy)
        self.controller.errorOccurred.connect(self._on_error)
        self.controller.progressChanged.connect(self._update_status)
        self.controller.busyChanged.connect(self._update_status)
        self.controller.fileOpened.connect(self._update_status)
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(REFRESH_MS)
        self._refresh_timer.timeout.connect(self._refresh)
        self._apply_language()

    # ------------------------------------------------------------------------------ building
    def _build(self) -> None:
        self._file_label = QLabel()
        self._file_label.setWordWrap(True)
        self._file_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._layout.addWidget(self._file_label)

        # Two rows, so that the tab fits 1024 px beside nothing and never widens the window.
        controls = QHBoxLayout()
        controls.setContentsMargins(6, 0, 6, 0)
        params = QHBoxLayout()
        params.setContentsMargins(6, 0, 6, 0)
        self._metric_label, self._metric = QLabel(), QComboBox()
        self._rule_label, self._rule = QLabel(), QComboBox()
        self._temperature = _spin(1e-3, 1e6, 8.0, 3)
        self._gain = _spin(0.0, 1e6, 0.0, 3)
        self._cap = _spin(1e-3, 1e6, 50.0, 2)
        self._batch_label, self._batch = QLabel(), QSpinBox()
        self._batch.setRange(0, 0)
        self._param_labels = [QLabel(), QLabel(), QLabel()]
        self._rules_button = QToolButton()
        self._rules_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self._rules_menu = QMenu(self._rules_button)
        self._rule_actions: dict[ScalingRule, QAction] = {}
        for rule in ScalingRule:
            action = self._rules_menu.addAction(rule.value)
            action.setCheckable(True)
            action.setChecked(rule in DEFAULT_REPLAY_RULES)
            action.toggled.connect(self._on_replay_rules_toggled)
            self._rule_actions[rule] = action
        self._rules_button.setMenu(self._rules_menu)
        for widget in (self._metric_label, self._metric, self._rule_label, self._rule,
                       self._rules_button):
            controls.addWidget(widget)
        controls.addStretch(1)
        for label, spin in zip(self._param_labels, (self._temperature, self._gain, self._cap),
                               strict=True):
            params.addWidget(label)
            params.addWidget(spin)
        params.addWidget(self._batch_label)
        params.addWidget(self._batch)
        params.addStretch(1)
        self._progress = QProgressBar()
        self._progress.setMaximumWidth(180)
        self._progress.setVisible(False)
        self._cancel = QPushButton()
        self._cancel.setVisible(False)
        self._cancel.clicked.connect(self.controller.cancel)
        controls.addWidget(self._progress)
        controls.addWidget(self._cancel)
        self._layout.addLayout(controls)
        self._layout.addLayout(params)

        self.grid = HeadsGrid()
        self.grid.cellClicked.connect(self.choose_head)
        self.replay = ReplayView()
        self.replay.ruleClicked.connect(self._on_rule_clicked)
        self._model = HeadsTableModel(self)
        self._sorted = make_sorted_model(self._model)
        self.table = QTableView()
        self.table.setModel(self._sorted)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # file order until asked
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        # Sized once from the first rows of a file: re-measuring every cell on each streamed
        # batch (ResizeToContents) stalled the GUI thread for 20–60 ms at 144 heads.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._on_header_menu)
        self._hidden_columns: set[str] = set(DEFAULT_HIDDEN_COLUMNS)
        self._apply_hidden_columns()
        self._columns_sized = False
        self.table.clicked.connect(self._on_table_clicked)
        self.table.activated.connect(self._on_table_clicked)
        self._flagged = QLabel()
        self._flagged.setWordWrap(True)
        self._flagged.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._legend = QLabel()
        self._legend.setWordWrap(True)
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.table, 1)
        side_layout.addWidget(self._flagged)
        side_layout.addWidget(self._legend)
        self._top = QSplitter(Qt.Orientation.Horizontal)
        self._top.addWidget(self.grid)
        self._top.addWidget(side)
        self._top.setStretchFactor(0, 2)
        self._top.setStretchFactor(1, 3)
        self._top.setSizes([400, 600])
        # The replay spans the tab's width below the grid and the table: its maps get a side
        # of ~210 px at 1024×768 and ~230 px at 1280×800 (four rules), enough to see a
        # one-column sink, which beside the table (three by three, 73-82 px) was invisible.
        self._splitter = QSplitter(Qt.Orientation.Vertical)
        self._splitter.addWidget(self._top)
        self._splitter.addWidget(self.replay)
        self._splitter.setStretchFactor(0, 1)
        self._splitter.setStretchFactor(1, 1)
        self._splitter.setChildrenCollapsible(False)
        self._splitter.setSizes([260, 370])
        self._layout.addWidget(self._splitter, 1)

        self._metric.currentIndexChanged.connect(self._schedule_refresh)
        for signal in (self._rule.currentIndexChanged, self._temperature.valueChanged,
                       self._gain.valueChanged, self._cap.valueChanged):
            signal.connect(self._on_params_changed)
        self._batch.valueChanged.connect(self._on_batch_changed)

    # ----------------------------------------------------------------------------- contract
    def title(self) -> str:
        return translate("HeadsView", "Heads")

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        self._metric_label.setText(translate("HeadsView", "Colour by"))
        self._rule_label.setText(translate("HeadsView", "Logits"))
        for label, text in zip(self._param_labels, ("T", translate("HeadsView", "gain"),
                                                    translate("HeadsView", "cap")),
                               strict=True):
            label.setText(text)
        self._batch_label.setText(translate("HeadsView", "batch entry"))
        self._cancel.setText(translate("HeadsView", "Cancel"))
        self._gain.setSpecialValueText(translate("HeadsView", "√d_k"))
        self._metric.setToolTip(translate("HeadsView", "The diagnostic that colours the grid"))
        self._rule.setToolTip(translate(
            "HeadsView", "The logits diagnosed: the file's own scale c (meta.scale, default "
            "1/√d_k), or a scaling rule re-applied to the same q and k"))
        self._temperature.setToolTip(translate("HeadsView", "Temperature T of the rule 1/T"))
        self._gain.setToolTip(translate("HeadsView", "QK-norm gain g (√d_k: the default)"))
        self._cap.setToolTip(translate("HeadsView", "Soft-cap value: cap·tanh(c·q·k/cap)"))
        self._batch.setToolTip(translate(
            "HeadsView", "Batch entry whose attention weights the replay shows (the "
            "diagnostics average over all entries)"))
        self.table.setToolTip(translate(
            "HeadsView", "Click a head to replay it under every rule and show it in the "
            "explorer's views; click a header to sort, right-click one to hide or show "
            "columns"))
        self.replay.setToolTip(translate(
            "HeadsView", "Click a rule's map to open it in the explorer (that head, that "
            "rule)"))
        self._rules_button.setText(translate("HeadsView", "Replay rules"))
        self._rules_button.setToolTip(translate(
            "HeadsView", "The rules whose attention maps are shown for the selected head "
            "(every rule is replayed and exported to CSV)"))
        for rule, action in self._rule_actions.items():
            action.setText(style.rule_name(rule))
        _fill_combo(self._metric, [(m.text(), m.key) for m in METRICS])
        _fill_combo(self._rule, [(translate("HeadsView", "file's own scale"), None)]
                    + [(style.rule_name(rule), rule) for rule in ScalingRule])
        self._legend.setText(translate(
            "HeadsView", "Grid letters: S saturated, P sharp, K sink, U near-uniform (a dot where "
            "a cell is too small for letters)."))
        self._model.retranslate()
        self._apply_hidden_columns()
        # Headers in the new language (and before any row) would be cut at the default width.
        self.table.resizeColumnsToContents()
        self.grid.label_axes()
        self._refresh()
        self._update_status()

    def show_results(self, results: object) -> None:
        """Refresh from the controller's state (the view is fed by its own controller)."""
        self._refresh()

    def export_item(self) -> HeadsFigure:
        """The exported figure: a header naming the file, the logits and the batch entry,
        the grid and the replay of the picked rules (built on first use, filled now)."""
        if self._figure is None:
            self._figure = HeadsFigure()
            self._figure.resize(max(self.width(), 640), max(self.height(), 480))
        tf = self.controller.tensor_file()
        replay = self._replay
        selection: tuple[int | None, int | None] = (None, None)
        selected = self.controller.selected()
        if tf is not None and selected is not None:
            selection = (tf.layers.index(selected[0]), selected[1])
        metric = METRICS[max(self._metric.currentIndex(), 0)]
        grid = ((tf.layers, tf.heads, self.controller.records(), metric) if tf is not None
                else ((), 0, (), metric))
        title = replay_title(replay) if replay is not None else ""
        self._figure.show_state(
            export_header(tf, self.controller.logits(), replay), grid, selection,
            self.replay.panel.rules(), replay.replays if replay is not None else (), title,
            replay.tensor_file.tokens if replay is not None else None)
        return self._figure

    def reset_view(self) -> None:
        """Show the whole grid and every replayed map again."""
        self._refresh()

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        tf = self.controller.tensor_file()
        header = ["file", "table", "batch_entry", *COLUMNS, "selected"]
        if tf is None:
            return header, []
        selected = self.controller.selected()
        chosen = selected[:2] if selected is not None else None
        rows: list[list[float | str]] = []
        for record in self.controller.records():
            mark = int((record.layer, record.head) == chosen)
            rows.append([str(tf.path), "heads", "all",
                         *report_row(record.layer, record.head, record.diagnostics), mark])
        replay = self._replay
        if replay is not None:
            for item in replay.replays:
                if item.diagnostics is None:  # a rule this file cannot replay
                    continue
                rows.append([str(tf.path), "replay", replay.batch_entry,
                             *report_row(replay.layer, replay.head, item.diagnostics), 1])
        return header, rows

    def replays(self) -> tuple:
        """Every rule replayed on the selected head (``RuleReplay``; shown or not)."""
        return self._replay.replays if self._replay is not None else ()

    def replay_rules(self) -> tuple[ScalingRule, ...]:
        """The rules whose maps the replay shows."""
        return self.replay.panel.rules()

    def set_replay_rules(self, rules: tuple[ScalingRule | str, ...]) -> None:
        """Show the maps of ``rules`` (at least one; unknown names are ignored)."""
        wanted = {ScalingRule(r) for r in rules if r in {x.value for x in ScalingRule}}
        if not wanted:
            wanted = set(DEFAULT_REPLAY_RULES)
        for rule, action in self._rule_actions.items():
            action.blockSignals(True)
            action.setChecked(rule in wanted)
            action.blockSignals(False)
        self.replay.panel.set_rules(tuple(wanted))

    def hidden_columns(self) -> tuple[str, ...]:
        """The keys of the table's hidden columns (see :meth:`HeadsTableModel.column_keys`)."""
        return tuple(key for key in self._model.column_keys() if key in self._hidden_columns)

    def set_hidden_columns(self, keys: tuple[str, ...]) -> None:
        """Hide the table's columns named by ``keys`` (the flags column always shows)."""
        self._hidden_columns = {key for key in keys if key in self._model.column_keys()}
        self._apply_hidden_columns()

    def logits_params(self) -> Logits:
        """The logits diagnosed (the file's own scale or a rule) and the rules' parameters."""
        return self.controller.logits()

    def set_logits_params(self, logits: Logits) -> None:
        """Diagnose the file shown under ``logits`` (as if picked in the controls)."""
        self._show_params(logits)
        self.controller.set_logits(logits)

    # ------------------------------------------------------------------------------ actions
    def open_file(self, path: str | Path, select: tuple[int, int, int] | None = None,
                  logits: Logits | None = None) -> None:
        """Open and diagnose the tensor file ``path`` (the file shown stays if it fails);
        ``select`` (layer, head, batch entry) is chosen once the file has opened.

        The new file is diagnosed at its own scale, unless ``logits`` (a session's logits
        choice) says otherwise: a rule picked for one model is not carried to the next
        silently; the tab says when it was reset.
        """
        self._pending_select = select
        self.controller.open_file(str(path), self._logits_for_new_file(logits))
        self._update_status()

    def capture_model(self, path: str | Path, text: str, *, max_tokens: int | None = None,
                      layers: str = "", keep_v: bool = False) -> None:
        """Run the model at ``path`` on ``text`` (on the capture worker) and open its q and k
        here, at the model's own scale; ``layers`` as typed ("0,2,5-7", "" for all)."""
        self._pending_select = None
        self.controller.capture_model(str(path), text, max_tokens=max_tokens, layers=layers,
                                      keep_v=keep_v, logits=self._logits_for_new_file(None))

    def _logits_for_new_file(self, logits: Logits | None) -> Logits:
        self._error = ""
        self._logits_note = ""
        if logits is not None:
            return logits
        current = self.controller.logits()
        if not current.own_scale:
            self._logits_note = translate(
                "HeadsView", "Logits reset to the file's own scale (were {0}) for the "
                "new file.").format(style.rule_name(current.rule.kind))
        return Logits(current.rule, own_scale=True)

    def status_line(self) -> str:
        """What the tab is doing, for the window's status bar (translated)."""
        return self._status

    @Slot(int, int)
    def choose_head(self, layer: int, head: int) -> None:
        """Select (layer, head): replay it and emit :attr:`headChosen`."""
        tf = self.controller.tensor_file()
        if tf is None:
            return
        batch_entry = min(self._batch.value(), tf.batch - 1)
        self.controller.select_head(layer, head, batch_entry)
        self._select_table_row(layer, head)
        self.grid.set_selection(tf.layers.index(layer), head)
        self.headChosen.emit(layer, head, batch_entry)

    def status_text(self) -> str:
        """The line naming the file shown (or how to open one)."""
        return self._file_label.text()

    def flagged_text(self) -> str:
        """The list of flagged heads under the table."""
        return self._flagged.text()

    def wait_idle(self, timeout_ms: int = 30_000) -> bool:
        """Run a local event loop until no scan, replay or save of a capture runs and the grid
        and the replay's maps are up to date."""
        from gui.kit.qt_lifetime import wait_until

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
    def _logits(self) -> Logits:
        kind, gain = self._rule.currentData(), self._gain.value()
        rule = Rule(ScalingRule.SQRT if kind is None else kind, self._temperature.value(),
                    gain if gain > 0 else None, self._cap.value())
        return Logits(rule, own_scale=kind is None)

    @Slot()
    def _on_params_changed(self) -> None:
        # T, gain and cap stay editable whatever the grid's rule: the replay uses all three.
        self._logits_note = ""
        self._error = ""
        self.controller.set_logits(self._logits())
        self._update_status()

    def _show_params(self, logits: Logits) -> None:
        """Set the controls to ``logits`` without asking for a new diagnosis."""
        widgets = (self._rule, self._temperature, self._gain, self._cap)
        for widget in widgets:
            widget.blockSignals(True)
        rule = logits.rule
        self._rule.setCurrentIndex(max(self._rule.findData(None if logits.own_scale
                                                           else rule.kind), 0))
        self._temperature.setValue(rule.temperature)
        self._gain.setValue(rule.gain or 0.0)
        self._cap.setValue(rule.cap)
        for widget in widgets:
            widget.blockSignals(False)

    @Slot(bool)
    def _on_replay_rules_toggled(self, _checked: bool) -> None:
        rules = tuple(rule for rule, action in self._rule_actions.items() if action.isChecked())
        if not rules:  # the last map stays: an empty replay would look like a failure
            sender = self.sender()
            if isinstance(sender, QAction):
                sender.blockSignals(True)
                sender.setChecked(True)
                sender.blockSignals(False)
            return
        self.replay.panel.set_rules(rules)
        self.preferencesChanged.emit()

    @Slot(QPoint)
    def _on_header_menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        for column, key in enumerate(self._model.column_keys()):
            if key == "flags":
                continue
            action = menu.addAction(self._model.headerData(column, Qt.Orientation.Horizontal))
            action.setCheckable(True)
            action.setChecked(key not in self._hidden_columns)
            action.setData(key)
        menu.addSeparator()
        restore = menu.addAction(translate("HeadsView", "Default columns"))
        chosen = menu.exec(self.table.horizontalHeader().mapToGlobal(pos))
        if chosen is None:
            return
        if chosen is restore:
            self._hidden_columns = set(DEFAULT_HIDDEN_COLUMNS)
        elif chosen.isChecked():
            self._hidden_columns.discard(chosen.data())
        else:
            self._hidden_columns.add(chosen.data())
        self._apply_hidden_columns()
        self.preferencesChanged.emit()

    def _apply_hidden_columns(self) -> None:
        for column, key in enumerate(self._model.column_keys()):
            self.table.setColumnHidden(column, key in self._hidden_columns)

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
    def _on_batch_changed(self, value: int) -> None:
        selected = self.controller.selected()
        if selected is not None:
            self.choose_head(selected[0], selected[1])

    @Slot(object)
    def _on_file_opened(self, tf: TensorFile) -> None:
        self._replay = None
        self._error = ""
        self._show_params(self.controller.logits())
        self._columns_sized = False
        self._batch.setRange(0, tf.batch - 1)
        self._batch.setEnabled(tf.batch > 1)
        self.grid.set_selection(None, None)
        self._refresh()
        self.replay.panel.prepare()  # a head will be picked next: have its maps ready
        select, self._pending_select = self._pending_select, None
        if select is not None:
            layer, head, batch_entry = select
            if layer in tf.layers and 0 <= head < tf.heads and 0 <= batch_entry < tf.batch:
                self._batch.setValue(batch_entry)
                self.choose_head(layer, head)
            else:
                self._on_error(translate("HeadsView", "The file has no layer {0} head {1} "
                                         "batch entry {2}.").format(layer, head, batch_entry))

    @Slot()
    def _schedule_refresh(self) -> None:
        if not self._refresh_timer.isActive():
            self._refresh_timer.start()

    def _refresh(self) -> None:
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
        self._model.set_records(records, layer_names(tf))
        if records and not self._columns_sized:
            self._columns_sized = True
            self.table.resizeColumnsToContents()
        metric = METRICS[max(self._metric.currentIndex(), 0)]
        self.grid.show_grid(tf.layers, tf.heads, records, metric)
        self._file_label.setText(file_text(tf) + " · " + logits_text(self.controller.logits()))
        self._file_label.setToolTip(meta_tooltip(tf))
        flagged = flagged_text(records, done=not self.controller.is_busy())
        notes = [note for note in (self._error, self._logits_note) if note]
        self._flagged.setText("\n".join([*notes, flagged]))
        selected = self.controller.selected()
        if selected is not None:
            self.grid.set_selection(tf.layers.index(selected[0]), selected[1])
            self._select_table_row(selected[0], selected[1])  # a model reset drops it
        if self._replay is None:
            self.replay.panel.clear_replay(translate(
                "HeadsView", "Click a head to replay it under every scaling rule."))
        else:
            self.replay.panel.retitle(replay_title(self._replay))

    @Slot(int, int)
    def _on_progress(self, done: int, total: int) -> None:
        self._progress.setRange(0, max(total, 1))
        self._progress.setValue(done)
        self._progress.setFormat(translate("HeadsView", "{0}/{1} heads").format(done, total))

    @Slot(bool)
    def _on_busy(self, busy: bool) -> None:
        self._progress.setVisible(busy)
        self._cancel.setVisible(busy)
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
        self._update_status()

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

    @Slot(QModelIndex)
    def _on_table_clicked(self, index: QModelIndex) -> None:
        record = self._model.record(self._sorted.mapToSource(index).row())
        self.choose_head(record.layer, record.head)

    def _select_table_row(self, layer: int, head: int) -> None:
        row = self._model.row_of(layer, head)
        if row < 0:
            return
        index = self._sorted.mapFromSource(self._model.index(row, 0))
        self.table.selectionModel().select(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect
            | QItemSelectionModel.SelectionFlag.Rows)
        self.table.scrollTo(index)


def _spin(low: float, high: float, value: float, decimals: int) -> QDoubleSpinBox:
    spin = QDoubleSpinBox()
    spin.setRange(low, high)
    spin.setDecimals(decimals)
    spin.setValue(value)
    spin.setKeyboardTracking(False)
    return spin


def _fill_combo(combo: QComboBox, items: list[tuple[str, object]]) -> None:
    index = max(combo.currentIndex(), 0)
    combo.blockSignals(True)
    combo.clear()
    for text, data in items:
        combo.addItem(text, data)
    combo.setCurrentIndex(min(index, combo.count() - 1))
    combo.blockSignals(False)
