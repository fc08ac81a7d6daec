"""The memory guard, and the C allocator's thresholds.

Every engine function that builds n×n matrices (attention, snapshots, sweeps, training)
estimates their bytes first and calls :func:`check_memory`, which raises
:class:`MemoryBudgetError` with a message saying what would not fit and how to make it fit.
:func:`tune_allocator` makes glibc's malloc keep freed memory for the next step of a
computation instead of returning it to the system.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

from engine.config import DEFAULT_MEMORY_BUDGET_BYTES
from engine.config.base import check_int

__all__ = [
    "ALLOCATOR_THRESHOLDS",
    "MemoryBudgetError",
    "check_memory",
    "format_bytes",
    "get_memory_budget",
    "set_memory_budget",
    "tune_allocator",
]


class MemoryBudgetError(ValueError):
    """Raised when a computation would allocate more than the memory budget."""


_memory_budget = DEFAULT_MEMORY_BUDGET_BYTES


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
    _memory_budget = check_int("nbytes", nbytes, integral_floats=False)


def format_bytes(n: float) -> str:
    """``n`` bytes as people read them: "1.51 GiB", "340.00 MiB", "12 B"."""
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
    limit = _memory_budget if budget is None else check_int(
        "memory_budget_bytes", budget, integral_floats=False)
    if n_bytes > limit:
        if callable(what):
            what = what()
        raise MemoryBudgetError(
            f"{what} would need {format_bytes(n_bytes)} ({int(n_bytes):,} bytes), more than the "
            f"memory budget of {format_bytes(limit)} ({limit:,} bytes); use fewer tokens, heads "
            "or batch entries, or raise the budget (memory_budget_bytes / set_memory_budget)"
        )


#: (mmap threshold, trim threshold) in bytes set by :func:`tune_allocator`: blocks smaller than
#: the first come from malloc's heap, and the heap returns free memory at its top to the
#: system only beyond the second. These are the largest values glibc's own adaptive thresholds
#: reach (32 MiB, and twice that), which it reaches only after freeing a block that large.
ALLOCATOR_THRESHOLDS = (32 << 20, 64 << 20)
# mallopt's parameter numbers (glibc's malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


def tune_allocator() -> bool:
    """Let glibc's malloc keep the memory each step frees for the next (Linux; once per process).

    glibc otherwise unmaps large freed blocks and trims its heap, so repeated steps (the trainer's
    held-out evaluations) page-fault on fresh memory every time; the cost is up to the trim
    threshold of freed memory kept per arena. Rationale: docs/design-notes.md; ``main.py`` calls
    it at start-up.

    Returns
    -------
    bool
        True if the thresholds were set (glibc); False elsewhere (macOS, Windows, musl).
    """
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
        mallopt = ctypes.CDLL(None).mallopt  # the C library the process runs on
    except (AttributeError, OSError, ValueError):  # no confstr name, no glibc, no mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    mmap_threshold, trim_threshold = ALLOCATOR_THRESHOLDS
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(
        mallopt(_M_TRIM_THRESHOLD, trim_threshold))
