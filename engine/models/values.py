"""Typed readers of a model's settings (``config.json`` or GGUF metadata).

A config is written by whoever made the model folder: any value may be of the wrong type or
out of range, and a value used unchecked surfaces later as a traceback far from its cause
(``float("abc")``, an unhashable list as a dict key) or, worse, as a silently wrong result (a
negative epsilon gives NaN q and k). Each reader checks one value where it is read and refuses
a bad one in one :class:`ModelError` line naming the key, the value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.config.base import Interval, check_int, check_number
from engine.io.source import shown
from engine.models.weights import ModelError

__all__ = ["REQUIRED", "Values"]

#: The default of a value that must be given.
REQUIRED: Any = object()


def _accepting(check: Callable[..., Any], interval: Interval, **options: Any
               ) -> Callable[[Any], Any]:
    """The value as ``check`` (the engine's one integer or number check) returns it, or None
    where it refuses it: the message is the reader's, naming the file and the key."""
    def accept(value: Any) -> Any:
        try:
            return check("", value, interval, **options)
        except ValueError:
            return None

    return accept


def _show(value: Any) -> str:
    # repr of a hostile value may be megabytes (a list of a million items): cut it.
    return shown(repr(value), 60)


class Values:
    """The settings of one model, read by typed getters.

    A key whose value is ``null`` counts as absent: transformers writes null for a setting
    left at its default. Several keys may name one setting (``num_hidden_layers`` or
    ``n_layer``); the first present one is read, and a message names that one.

    Parameters
    ----------
    values
        The parsed JSON object or GGUF metadata.
    label
        What messages start with (the folder or file name).
    path
        The keys of the enclosing objects, for a nested object such as ``rope_scaling``.
    """

    def __init__(self, values: Mapping[str, Any], label: str, path: str = "") -> None:
        self._values, self._label, self._path = values, label, path

    def has(self, key: str) -> bool:
        """Whether ``key`` is given (not absent, not null)."""
        return self._values.get(key) is not None

    def written(self, key: str) -> bool:
        """Whether ``key`` is in the file at all, null included: a few settings (Mistral's
        ``sliding_window``) default to a value when absent but are off when null."""
        return key in self._values

    def raw(self, *keys: str, default: Any = None) -> tuple[str, Any]:
        """The first given key of ``keys`` and its unchecked value (``default`` if none is;
        :data:`REQUIRED` refuses a missing value)."""
        for key in keys:
            value = self._values.get(key)
            if value is not None:
                return key, value
        if default is REQUIRED:
            raise ModelError(f"{self._label}: {self._name(keys[0])} is missing")
        return keys[0], default

    def refuse(self, key: str, value: Any, allowed: str) -> ModelError:
        """The error for ``key`` holding ``value`` where ``allowed`` is what may be there."""
        return ModelError(f"{self._label}: {self._name(key)} must be {allowed}, got "
                          f"{_show(value)}")

    def _name(self, key: str) -> str:
        return f"'{self._path}{key}'"

    def _read(self, keys: tuple[str, ...], default: Any, allowed: str,
              accept: Callable[[Any], Any]) -> Any:
        """The value of the first given key as ``accept`` makes it (None: not allowed), or
        ``default`` as it is: a default is the code's own value, not the file's."""
        key, value = self.raw(*keys, default=REQUIRED if default is REQUIRED else None)
        if value is None:
            return default
        out = accept(value)
        if out is None:
            raise self.refuse(key, value, allowed)
        return out

    def whole(self, *keys: str, default: Any = REQUIRED, low: int = 1, high: int) -> int:
        """A whole number in ``low``..``high`` (a JSON ``true`` or ``2.0`` is not one)."""
        return self._read(keys, default, f"a whole number from {low:,} to {high:,}",
                          _accepting(check_int, Interval(low, high), integral_floats=False))

    def number(self, *keys: str, default: Any = REQUIRED, above: float | None = None,
               least: float | None = None, below: float | None = None) -> float:
        """A finite number, strictly above ``above`` or at least ``least``, and strictly below
        ``below`` where given."""
        bounds = [f"{sign} {bound:g}" for sign, bound in
                  ((">", above), ("≥", least), ("<", below)) if bound is not None]
        allowed = " and ".join(["a finite number " + bounds[0], *bounds[1:]]
                               ) if bounds else "a finite number"
        interval = Interval(least if above is None else above, below,
                            "left" if above is None else "neither")
        return self._read(keys, default, allowed, _accepting(check_number, interval))

    def choice(self, *keys: str, options: Sequence[str], default: Any = REQUIRED) -> str:
        """One of the strings ``options``."""
        return self._read(keys, default, "one of " + ", ".join(options),
                          lambda v: v if isinstance(v, str) and v in options else None)

    def flag(self, *keys: str, default: bool) -> bool:
        """``true`` or ``false`` (not 0, 1 or "true")."""
        return self._read(keys, default, "true or false",
                          lambda v: v if isinstance(v, bool) else None)

    def mapping(self, key: str) -> Values | None:
        """The object under ``key`` as :class:`Values` (None when absent)."""
        value = self._values.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.refuse(key, value, "an object of named values")
        return Values(value, self._label, f"{self._path}{key}.")
