"""One QSettings factory with typed defaults.

QSettings returns strings for booleans and numbers from INI files ("true", "3"), so every read
goes through :meth:`Settings.get`, which converts to the type of the registered default.
Tests isolate settings by setting ``ATTENTION_EXPLORER_SETTINGS_DIR`` (an INI folder) before the
first :func:`open_settings` call, so the user's real settings are never touched.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

__all__ = ["DEFAULTS", "ORGANIZATION", "SETTINGS_DIR_ENV", "Settings", "open_settings"]

ORGANIZATION = "AttentionScaleExplorer"
APPLICATION = "explorer"
#: Environment variable naming a folder for the INI file (tests, portable installs).
SETTINGS_DIR_ENV = "ATTENTION_EXPLORER_SETTINGS_DIR"

#: Every key with its default; the default's type is the type a read returns.
DEFAULTS: dict[str, Any] = {
    "window/geometry": QByteArray(),
    "window/state": QByteArray(),
    "window/current_view": "heatmap",
    "window/temperature": 8.0,
    "attention/config": "",
    "session/last_path": "",
    "session/restore_last": True,
    "export/width": 1200,
    "export/height": 800,
    "export/last_dir": "",
    "tensors/last_dir": "",
    # File › Open model…: the model, text ("" = the default sentence), max tokens, layers and
    # memory limit used last.
    "model/last_path": "",
    "model/text": "",
    "model/max_tokens": 128,
    "model/layers": "",
    "model/memory_gib": 1.0,
    # The Model tab's inputs as JSON (gui.model.inputs; "" = the tab's defaults).
    "model_tab/inputs": "",
    # The Heads tab: rules whose replayed maps show ("" = the default four) and the table's
    # hidden columns ("default" = gui.heads.table.DEFAULT_HIDDEN_COLUMNS).
    "heads/replay_rules": "",
    "heads/hidden_columns": "default",
    # "" follows the system locale; otherwise a key of gui.kit.i18n.LANGUAGES ("en", "zh_CN").
    "ui/language": "",
}


def _to_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


class Settings:
    """Typed access to the application's QSettings.

    Parameters
    ----------
    qsettings
        The underlying store (from :func:`open_settings`).
    """

    def __init__(self, qsettings: QSettings | None) -> None:
        self._qs = qsettings
        # ``None``: values live in this dict only (see :meth:`detached`).
        self._memory: dict[str, Any] = {}

    def detached(self) -> Settings:
        """A copy in memory: reads see the stored values, writes never reach the disk.

        Headless commands and the start-up check work on one, because they promise never
        to change the user's settings, however deep in the window a choice is remembered.
        """
        copy = Settings(None)
        if self._qs is not None:
            copy._memory = {key: self._qs.value(key) for key in DEFAULTS
                            if self._qs.contains(key)}
        else:
            copy._memory = dict(self._memory)
        return copy

    def _raw(self, key: str, default: Any) -> Any:
        if self._qs is None:
            return self._memory.get(key, default)
        return self._qs.value(key, default)

    def get(self, key: str) -> Any:
        """Return the value of ``key`` converted to the type of its default.

        A stored value that cannot be converted yields the default instead of raising.
        """
        default = DEFAULTS[key]
        value = self._raw(key, default)
        if value is None:
            return default
        try:
            if isinstance(default, bool):
                return _to_bool(value)
            if isinstance(default, int):
                return int(value)
            if isinstance(default, float):
                return float(value)
            if isinstance(default, QByteArray):
                return value if isinstance(value, QByteArray) else QByteArray(value)
            return str(value)
        except (TypeError, ValueError):
            return default

    def set(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key`` (which must have a registered default)."""
        if key not in DEFAULTS:
            raise KeyError(f"unknown settings key {key!r}")
        if self._qs is None:
            self._memory[key] = value
        else:
            self._qs.setValue(key, value)

    def sync(self) -> None:
        """Write pending changes to disk (nothing to do for a detached copy)."""
        if self._qs is not None:
            self._qs.sync()


def open_settings() -> Settings:
    """Return the application's settings (INI format; isolated when the env variable is set)."""
    folder = os.environ.get(SETTINGS_DIR_ENV)
    if folder:
        path = os.path.join(folder, f"{APPLICATION}.ini")
        return Settings(QSettings(path, QSettings.Format.IniFormat))
    return Settings(
        QSettings(
            QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION
        )
    )
