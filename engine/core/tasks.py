"""Run independent pieces of numpy work side by side on a few threads, results in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["run_tasks"]

_T = TypeVar("_T")


def run_tasks(fn: Callable[..., _T], args: Sequence[Sequence[Any]], threads: int) -> list[_T]:
    """Return ``[fn(*a) for a in args]``, computed on up to ``threads`` threads.

    Worth it for tasks that spend their time in large numpy operations (which release the
    interpreter lock); the first exception raised by a task is raised here.

    Raises
    ------
    ValueError
        If ``threads`` is below 1.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    if threads == 1 or len(args) < 2:
        return [fn(*a) for a in args]
    with ThreadPoolExecutor(min(threads, len(args)), thread_name_prefix="tasks") as pool:
        return list(pool.map(lambda a: fn(*a), args))
