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
from gui.kit.i18n import QT_TRANSLATE_NOOP, translate
from gui.kit.plot_view import PlotView
from gui.kit.qt_lifetime import collect_young_soon, wait_until
from gui.kit.settings import Settings, open_settings
from gui.view_tabs import ViewTabs
from gui.window_files import WindowFiles
from gui.window_language import LanguageMenu
from gui.window_modes import ModeTabs
from gui.window_settings import (
    apply_default_geometry,
    restore_window,
    restored_config,
    save_window,
)
from gui.window_status import StatusLine

__all__ = ["MainWindow"]


class MainWindow(QMainWindow):
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
        Save geometry, configuration and session path to ``settings`` on close, and remember
        choices made in the window there; False (the headless commands) works on a copy in
        memory, so that they never change the user's settings.

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
            # Worker threads start part-way through (controller, Train tab): a failure after
            # that (a damaged resource, any bug) must stop them, or Qt aborts the process
            # when a QThread is destroyed while running, instead of reporting the error.
            heads = self.__dict__.get("heads")
            for part in (self.__dict__.get("train_tab"), self.__dict__.get("controller"),
                         heads.view.controller if heads is not None else None):
                if part is not None:
                    part.shutdown(1000)
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
        # Not persisting: every choice the window remembers (exports' folder, the capture
        # dialog's text, …) goes to a copy in memory, so headless runs leave no trace.
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
        self._closing = False
        self._close_pending = False
        self._persist = persist
        self.files = WindowFiles(self, session_path)
        self._build_central()
        self._build_dock()
        self.status = StatusLine(self.statusBar(), self.controller)
        self._follow_tab_status()
        self._build_menus()
        # A dialog opening over the window must not repaint every plot (gui/kit/activation.py).
        ignore_window_activation(self)

        self.panel.configChanged.connect(self.controller.set_config)
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
        # "Real q, k: <head>" above the view tabs while a real head is shown.
        self.source_bar = SourceBar()
        self.explorer_page = self.source_bar.page_with(self.view_tabs.splitter)
        # Top level: the explorer (views + parameter dock) and the Train tab (gui/train), which
        # has its own control panel and worker thread.
        from gui.train import TrainTab

        self.train_tab = TrainTab(settings=self.settings)
        from gui.window_heads import WindowHeads

        self.mode_tabs = ModeTabs()
        self.mode_tabs.add_page(self.explorer_page, QT_TRANSLATE_NOOP("MainWindow", "Explorer"))
        self.mode_tabs.add_page(self.train_tab, QT_TRANSLATE_NOOP("MainWindow", "Train"))
        self.heads = WindowHeads(self)
        self.mode_tabs.add_page(self.heads.view, QT_TRANSLATE_NOOP("MainWindow", "Heads"))
        self.mode_tabs.currentChanged.connect(self.view_tabs.refresh_shown)
        self.setCentralWidget(self.mode_tabs)

    def _follow_tab_status(self) -> None:
        """The status bar states what the tab in front is doing (each tab its own state)."""
        status = self.status
        tabs = {self.train_tab: "train", self.heads.view: "heads"}
        for tab, key in tabs.items():
            tab.statusChanged.connect(lambda text, key=key: status.set_tab_text(key, text))
            status.set_tab_text(key, tab.status_line())
        status.set_tab_cancel("train", self.train_tab.controller.stop)
        status.set_tab_cancel("heads", self.heads.view.controller.cancel)
        self.mode_tabs.currentChanged.connect(
            lambda _index: status.set_tab(tabs.get(self.mode_tabs.currentWidget(),
                                                   status.EXPLORER)))

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
        view_menu.addSeparator()
        self.view_actions: list[QAction] = []
        for index, view in enumerate(self.views):
            action = QAction(self)
            if index < 9:
                action.setShortcut(f"Ctrl+{index + 1}")
            action.setData(view.key)
            action.triggered.connect(self._on_view_action)
            view_menu.addAction(action)
            self.view_actions.append(action)
        view_menu.addSeparator()
        # The top-level tabs, like the explorer views: Alt+1 explorer, Alt+2 Train, Alt+3 Heads
        # (Ctrl+1…9 are the nine explorer views).
        self.mode_actions: list[QAction] = []
        for index in range(self.mode_tabs.count()):
            action = QAction(self)
            action.setShortcut(f"Alt+{index + 1}")
            action.setData(index)
            action.triggered.connect(self._on_mode_action)
            view_menu.addAction(action)
            self.mode_actions.append(action)
        view_menu.addSeparator()
        view_menu.addAction(self.parameter_dock.toggleViewAction())
        view_menu.addSeparator()
        self.language = LanguageMenu(view_menu, self.settings)
        # The guided tour: a hidden dock opened by Help > Guided tour (F1, Ctrl+G); the dock
        # translates its own title and this action's text.
        from gui.tour.guide import install_tour

        self.tour_dock, self.tour_action = install_tour(self, self.menus["help"])
        menu_table.build_menu(self.menus["help"], menu_table.HELP_MENU, self, self.menu_actions)
        self.heads.install_samples_menu(self.menus["help"], self.menu_actions["about"])
        self.heads.update_actions()
        self.retranslate_ui()

    # ----------------------------------------------------------------------------- language
    def retranslate_ui(self) -> None:
        """Set every text the window itself owns (menus, actions, dock, status bar, tabs) in
        the current language. Child widgets (views, panels) re-translate themselves on the same
        ``LanguageChange`` event; see :meth:`event` for the results they re-draw afterwards.
        """
        self.parameter_dock.setWindowTitle(translate("MainWindow", "Parameters"))
        for name, title in menu_table.MENU_TITLES.items():
            self.menus[name].setTitle(translate(menu_table.ACTION_CONTEXT, title))
        for specs in (menu_table.FILE_MENU, menu_table.VIEW_MENU, menu_table.HELP_MENU):
            menu_table.retranslate_actions(specs, self.menu_actions)
        self.language.menu.setTitle(translate("MainWindow", "&Language"))
        self.pins.retranslate_ui()
        self.heads.retranslate_ui()
        for action in self.view_actions:
            action.setText(self._view_by_key(str(action.data())).title())
        self.view_tabs.retranslate_ui()
        self.mode_tabs.retranslate_ui()
        for action in self.mode_actions:  # after the tabs: their (translated) titles
            action.setText(self.mode_tabs.tabText(int(action.data())))
        self.files.update_title()
        self.status.retranslate_ui()

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """Re-translate the window's own texts when the application's language changes."""
        if event.type() == QEvent.Type.LanguageChange and hasattr(self, "menu_actions"):
            self.retranslate_ui()
        super().changeEvent(event)

    def event(self, event: QEvent) -> bool:  # Qt override
        """After a language change has reached every child, re-draw the views' result texts
        (plot titles, notes, legends) from the current results.
        """
        handled = super().event(event)
        if event.type() == QEvent.Type.LanguageChange and not getattr(self, "_closing", True):
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

    def _view_by_key(self, key: str) -> ExplorerView:
        return next(view for view in self.views if view.key == key)

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
        if self.mode_tabs.currentWidget() is self.heads.view:
            return self.heads.view
        return self.view_tabs.current_view()

    def show_view(self, key: str) -> bool:
        """Bring the view ``key`` to the front; return False when there is no such view."""
        if self.view_tabs.show_view(key):
            self.mode_tabs.setCurrentWidget(self.explorer_page)
            return True
        if self.train_tab.show_view(key):
            self.mode_tabs.setCurrentWidget(self.train_tab)
            return True
        if key == self.heads.view.key:
            self.mode_tabs.setCurrentWidget(self.heads.view)
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
    # --- end of the TourHost block ---

    @Slot()
    def reset_current_view(self) -> None:
        """View > Reset view: auto-range the plots of the view in front."""
        self.current_view().reset_view()

    @Slot()
    def _on_mode_action(self) -> None:
        action = self.sender()
        if isinstance(action, QAction):
            self.mode_tabs.setCurrentIndex(int(action.data()))

    @Slot()
    def _on_view_action(self) -> None:
        action = self.sender()
        if isinstance(action, QAction):
            self.show_view(str(action.data()))

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
        """Run a local event loop until every result (incl. the sweep) is shown.

        Returns False on timeout. Uses a ``QEventLoop`` woken by the controller's GUI-thread
        signals, not ``processEvents`` spinning.
        """
        controller = self.controller
        wait_until(lambda: self._settled(require_sweep),
                   (controller.resultsShown, controller.resultsPainted, controller.busyChanged,
                    controller.errorOccurred), timeout_ms)
        return self._settled(require_sweep)

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

        wait_until(current, (controller.resultsShown, controller.busyChanged,
                             controller.errorOccurred), timeout_ms)
        return current()

    def _settled(self, require_sweep: bool) -> bool:
        controller = self.controller
        results = controller.results()
        if not controller.is_settled():
            return False
        if controller.last_error():
            return True
        return results is not None and (results.sweep_done or not require_sweep)

    # ----------------------------------------------------------------------------- shutdown
    def begin_shutdown(self) -> None:
        """Ask both worker threads to stop and save settings, without waiting; idempotent."""
        if self._closing:
            return
        self._closing = True
        self.view_tabs.stop()
        for controller in self._controllers():
            controller.begin_shutdown()
        self.mode_tabs.restore_dock()  # saved state: the dock was only hidden for another tab
        if self._persist:
            save_window(self, self.settings)

    def shutdown(self) -> None:
        """Stop both workers and wait for them (bounded, then without bound); idempotent."""
        self.begin_shutdown()
        self.train_tab.shutdown(1000)
        for controller in self._controllers()[1:]:
            controller.shutdown(1000)

    def _controllers(self) -> tuple[Any, ...]:
        """The owners of worker threads: training, explorer, heads (stopped in that order)."""
        return (self.train_tab.controller, self.controller, self.heads.view.controller)

    def workers_running(self) -> bool:
        """True while a worker thread (explorer, training, heads) is still alive."""
        return any(controller.is_running() for controller in self._controllers())

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt override
        """Stop work first; close now if the workers end within ~0.1 s, else when they end.

        One engine call cannot be interrupted (a training step of a large model takes
        seconds), and waiting for it here would freeze the window. Instead the window stays
        responsive, disabled, says why it has not closed yet, and closes itself when the
        workers report that they have stopped.
        """
        self.begin_shutdown()
        for controller in self._controllers():
            controller.wait_stopped(CLOSE_WAIT_MS)
        if not self.workers_running():
            self.train_tab.shutdown(0)  # every thread has ended: this only tidies up
            for controller in self._controllers()[1:]:
                controller.shutdown(0)
            super().closeEvent(event)
            return
        event.ignore()
        if not self._close_pending:
            self._close_pending = True
            self.setEnabled(False)
            self.status.show_message(translate(
                "MainWindow", "Closing: waiting for the current computation step to end…"))
            for controller in self._controllers():
                controller.workerStopped.connect(self._on_worker_stopped)

    @Slot()
    def _on_worker_stopped(self) -> None:
        if self._close_pending and not self.workers_running():
            self._close_pending = False
            self.close()


#: How long closing the window waits for the workers before it closes asynchronously.
CLOSE_WAIT_MS = 100
