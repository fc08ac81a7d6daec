"""Test helper: the numbers a tour text states, and which a claim, the set-up or a formula checks.

Every number in a step's texts must be a claim target, part of the step's set-up, a checked
formula (:func:`formula_value`) or a declared given; :func:`unchecked_numbers` lists the others,
so a test fails when a text states a number no claim evaluates. The rules and how numbers are
read: docs/tour.md, "The numbers a tour text states".
"""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from engine.tour.claims import claim_numbers

__all__ = [
    "WrittenNumber",
    "check_formulas",
    "formula_value",
    "prose_numbers",
    "setup_numbers",
    "unchecked_numbers",
]

_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
#: A number as the tour writes it; not glued to a name (letters, digits, ``_`` or ``.`` before,
#: letters, digits or ``_`` after). CJK text around a number is fine.
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.^])"
    r"(?P<mantissa>\d+(?:\.\d+)?)"
    r"(?:(?P<sci>·10(?P<exp>[⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+))"
    r"|(?P<sup>[⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)"
    r"|(?:\^(?P<power>\d+))"
    r"|(?:e(?P<e>-?\d+)))?"
    r"(?![A-Za-z0-9_]|\.\d)"
    r"(?P<percent>\s?%)?"
)


@dataclass(frozen=True, slots=True)
class WrittenNumber:
    """A number found in a text.

    Attributes
    ----------
    text
        As written (``"0.16 %"``, ``"2^20"``).
    values
        What it may stand for: one value, or two for a percentage (``89 %``: 89 and 0.89).
    """

    text: str
    values: tuple[float, ...]


def prose_numbers(text: str) -> Iterator[WrittenNumber]:
    """Yield every number written in ``text`` (see the module docstring for the forms)."""
    for match in _NUMBER.finditer(text):
        value = float(match["mantissa"])
        if match["sci"]:
            value *= 10.0 ** int(match["exp"].translate(_SUPERSCRIPT))
        elif match["sup"]:
            value **= int(match["sup"].translate(_SUPERSCRIPT))
        elif match["power"]:
            value **= int(match["power"])
        elif match["e"]:
            value *= 10.0 ** int(match["e"])
        values = (value, value / 100) if match["percent"] else (value,)
        yield WrittenNumber(match.group(0).strip(), values)


def _numbers_in(value: Any) -> Iterator[float]:
    """Every number inside a JSON value (bools are not numbers)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield float(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _numbers_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers_in(item)


#: Claim fields that set up the experiment (the rest are targets, tolerances or names).
_CLAIM_SETUP = ("at", "n", "threshold", "logit_std", "temperature", "lr", "train")
#: Step fields that set up the experiment.
_STEP_SETUP = ("settings", "view_temperature", "train_settings", "lr_sweep")


def setup_numbers(step: Mapping[str, Any]) -> set[float]:
    """The numbers of the step's set-up: its settings and its claims' parameters."""
    found = {x for key in _STEP_SETUP for x in _numbers_in(step.get(key))}
    for claim in step.get("claims", []):
        found.update(x for key in _CLAIM_SETUP for x in _numbers_in(claim.get(key)))
    return found


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg,
              ast.UAdd: operator.pos}
_FUNCTIONS = {"log": math.log, "sqrt": math.sqrt, "exp": math.exp}
_CONSTANTS = {"e": math.e, "pi": math.pi}


def formula_value(expr: str) -> float:
    """Evaluate a closed form such as ``"exp(4)/(exp(4) + 63)"``.

    Numbers, ``+ - * / **``, parentheses, ``log`` (natural), ``sqrt``, ``exp``, ``e`` and ``pi``
    only; anything else raises ``ValueError``.
    """
    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not (
                isinstance(node.value, bool)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](value(node.left), value(node.right)))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return float(_OPERATORS[type(node.op)](value(node.operand)))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _FUNCTIONS and len(node.args) == 1 and not node.keywords):
            return float(_FUNCTIONS[node.func.id](value(node.args[0])))
        raise ValueError(f"formula {expr!r}: {ast.dump(node)} is not allowed")

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"formula {expr!r}: {exc.msg}") from None
    return value(tree)


def _decimals(number: float) -> int:
    """Digits after the decimal point of ``number`` as JSON writes it (``0.0442`` → 4)."""
    text = repr(float(number))
    if "e" in text:
        mantissa, exponent = text.split("e")
        digits = len(mantissa.split(".")[1].rstrip("0")) if "." in mantissa else 0
        return max(0, digits - int(exponent))
    return len(text.split(".")[1].rstrip("0"))


def check_formulas(step: Mapping[str, Any]) -> list[str]:
    """The problems of the step's ``formulas``: a value that is not its expression rounded to
    the digits written (their form is checked by :func:`engine.tour.steps.validate_tour`)."""
    problems = []
    for entry in step.get("formulas", []):
        written, expr = entry["value"], entry["expr"]
        try:
            exact = formula_value(expr)
        except (ValueError, ArithmeticError) as exc:
            problems.append(str(exc))
            continue
        digits = _decimals(written)
        if not math.isclose(round(exact, digits), written, rel_tol=1e-12, abs_tol=1e-15):
            problems.append(f"formula {expr} = {exact:.6g}, which is not {written:g} "
                            f"to {digits} decimals")
    return problems


def _accounted(step: Mapping[str, Any]) -> set[float]:
    numbers = setup_numbers(step)
    for claim in step.get("claims", []):
        numbers.update(claim_numbers(claim))
    numbers.update(float(entry["value"]) for entry in step.get("formulas", []))
    numbers.update(_numbers_in(step.get("given", [])))
    return numbers


def _matches(value: float, known: Iterable[float]) -> bool:
    return any(math.isclose(value, x, rel_tol=1e-9, abs_tol=1e-15) for x in known)


def unchecked_numbers(step: Mapping[str, Any], text: str) -> list[str]:
    """The numbers written in ``text`` that are not a claim, set-up, formula or given number
    of ``step`` (as written, in order)."""
    known = _accounted(step)
    return [number.text for number in prose_numbers(text)
            if not any(_matches(value, known) for value in number.values)]
