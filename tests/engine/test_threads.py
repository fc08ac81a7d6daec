"""Threads: the BLAS limit holds inside its block and is undone after it; the engine's one pool
finishes nested tasks and gives the numbers of one thread."""

from __future__ import annotations

import numpy as np  # loads the BLAS library whose threads are limited
import pytest
from threadpoolctl import threadpool_info

from engine.core import parallel
from engine.core.threads import limit_blas_threads


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_the_limit_holds_inside_the_block_and_is_restored_after_it():
    before = _blas_threads()
    assert before, "numpy should have loaded a BLAS library"
    with limit_blas_threads(1):
        assert _blas_threads() == [1] * len(before)
    assert _blas_threads() == before


def test_none_leaves_blas_alone():
    before = _blas_threads()
    with limit_blas_threads(None):
        assert _blas_threads() == before


@pytest.mark.parametrize("bad", [0, -2, 1.5, True, "2"])
def test_a_bad_thread_count_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        limit_blas_threads(bad)


def _within(seconds: float, fn) -> object:
    """fn() on a daemon thread; fails if it has not returned after ``seconds`` (a deadlock)."""
    import threading

    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised on the test thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: the pool deadlocked"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


def test_tasks_that_run_tasks_on_the_same_pool_finish():
    import time

    from engine.core.parallel import run_tasks

    def inner(i: int) -> int:
        time.sleep(0.01)  # keeps the pool's threads busy while the outer tasks wait
        return i * i

    def outer(j: int) -> list[int]:
        return run_tasks(inner, [(i,) for i in range(j, j + 4)], threads=4)

    result = _within(30, lambda: run_tasks(outer, [(j,) for j in range(8)], threads=4))
    assert result == [[i * i for i in range(j, j + 4)] for j in range(8)]


def test_a_sweep_and_attention_tiles_share_the_pool_and_keep_their_numbers():
    import threading

    from engine.analysis.sweep import iter_sweep
    from engine.config import SweepConfig
    from engine.core.attention import scaled_dot_product_attention

    old = parallel.get_num_threads()
    parallel.set_num_threads(3)
    try:
        config = SweepConfig(values=(8.0, 16.0), rules=("none", "sqrt", "qk_norm"), samples=600)
        q = np.random.default_rng(0).standard_normal((8, 512, 64))
        serial = list(iter_sweep(config))
        expected = scaled_dot_product_attention(q, q, q, need_weights=False).output
        stop = threading.Event()
        outputs = []

        def attention_meanwhile() -> None:
            while not stop.is_set():  # large enough to be split into tiles on the pool
                outputs.append(scaled_dot_product_attention(q, q, q, need_weights=False).output)

        other = threading.Thread(target=attention_meanwhile, daemon=True)
        other.start()
        try:
            shared = _within(120, lambda: list(iter_sweep(config, threads=3)))
        finally:
            stop.set()
            other.join(60)
        assert not other.is_alive() and outputs
        assert shared == serial  # the points do not depend on the threads
        assert all(np.array_equal(out, expected) for out in outputs)
    finally:
        parallel.set_num_threads(old)


def test_num_threads_setting():
    old = parallel.get_num_threads()
    try:
        parallel.set_num_threads(1)
        assert parallel.get_num_threads() == 1
        with pytest.raises(ValueError, match="n must be a positive integer"):
            parallel.set_num_threads(0)
        parallel.set_num_threads(None)
        assert parallel.get_num_threads() >= 1
    finally:
        parallel.set_num_threads(old)


@pytest.mark.parametrize("shape", [(576, 576), (1536, 576), (49_152, 576), (1000, 333),
                                   (300, 1024)])
@pytest.mark.parametrize("count", [2, 3])
def test_a_rows_product_gives_the_bits_of_the_plain_product(threads, shape, count):
    """Row blocks on helper threads, as a continuation's steps use them (BLAS on one thread):
    every output row as the single product gives it, whatever the split; odd shapes too."""
    import threading

    threads(count)
    rng = np.random.default_rng(count)
    w = rng.standard_normal(shape, dtype=np.float32)
    x = rng.standard_normal((1, shape[1]), dtype=np.float32)
    with limit_blas_threads(1):
        expected = w @ x.T
        got = parallel.rows_product(w, x)
    assert got.shape == expected.shape and np.array_equal(got, expected)
    assert any(t.name == "rows-product" for t in threading.enumerate())


@pytest.mark.parametrize("shape", [(576, 576), (1536, 576), (49_152, 576), (1000, 333),
                                   (300, 1024)])
def test_a_one_row_product_has_the_same_bits_on_any_number_of_blas_threads(shape):
    """What lets a continuation choose its way by speed alone (parallel.OneRowWays)."""
    rng = np.random.default_rng(shape[1])
    w = rng.standard_normal(shape, dtype=np.float32)
    x = rng.standard_normal((1, shape[1]), dtype=np.float32)
    with limit_blas_threads(1):
        expected = w @ x.T
    for count in (2, 3):
        with limit_blas_threads(count):
            assert np.array_equal(w @ x.T, expected)


@pytest.mark.parametrize(("split_s", "plain_s", "kept"), [(1.0, 2.0, True), (3.0, 2.0, False)])
def test_one_row_ways_try_both_ways_then_keep_the_quicker(threads, split_s, plain_s, kept):
    threads(2)
    now = [0.0]
    ways = parallel.OneRowWays(clock=lambda: now[0])
    before = _blas_threads()
    taken = []
    for _ in range(parallel.OneRowWays.TRIAL + 3):
        with ways.step() as split:
            taken.append(split)
            assert _blas_threads() == ([1] * len(before) if split else before)
            now[0] += split_s if split else plain_s
    assert taken == [True, False, True, False, kept, kept, kept]
    assert _blas_threads() == before


def test_one_row_ways_on_one_thread_are_always_plain(threads):
    threads(1)
    ways = parallel.OneRowWays()
    taken = []
    for _ in range(parallel.OneRowWays.TRIAL + 2):
        with ways.step() as split:
            taken.append(split)
    assert not any(taken)


def test_side_by_side_tasks_run_on_one_thread_each_and_come_back_in_order(threads):
    import threading

    threads(2)
    seen = {}

    def task(i: int) -> int:
        seen[i] = (threading.get_ident(), parallel.get_num_threads(), _blas_threads())
        return i * i

    assert parallel.run_side_by_side(task, [(i,) for i in range(5)]) == [0, 1, 4, 9, 16]
    caller = threading.get_ident()  # takes the first; the pool the others (each one thread)
    assert [seen[i][0] == caller for i in range(5)] == [True, False, False, False, False]
    assert all(n == 1 and set(blas) == {1} for _, n, blas in seen.values())
    assert parallel.run_side_by_side(task, []) == []
    # a task's own call finds the threads taken: it runs nothing and says so
    inner = parallel.run_side_by_side(lambda: parallel.run_side_by_side(task, [(1,)]), [(), ()])
    assert inner == [None, None] and len(seen) == 5
    # so does a call on a pool thread, whose tasks could queue behind it (a pool of one: wait)
    pool = parallel.shared_executor(1)
    assert _within(60, lambda: pool.submit(parallel.run_side_by_side, task,
                                           [(1,), (2,)]).result()) is None


def test_other_shapes_and_one_thread_take_the_plain_product(threads):
    rng = np.random.default_rng(1)
    w = rng.standard_normal((1024, 512), dtype=np.float32)
    for count, rows in [(2, 3), (1, 1)]:
        threads(count)
        x = rng.standard_normal((rows, 512), dtype=np.float32)
        assert np.array_equal(parallel.rows_product(w, x), w @ x.T)


class _Refuses:
    def __mul__(self, other: object) -> object:
        raise ArithmeticError("this weight refuses")

    __rmul__ = __mul__


def test_a_helpers_error_reaches_the_caller_and_the_helpers_go_on(threads):
    threads(2)
    w = np.ones((1024, 256), dtype=object)
    w[-1, 0] = _Refuses()  # in the last block, which a helper thread computes
    x = np.ones((1, 256), dtype=object)
    with pytest.raises(ArithmeticError, match="this weight refuses"):
        _within(60, lambda: parallel.rows_product(w, x))
    good = np.random.default_rng(2).standard_normal((1024, 256), dtype=np.float32)
    one = good[:1]
    assert np.array_equal(_within(60, lambda: parallel.rows_product(good, one)), good @ one.T)


def _product_in_a_forked_child(queue) -> None:
    w = np.arange(1024 * 256, dtype=np.float32).reshape(1024, 256) / 1e5
    queue.put(float(parallel.rows_product(w, w[:1]).sum()))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork is POSIX's")
def test_a_forked_child_starts_its_own_helpers(threads):
    """The parent's helper threads do not exist in a child forked from it (a notebook's
    multiprocessing): the child's product must not wait for them."""
    import multiprocessing

    threads(2)
    w = np.arange(1024 * 256, dtype=np.float32).reshape(1024, 256) / 1e5
    expected = float(parallel.rows_product(w, w[:1]).sum())  # the parent's helpers run
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_product_in_a_forked_child, args=(queue,))
    child.start()
    child.join(60)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive, "the forked child waited for helper threads it does not have"
    assert child.exitcode == 0 and queue.get(timeout=10) == expected


def test_a_threads_limit_holds_for_its_thread_alone(threads):
    """A window's worker leaves a core to the window (limit_threads), while the engine's
    other callers keep their threads; the limit nests and is undone after its block."""
    import threading

    threads(3)
    seen_elsewhere: list[int] = []

    def tiles_per_thread(wait_for_another: bool = False) -> list[list[int]]:
        """Each thread's tiles; ``wait_for_another``: a tile waits until a second thread
        has taken one (so the answer does not depend on how soon the pool starts)."""
        takers: set[int] = set()
        another = threading.Event()

        def one(done: list[int], tile: int) -> None:
            takers.add(threading.get_ident())
            if len(takers) > 1:
                another.set()
            if wait_for_another:
                another.wait(60)
            done.append(tile)

        return parallel.run_tiles(one, range(12), 1 << 30, list)

    with parallel.limit_threads(2):
        assert parallel.get_num_threads() == 2
        with parallel.limit_threads(1):
            assert parallel.get_num_threads() == 1
            assert tiles_per_thread() == [list(range(12))]  # this thread ran every tile
            other = threading.Thread(target=lambda: seen_elsewhere.append(
                parallel.get_num_threads()))
            other.start()
            other.join()
        assert parallel.get_num_threads() == 2
    assert parallel.get_num_threads() == 3 and seen_elsewhere == [3]
    assert len(tiles_per_thread(wait_for_another=True)) > 1
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        with parallel.limit_threads(0):
            pass


def test_an_idle_helper_keeps_no_matrix_alive(threads):
    """A notebook that drops a model gets its memory back: the helpers forget each product."""
    import gc
    import weakref

    threads(2)
    w = np.ones((1024, 512), dtype=np.float32)
    gone = weakref.ref(w)
    parallel.rows_product(w, w[:1])
    del w
    gc.collect()
    assert gone() is None
