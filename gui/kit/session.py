"""Session files: the attention configuration plus view state, as JSON.

Format::

    {"app": "attention-scale-explorer", "version": 1,
     "attention": AttentionConfig.to_dict(),
     "view": {"current_view": "heatmap", "temperature": 8.0},
     "tensors": {"path": "model.npz", "layer": 3, "head": 5, "batch_entry": 0},
     "model": {"path": "…", "text": "…", "max_tokens": 128, …},
     "pins": [{"view": "laws", "label": "n = 64, …", "curves": [{"plot": 0, "x": […],
               "y": […], "color": "#d55e00"}]}]}

``tensors`` (optional) is the tensor file open in the Heads tab and the head chosen there
(``layer`` and ``head`` null when none was chosen); ``model`` (optional) the Model tab's
inputs (:mod:`gui.kit.session_model`); ``pins`` (optional) the views' pinned reference curves.

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
from engine.config.base import check_number
from engine.config.rules import RULE_DEFAULTS, parse_rule
from engine.io.files import describe_os_error, read_text_limited, write_output
from gui.kit.pins import Pin, pin_from_dict
from gui.kit.session_model import ModelChoice, quoted

__all__ = ["SESSION_APP", "SESSION_VERSION", "VIEW_KEYS", "LogitsChoice", "Session",
           "SessionError", "TensorsChoice", "load_session", "save_session"]

SESSION_APP = "attention-scale-explorer"
SESSION_VERSION = 1
#: Keys of every view a session may bring to the front (explorer views, then the Train tab's).
#: Kept here so that reading a session needs no Qt; tests/gui/test_export_session.py checks that
#: it equals the window's views.
VIEW_KEYS = ("heatmap", "softmax", "histogram", "laws", "gradients", "temperature",
             "correlation", "precision", "length", "train_curves", "train_probe", "train_lr_sweep",
             "heads", "model")
#: No setting needs more digits; longer integers are refused before Python converts them
#: (CPython refuses more than 4300 digits with a bare ValueError, and huge ints overflow float).
_MAX_INT_DIGITS = 18
#: Error messages quote the offending value; keep them to one readable line.
_MAX_MESSAGE = 300


#: Largest session file read, in bytes (a session is a few KB).
MAX_SESSION_BYTES = 1 << 20


class SessionError(ValueError):
    """A session file could not be read: not JSON, another program's file, or invalid values."""


def _short(text: str) -> str:
    """Return ``text`` on one line, cut to :data:`_MAX_MESSAGE` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _finite(value: float) -> bool:
    """``math.isfinite`` that calls an int too large for a float infinite, not an error."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _parse_int(text: str) -> int:
    """``json.loads`` hook: refuse absurdly long integer literals with a clear message."""
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT_DIGITS:
        raise SessionError(f"holds an integer with {digits} digits (at most "
                           f"{_MAX_INT_DIGITS} are accepted)")
    return int(text)


@dataclasses.dataclass(frozen=True)
class LogitsChoice:
    """The Heads tab's logits: ``rule`` None for the file's own scale, else a rule's value
    re-applied to every head; the temperature, QK-norm gain (None: √d_k) and soft-cap."""

    rule: str | None = None
    temperature: float = 8.0
    gain: float | None = None
    cap: float = RULE_DEFAULTS["cap"]

    @classmethod
    def from_dict(cls, data: Any) -> LogitsChoice:
        """Validate the session's ``tensors.logits`` object."""
        if not isinstance(data, dict):
            raise SessionError("'tensors.logits' must be an object")
        rule = data.get("rule")
        if rule is not None:
            try:
                rule = parse_rule(rule, "tensors.logits.rule").value
            except ValueError as exc:
                raise SessionError(str(exc)) from None
        values: dict[str, float | None] = {}
        for key, default in (("temperature", 8.0), ("gain", None), ("cap", RULE_DEFAULTS["cap"])):
            value = data.get(key, default)
            if value is None and key == "gain":
                values[key] = None
                continue
            try:  # the rule parameter's one range declaration
                values[key] = check_number(f"tensors.logits.{key}", value,
                                           AttentionConfig.FIELDS[key].interval)
            except ValueError as exc:
                raise SessionError(str(exc)) from None
        return cls(rule=rule, temperature=float(values["temperature"] or 8.0),
                   gain=values["gain"], cap=float(values["cap"] or RULE_DEFAULTS["cap"]))


@dataclasses.dataclass(frozen=True)
class TensorsChoice:
    """The tensor file of the Heads tab, the (layer, head, batch entry) chosen in it and the
    logits its heads are diagnosed with."""

    path: str
    layer: int | None = None
    head: int | None = None
    batch_entry: int = 0
    logits: LogitsChoice = LogitsChoice()

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> TensorsChoice:
        """Validate the session's ``tensors`` object."""
        if not isinstance(data, dict):
            raise SessionError("'tensors' must be an object")
        path = data.get("path")
        if not isinstance(path, str) or not path:
            raise SessionError(f"tensors.path must be a non-empty string, got {quoted(path)}")
        values: dict[str, int | None] = {}
        for key in ("layer", "head", "batch_entry"):
            value = data.get(key, 0 if key == "batch_entry" else None)
            if value is None and key != "batch_entry":
                values[key] = None
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SessionError(f"tensors.{key} must be an integer ≥ 0, got {quoted(value)}")
            values[key] = value
        if (values["layer"] is None) != (values["head"] is None):
            raise SessionError("tensors.layer and tensors.head must both be given or both null")
        logits = data.get("logits")
        return cls(path=path, layer=values["layer"], head=values["head"],
                   batch_entry=int(values["batch_entry"] or 0),
                   logits=LogitsChoice() if logits is None else LogitsChoice.from_dict(logits))


@dataclasses.dataclass(frozen=True)
class Session:
    """The contents of a session file: the attention configuration, the key of the view in
    front, the temperature view's T, the Heads tab's file and head (or None), the pins and
    the Model tab's inputs (None in a session written before the tab)."""

    config: AttentionConfig
    current_view: str = "heatmap"
    temperature: float = 8.0
    tensors: TensorsChoice | None = None
    pins: tuple[Pin, ...] = ()
    model: ModelChoice | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dictionary written to disk."""
        data = {
            "app": SESSION_APP,
            "version": SESSION_VERSION,
            "attention": self.config.to_dict(),
            "view": {"current_view": self.current_view, "temperature": self.temperature},
        }
        if self.tensors is not None:
            data["tensors"] = self.tensors.to_dict()
        if self.pins:
            data["pins"] = [pin.to_dict() for pin in self.pins]
        if self.model is not None:
            data["model"] = self.model.to_dict()
        return data

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
        except (TypeError, ValueError, OverflowError) as exc:
            raise SessionError(_short(f"invalid attention settings: {exc}")) from None
        view = data.get("view", {})
        if not isinstance(view, dict):
            raise SessionError("'view' must be an object")
        current = view.get("current_view", "heatmap")
        if not isinstance(current, str):
            raise SessionError("view.current_view must be a string")
        if current not in VIEW_KEYS:
            raise SessionError(f"unknown view.current_view {quoted(current)}; expected one of "
                               + ", ".join(VIEW_KEYS))
        temperature = view.get("temperature", config.temperature)
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not _finite(temperature)
            or temperature <= 0
        ):
            raise SessionError(
                f"view.temperature must be a positive number, got {quoted(temperature)}")
        tensors = data.get("tensors")
        pins = data.get("pins", [])
        if not isinstance(pins, list):
            raise SessionError("'pins' must be a list")
        try:
            loaded = tuple(pin_from_dict(pin, VIEW_KEYS) for pin in pins)
        except ValueError as exc:
            raise SessionError(_short(f"invalid pin: {exc}")) from None
        model = data.get("model")
        try:
            chosen = None if model is None else ModelChoice.from_dict(model)
        except ValueError as exc:
            raise SessionError(_short(str(exc))) from None
        return cls(config=config, current_view=current, temperature=float(temperature),
                   tensors=None if tensors is None else TensorsChoice.from_dict(tensors),
                   pins=loaded, model=chosen)


def save_session(path: str | os.PathLike[str], session: Session) -> None:
    """Write ``session`` to ``path`` as UTF-8 JSON, whole or not at all (a failed write leaves
    an existing session unchanged); an ``OSError`` names ``path`` and the system's reason."""
    path = Path(path)
    data = json.dumps(session.to_dict(), indent=2, ensure_ascii=False).encode("utf-8")
    write_output(path, data)


def load_session(path: str | os.PathLike[str]) -> Session:
    """Read and validate a session file; a one-line :class:`SessionError` when it cannot be
    read or is not a valid session (hostile files too: deep nesting, huge integers)."""
    name = Path(path).name
    try:
        # Bounded, and only a regular file: `--session /dev/zero` read forever, a FIFO blocked.
        text = read_text_limited(path, MAX_SESSION_BYTES, "session file")
    except OSError as exc:
        raise SessionError(_short(f"cannot read {path}: {describe_os_error(exc)}")) from None
    except UnicodeDecodeError as exc:
        raise SessionError(_short(f"cannot read {path}: not UTF-8 text ({exc.reason})")) from None
    try:
        data = json.loads(text, parse_int=_parse_int)
        return Session.from_dict(data)
    except json.JSONDecodeError as exc:
        raise SessionError(_short(f"{name} is not valid JSON: {exc}")) from None
    except SessionError as exc:
        raise SessionError(_short(f"{name}: {exc}")) from None
    except RecursionError:
        raise SessionError(f"{name} is nested too deeply to be a session") from None
    except (ValueError, OverflowError) as exc:  # any other conversion the checks above missed
        raise SessionError(_short(f"{name} holds an invalid value: {exc}")) from None
