"""engine.core.threads: the BLAS thread limit applies inside the block and is undone after it."""

from __future__ import annotations

import numpy as np  # noqa: F401  (loads the BLAS library whose threads are limited)
import pytest
from threadpoolctl import threadpool_info

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
