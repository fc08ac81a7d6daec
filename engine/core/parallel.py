"""The engine's threads: one pool that attention tiles, independent tasks and sweep chunks
share, and the idle helpers that take row blocks of a one-row product (:func:`rows_product`).

For large problems, row tiles on several Python threads with single-threaded BLAS beat several
BLAS threads on one Python thread: the softmax's elementwise passes, which numpy runs on one
core, are parallelised too, and numpy releases the interpreter lock inside matrix products and
large elementwise operations (benchmarks/bench_engine.py compares the two).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

import numpy as np

from engine.core.checks import check_dim
from engine.core.threads import limit_blas_threads

__all__ = [
    "MIN_TILES_PER_THREAD",
    "OneRowWays",
    "finish",
    "get_num_threads",
    "limit_threads",
    "parallel_pays",
    "rows_product",
    "run_side_by_side",
    "run_tasks",
    "run_tiles",
    "set_num_threads",
    "shared_executor",
]

_S = TypeVar("_S")
_T = TypeVar("_T")
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
_local = threading.local()  # this thread's limit_threads
_executor: ThreadPoolExecutor | None = None
_executor_workers = 0
_executor_lock = threading.Lock()
# The BLAS thread limit is process-wide, so only one parallel region may change it at a time;
# a second concurrent caller simply runs serially.
_parallel_lock = threading.Lock()


def get_num_threads() -> int:
    """Return how many threads large problems started on this thread are split over
    (1 = serial): :func:`set_num_threads`'s count, within this thread's
    :func:`limit_threads`."""
    return min(_num_threads, getattr(_local, "limit", _num_threads))


@contextlib.contextmanager
def limit_threads(threads: int) -> Iterator[None]:
    """Split the problems this thread starts inside the block over at most ``threads``
    threads (the engine's: tiles, one-row products; BLAS's own are
    :func:`~engine.core.threads.limit_blas_threads`'). Unlike those, the limit is this
    thread's alone: a window's worker leaves a core to the window without slowing others.

    Examples
    --------
    >>> with limit_threads(1):
    ...     get_num_threads()
    1
    """
    check_dim("threads", threads)
    old = getattr(_local, "limit", None)
    _local.limit = threads if old is None else min(old, threads)
    try:
        yield
    finally:
        if old is None:
            del _local.limit
        else:
            _local.limit = old


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
    return get_num_threads() >= 2 and work >= _PARALLEL_MIN_WORK


def shared_executor(workers: int) -> ThreadPoolExecutor:
    """The engine's thread pool, grown to at least ``workers`` threads.

    A task running on it must not wait for a task that has not started (see :func:`finish`):
    the pool's other threads may all be busy, so the queued task might never start.
    """
    global _executor, _executor_workers
    with _executor_lock:
        if _executor is None or _executor_workers < workers:
            if _executor is not None:
                _executor.shutdown(wait=False)
            _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="attention",
                                           initializer=_mark_pool_thread)
            _executor_workers = workers
        return _executor


# Tiles per thread: more than one, so that a thread slowed by other processes on its core
# does not leave the others idle at the end; few, because every numpy call of a tile costs
# more while the other threads run too.
MIN_TILES_PER_THREAD = 2


def run_tiles(
    fn: Callable[[_S, _Tile], None],
    tiles: Sequence[_Tile],
    work: int,
    make_state: Callable[[], _S],
) -> list[_S]:
    """Run ``fn(state, tile)`` for every tile, on several threads when ``work`` (the
    problem's multiply-adds) :func:`parallel_pays`.

    Each thread makes its own ``state`` (scratch buffers, partial sums) once with
    ``make_state`` and takes tiles in order while it is free; ``fn`` may therefore write only to
    its state and its tile's part of shared arrays. Returns the states of the threads that ran.
    """
    threads = min(get_num_threads(), len(tiles))
    if threads < 2 or not parallel_pays(work) or not _parallel_lock.acquire(blocking=False):
        state = make_state()
        for tile in tiles:
            fn(state, tile)
        return [state]
    try:
        # Never leave the BLAS limit while helpers still run: _share waits for them.
        with limit_blas_threads(1):
            return _share(threads, tiles, make_state, fn)
    finally:
        _parallel_lock.release()


def run_tasks(fn: Callable[..., _T], args: Sequence[Sequence[Any]], threads: int) -> list[_T]:
    """Return ``[fn(*a) for a in args]``, computed on up to ``threads`` threads, in order.

    Worth it for tasks that spend their time in large numpy operations (which release the
    interpreter lock); the first exception raised by a task is raised here.
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    results: list[Any] = [None] * len(args)
    if threads == 1 or len(args) < 2:
        return [fn(*a) for a in args]

    def one(out: list[Any], index: int) -> None:
        out[index] = fn(*args[index])

    _share(min(threads, len(args)), range(len(args)), lambda: results, one)
    return results


def _mark_pool_thread() -> None:  # run_side_by_side must not wait on one
    _local.pool_thread = True


def run_side_by_side(fn: Callable[..., _T], args: Sequence[Sequence[Any]]) -> list[_T] | None:
    """Return ``[fn(*a) for a in args]``, computed side by side: the first task on the
    caller's thread, the others on the engine's pool, grown to one thread each, with BLAS
    and the engine's splits (:func:`limit_threads`) held to one thread; None, having run
    nothing, when another caller is splitting (the BLAS limit is the process's) or when
    called on a pool thread (which would wait for tasks queued behind itself).

    For tasks too small to split well, such as a sweep's points (SmolLM2's scores at 256
    tokens took 0.83-0.88 of their time in turn on two threads); one may wait for an earlier.
    """
    if not args:
        return []
    if getattr(_local, "pool_thread", False) or not _parallel_lock.acquire(blocking=False):
        return None
    try:
        def alone(*a: Any) -> _T:
            with limit_threads(1):
                return fn(*a)

        # Never leave the BLAS limit while a task still runs.
        with limit_blas_threads(1):
            executor = shared_executor(max(1, len(args) - 1))
            futures = [executor.submit(alone, *a) for a in args[1:]]
            try:
                first = alone(*args[0])
            except BaseException:
                finish(futures)
                raise
            wait(futures)
            return [first, *(future.result() for future in futures)]
    finally:
        _parallel_lock.release()


def finish(futures: Iterable[Future[Any]]) -> None:
    """Cancel the tasks that have not started and wait for the running ones.

    Nothing waits for a queued task, so a task that submits and waits itself cannot deadlock
    the pool.
    """
    # A cancelled future counts as done for wait() only once a pool thread has dequeued it,
    # so only the ones that could not be cancelled (running or finished) are waited for.
    wait([future for future in futures if not future.cancel()])


def _share(threads: int, items: Iterable[_Tile], make_state: Callable[[], _S],
           fn: Callable[[_S, _Tile], None]) -> list[_S]:
    """Run ``fn(state, item)`` for every item on the caller and ``threads − 1`` pool threads.

    Each thread takes the next item until none is left, with its own state (made on its first
    item); the states of the threads that took an item are returned, the caller's first.
    """
    todo = iter(items)
    take = threading.Lock()
    failed = threading.Event()

    def worker() -> _S | None:
        state: _S | None = None
        while not failed.is_set():
            with take:
                item = next(todo, None)
            if item is None:
                break
            try:
                if state is None:
                    state = make_state()
                fn(state, item)
            except BaseException:
                failed.set()
                raise
        return state

    executor = shared_executor(threads - 1)
    futures = [executor.submit(worker) for _ in range(threads - 1)]
    try:
        first = worker()
    finally:
        # The caller took the last item: a helper still queued has nothing left to do.
        finish(futures)
    results = [first, *(f.result() for f in futures if not f.cancelled())]
    return [r for r in results if r is not None]


# A one-row product's output rows are shared from this many weights on (SmolLM2's 576 × 576
# and larger; its 192 × 576 keys and values take about as long as the hand-off).
_ROWS_PRODUCT_MIN_WEIGHTS = 1 << 18
# Row blocks start at multiples of this, so that BLAS gives each row the same bits whatever
# the split.
_ROWS_ALIGN = 16

_Job = tuple[Callable[[], None], "queue.SimpleQueue[BaseException | None]"]
_helper_queues: list[queue.SimpleQueue[_Job]] = []
_helpers_lock = threading.Lock()


def _serve(jobs: queue.SimpleQueue[_Job]) -> None:
    while True:
        job, done = jobs.get()
        error: BaseException | None = None
        try:
            job()
        except BaseException as exc:  # handed to the caller, which raises it
            error = exc
        # Dropped before the caller hears back: an idle helper must not keep the product's
        # matrix (a closed model's weights) alive until its next job.
        job = None
        done.put(error)
        error = None


def _helpers(count: int) -> list[queue.SimpleQueue[_Job]]:
    """The job queues of ``count`` idle daemon threads, started on first use."""
    while len(_helper_queues) < count:
        jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(jobs,), name="rows-product",
                         daemon=True).start()
        _helper_queues.append(jobs)
    return _helper_queues[:count]


def _forget_helpers() -> None:
    # A forked child has none of its parent's threads: it starts its own when it needs them.
    global _helpers_lock
    _helper_queues.clear()
    _helpers_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helpers)


def rows_product(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``w @ x.T`` (m, 1) for one row ``x`` (1, k) and a large ``w`` (m, k), its output rows
    computed in blocks on this thread and :func:`get_num_threads` − 1 helper threads.

    For a language model's new token, whose every product is one row times a weight matrix
    read from memory: with BLAS on one thread (:func:`~engine.core.threads.limit_blas_threads`)
    this reads the weights faster than BLAS's threads on some machines, slower on others
    (:class:`OneRowWays` times both). Each row's bits are those of the plain product
    (OpenBLAS's kernels give a row the same bits in any aligned block; the tests check it).
    Other shapes, a small ``w``, one thread, or another caller splitting: the plain product.
    """
    m = w.shape[0]
    parts = min(get_num_threads(), m // _ROWS_ALIGN)
    if (x.shape[0] != 1 or parts < 2 or w.size < _ROWS_PRODUCT_MIN_WEIGHTS
            or not _helpers_lock.acquire(blocking=False)):
        return w @ x.T
    try:
        step = -(-m // parts // _ROWS_ALIGN) * _ROWS_ALIGN
        out = np.empty((m, 1), dtype=np.result_type(w, x))
        blocks = [(a, min(m, a + step)) for a in range(0, m, step)]
        done: queue.SimpleQueue[BaseException | None] = queue.SimpleQueue()
        for jobs, (a, b) in zip(_helpers(len(blocks) - 1), blocks[1:], strict=True):
            jobs.put((lambda a=a, b=b: np.matmul(w[a:b], x.T, out=out[a:b]), done))
        try:
            np.matmul(w[:blocks[0][1]], x.T, out=out[:blocks[0][1]])
        finally:  # the helpers write into ``out``: never leave before they finish
            errors = [done.get() for _ in blocks[1:]]
        for error in errors:
            if error is not None:
                raise error
        return out
    finally:
        _helpers_lock.release()


class OneRowWays:
    """For each step of a stream of one-row products (a new token's pass through a model),
    which of two ways to use the engine's threads: :func:`rows_product` with BLAS on one
    thread, or plain products on BLAS's own threads.

    Which is faster depends on how soon an idle thread takes work (the helpers sleep on a
    queue; OpenBLAS's threads spin a while): SmolLM2's new tokens at two threads ran at 23-25
    tokens/s split against 10-14 on BLAS's threads on one machine, at 16-19 against 27-32 on
    another. Both give every row the same bits (the tests check it), so the first
    :attr:`TRIAL` steps alternate them and later steps take the one whose quickest step was
    quicker. On one engine thread, always plain.

    Parameters
    ----------
    clock
        Seconds, for the steps' times.
    """

    TRIAL = 4

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._quickest = {True: math.inf, False: math.inf}
        self._steps = 0
        self._chosen: bool | None = None if get_num_threads() > 1 else False

    def next_split(self) -> bool:
        """Whether the next step splits its products (True) or leaves them to BLAS."""
        if self._chosen is None and self._steps >= self.TRIAL:
            self._chosen = self._quickest[True] <= self._quickest[False]
        return self._chosen if self._chosen is not None else self._steps % 2 == 0

    @contextlib.contextmanager
    def step(self) -> Iterator[bool]:
        """One step's block: yields :meth:`next_split` (pass it on as ``split_rows``), holds
        BLAS to one thread when it is True, and times the block for the choice."""
        split = self.next_split()
        with limit_blas_threads(1) if split else contextlib.nullcontext():
            start = self._clock()
            yield split
            self._quickest[split] = min(self._quickest[split], self._clock() - start)
        self._steps += 1
