"""The Train tab: control panel, live views and the training controller, wired together."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, Qt, Slot
from PySide6.QtWidgets import QScrollArea, QSplitter, QTabWidget, QVBoxLayout, QWidget

from engine.config.train import TrainConfig
from engine.training.session import check_training_memory
from gui.kit.i18n import translate
from gui.kit.qt_lifetime import wait_until
from gui.train.controller import DEFAULT_PUSH_INTERVAL_MS, TrainController
from gui.train.curves import TrainCurvesView
from gui.train.lr_sweep_view import LrSweepView
from gui.train.panel import TrainPanel
from gui.train.probe import ProbeView
from gui.train.state import TrainState
from gui.train.view import TrainView

__all__ = ["DEMO_CONFIG", "TrainTab"]

_CTX = "TrainTab"

#: A small model for driving the buttons in the self-test (a step takes well under 1 ms).
DEMO_CONFIG = TrainConfig(
    d_k=16, d_model=32, n=8, vocab=16, batch=32, steps=60, lr=0.01, eval_size=64
)


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
    """

    def __init__(
        self,
        config: TrainConfig | None = None,
        *,
        push_interval_ms: int = DEFAULT_PUSH_INTERVAL_MS,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("trainTab")
        self.panel = TrainPanel(config)
        self.curves = TrainCurvesView()
        self.probe = ProbeView()
        self.lr_sweep = LrSweepView()
        self.views: list[TrainView] = [self.curves, self.probe, self.lr_sweep]
        self.controller = TrainController(
            self.views, push_interval_ms=push_interval_ms, parent=self
        )
        self.view_tabs = QTabWidget()
        self.view_tabs.setObjectName("trainViewTabs")
        self.view_tabs.setDocumentMode(True)
        for view in self.views:
            self.view_tabs.addTab(view, "")  # titled by retranslate_ui
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.panel)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setMinimumWidth(self.panel.sizeHint().width() + 24)
        # The views scroll rather than being cut off when the window is narrow.
        from gui.kit.layout_fit import scroll_area_for, track_scene_minimums

        for view in self.views:
            track_scene_minimums(view)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(scroll)
        self.splitter.addWidget(scroll_area_for(self.view_tabs, "trainViewScroll"))
        self.splitter.setStretchFactor(1, 1)
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
        self.controller.stateChanged.connect(self._on_state_changed)
        self.controller.progressChanged.connect(p.set_progress)
        self.controller.errorOccurred.connect(p.show_error)
        self.controller.resultsShown.connect(self._on_results_shown)
        self.view_tabs.currentChanged.connect(self._on_view_tab_changed)
        self.retranslate_ui()

    # --------------------------------------------------------------------------- translation
    def retranslate_ui(self) -> None:
        """Re-title the view tabs and re-word the status line in the current language (the
        panel and the views re-translate themselves on the same ``LanguageChange``)."""
        for index in range(self.view_tabs.count()):
            self.view_tabs.setTabText(index, self.view_tabs.widget(index).title())
        results = self.controller.results()
        if results.snapshot is not None or results.sweep is not None:
            self._on_results_shown(results)

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """Re-translate when the application's language changes."""
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate_ui()
        super().changeEvent(event)

    def event(self, event: QEvent) -> bool:  # Qt override
        """After a language change has reached the views (children get it after this widget's
        ``changeEvent``), re-draw their result texts: notes, legends, captions."""
        handled = super().event(event)
        if event.type() == QEvent.Type.LanguageChange:
            self.controller.refresh_views()
        return handled

    # ----------------------------------------------------------------------------- commands
    @Slot()
    def start_training(self) -> bool:
        """Start training the panel's configuration; False (message shown) if invalid or busy."""
        try:
            config = self.panel.config()
            check_training_memory(config)  # refuse before any thread allocates it
        except ValueError as exc:
            self.panel.show_error(str(exc))
            return False
        self.panel.show_error("")
        self.view_tabs.setCurrentWidget(self.curves)
        return self.controller.start_training(config)

    @Slot()
    def start_lr_sweep(self) -> bool:
        """Start the panel's learning-rate sweep; False (message shown) if invalid or busy."""
        try:
            config = self.panel.config()
            lrs, seeds = self.panel.sweep_settings()
            check_training_memory(config)
        except ValueError as exc:
            self.panel.show_error(str(exc))
            return False
        self.panel.show_error("")
        self.view_tabs.setCurrentWidget(self.lr_sweep)
        return self.controller.start_lr_sweep(config, lrs, seeds)

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

    def refresh_views(self) -> None:
        """Bring every training view up to date (hidden ones too), e.g. before exporting."""
        self.controller.refresh_views()

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
    @Slot()
    def _on_reset(self) -> None:
        self.controller.reset()
        self.panel.show_error("")
        self.panel.status_label.setText("")
        self.panel.reset_progress()

    @Slot(object)
    def _on_state_changed(self, state: TrainState) -> None:
        self.panel.set_state(state)

    @Slot(object)
    def _on_results_shown(self, results: Any) -> None:
        snap = results.snapshot
        sweep = results.sweep
        lines = []
        if snap is not None:
            lines.append(
                translate("TrainTab", "Training: step {0} of {1}, {2:.0f} steps/s").format(
                    snap.step, snap.total_steps, snap.steps_per_s
                )
            )
        if sweep is not None:
            lines.append(
                translate("TrainTab", "Sweep: {0} of {1} runs").format(
                    sweep.done_runs, sweep.total_runs
                )
            )
        self.panel.status_label.setText("\n".join(lines))

    @Slot(int)
    def _on_view_tab_changed(self, index: int) -> None:
        if index >= 0:
            self.controller.refresh_view(self.view_tabs.widget(index))
