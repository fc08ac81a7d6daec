"""Command-line options generated from the config field declarations (no Qt).

Every option of ``main.py sweep``, ``train`` and ``lr-sweep`` that sets a config field comes
from that field's :class:`~engine.config.base.Cli` declaration: flags, help, choices, and the
dataclass default; the value type is the field's, and a number's help ends with the range the
engine accepts (``main.py``'s help formatter adds the default). :func:`field_values` reads them
back by field name, so a new declared option needs no change here or in the commands.
"""

from __future__ import annotations

import argparse
import re
from enum import StrEnum
from typing import Any

from engine.config.base import BoundField, JsonConfig
from engine.config.rules import RULE_DEFAULTS, RULE_FIELDS

__all__ = ["RULE_OPTIONS", "add_field_options", "add_rule_options", "build_config", "field_values",
           "option_fields", "rule_from_options", "with_option_name"]

#: Each rule parameter's option (``--cap`` for ``cap``, ``--ssmax-s`` for ``ssmax_s``).
RULE_OPTIONS = {name: spec.cli.flags[0] for name, spec in RULE_FIELDS.items() if spec.cli}


def option_fields(cls: type[JsonConfig], command: str | None = None) -> list[BoundField]:
    """The fields of ``cls`` with an option, in ``--help`` order.

    ``command=None`` selects the options every command built from ``cls`` shares; a command's
    name selects the options only that command takes.
    """
    chosen = [
        field for field in cls.bound().values()
        if field.spec.cli is not None
        and (field.spec.cli.commands == () if command is None
             else command in field.spec.cli.commands)
    ]
    order = [field for field in chosen if _after(field) is None]
    pending = [field for field in chosen if _after(field) is not None]
    while pending:
        names = [field.name for field in order]
        placeable = [field for field in pending if _after(field) in names]
        if not placeable:
            raise ValueError(f"option order: no option named {_after(pending[0])!r}")
        field = placeable[0]
        order.insert(names.index(_after(field)) + 1, field)  # type: ignore[arg-type]
        pending.remove(field)
    return order


def _after(field: BoundField) -> str | None:
    return field.spec.cli.after if field.spec.cli is not None else None


def _default(field: BoundField) -> Any:
    value = field.default
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, tuple):
        return ",".join(v.value if isinstance(v, StrEnum) else str(v) for v in value)
    return value


def _range_text(field: BoundField) -> str:
    """`` (range 1..1024)`` for a number field with a declared range, else ""."""
    low, high = field.spec.low, field.spec.high
    if field.kind not in (int, float) or low is None:
        return ""
    if high is None:  # one-sided: "(> 0)", "(>= 1)"
        return f" ({'>=' if field.spec.closed in ('both', 'left') else '>'} {_number(low)})"
    return f" (range {_number(low)}..{_number(high)})"


def _number(value: float) -> str:
    """``8192``, ``10000000``, ``1e-06``, ``0.5``: whole numbers without an exponent."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else f"{value:g}"


def add_field_options(
    parser: argparse.ArgumentParser, cls: type[JsonConfig], command: str | None = None
) -> None:
    """Add the options of :func:`option_fields` ``(cls, command)`` to ``parser``."""
    for field in option_fields(cls, command):
        cli = field.spec.cli
        assert cli is not None
        kwargs: dict[str, Any] = {"dest": field.name}
        if cli.help is not None:
            kwargs["help"] = cli.help + _range_text(field)
        if cli.required:
            kwargs["required"] = True
        else:
            kwargs["default"] = _default(field)
        if field.kind in (int, float):
            kwargs["type"] = field.kind
        if cli.choices and field.is_enum:
            kwargs["choices"] = [member.value for member in field.kind]  # type: ignore[attr-defined]
        else:
            # The name argparse would derive from the first flag, also when dest differs.
            kwargs["metavar"] = cli.flags[0].lstrip("-").replace("-", "_").upper()
        parser.add_argument(*cli.flags, **kwargs)


def add_rule_options(parser: argparse.ArgumentParser) -> None:
    """Add an option per rule parameter (:data:`engine.config.RULE_FIELDS`: flags, help, range;
    unset: ``None``, the parameter's declared default)."""
    for name, spec in RULE_FIELDS.items():
        assert spec.cli is not None and spec.cli.help is not None
        default = RULE_DEFAULTS[name]
        shown = "" if default is None or "default" in spec.cli.help else f" (default {default:g})"
        field = BoundField(name, float, True, None, spec)
        parser.add_argument(*spec.cli.flags, dest=name, type=float, default=None,
                            metavar=spec.cli.flags[0].lstrip("-").replace("-", "_").upper(),
                            help=spec.cli.help + shown + _range_text(field))


def field_values(args: argparse.Namespace, cls: type[JsonConfig]) -> dict[str, Any]:
    """The values of the options of ``cls`` present in ``args``, by field name."""
    given = vars(args)
    return {name: given[name] for name, field in cls.bound().items()
            if field.spec.cli is not None and name in given}


#: A refused value's message starts with what it is about: "n_tokens must be in [1, 8192], ...".
_SUBJECT_FIRST = re.compile(r"^(\w+)(?= must )")


def with_option_name(message: str, flags: dict[str, str]) -> str:
    """``message`` with its leading name put as the option the user typed for it (``flags``:
    name to option, ``n_tokens`` to ``--n``); unchanged when ``flags`` has no such name."""
    match = _SUBJECT_FIRST.match(message)
    flag = flags.get(match.group(1)) if match else None
    return message if flag is None else flag + message[match.end():]


def rule_from_options(args: argparse.Namespace) -> Any:
    """The :class:`~engine.core.scaling.Rule` of ``--rule`` and the rule parameters' options
    (:func:`add_rule_options`); a refused value is named by its option (``--cap``)."""
    from engine.core.scaling import Rule  # numerics load when a command runs, not to parse

    try:
        return Rule.from_keywords(args.rule, **{name: getattr(args, name, None)
                                                for name in RULE_OPTIONS})
    except ValueError as exc:
        raise ValueError(with_option_name(str(exc), RULE_OPTIONS)) from None


def build_config(cls: type[JsonConfig], values: dict[str, Any]) -> Any:
    """``cls(**values)``; a refused value's message names the option (``--n``), not the field
    (``n_tokens``), since the option is what the user typed."""
    try:
        return cls(**values)
    except ValueError as exc:
        flags = {name: field.spec.cli.flags[0] for name, field in cls.bound().items()
                 if field.spec.cli is not None}
        message = with_option_name(str(exc), flags)
        if message == str(exc):
            raise
        raise ValueError(message) from None
