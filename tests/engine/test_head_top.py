"""The LM head's top-k ids, found block-wise over a wide row, against a full sort."""

from __future__ import annotations

import numpy as np
import pytest

from engine.models.scores import _TOP_BLOCK, _top


def _sorted_top(z: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-z, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("width", [_TOP_BLOCK * 40, _TOP_BLOCK * 40 + 7, 3 * _TOP_BLOCK + 1, 50])
@pytest.mark.parametrize("k", [1, 5, 10])
def test_top_k_is_the_full_sort_s_first_k(width: int, k: int) -> None:
    rng = np.random.default_rng(width + k)
    z = rng.permutation(width * 12).reshape(12, width).astype(np.float32)  # no ties
    z[0, -1] = 1e9  # the largest logit in the ragged tail / the last block
    z[1, : k + 2] = 1e9 + np.arange(k + 2, dtype=np.float32) * 1e3  # all in one block
    z[2] *= -1
    assert (_top(z, k) == _sorted_top(z, k)).all()


def test_top_of_the_whole_row() -> None:
    z = np.random.default_rng(1).standard_normal((3, _TOP_BLOCK * 8)).astype(np.float32)
    assert (_top(z, z.shape[1]) == _sorted_top(z, z.shape[1])).all()
