"""Field declarations and the generic validation and JSON round trip of every config (the
ranges and the checks of single values are in :mod:`engine.config.ranges`).

Each config class is a frozen dataclass with a ``FIELDS`` table of one :class:`FieldSpec` per
field: its range and unit, how a panel shows it (:class:`Gui`) and how the command line takes
it (:class:`Cli`); the dataclass default is the default everywhere. What is generated from the
tables: docs/architecture.md, "One field, one place".

Labels and tooltips are marked with :func:`QT_TRANSLATE_NOOP`, an engine-side marker with the
call shape of Qt's: ``pyside6-lupdate`` extracts the literal (context, text) pairs from this
package, and the GUI translates them when it shows them. The engine itself never imports Qt.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple, Self

from engine.config.ranges import (
    POSITIVE,
    POSITIVE_INT,
    Interval,
    check_enum,
    check_int,
    check_number,
    check_value,
)

__all__ = [
    "POSITIVE",
    "POSITIVE_INT",
    "QT_TRANSLATE_NOOP",
    "BoundField",
    "Cli",
    "FieldSpec",
    "Gui",
    "Interval",
    "JsonConfig",
    "Msg",
    "bound_fields",
    "check_enum",
    "check_int",
    "check_number",
    "check_value",
    "validate_fields",
]


class Msg(NamedTuple):
    """A user-visible text and its translation context (translated where it is shown)."""

    context: str
    text: str


def QT_TRANSLATE_NOOP(context: str, text: str) -> Msg:
    """Mark ``text`` for translation in ``context`` without translating it (no Qt here).

    ``pyside6-lupdate`` recognises calls by this name and extracts their literal arguments; the
    GUI passes the returned :class:`Msg` to Qt's translator when it shows the text.
    """
    return Msg(context, text)


#: A label: a marked text, or a plain string that reads the same in every language (maths).
Label = Msg | str


@dataclasses.dataclass(frozen=True, slots=True)
class Gui:
    """How a panel shows one field.

    Parameters
    ----------
    label, tooltip
        Row label (check boxes: their own text) and the formula the field enters (tooltip).
    widget
        ``"slider"``, ``"spin"``, ``"log_spin"`` (steps 1, 2, 3, 5 × 10^k), ``"combo"``,
        ``"check"`` or ``"custom"`` (made by the panel itself).
    low, high, log, decimals, step
        The panel's range where narrower than the engine's; log slider scale; spin-box decimals
        and arrow step.
    group
        The group box of the panel the row goes to.
    default_text, default_tooltip, first
        For ``None``-able fields: the word (or check-box text) for ``None``, its tooltip, and the
        value a log spin box steps to from that word.
    choices
        Combo-box item texts by enum value (in the enum's order).
    enabled_when, visible_when
        ``(field, value)``: the row is enabled / visible only while that field holds ``value``.
    """

    label: Label
    tooltip: Msg | None = None
    widget: str = "spin"
    low: float | None = None
    high: float | None = None
    log: bool = False
    decimals: int = 3
    step: float | None = None
    group: str = ""
    default_text: Msg | None = None
    default_tooltip: Msg | None = None
    first: float = 1.0
    choices: Mapping[str, Label] | None = None
    enabled_when: tuple[str, Any] | None = None
    visible_when: tuple[str, Any] | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Cli:
    """How the command line takes one field.

    Parameters
    ----------
    flags
        Option strings, e.g. ``("--d-k", "--dk")``.
    help
        Help text (``None``: the option is listed without one).
    choices
        List the enum's values as argparse choices.
    required
        The option must be given.
    commands
        The subcommands that take the option (empty: every command built from the config).
    after
        List the option right after this field's option (keeps a command's established order).
    """

    flags: tuple[str, ...]
    help: str | None = None
    choices: bool = False
    required: bool = False
    commands: tuple[str, ...] = ()
    after: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSpec:
    """Everything about one config field except its name, type and default (the dataclass's).

    Parameters
    ----------
    low, high, closed
        Range the engine accepts (numbers only; see :class:`Interval`): inclusive unless
        ``closed`` says otherwise, ``high=None`` for no upper end.
    unit
        Unit of the value, for documentation ("" for pure numbers).
    gui, cli
        How a panel and the command line show the field (``None``: not shown there).
    """

    low: float | None = None
    high: float | None = None
    unit: str = ""
    gui: Gui | None = None
    cli: Cli | None = None
    closed: str = "both"

    @property
    def interval(self) -> Interval:
        """The accepted range as an :class:`Interval`."""
        return Interval(self.low, self.high, self.closed)

    def but(self, **changes: Any) -> FieldSpec:
        """A copy with ``changes`` (a config reusing another config's range, say)."""
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True, slots=True)
class BoundField:
    """A :class:`FieldSpec` bound to its dataclass field: name, value type, default."""

    name: str
    kind: type
    optional: bool
    default: Any
    spec: FieldSpec

    @property
    def is_enum(self) -> bool:
        return issubclass(self.kind, StrEnum)

    @property
    def gui_range(self) -> tuple[float, float]:
        """The panel's (low, high): the engine's range unless the panel narrows it."""
        gui, spec = self.spec.gui, self.spec
        return (_pick(gui.low if gui else None, spec.low),
                _pick(gui.high if gui else None, spec.high))

    def check(self, value: Any) -> Any:
        """Return ``value`` validated and normalised, or raise ``ValueError``."""
        if value is None and self.optional:
            return None
        return check_value(self.name, self.kind, value, self.spec.interval)


def _pick(first: float | None, second: float | None) -> float:
    value = first if first is not None else second
    if value is None:
        raise ValueError("this field has no range")
    return value


_BOUND: dict[type, dict[str, BoundField]] = {}


def bound_fields(cls: type) -> dict[str, BoundField]:
    """The declared fields of config class ``cls`` in its ``FIELDS`` table's order."""
    if cls not in _BOUND:
        hints = typing.get_type_hints(cls)
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        out = {}
        for name, spec in cls.FIELDS.items():  # type: ignore[attr-defined]
            kind, optional = _value_type(hints[name])
            out[name] = BoundField(name, kind, optional, defaults[name], spec)
        _BOUND[cls] = out
    return _BOUND[cls]


def _value_type(hint: Any) -> tuple[type, bool]:
    """``int | None`` -> (int, True); ``float`` -> (float, False); ``tuple[X, ...]`` -> tuple."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        kinds = [a for a in args if a is not type(None)]
        return _value_type(kinds[0])[0], type(None) in args
    origin = typing.get_origin(hint)
    return (origin or hint), False


def validate_fields(config: Any, skip: Callable[[str], bool] = lambda name: False) -> None:
    """Check and normalise every declared field of a frozen ``config`` in table order."""
    for name, field in bound_fields(type(config)).items():
        if not skip(name):
            object.__setattr__(config, name, field.check(getattr(config, name)))


class JsonConfig:
    """Dictionary/JSON round trip shared by every config class."""

    kind: ClassVar[str]
    FIELDS: ClassVar[dict[str, FieldSpec]]

    @classmethod
    def bound(cls) -> dict[str, BoundField]:
        """The declared fields, bound to their names, types and defaults."""
        return bound_fields(cls)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dictionary, tagged with the config kind.

        The keys follow the dataclass fields; a class that inherits fields (which the dataclass
        puts first) lists them in ``FIELDS`` order, where its table places them.
        """
        out: dict[str, Any] = {"kind": self.kind}
        names = [field.name for field in dataclasses.fields(self)]  # type: ignore[arg-type]
        if any(dataclasses.is_dataclass(base) for base in type(self).__mro__[1:]):
            names = list(self.FIELDS)
        for name in names:
            value = getattr(self, name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, tuple):
                value = [v.value if isinstance(v, StrEnum) else v for v in value]
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Build a config from :meth:`to_dict` output, refusing unknown or foreign keys."""
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__} data must be an object, got {type(data).__name__}")
        data = dict(data)
        kind = data.pop("kind", cls.kind)
        if kind != cls.kind:
            raise ValueError(f"expected a {cls.kind!r} config, got kind {kind!r}")
        names = {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown {cls.kind} field(s): {', '.join(unknown)}")
        for key, value in data.items():
            if isinstance(value, list):
                data[key] = tuple(value)
        return cls(**data)

    def replace(self, **changes: Any) -> Self:
        """Return a validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to_json(self) -> str:
        """Serialise to a JSON string."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Parse a JSON string written by :meth:`to_json`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc}") from None
        return cls.from_dict(data)
