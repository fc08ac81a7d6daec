"""The ranges of the numbers the engine takes and the one check of each kind of value.

:class:`Interval` declares a range (either end open or absent, like scikit-learn's), and
:func:`check_int`, :func:`check_number`, :func:`check_enum` and :func:`check_value` check a
value against one where it enters: configs, the command line, files and notebook calls.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import typing
from enum import StrEnum
from typing import Any

__all__ = ["POSITIVE", "POSITIVE_INT", "Interval", "check_enum", "check_int", "check_number",
           "check_value"]


@dataclasses.dataclass(frozen=True, slots=True)
class Interval:
    """The numbers a field accepts: ``low`` to ``high``, either end open or absent (``None``).

    Like scikit-learn's ``Interval(Real, 0, None, closed="neither")``: ``closed`` is
    ``"both"``, ``"left"``, ``"right"`` or ``"neither"``. :meth:`requirement` words it for
    messages: ``"in [1, 8192]"``, ``"a positive finite number (> 0)"``, ``">= 1"``.
    """

    low: float | None = None
    high: float | None = None
    closed: str = "both"

    def __contains__(self, value: float) -> bool:
        low, high, closed = self.low, self.high, self.closed
        if low is not None and (value < low or (value == low and closed in ("right", "neither"))):
            return False
        return high is None or value < high or (value == high and closed in ("both", "right"))

    @property
    def bounded(self) -> bool:
        """Whether it has both ends (the messages then name the range)."""
        return self.low is not None and self.high is not None

    def requirement(self, integer: bool = False) -> str:
        """What a value must be, after "must be"."""
        low, high, closed = self.low, self.high, self.closed
        shown = (lambda x: str(int(x))) if integer else (lambda x: f"{x:g}")
        if self.bounded:
            left = "[" if closed in ("both", "left") else "("
            right = "]" if closed in ("both", "right") else ")"
            return f"in {left}{shown(low)}, {shown(high)}{right}"
        if low is None:
            return (f"<= {shown(high)}" if closed in ("both", "right") else f"< {shown(high)}"
                    ) if high is not None else "a number"
        inclusive = closed in ("both", "left")
        if integer and inclusive:
            return "a positive integer (>= 1)" if low == 1 else f"an integer >= {shown(low)}"
        if not integer and low == 0 and not inclusive:
            return "a positive finite number (> 0)"
        return f">= {shown(low)}" if inclusive else f"> {shown(low)}"


#: The integers >= 1 (sizes, counts): one declaration for every such check.
POSITIVE_INT = Interval(1, None)
#: The positive finite numbers.
POSITIVE = Interval(0.0, None, "neither")


def check_value(name: str, kind: type, value: Any, interval: Interval | None = None) -> Any:
    """Validate one value of type ``kind`` against ``interval``; messages name the field."""
    if kind is bool:
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
        return value
    if issubclass(kind, StrEnum):
        return check_enum(name, kind, value)
    if kind is int:
        return check_int(name, value, interval or Interval())
    if kind is float:
        return check_number(name, value, interval or Interval())
    return value  # tuples and other composite fields are checked by their class


def check_int(name: str, value: Any, interval: Interval = POSITIVE_INT, *,
              integral_floats: bool = True) -> int:
    """``value`` as an int in ``interval``, or a ``ValueError`` naming ``name``.

    Integral floats (from JSON or spin boxes) are accepted unless ``integral_floats`` is off;
    bool never is. The one integer check of the engine (sizes, counts, seeds).
    """
    if type(value) is int and value >= 1 and interval is POSITIVE_INT:
        return value  # the usual case, without the checks below
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if integral_floats and isinstance(value, float) and value.is_integer():
            value = int(value)
        elif interval.bounded:
            raise ValueError(f"{name} must be an integer, got {value!r}")
        else:
            raise ValueError(f"{name} must be {interval.requirement(True)}, got {value!r}")
    value = int(value)
    if value not in interval:
        raise ValueError(f"{name} must be {interval.requirement(True)}, got {value}")
    return value


def check_number(name: str, value: Any, interval: Interval = POSITIVE) -> float:
    """``value`` as a finite float in ``interval``, or a ``ValueError`` naming ``name``.

    A range with both ends is named in the message; a one-sided one is named for any failure
    ("must be a positive finite number (> 0), got 'big'").
    """
    number = not isinstance(value, bool) and isinstance(value, numbers.Real)
    try:
        finite = number and math.isfinite(value)
    except OverflowError:  # an int beyond float's range (10**400)
        raise ValueError(f"{name} must be {interval.requirement()}, got an integer beyond "
                         "float's range") from None
    if finite and float(value) in interval:
        return float(value)
    if not interval.bounded:
        raise ValueError(f"{name} must be {interval.requirement()}, got {value!r}")
    if not number:
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not finite:
        raise ValueError(f"{name} must be finite, got {float(value)}")
    raise ValueError(f"{name} must be {interval.requirement()}, got {float(value):g}")


_E = typing.TypeVar("_E", bound=StrEnum)


def check_enum(name: str, enum: type[_E], value: Any) -> _E:
    """``enum(value)``, or a ``ValueError`` listing the allowed values."""
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}") from None
