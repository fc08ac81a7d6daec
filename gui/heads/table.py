"""The Heads view's sortable table: one row per (layer, head), a column per diagnostic.

The flags come first, so that they show at 1024×768 whatever the other columns' widths; the
columns of :data:`DEFAULT_HIDDEN_COLUMNS` start hidden (right-click a header to show them).

A ``QStandardItemModel``: the view reads every cell from C++ when it paints. A Python
``data()`` was asked ~10 roles per visible cell on every repaint (13–27 ms for 30 rows × 10
columns, a GUI-thread stall each time the streamed diagnostics arrived).
"""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import QSortFilterProxyModel, Qt
from PySide6.QtGui import QStandardItem, QStandardItemModel

from engine.analysis.head_scan import HeadRecord
from gui.heads.metrics import METRICS, flag_text
from gui.heads.texts import missing_text
from gui.kit.i18n import QT_TRANSLATE_NOOP, translate

__all__ = ["DEFAULT_HIDDEN_COLUMNS", "SORT_ROLE", "HeadsTableModel", "make_sorted_model"]

#: Role holding the value a column sorts by (numbers as numbers, not as text).
SORT_ROLE = Qt.ItemDataRole.UserRole + 1

_FIXED = (
    QT_TRANSLATE_NOOP("HeadsView", "flags"),
    QT_TRANSLATE_NOOP("HeadsView", "layer"),
    QT_TRANSLATE_NOOP("HeadsView", "head"),
)
_FIXED_KEYS = ("flags", "layer", "head")
#: The columns hidden until the user shows them: the law's ratio, the distance to the entropy
#: floor and max |logit| read only with docs/heads.md at hand; the others fit 1024 px beside the
#: grid.
DEFAULT_HIDDEN_COLUMNS = ("max_abs_logit", "logit_std_ratio", "entropy_above_floor")
_RIGHT = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter


def _item(text: str, sort_value: Any, right: bool = True) -> QStandardItem:
    # Built by the Python constructor, never by ``clone()``: an item made in C++ has no wrapper
    # class to tell Shiboken when the model deletes it, and its stale entry made a later
    # pyqtgraph item at the same address crash (tests/gui/test_lifetime.py).
    item = QStandardItem(text)
    item.setData(sort_value, SORT_ROLE)
    item.setEditable(False)
    if right:
        item.setTextAlignment(_RIGHT)
    return item


class HeadsTableModel(QStandardItemModel):
    """The diagnostics of a file's heads; :meth:`set_records` appends the streamed ones."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(0, len(_FIXED) + len(METRICS), parent)
        self._records: tuple[HeadRecord, ...] = ()
        self._layer_names: dict[int, str] = {}
        self.retranslate()

    def set_records(self, records: tuple[HeadRecord, ...], layer_names: dict[int, str]) -> None:
        """Show ``records``: rows appended since the last call are added, others replaced."""
        old = self._records
        if records is old and layer_names == self._layer_names:
            return
        if not (records[: len(old)] == old and layer_names == self._layer_names):
            self.removeRows(0, self.rowCount())
            old = ()
        self._records = records
        self._layer_names = layer_names
        for record in records[len(old):]:
            self.appendRow(self._row(record))

    def record(self, row: int) -> HeadRecord:
        """The record shown in ``row`` (model order)."""
        return self._records[row]

    def row_of(self, layer: int, head: int) -> int:
        """The model row of (layer, head), or -1."""
        for row, record in enumerate(self._records):
            if record.layer == layer and record.head == head:
                return row
        return -1

    @staticmethod
    def column_keys() -> tuple[str, ...]:
        """Each column's key, in order: flags, layer, head, then the metrics' keys."""
        return (*_FIXED_KEYS, *(metric.key for metric in METRICS))

    def retranslate(self) -> None:
        """Set the headers, their tooltips and the flag texts in the current language."""
        labels = [translate("HeadsView", text) for text in _FIXED]
        labels += [metric.text() for metric in METRICS]
        self.setHorizontalHeaderLabels(labels)
        self.horizontalHeaderItem(0).setToolTip(translate(
            "HeadsView", "The head's faults (thresholds: docs/heads.md); right-click a header to "
            "hide or show columns"))
        for index, metric in enumerate(METRICS):
            header = self.horizontalHeaderItem(len(_FIXED) + index)
            header.setToolTip(metric.tooltip_text())
        for row, record in enumerate(self._records):
            self.item(row, 0).setText(flag_text(record.diagnostics.flags))
            self.item(row, 0).setToolTip(flag_text(record.diagnostics.flags))

    def _row(self, record: HeadRecord) -> list[QStandardItem]:
        name = self._layer_names.get(record.layer, str(record.layer))
        flags = record.diagnostics.flags
        # Sorted by how many flags, then which: the most troubled heads first (descending).
        flags_item = _item(flag_text(flags), f"{len(flags)}:{','.join(flags)}", right=False)
        flags_item.setToolTip(flag_text(flags))  # whole, should the user narrow the column
        row = [flags_item,
               _item(name, record.layer), _item(str(record.head), record.head)]
        # What a file of weights (or logits) cannot give says so instead of "—".
        missing = "—" if record.diagnostics.source == "qk" else missing_text("q_and_k")
        for metric in METRICS:
            value = metric.value(record.diagnostics)
            nan = math.isnan(value)
            row.append(_item(missing if nan else metric.format(value), -math.inf if nan else value))
        return row


def make_sorted_model(source: HeadsTableModel) -> QSortFilterProxyModel:
    """A proxy sorting ``source`` by :data:`SORT_ROLE`."""
    proxy = QSortFilterProxyModel(source)
    proxy.setSourceModel(source)
    proxy.setSortRole(SORT_ROLE)
    return proxy
