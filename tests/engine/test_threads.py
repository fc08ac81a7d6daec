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
