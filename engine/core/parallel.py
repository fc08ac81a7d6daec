"""Split the tiles of a large attention problem over threads, BLAS pinned to one each.

Measured on a 2-core machine (benchmarks/bench_engine.py): for large problems, running row
tiles on two Python threads with single-threaded BLAS beats two BLAS threads on one Python
thread, because the softmax's elementwise passes (which numpy runs on one core) are
parallelised as well. numpy releases the interpreter lock inside matrix products and large
elementwise operations, so the threads really run at the same time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

from engine.core.checks import check_dim
from engine.core.threads import limit_blas_threads

__all__ = [
    "MIN_TILES_PER_THREAD",
    "get_num_threads",
    "parallel_pays",
    "run_tiles",
    "set_num_threads",
]

_S = TypeVar("_S")
_Tile = TypeVar("_Tile")

# Below this many multiply-adds (n_scores · (d_k + d_v)) the thread hand-off costs more than
# it saves.
_PARALLEL_MIN_WORK = 1 << 25


def _default_threads() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


_num_threads = _default_threads()
_executor: ThreadPoolExecutor | None = None
_executor_workers = 0
_executor_lock = threading.Lock()
# The BLAS thread limit is process-wide, so only one parallel region may change it at a time;
# a second concurrent caller simply runs serially.
_parallel_lock = threading.Lock()


def get_num_threads() -> int:
    """Return how many threads large attention problems are split over (1 = serial)."""
    return _num_threads


def set_num_threads(n: int | None) -> None:
    """Set how many threads large attention problems are split over.

    Parameters
    ----------
    n
        Positive integer, or ``None`` for the default (available CPUs, at most 8). Splitting is
        used only when the problem is large enough to profit; while it runs, BLAS is pinned to
        one thread per worker so that workers × BLAS threads do not oversubscribe the cores.
    """
    global _num_threads
    _num_threads = _default_threads() if n is None else check_dim("n", n)


def parallel_pays(work: int) -> bool:
    """Whether a problem of ``work`` multiply-adds is split over threads by :func:`run_tiles`."""
    return _num_threads >= 2 and work >= _PARALLEL_MIN_WORK


def _get_executor(workers: int) -> ThreadPoolExecutor:
    global _executor, _executor_workers
    with _executor_lock:
        if _executor is None or _executor_workers < workers:
            if _executor is not None:
                _executor.shutdown(wait=False)
            _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="attention")
            _executor_workers = workers
        return _executor


# Tiles per thread: more than one, so that a thread slowed by other processes on its core
# does not leave the others idle at the end; few, because every numpy call of a tile costs
# more while the other threads run too (in paired runs on 2 cores, 4 tiles instead of 8 made
# (8, 256, 64) and (32, 128, 64) calls 3-14 % faster).
MIN_TILES_PER_THREAD = 2


def run_tiles(
    fn: Callable[[_S, _Tile], None],
    tiles: Sequence[_Tile],
    work: int,
    make_state: Callable[[], _S],
) -> list[_S]:
    """Run ``fn(state, tile)`` for every tile, on several threads when that pays off.

    Each thread creates its own ``state`` (scratch buffers, partial sums) once, with
    ``make_state``, and passes it to every tile it takes; the states of the threads that ran
    are returned (one when serial).

    Parameters
    ----------
    fn
        Computes one tile; called from several threads at once, so it may only write to its
        own state and to its tile's part of shared arrays.
    tiles
        The work items, taken in order by whichever thread is free.
    work
        Multiply-adds of the whole problem: unless :func:`parallel_pays`, it runs serially.
    make_state
        Returns a new per-thread state.
    """
    threads = min(_num_threads, len(tiles))
    if threads < 2 or not parallel_pays(work) or not _parallel_lock.acquire(blocking=False):
        state = make_state()
        for tile in tiles:
            fn(state, tile)
        return [state]
    try:
        todo = iter(tiles)
        take = threading.Lock()
        failed = threading.Event()

        def worker() -> _S | None:
            state: _S | None = None
            while not failed.is_set():
                with take:
                    tile = next(todo, None)
                if tile is None:
                    break
                try:
                    if state is None:
                        state = make_state()
                    fn(state, tile)
                except BaseException:
                    failed.set()
                    raise
            return state

        executor = _get_executor(threads - 1)
        with limit_blas_threads(1):
            futures = [executor.submit(worker) for _ in range(threads - 1)]
            try:
                first = worker()
            finally:
                # Never leave the BLAS limit while workers still run.
                wait(futures)
            results = [first, *(f.result() for f in futures)]
        return [r for r in results if r is not None]
    finally:
        _parallel_lock.release()
