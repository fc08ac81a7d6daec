"""The Train tab: control panel, live views and the training controller, wired together."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal, Slot
from PySide6.QtGui import QResizeEvent, QShowEvent
from PySide6.QtWidgets import QFileDialog, QScrollArea, QSplitter, QVBoxLayout, QWidget

from engine.cli.train import train_command_line
from engine.config.train import TrainConfig
from engine.training.session import check_training_memory
from gui.kit.i18n import translate
from gui.kit.layout_fit import track_scene_minimums
from gui.kit.qt_lifetime import wait_until
from gui.kit.settings import Settings, open_settings
from gui.kit.wrapping_tabs import WrappingTabWidget, tab_page
from gui.train.controller import DEFAULT_PUSH_INTERVAL_MS, TrainController
from gui.train.curve_grid import TWO_COLUMNS_FROM
from gui.train.curves import TrainCurvesView
from gui.train.lr_sweep_view import LrSweepView
from gui.train.panel import TrainPanel
from gui.train.probe import ProbeView
from gui.train.state import TrainState
from gui.train.view import TrainView

__all__ = ["DEMO_CONFIG", "TENSORS_FILE_NAME", "TrainTab"]

#: The file name the Inspect button offers (in the last export folder).
TENSORS_FILE_NAME = "trained_heads.npz"

#: A small model for driving the buttons in the self-test (its steps are nearly instant).
DEMO_CONFIG = TrainConfig(d_k=16, d_model=32, n=8, vocab=16, batch=32, steps=60, lr=0.01,
                          eval_size=64)


class TrainTab(QWidget):
    """Train the tiny attention model for several rules side by side and watch it live.

    Attributes
    ----------
    panel
        The :class:`~gui.train.panel.TrainPanel`.
    views
        The training views (curves, probe maps, learning-rate sweep), in tab order: each a
        :class:`~gui.train.view.TrainView`, so tabs and export treat them like any plot view.
    controller
        The :class:`~gui.train.controller.TrainController` (owns the worker thread).

    Signals
    -------
    tensorsWritten(str)
        "Inspect trained model" wrote the trained q and k to this tensor file.
    statusChanged(str)
        :meth:`status_line` has changed (the window's status bar shows it).
    """

    tensorsWritten = Signal(str)
    statusChanged = Signal(str)

    def __init__(
        self,
        config: TrainConfig | None = None,
        *,
        push_interval_ms: int = DEFAULT_PUSH_INTERVAL_MS,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._settings = settings  # opened when first needed (the export folder)
        self._written = ""  # the last tensor file written for the current run
        self.setObjectName("trainTab")
        self.panel = TrainPanel(config)
        self.curves = TrainCurvesView()
        self.probe = ProbeView()
        self.lr_sweep = LrSweepView()
        self.views: list[TrainView] = [self.curves, self.probe, self.lr_sweep]
        self.controller = TrainController(self.views, push_interval_ms=push_interval_ms,
                                          parent=self)
        self.view_tabs = WrappingTabWidget()
        self.view_tabs.setObjectName("trainViewTabs")
        for view in self.views:
            self.view_tabs.addTab(view, "")  # titled by retranslate_ui
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.panel)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # The panel may shrink to its minimum (rules wrap) to leave the curves room.
        bar = scroll.verticalScrollBar().sizeHint().width() + 2 * scroll.frameWidth()
        scroll.setMinimumWidth(self.panel.minimumSizeHint().width() + bar)
        self._panel_scroll = scroll
        self._panel_width = self.panel.sizeHint().width() + bar
        self._user_split = False  # the user dragged the splitter: keep their choice
        # The views scroll rather than being cut off when the window is narrow.
        for view in self.views:
            track_scene_minimums(view)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(scroll)
        self.splitter.addWidget(tab_page(self.view_tabs, "trainViewScroll"))
        self.splitter.setStretchFactor(1, 1)
        self.splitter.splitterMoved.connect(self._on_splitter_moved)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

        p = self.panel
        p.start_button.clicked.connect(self.start_training)
        p.sweep_button.clicked.connect(self.start_lr_sweep)
        p.pause_button.clicked.connect(self.controller.pause)
        p.resume_button.clicked.connect(self.controller.resume)
        p.stop_button.clicked.connect(self.controller.stop)
        p.reset_button.clicked.connect(self._on_reset)
        p.inspect_button.clicked.connect(self.ask_inspect_trained)
        self.controller.tensorsWritten.connect(self._on_tensors_written)
        self.controller.stateChanged.connect(self._on_state_changed)
        self.controller.progressChanged.connect(p.progress.set_progress)
        self.controller.errorOccurred.connect(p.show_error)
        self.controller.errorOccurred.connect(self._on_error)
        self.controller.resultsShown.connect(self._on_results_shown)
        self.view_tabs.currentChanged.connect(self._on_view_tab_changed)
        p.inputChanged.connect(self._on_input_changed)
        self._on_input_changed()
        self._status = ""
        self._error = ""
        self.retranslate_ui()  # titles the view tabs and words the status line

    def status_line(self) -> str:
        """What the tab is doing, for the window's status bar (translated)."""
        return self._status

    def _update_status(self) -> None:
        state = self.controller.state()
        progress = self.panel.status_label.text().split("\n")[0]
        words = {
            TrainState.RUNNING: translate("TrainTab", "Training"),
            TrainState.PAUSED: translate("TrainTab", "Paused"),
            TrainState.STOPPING: translate("TrainTab", "Stopping after this step"),
            TrainState.EXPORTING: translate("TrainTab", "Writing the trained q and k"),
        }
        if state == TrainState.RUNNING and progress:
            text = progress  # "Training: step 120 of 300, 95 steps/s"
        elif state in words:
            text = words[state] + (f" · {progress}" if progress else "")
        elif self._error:
            text = translate("TrainTab", "Error: {0}").format(self._error)
        elif progress:
            text = translate("TrainTab", "Done") + f" · {progress}"
        else:
            text = translate("TrainTab", "Ready: press Start to train")
        if text != self._status:
            self._status = text
            self.statusChanged.emit(text)

    @Slot(str)
    def _on_error(self, message: str) -> None:
        self._error = message
        self._update_status()

    # --------------------------------------------------------------------------- translation
    def retranslate_ui(self) -> None:
        """Re-title the view tabs and re-word the status line in the current language (the
        panel and the views re-translate themselves on the same ``LanguageChange``)."""
        for index in range(self.view_tabs.count()):
            self.view_tabs.setTabText(index, self.view_tabs.widget(index).title())
        results = self.controller.results()
        if results.snapshot is not None or results.sweep is not None:
            self._on_results_shown(results)
        self._status = ""  # re-worded in the new language
        self._update_status()

    def showEvent(self, event: QShowEvent) -> None:  # Qt override
        """Catch the view in front up: a run that went on (or ended) behind another top-level
        tab was not pushed to it, and its sub-tab did not change to trigger the refresh."""
        super().showEvent(event)
        self.controller.refresh_view(self.view_tabs.currentWidget())

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt override
        """Share the width: the panel at its preferred width while the curves keep two
        columns, down to its minimum in a narrow window (1024 px with the tour open)."""
        super().resizeEvent(event)
        if self._user_split:
            return
        total = self.splitter.width() - self.splitter.handleWidth()
        views_wanted = TWO_COLUMNS_FROM + 40  # the tab rows' margins, a scroll bar
        panel = min(self._panel_width, max(total - views_wanted, self._panel_scroll.minimumWidth()))
        self.splitter.setSizes([panel, max(total - panel, 0)])

    def panel_area(self) -> QWidget:
        """The scrolling area of the control panel (folded away in presentation mode)."""
        return self._panel_scroll

    @Slot(int, int)
    def _on_splitter_moved(self, _pos: int, _index: int) -> None:
        self._user_split = True

    def event(self, event: QEvent) -> bool:  # Qt override
        """On a language change re-word the tab, let Qt pass the change on to the panel and the
        views (its children), then re-draw the views' result texts: notes, legends, captions."""
        language = event.type() == QEvent.Type.LanguageChange
        if language:
            self.retranslate_ui()
        handled = super().event(event)
        if language:
            self.controller.refresh_views()
        return handled

    # ----------------------------------------------------------------------------- commands
    @Slot()
    def start_training(self) -> bool:
        """Start training the panel's configuration; False (message shown) if invalid or busy."""
        config = self._checked_config(self.curves)
        started = config is not None and self.controller.start_training(config)
        if started:
            self._written = ""  # the file written before describes the previous run
        return started

    @Slot()
    def start_lr_sweep(self) -> bool:
        """Start the panel's learning-rate sweep; False (message shown) if invalid or busy."""
        config = self._checked_config(self.lr_sweep, sweep=True)
        return config is not None and self.controller.start_lr_sweep(
            config, *self.panel.sweep_settings())

    def _checked_config(self, view: TrainView, sweep: bool = False) -> TrainConfig | None:
        """The panel's configuration with ``view`` in front, or None (message shown) if the
        input (with the sweep's settings) is invalid or would not fit in memory."""
        try:
            config = self.panel.config()
            if sweep:
                self.panel.sweep_settings()
            check_training_memory(config)  # refuse before any thread allocates it
        except ValueError as exc:
            self.panel.show_error(str(exc))
            return None
        self.panel.show_error("")
        self.view_tabs.setCurrentWidget(view)
        return config

    @Slot()
    def ask_inspect_trained(self) -> None:
        """Inspect trained model: ask where to save the tensor file, then write it."""
        if not self.controller.has_trained_model():
            return
        folder = self._settings_store().get("export/last_dir") or str(Path.home())
        path, _ = QFileDialog.getSaveFileName(
            self, translate("TrainTab", "Save the trained q and k"),
            os.path.join(folder, TENSORS_FILE_NAME),
            translate("TrainTab", "Tensor files (*.npz *.safetensors)"))
        if path:
            self.inspect_trained(path)

    def inspect_trained(self, path: str | os.PathLike[str]) -> bool:
        """Write the trained q and k of every rule to ``path`` off the GUI thread.

        A name without ``.npz`` or ``.safetensors`` gets ``.npz``. :attr:`tensorsWritten`
        follows when the file is written; an error is shown in the panel. Returns False when
        nothing was trained or a job runs.
        """
        path = str(path)
        if Path(path).suffix not in (".npz", ".safetensors"):
            path += ".npz"
        snap = self.controller.results().snapshot
        if snap is None:
            return False
        command = "Attention Scale Explorer, Train tab: Inspect trained model"
        line = train_command_line(snap.config)
        if line is not None:
            command += f" (the training of: {line})"
        self.panel.show_error("")
        return self.controller.export_tensors(path, command)

    def current_view(self) -> TrainView:
        """The training view in front."""
        return self.view_tabs.currentWidget()

    def show_view(self, key: str) -> bool:
        """Bring the training view ``key`` to the front of the sub-tabs."""
        for view in self.views:
            if view.key == key:
                self.view_tabs.setCurrentWidget(view)
                return True
        return False

    def wait_until_idle(self, timeout_ms: int = 60_000) -> bool:
        """Run a local event loop until no job runs (woken by GUI-thread signals).

        Returns False on timeout.
        """
        controller = self.controller
        return wait_until(lambda: controller.state() == TrainState.IDLE,
                          (controller.stateChanged,), timeout_ms)

    def shutdown(self, timeout_ms: int = 1000) -> bool:
        """Stop the training thread (bounded wait); safe to call twice."""
        return self.controller.shutdown(timeout_ms)

    # --------------------------------------------------------------------------------- slots
    def _settings_store(self) -> Settings:
        if self._settings is None:
            self._settings = open_settings()
        return self._settings

    @Slot(str)
    def _on_tensors_written(self, path: str) -> None:
        self._settings_store().set("export/last_dir", str(Path(path).parent))
        self._written = path
        self._on_results_shown(self.controller.results())
        self.tensorsWritten.emit(path)

    @Slot()
    def _on_input_changed(self) -> None:
        try:
            steps = self.panel.config().steps
        except ValueError:
            return  # the panel shows the message; the empty plots keep the last valid length
        self.curves.set_planned_steps(steps)

    @Slot()
    def _on_reset(self) -> None:
        self.controller.reset()
        self._written = ""
        self.panel.set_trained(False)
        self.panel.show_error("")
        self.panel.status_label.setText("")
        self.panel.progress.reset_run()
        self._error = ""
        self._update_status()

    @Slot(object)
    def _on_state_changed(self, state: TrainState) -> None:
        self.panel.set_trained(self.controller.has_trained_model())
        self.panel.set_state(state)
        if state == TrainState.RUNNING:
            self._error = ""
        results = self.controller.results()
        if results.snapshot is not None or results.sweep is not None:
            self._on_results_shown(results)  # "Training: step …" only while it trains
        else:
            self._update_status()

    @Slot(object)
    def _on_results_shown(self, results: Any) -> None:
        snap = results.snapshot
        sweep = results.sweep
        lines = []
        if snap is not None and self.controller.state() == TrainState.RUNNING:
            lines.append(translate("TrainTab", "Training: step {0} of {1}, {2:.0f} steps/s").format(
                snap.step, snap.total_steps, snap.steps_per_s))
        elif snap is not None:  # paused, stopped or done: "Done · Training: …" read as both
            lines.append(translate("TrainTab", "Step {0} of {1}").format(
                snap.step, snap.total_steps))
        if sweep is not None:
            lines.append(translate("TrainTab", "Sweep: {0} of {1} runs").format(
                sweep.done_runs, sweep.total_runs))
        if self._written:
            lines.append(translate("TrainTab", "Wrote {0}").format(Path(self._written).name))
        self.panel.set_trained(self.controller.has_trained_model())
        self.panel.status_label.setText("\n".join(lines))
        self._update_status()

    @Slot(int)
    def _on_view_tab_changed(self, index: int) -> None:
        if index >= 0:
            self.controller.refresh_view(self.view_tabs.widget(index))
