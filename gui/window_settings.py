"""What the main window restores from and saves to the settings, and its first-start size."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow

from engine.config import AttentionConfig
from gui.kit.session import SessionError, load_session
from gui.kit.settings import Settings
from gui.model.inputs import remembered_inputs, restore_inputs

__all__ = ["DEFAULT_SIZE", "apply_default_geometry", "restore_window", "restored_config",
           "save_window"]

#: Window size on first start (clamped to the screen's available area).
DEFAULT_SIZE = (1280, 800)


def restored_config(settings: Settings, session_path: str) -> tuple[AttentionConfig, str]:
    """Return the configuration to start with and the session path still valid.

    The last configuration wins; without one, the last session file's (when
    ``session/restore_last`` is set); a damaged value falls back to the defaults.
    """
    text = settings.get("attention/config")
    if text:
        try:
            return AttentionConfig.from_json(text), session_path
        except ValueError:
            pass  # an old or hand-edited value: fall back to the defaults
    if session_path and settings.get("session/restore_last"):
        try:
            return load_session(session_path).config, session_path
        except SessionError:
            session_path = ""
    return AttentionConfig(), session_path


def apply_default_geometry(window: QMainWindow) -> None:
    """Size ``window`` to :data:`DEFAULT_SIZE`, clamped to the screen, and centre it.

    Used on first start (no saved geometry): Qt's own default (the size hint, ~850×530)
    cuts off the heatmap's colour bar.
    """
    screen = window.screen() or QGuiApplication.primaryScreen()
    width, height = DEFAULT_SIZE
    if screen is None:
        window.resize(width, height)
        return
    available = screen.availableGeometry()
    width = min(width, available.width())
    height = min(height, available.height())
    window.resize(width, height)
    window.move(available.x() + (available.width() - width) // 2,
                available.y() + (available.height() - height) // 2)


def restore_window(window: Any, settings: Settings) -> None:
    """Restore ``window``'s geometry, dock state, front view and the Model tab's inputs
    from ``settings`` (the tab runs nothing until Run is pressed)."""
    geometry = settings.get("window/geometry")
    if not geometry.isEmpty():
        window.restoreGeometry(geometry)
    state = settings.get("window/state")
    if not state.isEmpty():
        window.restoreState(state)
    window.show_view(settings.get("window/current_view"))
    restore_inputs(window.model_view.controls, settings.get("model_tab/inputs"))


def save_window(window: Any, settings: Settings) -> None:
    """Store geometry, dock state, configuration, front view, session path and the Model
    tab's inputs."""
    s = settings
    s.set("window/geometry", window.saveGeometry())
    s.set("window/state", window.saveState())
    s.set("window/current_view", window.current_view().key)
    s.set("window/temperature", window.controller.temperature())
    s.set("attention/config", window.panel.config().to_json())
    s.set("session/last_path", window.files.session_path())
    s.set("model_tab/inputs", remembered_inputs(window.model_view.controls))
    s.sync()
