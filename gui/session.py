"""Session files: the attention configuration plus view state, as JSON.

Format::

    {"app": "attention-scale-explorer", "version": 1,
     "attention": AttentionConfig.to_dict(),
     "view": {"current_view": "heatmap", "temperature": 8.0}}

Loading validates everything before returning, so a corrupt or foreign file raises
:class:`SessionError` and the caller changes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path
from typing import Any

from engine.config import AttentionConfig

__all__ = ["SESSION_APP", "SESSION_VERSION", "Session", "SessionError", "load_session",
           "save_session"]

SESSION_APP = "attention-scale-explorer"
SESSION_VERSION = 1


class SessionError(ValueError):
    """A session file could not be read: not JSON, another program's file, or invalid values."""


@dataclasses.dataclass(frozen=True)
class Session:
    """The contents of a session file.

    Parameters
    ----------
    config
        The attention configuration.
    current_view
        Key of the view shown in front (e.g. ``"heatmap"``).
    temperature
        Temperature T of the temperature view.
    """

    config: AttentionConfig
    current_view: str = "heatmap"
    temperature: float = 8.0

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dictionary written to disk."""
        return {
            "app": SESSION_APP,
            "version": SESSION_VERSION,
            "attention": self.config.to_dict(),
            "view": {"current_view": self.current_view, "temperature": self.temperature},
        }

    @classmethod
    def from_dict(cls, data: Any) -> Session:
        """Validate ``data`` (as written by :meth:`to_dict`) and build a session.

        Raises
        ------
        SessionError
            If ``data`` is not an Attention Scale Explorer session of a known version.
        """
        if not isinstance(data, dict):
            raise SessionError("a session file must hold a JSON object")
        if data.get("app") != SESSION_APP:
            raise SessionError(
                f"not an Attention Scale Explorer session (app is {data.get('app')!r})"
            )
        if data.get("version") != SESSION_VERSION:
            raise SessionError(
                f"unsupported session version {data.get('version')!r}; this program reads "
                f"version {SESSION_VERSION}"
            )
        try:
            config = AttentionConfig.from_dict(data.get("attention"))
        except (TypeError, ValueError) as exc:
            raise SessionError(f"invalid attention settings: {exc}") from None
        view = data.get("view", {})
        if not isinstance(view, dict):
            raise SessionError("'view' must be an object")
        current = view.get("current_view", "heatmap")
        if not isinstance(current, str):
            raise SessionError("view.current_view must be a string")
        temperature = view.get("temperature", config.temperature)
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not math.isfinite(temperature)
            or temperature <= 0
        ):
            raise SessionError(f"view.temperature must be a positive number, got {temperature!r}")
        return cls(config=config, current_view=current, temperature=float(temperature))


def save_session(path: str | os.PathLike[str], session: Session) -> None:
    """Write ``session`` to ``path`` as UTF-8 JSON (atomically, via a temporary file)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(session.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, path)


def load_session(path: str | os.PathLike[str]) -> Session:
    """Read and validate a session file.

    Raises
    ------
    SessionError
        If the file cannot be read, is not JSON, or is not a valid session.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionError(f"cannot read {path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionError(f"{Path(path).name} is not valid JSON: {exc}") from None
    return Session.from_dict(data)
