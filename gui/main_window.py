"""The explorer's main window: assembles the parameter dock, view tabs, Train tab, menus and
status bar, connects them, and stops the worker threads in order when it closes."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, Qt, Slot
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMessageBox, QScrollArea

from engine.config import AttentionConfig
from engine.config.train import TrainConfig
from gui import actions as menu_table
from gui.explorer.controller import ExplorerController
from gui.explorer.panel import ParameterPanel
from gui.explorer.source_bar import SourceBar, connect_real_head
from gui.explorer.views.base import ExplorerView
from gui.kit.activation import ignore_window_activation
from gui.kit.i18n import QT_TRANSLATE_NOOP, Retranslating, translate
from gui.kit.plot_view import PlotView
from gui.kit.qt_lifetime import collect_young_soon, wait_until
from gui.kit.settings import Settings, open_settings
from gui.train.state import TrainState
from gui.view_tabs import ViewTabs
from gui.window_close import WindowClose, stop_workers
from gui.window_files import WindowFiles
from gui.window_goto import GotoActions
from gui.window_language import LanguageMenu
from gui.window_modes import ModeTabs
from gui.window_settings import apply_default_geometry, restore_window, restored_config
from gui.window_status import StatusLine

__all__ = ["MainWindow"]


class MainWindow(Retranslating, QMainWindow):
    """The Attention Scale Explorer window.

    Parameters
    ----------
    settings
        Typed settings (default: :func:`gui.kit.settings.open_settings`).
    config
        Initial configuration; ``None`` restores the last one from the settings.
    restore
        Restore geometry, dock state and the last configuration from ``settings``.
    controller_options
        Extra keyword arguments of :class:`ExplorerController` (tests use small sweeps).
    start
        Submit the first request immediately.
    persist
        Save geometry, configuration, session path and the window's choices to ``settings``;
        False (headless commands) keeps them in a copy in memory.

    Attributes
    ----------
    files
        Sessions, exports and the clipboard (:class:`~gui.window_files.WindowFiles`).
    status
        The status bar (:class:`~gui.window_status.StatusLine`).
    language
        View > Language (:class:`~gui.window_language.LanguageMenu`).
    view_tabs
        The explorer's view tabs and side-by-side mode (:class:`~gui.view_tabs.ViewTabs`).
    menu_actions
        Action name (see :mod:`gui.actions`) -> ``QAction``.
    """

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        config: AttentionConfig | None = None,
        restore: bool = True,
        controller_options: dict[str, Any] | None = None,
        start: bool = True,
        persist: bool = True,
    ) -> None:
        super().__init__()
        try:
            self._setup(settings=settings, config=config, restore=restore,
                        controller_options=controller_options, start=start, persist=persist)
        except BaseException:
            stop_workers(self, 1000)  # those started before the failure, so it gets reported
            raise

    def _setup(
        self,
        *,
        settings: Settings | None,
        config: AttentionConfig | None,
        restore: bool,
        controller_options: dict[str, Any] | None,
        start: bool,
        persist: bool,
    ) -> None:
        from gui.explorer.views import ALL_VIEWS

        self.setObjectName("MainWindow")
        settings = settings or open_settings()
        # Not persisting: every remembered choice goes to a copy in memory (headless runs).
        self.settings = settings if persist else settings.detached()
        session_path = self.settings.get("session/last_path") if restore else ""
        if config is None:
            if restore:
                config, session_path = restored_config(self.settings, session_path)
            else:
                config = AttentionConfig()
        temperature = self.settings.get("window/temperature") if restore else config.temperature

        self.views = [cls() for cls in ALL_VIEWS]
        self.panel = ParameterPanel(config)
        self.controller = ExplorerController(
            config, temperature=temperature, views=self.views, parent=self,
            **(controller_options or {}),
        )
        # The window is built once its first results are shown: its objects can age then.
        self.controller.resultsShown.connect(self._on_first_results)
        self.closer = WindowClose(self, persist)
        self.files = WindowFiles(self, session_path)
        self._build_central()
        self._build_dock()
        self.status = StatusLine(self.statusBar(), self.controller)
        self._follow_tab_status()
        self._build_menus()
        # A dialog opening over the window must not repaint every plot (gui/kit/activation.py).
        ignore_window_activation(self)

        self.panel.configChanged.connect(self.controller.set_config)
        self.controller.configRefused.connect(
            lambda message: self.panel.show_refusal(message, self.controller.config()))
        connect_real_head(self.controller, self.panel, self.source_bar)
        for view in self.views:
            signal = getattr(view, "temperatureChanged", None)
            if signal is not None:
                signal.connect(self.controller.set_temperature)

        apply_default_geometry(self)
        if restore:
            restore_window(self, self.settings)
        if start:
            self.controller.start()

    # ------------------------------------------------------------------------------- building
    def _build_central(self) -> None:
        self.view_tabs = ViewTabs(self.views, self.controller, self)
        self.source_bar = SourceBar()  # "Real q, k: <head>" while a real head is shown
        self.explorer_page = self.source_bar.page_with(self.view_tabs.splitter)
        from gui.train import TrainTab

        self.train_tab = TrainTab(settings=self.settings)
        from gui.window_heads import WindowHeads

        self.mode_tabs = ModeTabs()
        self.mode_tabs.add_page(self.explorer_page, QT_TRANSLATE_NOOP("MainWindow", "Explorer"))
        self.mode_tabs.add_page(self.train_tab, QT_TRANSLATE_NOOP("MainWindow", "Train"))
        self.heads = WindowHeads(self)
        from gui.window_captions import WindowCaptions

        self.captions = WindowCaptions(self)  # what each export's caption line says
        self.mode_tabs.add_page(self.heads.view, QT_TRANSLATE_NOOP("MainWindow", "Heads"))
        from gui.model import ModelView

        self.model_view = ModelView()  # a real model's loss against its attention scale
        self.mode_tabs.add_page(self.model_view, QT_TRANSLATE_NOOP("MainWindow", "Model"))
        self.mode_tabs.currentChanged.connect(self.view_tabs.refresh_shown)
        self.setCentralWidget(self.mode_tabs)

    def _follow_tab_status(self) -> None:
        """The status bar states what the tab in front is doing (each tab its own state)."""
        self.status.follow_tabs(self.mode_tabs, {
            "train": (self.train_tab, self.train_tab.controller.stop),
            "heads": (self.heads.view, self.heads.view.controller.cancel),
            "model": (self.model_view, self.model_view.controller.cancel)})

    def _build_dock(self) -> None:
        self.parameter_dock = QDockWidget(self)
        self.parameter_dock.setObjectName("parameterDock")
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.panel)
        scroll.setMinimumWidth(320)
        self.parameter_dock.setWidget(scroll)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.parameter_dock)
        self.mode_tabs.follow_dock(self.parameter_dock)

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.menu_actions: dict[str, QAction] = {}
        self.menus = {name: bar.addMenu("") for name in menu_table.MENU_TITLES}
        menu_table.build_menu(self.menus["file"], menu_table.FILE_MENU, self, self.menu_actions)
        view_menu = self.menus["view"]
        from gui.window_pins import WindowPins
        from gui.window_presentation import Presentation

        self.presentation = Presentation(self)  # before the menu: its actions call them
        self.pins = WindowPins(self)
        menu_table.build_menu(view_menu, menu_table.VIEW_MENU, self, self.menu_actions)
        self.view_tabs.side_action = self.menu_actions["side"]
        self.goto = GotoActions(self, view_menu)
        self.view_actions, self.mode_actions = self.goto.view_actions, self.goto.mode_actions
        view_menu.addSeparator()
        view_menu.addAction(self.parameter_dock.toggleViewAction())
        view_menu.addSeparator()
        self.language = LanguageMenu(view_menu, self.settings)
        from gui.tour.guide import install_tour

        self.tour_dock, self.tour_action = install_tour(self, self.menus["help"])
        menu_table.build_menu(self.menus["help"], menu_table.HELP_MENU, self, self.menu_actions)
        self.heads.install_samples_menu(self.menus["help"], self.menu_actions["about"])
        self.heads.update_actions()
        self.retranslate_ui()

    # ----------------------------------------------------------------------------- language
    def retranslate_ui(self) -> None:
        """Set the texts the window itself owns (menus, dock, status bar, tabs); child widgets
        re-translate themselves on the same ``LanguageChange``."""
        self.parameter_dock.setWindowTitle(translate("MainWindow", "Parameters"))
        for name, title in menu_table.MENU_TITLES.items():
            self.menus[name].setTitle(translate(menu_table.ACTION_CONTEXT, title))
        for specs in (menu_table.FILE_MENU, menu_table.VIEW_MENU, menu_table.HELP_MENU):
            menu_table.retranslate_actions(specs, self.menu_actions)
        self.language.menu.setTitle(translate("MainWindow", "&Language"))
        self.pins.retranslate_ui()
        self.heads.retranslate_ui()
        self.captions.refresh()
        self.view_tabs.retranslate_ui()
        self.mode_tabs.retranslate_ui()
        self.goto.retranslate_ui()  # after the tabs: their (translated) titles
        self.files.update_title()
        self.status.retranslate_ui()

    def _apply_language(self) -> None:
        if hasattr(self, "menu_actions"):  # the menus exist
            self.retranslate_ui()

    def event(self, event: QEvent) -> bool:  # Qt override
        """After a language change has reached every child, re-draw the views' result texts."""
        handled = super().event(event)
        closer = self.__dict__.get("closer")
        if event.type() == QEvent.Type.LanguageChange and closer is not None and not closer.closing:
            self.controller.refresh_views()
        return handled

    # ------------------------------------------------------------------------------ views
    def view(self, key: str) -> ExplorerView:
        """Return the view with ``key``, brought up to date if it was hidden."""
        for view in self.views:
            if view.key == key:
                self.controller.refresh_view(view)
                return view
        raise KeyError(f"no view {key!r}; views are {', '.join(v.key for v in self.views)}")

    @Slot()
    def on_escape(self) -> None:
        """Esc: leave presentation mode, or else cancel the computation of the tab in front."""
        if self.presentation.is_active():
            self.presentation.set_active(False)
        else:
            self.status.cancel()

    def current_view(self) -> PlotView:
        """Return the view in front of the main tab widget (or of the Train tab)."""
        if self.mode_tabs.currentWidget() is self.train_tab:
            return self.train_tab.current_view()
        if self.mode_tabs.currentWidget() in (self.heads.view, self.model_view):
            return self.mode_tabs.currentWidget()
        return self.view_tabs.current_view()

    def show_view(self, key: str) -> bool:
        """Bring the view ``key`` to the front; return False when there is no such view."""
        if self.view_tabs.show_view(key):
            self.mode_tabs.setCurrentWidget(self.explorer_page)
            return True
        if self.train_tab.show_view(key):
            self.mode_tabs.setCurrentWidget(self.train_tab)
            return True
        for tab in (self.heads.view, self.model_view):
            if key == tab.key:
                self.mode_tabs.setCurrentWidget(tab)
                return True
        return False

    # --- gui.tour.host.TourHost (with show_view and current_view): what the tour steers ---
    def apply_explorer_config(self, config: AttentionConfig,
                              temperature: float | None = None) -> None:
        """Show ``config`` in the parameter panel and compute it (T of the temperature view
        first, when given). A real head on screen gives way to random q, k: the tour's steps
        explain those."""
        if self.controller.real_head() is not None:
            self.controller.set_real_head(None)
        self.panel.set_config(config)
        if temperature is not None:
            self.controller.set_temperature(float(temperature))
        self.controller.set_config(config)

    def apply_train_settings(self, config: TrainConfig | None,
                             lr_sweep: tuple[tuple[float, ...], int] | None = None) -> None:
        """Put a training configuration and a learning-rate sweep into the Train tab."""
        if config is not None:
            self.train_tab.panel.set_config(config)
        if lr_sweep is not None:
            self.train_tab.panel.set_sweep_settings(*lr_sweep)

    def train_settings(self) -> tuple[TrainConfig | None, tuple[tuple[float, ...], int] | None]:
        """The Train tab's configuration and learning-rate sweep (``None`` where invalid)."""
        panel = self.train_tab.panel
        try:
            config: TrainConfig | None = panel.config()
        except ValueError:
            config = None
        try:
            sweep: tuple[tuple[float, ...], int] | None = panel.sweep_settings()
        except ValueError:
            sweep = None
        return config, sweep

    def start_training(self) -> bool:
        """Start a run of the Train tab's configuration (False when one is going already)."""
        if self.train_tab.controller.state() is not TrainState.IDLE:
            return False
        return self.train_tab.start_training()

    def stop_training(self) -> None:
        """Stop the Train tab's run, as its Stop button does (nothing when none runs)."""
        self.train_tab.controller.stop()  # it checks the state itself
    def run_sample_model(self) -> str:
        """Run the Model tab on an installed sample model ("" or the pip command to get one)."""
        return self.model_view.run_sample()
    # --- end of the TourHost block ---

    @Slot()
    def reset_current_view(self) -> None:
        """View > Reset view: auto-range the plots of the view in front."""
        self.current_view().reset_view()

    @Slot()
    def show_about(self) -> None:
        """Help > About."""
        QMessageBox.about(
            self, translate("MainWindow", "About Attention Scale Explorer"),
            translate("MainWindow",
                      "Attention Scale Explorer\n\nSee and test why scaled dot-product "
                      "attention divides the logits by √d_k: raw scores q·k have variance "
                      "d_k·σ⁴, which saturates the softmax and kills its gradients as d_k "
                      "grows."))

    # ------------------------------------------------------------------------------ waiting
    def wait_until_settled(self, timeout_ms: int = 30_000,
                           require_sweep: bool = True) -> bool:
        """Run a local event loop (woken by the controller's signals) until every result,
        the sweep too unless not ``require_sweep``, is shown and painted; False on timeout."""
        controller = self.controller
        return wait_until(lambda: self._settled(require_sweep),
                          (controller.resultsShown, controller.resultsPainted,
                           controller.busyChanged, controller.errorOccurred), timeout_ms)

    @Slot(object)
    def _on_first_results(self, _results: object) -> None:
        self.controller.resultsShown.disconnect(self._on_first_results)
        collect_young_soon()

    def wait_until_current(self, timeout_ms: int = 30_000) -> bool:
        """Run a local event loop until the views show the latest settings' fast results
        (the sweeps may go on) or an error; False on timeout."""
        controller = self.controller

        def current() -> bool:
            return bool(controller.last_error()) or controller.shows_current()

        return wait_until(current, (controller.resultsShown, controller.busyChanged,
                                    controller.errorOccurred), timeout_ms)

    def _settled(self, require_sweep: bool) -> bool:
        controller, results = self.controller, self.controller.results()
        return controller.is_settled() and (bool(controller.last_error()) or (
            results is not None and (results.sweep_done or not require_sweep)))

    # ----------------------------------------------------------------------------- shutdown
    def shutdown(self) -> None:
        """Stop every worker and wait for it (bounded, then without bound); idempotent."""
        self.closer.finish(1000)

    def workers_running(self) -> bool:
        """True while a worker thread (explorer, training, heads) is still alive."""
        return self.closer.workers_running()

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt override
        """Close once every worker has stopped (see :class:`~gui.window_close.WindowClose`)."""
        if self.closer.may_close():
            super().closeEvent(event)
        else:
            event.ignore()
