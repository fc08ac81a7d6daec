"""The memory guard: refuse a computation before it allocates more than the budget.

Every engine function that builds n×n matrices (attention, snapshots, sweeps, training)
estimates their bytes first and calls :func:`check_memory`, which raises
:class:`MemoryBudgetError` with a message saying what would not fit and how to make it fit.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from engine.config import DEFAULT_MEMORY_BUDGET_BYTES

__all__ = ["MemoryBudgetError", "check_memory", "get_memory_budget", "set_memory_budget"]


class MemoryBudgetError(ValueError):
    """Raised when a computation would allocate more than the memory budget."""


_memory_budget = DEFAULT_MEMORY_BUDGET_BYTES


def _check_budget_value(name: str, nbytes: Any) -> int:
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral) or nbytes < 1:
        raise ValueError(f"{name} must be a positive integer number of bytes, got {nbytes!r}")
    return int(nbytes)


def get_memory_budget() -> int:
    """Return the module-wide default memory budget in bytes (initially 1 GiB)."""
    return _memory_budget


def set_memory_budget(nbytes: int) -> None:
    """Set the module-wide default memory budget in bytes.

    Parameters
    ----------
    nbytes
        Positive integer; used whenever a function is not given ``memory_budget_bytes``.
    """
    global _memory_budget
    _memory_budget = _check_budget_value("nbytes", nbytes)


def _format_bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def check_memory(n_bytes: int, what: str | Callable[[], str], budget: int | None = None) -> None:
    """Raise :class:`MemoryBudgetError` if ``n_bytes`` exceeds the budget.

    Parameters
    ----------
    n_bytes
        Estimated size of the allocation.
    what
        Human-readable description of what would be allocated (used in the message), or a
        function returning it (formatting costs microseconds, which tiny calls notice).
    budget
        Budget in bytes; ``None`` means the module default (:func:`get_memory_budget`).
    """
    limit = _memory_budget if budget is None else _check_budget_value("memory_budget_bytes", budget)
    if n_bytes > limit:
        if callable(what):
            what = what()
        raise MemoryBudgetError(
            f"{what} would need {_format_bytes(n_bytes)} ({int(n_bytes):,} bytes), more than the "
            f"memory budget of {_format_bytes(limit)} ({limit:,} bytes); use fewer tokens, heads "
            "or batch entries, or raise the budget (memory_budget_bytes / set_memory_budget)"
        )
