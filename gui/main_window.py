"""The explorer's main window: parameter dock, view tabs, menus, status bar, shutdown order."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QSignalBlocker,
    Qt,
    Signal,
    Slot,
)
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QWidget,
)

from engine.config import AttentionConfig
from engine.config.train import TrainConfig
from gui.explorer.controller import ExplorerController
from gui.explorer.panel import ParameterPanel
from gui.kit import export, i18n
from gui.kit.i18n import translate
from gui.kit.qt_lifetime import wait_until
from gui.kit.settings import Settings, open_settings
from gui.session import Session, SessionError, load_session, save_session

__all__ = ["DEFAULT_SIZE", "MainWindow", "SizeDialog"]

#: Window size on first start (clamped to the screen's available area).
DEFAULT_SIZE = (1280, 800)


class SizeDialog(QDialog):
    """Ask for an export size in pixels."""

    def __init__(self, width: int, height: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(translate("MainWindow", "Image size"))
        self.width_box = QSpinBox()
        self.height_box = QSpinBox()
        for box, value in ((self.width_box, width), (self.height_box, height)):
            box.setRange(16, 8192)
            box.setSuffix(" px")
            box.setValue(value)
        form = QFormLayout(self)
        form.addRow(translate("MainWindow", "Width"), self.width_box)
        form.addRow(translate("MainWindow", "Height"), self.height_box)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def size_value(self) -> tuple[int, int]:
        """Return the chosen ``(width, height)``."""
        return self.width_box.value(), self.height_box.value()


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
        Save geometry, configuration and session path to ``settings`` on close (the headless
        commands pass False so that they never change the user's settings).
    """

    sessionChanged = Signal(str)  # path of the session file now associated with the window

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
            # that (a damaged resource, any bug) must stop them, or the QThread is destroyed
            # while running and the process aborts (ENVIRONMENT.md trap 2) instead of reporting.
            for part in (self.__dict__.get("train_tab"), self.__dict__.get("controller")):
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
        self.settings = settings or open_settings()
        self._session_path = self.settings.get("session/last_path") if restore else ""
        if config is None:
            config = self._restored_config() if restore else AttentionConfig()
        temperature = self.settings.get("window/temperature") if restore else config.temperature

        self.views = [cls() for cls in ALL_VIEWS]
        self.panel = ParameterPanel(config)
        self.controller = ExplorerController(
            config, temperature=temperature, views=self.views, parent=self,
            **(controller_options or {}),
        )
        self._closing = False
        self._close_pending = False
        self._persist = persist
        self._build_central()
        self._build_dock()
        self._build_status_bar()
        self._build_menus()
        self._update_title()

        self.panel.configChanged.connect(self.controller.set_config)
        for view in self.views:
            signal = getattr(view, "temperatureChanged", None)
            if signal is not None:
                signal.connect(self.controller.set_temperature)
        self.controller.progressChanged.connect(self._on_progress_changed)
        self.controller.busyChanged.connect(self._on_busy_changed)
        self.controller.errorOccurred.connect(self._on_error)
        self.controller.resultsShown.connect(self._on_results_shown)
        self.tabs.currentChanged.connect(self._on_tab_changed)
        self.side_tabs.currentChanged.connect(self._on_tab_changed)

        self.apply_default_geometry()
        if restore:
            geometry = self.settings.get("window/geometry")
            if not geometry.isEmpty():
                self.restoreGeometry(geometry)
            state = self.settings.get("window/state")
            if not state.isEmpty():
                self.restoreState(state)
            self.show_view(self.settings.get("window/current_view"))
        if start:
            self.controller.start()

    # ------------------------------------------------------------------------------- building
    def _build_central(self) -> None:
        self.tabs = QTabWidget()
        self.tabs.setObjectName("viewTabs")
        self.tabs.setDocumentMode(True)
        # The second tab widget shows a view beside the main one ("side by side").
        self.side_tabs = QTabWidget()
        self.side_tabs.setObjectName("sideViewTabs")
        self.side_tabs.setDocumentMode(True)
        self.side_tabs.setVisible(False)
        for view in self.views:
            self.tabs.addTab(view, view.title())
        # Each tab widget sits in a scroll area and every plot view asks for its layout's
        # minimum: at 1024×768 with docks open a view scrolls instead of being cut off.
        from gui.kit.layout_fit import scroll_area_for, track_scene_minimums

        for view in self.views:
            track_scene_minimums(view)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(scroll_area_for(self.tabs, "viewScroll"))
        self._side_scroll = scroll_area_for(self.side_tabs, "sideViewScroll")
        self._side_scroll.setVisible(False)
        self.splitter.addWidget(self._side_scroll)
        # Top level: the explorer (views + parameter dock) and the Train tab (gui/train), which
        # has its own control panel and worker thread.
        from gui.train import TrainTab

        self.train_tab = TrainTab()
        self.mode_tabs = QTabWidget()
        self.mode_tabs.setObjectName("modeTabs")
        self.mode_tabs.addTab(self.splitter, translate("MainWindow", "Explorer"))
        self.mode_tabs.addTab(self.train_tab, translate("MainWindow", "Train"))
        self._dock_was_visible = True
        self.mode_tabs.currentChanged.connect(self._on_mode_changed)
        self.setCentralWidget(self.mode_tabs)

    def _build_dock(self) -> None:
        self.parameter_dock = QDockWidget(self)
        self.parameter_dock.setObjectName("parameterDock")
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.panel)
        scroll.setMinimumWidth(320)
        self.parameter_dock.setWidget(scroll)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.parameter_dock)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.status_label = QLabel()
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setTextVisible(True)
        self.progress.setVisible(False)
        self.cancel_button = QPushButton()
        self.cancel_button.setVisible(False)
        self.cancel_button.clicked.connect(self._on_cancel)
        bar.addWidget(self.status_label, 1)
        bar.addPermanentWidget(self.progress)
        bar.addPermanentWidget(self.cancel_button)

    def _action(self, menu: Any, slot: Any, shortcut: Any = None) -> QAction:
        """Add an action to ``menu``; its texts are set by :meth:`retranslate_ui`."""
        action = QAction(self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.file_menu = file_menu = bar.addMenu("")
        self.open_action = self._action(file_menu, self._on_open_session,
                                        QKeySequence.StandardKey.Open)
        self.save_action = self._action(file_menu, self._on_save_session,
                                        QKeySequence.StandardKey.Save)
        self.save_as_action = self._action(file_menu, self._on_save_session_as, "Ctrl+Alt+S")
        file_menu.addSeparator()
        self.export_png_action = self._action(file_menu, self._on_export_png, "Ctrl+E")
        self.export_svg_action = self._action(file_menu, self._on_export_svg, "Ctrl+Shift+E")
        self.export_all_action = self._action(file_menu, self._on_export_all, "Ctrl+Shift+A")
        self.copy_action = self._action(file_menu, self._on_copy, "Ctrl+Shift+C")
        file_menu.addSeparator()
        self.quit_action = self._action(file_menu, self.close, "Ctrl+Q")

        self.view_menu = view_menu = bar.addMenu("")
        self.reset_action = self._action(view_menu, self._on_reset_view, "Ctrl+R")
        self.side_action = QAction(self)
        self.side_action.setShortcut(QKeySequence("Ctrl+Shift+S"))
        self.side_action.setCheckable(True)
        self.side_action.toggled.connect(self._on_side_by_side)
        view_menu.addAction(self.side_action)
        self.cancel_action = self._action(view_menu, self._on_cancel, Qt.Key.Key_Escape)
        view_menu.addSeparator()
        self.view_actions: list[QAction] = []
        for index, view in enumerate(self.views):
            shortcut = f"Ctrl+{index + 1}" if index < 9 else None
            action = self._action(view_menu, self._on_view_action, shortcut)
            action.setData(view.key)
            self.view_actions.append(action)
        view_menu.addSeparator()
        view_menu.addAction(self.parameter_dock.toggleViewAction())
        view_menu.addSeparator()
        # Language: entries are the languages' own names, so they are never translated.
        self.language_menu = view_menu.addMenu("")
        self.language_menu.setObjectName("languageMenu")
        # Exclusive: exactly one language is checked.
        self.language_group = QActionGroup(self)
        self.language_group.setExclusive(True)
        self.language_actions: dict[str, QAction] = {}
        for code, name in i18n.LANGUAGES.items():
            action = QAction(name, self)
            self.language_group.addAction(action)
            action.setCheckable(True)
            action.setData(code)
            action.triggered.connect(self._on_language_action)
            self.language_menu.addAction(action)
            self.language_actions[code] = action
        self._check_language_action()

        self.help_menu = help_menu = bar.addMenu("")
        # The guided tour (gui/tour.py): a hidden dock opened by Help > Guided tour (F1, Ctrl+G);
        # the dock translates its own title and this action's text.
        from gui.tour.guide import install_tour

        self.tour_dock, self.tour_action = install_tour(self, help_menu)
        self.about_action = self._action(help_menu, self._on_about)
        self.retranslate_ui()

    # ----------------------------------------------------------------------------- language
    def retranslate_ui(self) -> None:
        """Set every text the window itself owns (menus, actions, dock, status bar, tabs) in
        the current language. Child widgets (views, panels) re-translate themselves on the same
        ``LanguageChange`` event; see :meth:`event` for the results they re-draw afterwards.
        """
        self.parameter_dock.setWindowTitle(translate("MainWindow", "Parameters"))
        self.progress.setFormat(translate("MainWindow", "sweep %v/%m"))
        self.cancel_button.setText(translate("MainWindow", "Cancel"))
        self.cancel_button.setToolTip(translate("MainWindow", "Stop the running computation (Esc)"))
        self.file_menu.setTitle(translate("MainWindow", "&File"))
        texts = (
            (self.open_action, translate("MainWindow", "&Open session…")),
            (self.save_action, translate("MainWindow", "&Save session")),
            (self.save_as_action, translate("MainWindow", "Save session &as…")),
            (self.export_png_action, translate("MainWindow", "Export current view as &PNG…")),
            (self.export_svg_action, translate("MainWindow", "Export current view as S&VG…")),
            (self.export_all_action, translate("MainWindow", "Export &all…")),
            (self.copy_action, translate("MainWindow", "&Copy current plot")),
            (self.quit_action, translate("MainWindow", "&Quit")),
            (self.reset_action, translate("MainWindow", "&Reset view")),
            (self.side_action, translate("MainWindow", "Show current view &side by side")),
            (self.cancel_action, translate("MainWindow", "&Cancel computation")),
            (self.about_action, translate("MainWindow", "&About")),
        )
        for action, text in texts:
            action.setText(text)
        self.export_all_action.setStatusTip(translate(
            "MainWindow", "PNG, SVG and CSV of every view plus the session, into one folder"))
        self.view_menu.setTitle(translate("MainWindow", "&View"))
        self.language_menu.setTitle(translate("MainWindow", "&Language"))
        self.help_menu.setTitle(translate("MainWindow", "&Help"))
        for action in self.view_actions:
            action.setText(self._view_by_key(str(action.data())).title())
        for tabs in (self.tabs, self.side_tabs):
            for index in range(tabs.count()):
                tabs.setTabText(index, tabs.widget(index).title())
        self.mode_tabs.setTabText(self.mode_tabs.indexOf(self.splitter),
                                  translate("MainWindow", "Explorer"))
        self.mode_tabs.setTabText(self.mode_tabs.indexOf(self.train_tab),
                                  translate("MainWindow", "Train"))
        self._update_title()
        self._retranslate_status()

    def _retranslate_status(self) -> None:
        """Re-state the status line in the current language (from the controller's state)."""
        if self.controller.is_busy():
            self.status_label.setText(translate("MainWindow", "Computing…"))
        elif self.controller.results() is not None and not self.controller.last_error():
            self._on_results_shown(self.controller.results())
        elif not self.controller.last_error():
            self.status_label.setText(translate("MainWindow", "Ready"))

    def set_language(self, code: str) -> bool:
        """Switch the UI to ``code`` (a key of :data:`gui.kit.i18n.LANGUAGES`) and remember it."""
        if not i18n.set_language(code):
            self._check_language_action()
            return False
        self.settings.set("ui/language", code)
        self._check_language_action()
        return True

    def _check_language_action(self) -> None:
        action = self.language_actions.get(i18n.current_language())
        if action is not None:
            # No QSignalBlocker here: the group keeps itself exclusive through the action's
            # signals, and blocking them left the previous language checked as well. The
            # switch itself listens to ``triggered``, which setChecked does not emit.
            action.setChecked(True)

    @Slot()
    def _on_language_action(self) -> None:
        action = self.sender()
        if isinstance(action, QAction):
            self.set_language(str(action.data()))

    def _view_by_key(self, key: str) -> Any:
        return next(view for view in self.views if view.key == key)

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """Re-translate the window's own texts when the application's language changes."""
        if event.type() == QEvent.Type.LanguageChange and hasattr(self, "help_menu"):
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

    # ---------------------------------------------------------------------------- public API
    def apply_default_geometry(self) -> None:
        """Size the window to :data:`DEFAULT_SIZE`, clamped to the screen, and centre it.

        Used on first start (no saved geometry): Qt's own default (the size hint, ~850×530)
        cuts off the heatmap's colour bar.
        """
        screen = self.screen() or QGuiApplication.primaryScreen()
        width, height = DEFAULT_SIZE
        if screen is None:
            self.resize(width, height)
            return
        available = screen.availableGeometry()
        width = min(width, available.width())
        height = min(height, available.height())
        self.resize(width, height)
        self.move(available.x() + (available.width() - width) // 2,
                  available.y() + (available.height() - height) // 2)

    def view(self, key: str) -> Any:
        """Return the view with ``key``, brought up to date if it was hidden."""
        for view in self.views:
            if view.key == key:
                self.controller.refresh_view(view)
                return view
        raise KeyError(f"no view {key!r}; views are {', '.join(v.key for v in self.views)}")

    def current_view(self) -> Any:
        """Return the view in front of the main tab widget (or of the Train tab)."""
        if self.mode_tabs.currentWidget() is self.train_tab:
            return self.train_tab.current_view()
        widget = self.tabs.currentWidget()
        return widget if widget is not None else self.views[0]

    def show_view(self, key: str) -> bool:
        """Bring the view ``key`` to the front; return False when there is no such view."""
        for view in self.views:
            if view.key == key:
                tabs = self.side_tabs if self.side_tabs.indexOf(view) >= 0 else self.tabs
                tabs.setCurrentWidget(view)
                self.mode_tabs.setCurrentWidget(self.splitter)
                return True
        if self.train_tab.show_view(key):
            self.mode_tabs.setCurrentWidget(self.train_tab)
            return True
        return False

    # --- gui.tour.host.TourHost (with show_view and current_view): what the tour steers ---
    def apply_explorer_config(self, config: AttentionConfig,
                              temperature: float | None = None) -> None:
        """Show ``config`` in the parameter panel and compute it (T of the temperature view
        first, when given)."""
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
    # --- end of the TourHost block ---

    def current_session(self) -> Session:
        """Return the session describing what the window shows now."""
        return Session(config=self.panel.config(), current_view=self.current_view().key,
                       temperature=self.controller.temperature())

    def apply_session(self, session: Session) -> None:
        """Show ``session``: its configuration, temperature and front view."""
        self.panel.set_config(session.config)
        self.controller.set_temperature(session.temperature)
        self.controller.set_config(session.config)
        self.show_view(session.current_view)

    def open_session(self, path: str | os.PathLike[str]) -> bool:
        """Load the session file ``path``; on error show a message and change nothing."""
        try:
            session = load_session(path)
        except SessionError as exc:
            self.show_message(translate("MainWindow", "Cannot open session"), str(exc))
            return False
        self.apply_session(session)
        self._set_session_path(str(path))
        self.status_label.setText(translate("MainWindow", "Opened {0}").format(Path(path).name))
        return True

    def save_session_to(self, path: str | os.PathLike[str]) -> bool:
        """Write the current session to ``path``; on error show a message."""
        try:
            save_session(path, self.current_session())
        except OSError as exc:
            self.show_message(translate("MainWindow", "Cannot save session"), str(exc))
            return False
        self._set_session_path(str(path))
        self.status_label.setText(translate("MainWindow", "Saved {0}").format(Path(path).name))
        return True

    def export_current(self, path: str | os.PathLike[str], width: int, height: int) -> Path:
        """Export the current view to ``path`` (PNG or SVG by suffix)."""
        self.controller.refresh_views()
        item = self.current_view().export_item()
        if str(path).lower().endswith(".svg"):
            return export.export_svg(item, path, width, height)
        return export.export_png(item, path, width, height)

    def export_everything(self, folder: str | os.PathLike[str], width: int = 1200,
                          height: int = 800) -> list[Path]:
        """Export every view (PNG, SVG, CSV), the training views and the session JSON."""
        self.controller.refresh_views()
        self.train_tab.refresh_views()
        views = [*self.views, *self.train_tab.views]
        return export.export_all(views, folder, self.current_session(), width, height)

    def wait_until_settled(self, timeout_ms: int = 30_000,
                           require_sweep: bool = True) -> bool:
        """Run a local event loop until every result (incl. the sweep) is shown.

        Returns False on timeout. Uses a ``QEventLoop`` woken by the controller's GUI-thread
        signals, not ``processEvents`` spinning.
        """
        controller = self.controller
        wait_until(lambda: self._settled(require_sweep),
                   (controller.resultsShown, controller.busyChanged, controller.errorOccurred),
                   timeout_ms)
        return self._settled(require_sweep)

    def _settled(self, require_sweep: bool) -> bool:
        controller = self.controller
        results = controller.results()
        if not controller.is_settled():
            return False
        if controller.last_error():
            return True
        return results is not None and (results.sweep_done or not require_sweep)

    def show_message(self, title: str, text: str) -> QMessageBox:
        """Show a non-blocking warning box (window-modal) and return it."""
        box = QMessageBox(QMessageBox.Icon.Warning, title, text,
                          QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()
        return box

    # ------------------------------------------------------------------------------- slots
    @Slot()
    def _on_open_session(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, translate("MainWindow", "Open session"), self._session_path or str(Path.home()),
            translate("MainWindow", "Session files (*.json);;All files (*)"))
        if path:
            self.open_session(path)

    @Slot()
    def _on_save_session(self) -> None:
        if self._session_path:
            self.save_session_to(self._session_path)
        else:
            self._on_save_session_as()

    @Slot()
    def _on_save_session_as(self) -> None:
        path, _ = QFileDialog.getSaveFileName(
            self, translate("MainWindow", "Save session"), self._session_path or "session.json",
            translate("MainWindow", "Session files (*.json)"))
        if path:
            self.save_session_to(path)

    def _ask_size(self) -> tuple[int, int] | None:
        dialog = SizeDialog(self.settings.get("export/width"), self.settings.get("export/height"),
                            self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        width, height = dialog.size_value()
        self.settings.set("export/width", width)
        self.settings.set("export/height", height)
        return width, height

    def _export_dialog(self, suffix: str, filter_text: str) -> None:
        size = self._ask_size()
        if size is None:
            return
        folder = self.settings.get("export/last_dir") or str(Path.home())
        default = os.path.join(folder, f"{self.current_view().key}.{suffix}")
        path, _ = QFileDialog.getSaveFileName(self, translate("MainWindow", "Export view"), default,
                                              filter_text)
        if not path:
            return
        try:
            written = self.export_current(path, *size)
        except (OSError, ValueError) as exc:
            self.show_message(translate("MainWindow", "Export failed"), str(exc))
            return
        self.settings.set("export/last_dir", str(Path(path).parent))
        self.status_label.setText(translate("MainWindow", "Exported {0}").format(written.name))

    @Slot()
    def _on_export_png(self) -> None:
        self._export_dialog("png", translate("MainWindow", "PNG images (*.png)"))

    @Slot()
    def _on_export_svg(self) -> None:
        self._export_dialog("svg", translate("MainWindow", "SVG images (*.svg)"))

    @Slot()
    def _on_export_all(self) -> None:
        size = self._ask_size()
        if size is None:
            return
        folder = QFileDialog.getExistingDirectory(
            self, translate("MainWindow", "Export all views into folder"),
            self.settings.get("export/last_dir") or str(Path.home()))
        if not folder:
            return
        try:
            written = self.export_everything(folder, *size)
        except (OSError, ValueError) as exc:
            self.show_message(translate("MainWindow", "Export failed"), str(exc))
            return
        self.settings.set("export/last_dir", folder)
        self.status_label.setText(
            translate("MainWindow", "Exported {0} files to {1}").format(len(written), folder))

    @Slot()
    def _on_copy(self) -> None:
        self.controller.refresh_views()
        view = self.current_view()
        widget = view.export_item()
        width = max(widget.width(), 320)
        height = max(widget.height(), 240)
        export.copy_to_clipboard(widget, width, height)
        self.status_label.setText(
            translate("MainWindow", "Copied {0} to the clipboard").format(view.title()))

    @Slot(int)
    def _on_tab_changed(self, index: int) -> None:
        tabs = self.sender()
        # Tab widgets emit while they are destroyed; by then the window has shut down.
        if getattr(self, "_closing", True):
            return
        if isinstance(tabs, QTabWidget) and index >= 0:
            self.controller.refresh_view(tabs.widget(index))

    @Slot(int)
    def _on_mode_changed(self, index: int) -> None:
        # The explorer's parameter dock means nothing on the Train tab: hide it there and bring
        # it back (if it was open) on returning to the explorer.
        if getattr(self, "_closing", True) or not hasattr(self, "parameter_dock"):
            return
        if self.mode_tabs.widget(index) is self.train_tab:
            self._dock_was_visible = self.parameter_dock.isVisible()
            self.parameter_dock.hide()
        elif self._dock_was_visible:
            self.parameter_dock.show()

    @Slot()
    def _on_reset_view(self) -> None:
        self.current_view().reset_view()

    @Slot()
    def _on_view_action(self) -> None:
        action = self.sender()
        if isinstance(action, QAction):
            self.show_view(str(action.data()))

    @Slot(bool)
    def _on_side_by_side(self, checked: bool) -> None:
        if checked:
            view = self.current_view()
            if self.tabs.count() < 2:
                with QSignalBlocker(self.side_action):
                    self.side_action.setChecked(False)
                return
            index = self.tabs.indexOf(view)
            self.tabs.removeTab(index)
            self.side_tabs.addTab(view, view.title())
            self.side_tabs.setVisible(True)
            self._side_scroll.setVisible(True)
        else:
            while self.side_tabs.count():
                view = self.side_tabs.widget(0)
                self.side_tabs.removeTab(0)
                self.tabs.insertTab(self.views.index(view), view, view.title())
            self.side_tabs.setVisible(False)
            self._side_scroll.setVisible(False)

    @Slot()
    def _on_cancel(self) -> None:
        if self.controller.is_busy():
            self.controller.cancel()
            self.status_label.setText(
                translate("MainWindow", "Cancelled; showing the results computed so far"))

    @Slot()
    def _on_about(self) -> None:
        QMessageBox.about(
            self, translate("MainWindow", "About Attention Scale Explorer"),
            translate("MainWindow",
                      "Attention Scale Explorer\n\nSee and test why scaled dot-product "
                      "attention divides the logits by √d_k: raw scores q·k have variance "
                      "d_k·σ⁴, which saturates the softmax and kills its gradients as d_k "
                      "grows."))

    @Slot(int, int)
    def _on_progress_changed(self, done: int, total: int) -> None:
        if total <= 0:
            self.progress.setVisible(False)
            return
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        self.progress.setVisible(done < total)

    @Slot(bool)
    def _on_busy_changed(self, busy: bool) -> None:
        self.cancel_button.setVisible(busy)
        if busy:
            self.status_label.setText(translate("MainWindow", "Computing…"))
            return
        self.progress.setVisible(False)
        # The last push of a job can arrive while it still counts as busy (a σ change reuses
        # the sweep, so no later push follows): restate the results here or "Computing…"
        # stayed with the process idle. A "Cancelled" or error message is left as it is.
        if self.status_label.text() == translate("MainWindow", "Computing…"):
            self._retranslate_status()

    @Slot(str)
    def _on_error(self, message: str) -> None:
        self.status_label.setText(translate("MainWindow", "Error: {0}").format(message))
        self.status_label.setToolTip(message)

    @Slot(object)
    def _on_results_shown(self, results: Any) -> None:
        if not self.controller.is_busy() and not self.controller.last_error():
            config = results.config
            self.status_label.setText(
                translate("MainWindow", "n = {0}, d_k = {1}, h = {2}, rule {3}").format(
                    config.n_tokens, config.d_k, config.heads, config.rule.label))

    # ------------------------------------------------------------------------------ helpers
    def _restored_config(self) -> AttentionConfig:
        text = self.settings.get("attention/config")
        if text:
            try:
                return AttentionConfig.from_json(text)
            except ValueError:
                pass  # an old or hand-edited value: fall back to the defaults
        if self._session_path and self.settings.get("session/restore_last"):
            try:
                return load_session(self._session_path).config
            except SessionError:
                self._session_path = ""
        return AttentionConfig()

    def _set_session_path(self, path: str) -> None:
        self._session_path = path
        self._update_title()
        self.sessionChanged.emit(path)

    def session_path(self) -> str:
        """Return the session file the window is associated with ("" if none)."""
        return self._session_path

    def _update_title(self) -> None:
        title = translate("MainWindow", "Attention Scale Explorer")
        if self._session_path:
            title = f"{Path(self._session_path).name} — {title}"
        self.setWindowTitle(title)

    def save_settings(self) -> None:
        """Store geometry, dock state, configuration, front view and session path."""
        s = self.settings
        s.set("window/geometry", self.saveGeometry())
        s.set("window/state", self.saveState())
        s.set("window/current_view", self.current_view().key)
        s.set("window/temperature", self.controller.temperature())
        s.set("attention/config", self.panel.config().to_json())
        s.set("session/last_path", self._session_path)
        s.sync()

    def begin_shutdown(self) -> None:
        """Ask both worker threads to stop and save settings, without waiting; idempotent."""
        if self._closing:
            return
        self._closing = True
        self.tabs.currentChanged.disconnect(self._on_tab_changed)
        self.side_tabs.currentChanged.disconnect(self._on_tab_changed)
        self.train_tab.controller.begin_shutdown()
        self.controller.begin_shutdown()
        if self.mode_tabs.currentWidget() is self.train_tab and self._dock_was_visible:
            self.parameter_dock.show()  # saved state: the dock was only hidden for the Train tab
        if self._persist:
            self.save_settings()

    def shutdown(self) -> None:
        """Stop both workers and wait for them (bounded, then without bound); idempotent."""
        self.begin_shutdown()
        self.train_tab.shutdown(1000)
        self.controller.shutdown(1000)

    def workers_running(self) -> bool:
        """True while the explorer or the training thread is still alive."""
        return self.controller.is_running() or self.train_tab.controller.is_running()

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt override
        """Stop work first; close now if the workers end within ~0.1 s, else when they end.

        One engine call cannot be interrupted (a training step of a large model takes
        seconds), and waiting for it here would freeze the window. Instead the window stays
        responsive, disabled, says why it has not closed yet, and closes itself when the
        workers report that they have stopped.
        """
        self.begin_shutdown()
        deadline = CLOSE_WAIT_MS
        for controller in (self.train_tab.controller, self.controller):
            controller.wait_stopped(deadline)
        if not self.workers_running():
            self.train_tab.shutdown(0)  # both threads have ended: this only tidies up
            self.controller.shutdown(0)
            super().closeEvent(event)
            return
        event.ignore()
        if not self._close_pending:
            self._close_pending = True
            self.setEnabled(False)
            self.status_label.setText(translate(
                "MainWindow", "Closing: waiting for the current computation step to end…"))
            for controller in (self.train_tab.controller, self.controller):
                controller.workerStopped.connect(self._on_worker_stopped)

    @Slot()
    def _on_worker_stopped(self) -> None:
        if self._close_pending and not self.workers_running():
            self._close_pending = False
            self.close()


#: How long closing the window waits for the workers before it closes asynchronously.
CLOSE_WAIT_MS = 100
