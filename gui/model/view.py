"""The Model tab: a real model's loss as its attention scale changes, streamed as it is computed.

Left, the controls (model, text, α grid, scope, scale, precision, Run and Cancel); right, the
plots (:class:`~gui.model.figure.ModelFigure`), and under them the top next tokens at one
position (at α = 1 and at the α chosen) beside the two greedy continuations: the model's own
scale and the intervention. The view draws what the controller received, at most 10 times a
second; it computes nothing.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal, Slot
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QGridLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from gui.kit.caption import set_caption
from gui.kit.i18n import translate
from gui.kit.layout_fit import SceneMinimumTracker
from gui.kit.plot_view import PlotView
from gui.kit.qt_lifetime import wait_until
from gui.kit.split_paint import SplitPaint
from gui.kit.view_push import Throttle
from gui.model.controller import ModelController, ModelResults
from gui.model.controls import ModelControls
from gui.model.figure import ModelFigure, format_alpha
from gui.model.texts import (
    CSV_HEADER,
    csv_rows,
    header_text,
    intervention_text,
    prediction_rows,
    shown_token,
    status_text,
)
from gui.model.worker import ContinuationReady

__all__ = ["ModelView"]

#: The fewest milliseconds between two redraws while points stream in.
REDRAW_MS = 100


class ModelView(PlotView):
    """The Model tab (a plot view: it exports its plots as PNG/SVG/PDF and every number as CSV).

    Signals
    -------
    statusChanged(str)
        :meth:`status_line` has changed.
    """

    key = "model"
    statusChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = ModelController(self)
        self.controls = ModelControls()
        self.figure = ModelFigure()
        self._status = ""
        self._alphas: tuple[float, ...] = ()
        self._throttle = Throttle(REDRAW_MS, self._refresh, self)
        # The plots take in a redraw and paint it in later event-loop passes (short stalls).
        self._paint = SplitPaint(self)
        self._build()
        controller = self.controller
        controller.resultsChanged.connect(self._on_results)
        controller.busyChanged.connect(self.controls.set_busy)
        self.controls.runRequested.connect(self.run)
        self.controls.cancel_button.clicked.connect(controller.cancel)
        self.alpha_choice.currentIndexChanged.connect(self._on_alpha_chosen)
        self.position.valueChanged.connect(self._show_predictions)
        self.retranslate_ui()
        self._refresh()

    def _build(self) -> None:
        scroll = _ControlsScroll()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.controls)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.alpha_label, self.alpha_choice = QLabel(), QComboBox()
        self.alpha_choice.setObjectName("model_chosen_alpha")
        self.position_label, self.position = QLabel(), QSpinBox()
        self.position.setObjectName("model_position")
        self.after_label = QLabel()
        self.after_label.setWordWrap(True)
        choose = QGridLayout()
        for index, (label, widget) in enumerate(((self.alpha_label, self.alpha_choice),
                                                 (self.position_label, self.position))):
            choose.addWidget(label, index, 0)  # one above the other: the column stays narrow
            choose.addWidget(widget, index, 1)
        choose.setColumnStretch(2, 1)
        self.table = QTableWidget(0, 4)
        self.table.setObjectName("model_predictions")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        # Compact rows: the top five tokens show without scrolling under the plots.
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.table.horizontalHeader()
        for column, mode in enumerate((QHeaderView.ResizeMode.Stretch,
                                       QHeaderView.ResizeMode.ResizeToContents) * 2):
            header.setSectionResizeMode(column, mode)
        predictions = QWidget()
        column = QVBoxLayout(predictions)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(choose)
        column.addWidget(self.after_label)
        column.addWidget(self.table, 1)
        self.own_title, self.chosen_title = QLabel(), QLabel()
        self.own_text, self.chosen_text = QTextEdit(), QTextEdit()
        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(predictions)
        for title, text in ((self.own_title, self.own_text),
                            (self.chosen_title, self.chosen_text)):
            text.setReadOnly(True)
            title.setWordWrap(True)
            box = QWidget()
            box_layout = QVBoxLayout(box)
            box_layout.setContentsMargins(0, 0, 0, 0)
            box_layout.addWidget(title)
            box_layout.addWidget(text, 1)
            bottom.addWidget(box)
        bottom.setSizes([420, 300, 300])
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.figure)
        right.addWidget(bottom)
        right.setChildrenCollapsible(False)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        right.setSizes([440, 240])
        main = QSplitter(Qt.Orientation.Horizontal)
        main.addWidget(scroll)
        main.addWidget(right)
        main.setStretchFactor(1, 1)
        main.setSizes([300, 980])  # the controls need no more; the plots take the rest
        main.setChildrenCollapsible(False)
        self._layout.addWidget(main, 1)
        # The figure asks for what its plots need: the window never cuts them.
        self._minimum = SceneMinimumTracker(self.figure)

    # ----------------------------------------------------------------------------- contract
    def title(self) -> str:
        return translate("ModelView", "Model")

    def show_results(self, results: object) -> None:
        """Draw the controller's latest results (the view is fed by its own controller)."""
        self._refresh()

    def export_item(self) -> ModelFigure:
        """The plots, brought up to date with the points received so far."""
        if self._throttle.is_pending():
            self._throttle.discard()
            self._refresh()
        return self.figure

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        """Every point computed (kept after a cancel), the predictions shown and the two
        continuations."""
        return list(CSV_HEADER), csv_rows(self.controller.results(), self.chosen_alpha(),
                                          self.position.value())

    def minimumSizeHint(self) -> QSize:  # Qt override
        """What the tab needs while shown; nothing while another tab is in front (the tab
        widget takes the largest minimum of its pages, shown or not: this one must not narrow
        the explorer's docks)."""
        return super().minimumSizeHint() if self.isVisible() else QSize(0, 0)

    def showEvent(self, event: QShowEvent) -> None:  # Qt override
        """Shown: the window lays out again for what the tab needs."""
        super().showEvent(event)
        self.updateGeometry()

    def hideEvent(self, event: QHideEvent) -> None:  # Qt override
        """Hidden: the tab needs nothing of the window any more."""
        super().hideEvent(event)
        self.updateGeometry()

    def fit_to_width(self, width: int) -> None:
        """The figure fits its legend to its own width (the controls take part of the view's)."""
        self.figure.fit_legend()

    def retranslate_ui(self) -> None:
        super().retranslate_ui()
        self.controls.retranslate_ui()
        self.figure.retranslate_ui()
        self.alpha_label.setText(translate("ModelView", "α shown:"))
        self.alpha_choice.setToolTip(translate(
            "ModelView", "The α whose predictions and continuation are shown beside the "
            "model's own (α = 1)"))
        self.position_label.setText(translate("ModelView", "position:"))
        self.position.setToolTip(translate("ModelView", "The token after which the next token "
                                           "is predicted"))
        self.table.setToolTip(translate("ModelView", "The most likely next tokens and their "
                                        "probabilities"))
        self.own_text.setToolTip(translate("ModelView", "Greedy continuation of the text by the "
                                           "model as trained (up to 32 tokens)"))
        self.chosen_text.setToolTip(translate("ModelView", "Greedy continuation under the α "
                                              "shown, in the scope of the run"))
        self._refresh()

    # ------------------------------------------------------------------------------ actions
    @Slot()
    def run(self) -> bool:
        """Run the inputs shown (False, with the reason beside Run, when one is unreadable)."""
        controls = self.controls
        try:
            task = controls.task(threads=max(1, (os.cpu_count() or 2) - 1))
        except ValueError as exc:
            controls.message.setText(str(exc))
            return False
        if not Path(task.path).exists():
            controls.message.setText(translate("ModelView", "{0}: no such file or folder"
                                               ).format(task.path))
            return False
        self.controller.run(task)
        return True

    def run_sample(self) -> str:
        """Run the inputs shown on an installed sample model (SmolLM2 first); "" when it runs
        (or has run: the same request is not repeated), else why not (the pip command)."""
        controls = self.controls
        if not controls.use_sample():
            return controls.message.text()
        results = self.controller.results()
        try:
            task = controls.task(threads=max(1, (os.cpu_count() or 2) - 1))
        except ValueError as exc:
            return str(exc)
        if results.task == task and (results.state == "done" or self.controller.is_busy()):
            return ""
        return "" if self.run() else controls.message.text()

    def chosen_alpha(self) -> float | None:
        """The α shown beside the model's own (None before a run)."""
        data = self.alpha_choice.currentData()
        return float(data) if data is not None else None

    def status_line(self) -> str:
        """What the tab is doing, for the window's status bar (translated)."""
        return self._status

    def wait_idle(self, timeout_ms: int = 60_000) -> bool:
        """Run a local event loop until no job runs or waits, then draw; True if idle."""
        controller = self.controller
        wait_until(lambda: not controller.is_busy(),
                   (controller.busyChanged, controller.resultsChanged), timeout_ms)
        self._throttle.discard()
        self._refresh()
        return not controller.is_busy()

    # ------------------------------------------------------------------------------- private
    @Slot(object)
    def _on_results(self, _results: ModelResults) -> None:
        self._throttle.trigger()

    @Slot(int)
    def _on_alpha_chosen(self, _index: int) -> None:
        alpha = self.chosen_alpha()
        if alpha is not None:
            self.controller.continue_at(alpha)
        self._refresh()

    def _refresh(self) -> None:
        # Only the parts whose results changed are redrawn: a progress message changes none.
        results = self.controller.results()
        self._fill_alphas(results)
        chosen = self.chosen_alpha()
        if self._is_new("points", results.task, results.model, results.alpha_points,
                        results.second_points, chosen):
            with self._paint.timed():
                self.figure.show_results(results, chosen)
                header = header_text(results)
                if header != self.figure.header.text:  # a new text re-lays the figure out
                    self.figure.header.setText(header)
                # The caption says what the figure does not: the text the model read.
                text = " ".join(results.task.text.split()) if results.task is not None else ""
                set_caption(self.figure, translate("ModelView", "Text: “{0}”").format(
                    text if len(text) <= 160 else text[:159] + "…")
                    if results.model is not None else "")
            self._paint.paint_later([self.figure])
        done, total = results.progress
        self.controls.show_progress(done, total)
        if results.state == "failed":
            self.controls.message.setText(translate("ModelView", "Error: {0}").format(
                results.error))
        if self._is_new("predictions", results.reference(), results.score_at(chosen or 1.0)):
            self._show_predictions()
        if self._is_new("continuations", results.task, results.own, results.intervened,
                        chosen):
            self._show_continuations(results, chosen)
        status = status_text(results)
        if status != self._status:
            self._status = status
            self.statusChanged.emit(status)

    def _fill_alphas(self, results: ModelResults) -> None:
        alphas = results.task.alphas if results.task is not None else ()
        if alphas == self._alphas:
            return
        self._alphas = alphas
        self.alpha_choice.blockSignals(True)
        self.alpha_choice.clear()
        for alpha in alphas:
            self.alpha_choice.addItem(format_alpha(alpha), alpha)
        if results.task is not None:
            self.alpha_choice.setCurrentIndex(max(0, self.alpha_choice.findData(
                results.task.chosen_alpha)))
        self.alpha_choice.blockSignals(False)

    @Slot()
    def _show_predictions(self) -> None:
        results = self.controller.results()
        own, alpha = results.reference(), self.chosen_alpha()
        chosen = results.score_at(alpha) if alpha is not None else None
        shown = own or chosen
        count = len(shown.predictions) if shown is not None else 0
        self.position.blockSignals(True)
        last = self.position.maximum()
        self.position.setRange(0, max(count - 1, 0))
        if count and (self.position.value() == last or self.position.value() >= count):
            self.position.setValue(count - 1)  # the last position, unless one was picked
        self.position.blockSignals(False)
        position = self.position.value()
        self.table.setHorizontalHeaderLabels([
            "α = 1", "p", f"α = {format_alpha(alpha)}" if alpha is not None else "α", "p"])
        rows = prediction_rows(own, chosen, position)
        self.table.setRowCount(len(rows))
        for row, cells in enumerate(rows):
            for column, cell in enumerate(cells):
                self.table.setItem(row, column, QTableWidgetItem(cell))
        if shown is not None and 0 <= position < len(shown.tokens):
            following = (shown_token(shown.tokens[position + 1])
                         if position + 1 < len(shown.tokens)
                         else translate("ModelView", "(end of the text)"))
            self.after_label.setText(translate(
                "ModelView", "Next tokens after “{0}” (token {1}); the text goes on with “{2}”."
            ).format(
                shown_token(shown.tokens[position]), position, following))
        else:
            self.after_label.setText("")

    def _show_continuations(self, results: ModelResults, chosen: float | None) -> None:
        self.own_title.setText(translate("ModelView", "Model's own scale (α = 1)"))
        intervened = results.intervened
        label = intervention_text(results, intervened.alpha if intervened is not None
                                  else chosen or 1.0)
        self.chosen_title.setText(translate("ModelView", "Intervention: {0}").format(label)
                                  if results.task is not None
                                  else translate("ModelView", "Intervention"))
        for box, ready in ((self.own_text, results.own), (self.chosen_text, intervened)):
            box.setHtml(_continuation_html(ready))


class _ControlsScroll(QScrollArea):
    """The controls' column: scrolls up and down, never sideways, so it is at least as wide as
    the controls need in the current language."""

    def minimumSizeHint(self) -> QSize:  # Qt override
        hint = super().minimumSizeHint()
        widget = self.widget()
        if widget is not None:
            hint.setWidth(widget.minimumSizeHint().width() + 2 * self.frameWidth()
                          + self.verticalScrollBar().sizeHint().width())
        return hint


def _continuation_html(ready: ContinuationReady | None) -> str:
    """The prompt's end in grey, then the continuation in bold (or why there is none)."""
    if ready is None:
        return ""
    continuation = ready.continuation
    if continuation is None:
        return f"<i>{html.escape(ready.note)}</i>"
    prompt = continuation.prompt[-160:]
    return (f"<span style='color:#777777'>{html.escape(prompt)}</span>"
            f"<b>{html.escape(continuation.text)}</b>")
