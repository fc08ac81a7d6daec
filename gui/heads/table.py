"""The Heads view's sortable table: one row per (layer, head), a column per diagnostic."""

from __future__ import annotations

import math
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)

from engine.analysis.head_scan import HeadRecord
from gui.heads.metrics import METRICS, flag_text
from gui.kit.i18n import QT_TRANSLATE_NOOP, translate

__all__ = ["SORT_ROLE", "HeadsTableModel", "make_sorted_model"]

#: Role holding the value a column sorts by (numbers as numbers, not as text).
SORT_ROLE = Qt.ItemDataRole.UserRole + 1

_FIXED = (
    QT_TRANSLATE_NOOP("HeadsView", "layer"),
    QT_TRANSLATE_NOOP("HeadsView", "head"),
)

_Index = QModelIndex | QPersistentModelIndex


class HeadsTableModel(QAbstractTableModel):
    """The diagnostics of a file's heads; :meth:`set_records` replaces them in one reset."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._records: tuple[HeadRecord, ...] = ()
        self._layer_names: dict[int, str] = {}

    def set_records(self, records: tuple[HeadRecord, ...], layer_names: dict[int, str]) -> None:
        """Show ``records`` (rows appended since the last call are inserted, not reset)."""
        old = self._records
        if records is old and layer_names == self._layer_names:
            return
        if records[: len(old)] == old and len(records) > len(old) and old:
            self.beginInsertRows(QModelIndex(), len(old), len(records) - 1)
            self._records = records
            self._layer_names = layer_names
            self.endInsertRows()
            return
        self.beginResetModel()
        self._records = records
        self._layer_names = layer_names
        self.endResetModel()

    def record(self, row: int) -> HeadRecord:
        """The record shown in ``row`` (model order)."""
        return self._records[row]

    def row_of(self, layer: int, head: int) -> int:
        """The model row of (layer, head), or -1."""
        for row, record in enumerate(self._records):
            if record.layer == layer and record.head == head:
                return row
        return -1

    def retranslate(self) -> None:
        """Re-read every header and flag text in the current language."""
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, self.columnCount() - 1)
        if self._records:
            self.dataChanged.emit(self.index(0, 0),
                                  self.index(len(self._records) - 1, self.columnCount() - 1))

    # -- QAbstractTableModel ----------------------------------------------------------------
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 (Qt signature)
        return 0 if parent.isValid() else len(self._records)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(_FIXED) + len(METRICS) + 1

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal:
            return None
        metric_index = section - len(_FIXED)
        if role == Qt.ItemDataRole.DisplayRole:
            if section < len(_FIXED):
                return translate("HeadsView", _FIXED[section])
            if metric_index < len(METRICS):
                return METRICS[metric_index].text()
            return translate("HeadsView", "flags")
        if role == Qt.ItemDataRole.ToolTipRole and 0 <= metric_index < len(METRICS):
            return METRICS[metric_index].tooltip_text()
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        record = self._records[index.row()]
        column = index.column()
        metric_index = column - len(_FIXED)
        if column == 0:
            value: Any = record.layer
            text = self._layer_names.get(record.layer, str(record.layer))
        elif column == 1:
            value = record.head
            text = str(record.head)
        elif metric_index < len(METRICS):
            value = METRICS[metric_index].value(record.diagnostics)
            text = "—" if math.isnan(value) else f"{value:.4g}"
            value = -math.inf if math.isnan(value) else value
        else:
            flags = record.diagnostics.flags
            value = (len(flags), ",".join(flags))
            text = flag_text(flags)
        if role == Qt.ItemDataRole.DisplayRole:
            return text
        if role == SORT_ROLE:
            return value if not isinstance(value, tuple) else f"{value[0]}:{value[1]}"
        if role == Qt.ItemDataRole.TextAlignmentRole and column < len(_FIXED) + len(METRICS):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


def make_sorted_model(source: HeadsTableModel) -> QSortFilterProxyModel:
    """A proxy sorting ``source`` by :data:`SORT_ROLE`."""
    proxy = QSortFilterProxyModel(source)
    proxy.setSourceModel(source)
    proxy.setSortRole(SORT_ROLE)
    return proxy
