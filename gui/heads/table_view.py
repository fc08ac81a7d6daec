"""The Heads tab's table of heads: sortable, one row selected, columns hidden from the header's
context menu."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPoint, Qt, Signal, Slot
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QTableView, QWidget

from engine.analysis.head_scan import HeadRecord
from engine.io.tensors import TensorFile
from gui.heads.metrics import flag_text
from gui.heads.table import DEFAULT_HIDDEN_COLUMNS, HeadsTableModel, make_sorted_model
from gui.heads.texts import layer_names
from gui.kit.i18n import translate

__all__ = ["HeadsTable"]


class HeadsTable(QTableView):
    """The diagnostics of every head, in file order until the user sorts them.

    Signals
    -------
    headClicked(int, int)
        The user clicked or activated the row of (layer, head).
    columnsChanged()
        The user hid or showed columns (:meth:`hidden_columns`).
    """

    headClicked = Signal(int, int)
    columnsChanged = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._model = HeadsTableModel(self)
        self._sorted = make_sorted_model(self._model)
        self.setModel(self._sorted)
        self.setSortingEnabled(True)
        self.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()
        # Sized once from a file's first rows (see show_records): measuring every cell on each
        # streamed batch stalls the GUI thread.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._on_header_menu)
        self._hidden: set[str] = set(DEFAULT_HIDDEN_COLUMNS)
        self._apply_hidden()
        self._sized_for: TensorFile | None = None  # the file the columns were fitted to
        self.clicked.connect(self._on_clicked)
        self.activated.connect(self._on_clicked)

    def show_records(self, tf: TensorFile, records: tuple[HeadRecord, ...]) -> None:
        """Show ``records`` of ``tf``; the columns fit the first rows of each file."""
        self._model.set_records(records, layer_names(tf))
        if records and tf is not self._sized_for:
            self._sized_for = tf
            self.resizeColumnsToContents()
        self._fit_flags(records)

    def _fit_flags(self, records: tuple[HeadRecord, ...]) -> None:
        """Widen the flags column for a later head with more flags than the first rows had
        ("saturated, sharp, sink" was cut to "saturate…"); measures only the flag texts."""
        metrics = self.fontMetrics()
        texts = {flag_text(record.diagnostics.flags) for record in records}
        # The cell's margins and the sort arrow's room, as resizeColumnsToContents leaves.
        needed = max((metrics.horizontalAdvance(text) for text in texts), default=0) + 16
        if needed > self.columnWidth(0):
            self.setColumnWidth(0, needed)

    def select_head(self, layer: int, head: int) -> None:
        """Select and show the row of (layer, head), if it has arrived."""
        row = self._model.row_of(layer, head)
        if row < 0:
            return
        index = self._sorted.mapFromSource(self._model.index(row, 0))
        self.selectionModel().select(index, QItemSelectionModel.SelectionFlag.ClearAndSelect
                                     | QItemSelectionModel.SelectionFlag.Rows)
        self.scrollTo(index)

    def hidden_columns(self) -> tuple[str, ...]:
        """The keys of the hidden columns (see :meth:`HeadsTableModel.column_keys`)."""
        return tuple(key for key in self._model.column_keys() if key in self._hidden)

    def set_hidden_columns(self, keys: tuple[str, ...]) -> None:
        """Hide the columns named by ``keys`` (the flags column always shows)."""
        self._hidden = {key for key in keys if key in self._model.column_keys()}
        self._apply_hidden()

    def retranslate_ui(self) -> None:
        """Headers, flags and tooltip in the current language, the columns wide enough for
        the new headers (even before any row)."""
        self._model.retranslate()
        self.resizeColumnsToContents()
        self.setToolTip(translate(
            "HeadsView", "Click a head to replay it under every rule and show it in the "
            "explorer's views; click a header to sort, right-click one to hide or show "
            "columns"))

    def _apply_hidden(self) -> None:
        for column, key in enumerate(self._model.column_keys()):
            self.setColumnHidden(column, key in self._hidden)

    @Slot(QModelIndex)
    def _on_clicked(self, index: QModelIndex) -> None:
        record = self._model.record(self._sorted.mapToSource(index).row())
        self.headClicked.emit(record.layer, record.head)

    @Slot(QPoint)
    def _on_header_menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        for column, key in enumerate(self._model.column_keys()):
            if key == "flags":
                continue
            action = menu.addAction(self._model.headerData(column, Qt.Orientation.Horizontal))
            action.setCheckable(True)
            action.setChecked(key not in self._hidden)
            action.setData(key)
        menu.addSeparator()
        restore = menu.addAction(translate("HeadsView", "Default columns"))
        chosen = menu.exec(self.horizontalHeader().mapToGlobal(pos))
        if chosen is None:
            return
        if chosen is restore:
            self._hidden = set(DEFAULT_HIDDEN_COLUMNS)
        elif chosen.isChecked():
            self._hidden.discard(chosen.data())
        else:
            self._hidden.add(chosen.data())
        self._apply_hidden()
        self.columnsChanged.emit()
