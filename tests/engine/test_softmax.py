"""engine.core.softmax: the stable softmax and the row exponentials the attention kernel uses."""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.softmax import exp_rows, exp_shifted_rows, log_softmax, softmax, softmax_rows


def test_softmax_function():
    x = np.array([[1.0, 2.0, 3.0], [1e30, -1e30, 0.0], [-np.inf, -np.inf, -np.inf]])
    p = softmax(x)
    e = np.exp(np.array([1.0, 2.0, 3.0]) - 3.0)
    np.testing.assert_allclose(p[0], e / e.sum(), rtol=1e-15)
    np.testing.assert_array_equal(p[1], [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(p[2], [0.0, 0.0, 0.0])
    masked = softmax(np.ones((2, 4)), mask=np.array([True, True, False, False]))
    np.testing.assert_allclose(masked, [[0.5, 0.5, 0.0, 0.0]] * 2)
    cols = softmax(np.arange(6.0).reshape(3, 2), axis=0)
    np.testing.assert_allclose(cols.sum(axis=0), 1.0)
    assert softmax(np.ones(3, dtype=np.float32)).dtype == np.float32
    assert softmax([1, 2]).dtype == np.float64
    with pytest.raises(ValueError, match="NaN"):
        softmax(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="axis"):
        softmax(np.ones((2, 2)), axis=2)
    with pytest.raises(ValueError, match="mask must be a boolean"):
        softmax(np.ones(3), mask=np.ones(3))
    with pytest.raises(ValueError, match="mask shape"):
        softmax(np.ones(3), mask=np.ones(4, dtype=bool))


@pytest.mark.parametrize("rows", [3, 100])  # checked in Python below 64 rows, in numpy above
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_exp_rows_refuses_a_bad_logit_in_any_row(rows, bad):
    # Python's max() skips a NaN that is not the first item: each row position is tried.
    for row in range(rows):
        logits = np.zeros((rows, 4), dtype=np.float32)
        logits[row, 1] = bad
        with np.errstate(invalid="ignore", over="ignore"), pytest.raises(ValueError, match="NaN"):
            exp_rows(logits, np.empty_like(logits))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_shifted_rows_gives_one_at_every_argmax(dtype):
    rng = np.random.default_rng(7)
    # Rows inside the no-shift window (exp_rows would skip the shift), a constant row, a row
    # far outside it, and a fully masked one.
    logits = rng.standard_normal((5, 6)).astype(dtype)
    logits[1] = 0.3
    logits[2] *= 400.0
    logits[3] = -np.inf
    logits[4, 2:] = -np.inf
    before = logits.copy()
    e = np.empty_like(logits)
    with np.errstate(over="ignore", invalid="ignore"):
        inv = exp_shifted_rows(logits, e)
    np.testing.assert_array_equal(logits, before)  # the logits are not touched
    for row in (0, 1, 2, 4):
        assert e[row].max() == 1.0
        assert e[row, np.argmax(logits[row])] == 1.0
    assert 1.0 / inv[1, 0] == 6.0  # a constant row sums to n exactly
    assert np.all(e[3] == 0.0) and inv[3, 0] == 0.0
    assert np.all(e[4, 2:] == 0.0)
    # exp(z) of |z| up to ~500 carries a relative error of |z| ulps.
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(e * inv, softmax(logits), rtol=rtol)
    for bad in (np.nan, np.inf):
        broken = before.copy()
        broken[0, 1] = bad
        with np.errstate(over="ignore", invalid="ignore"), pytest.raises(ValueError, match="NaN"):
            exp_shifted_rows(broken, e)


def test_softmax_rows_normal_only_drops_the_weights_that_would_be_subnormal():
    """normal_only: every weight is 0 or at least the least normal float32 (a model's saturated
    rows stay fast); the weights from n·tiny up are the textbook quotients to the bit."""
    rng = np.random.default_rng(5)
    z = (rng.normal(size=(6, 40)) * 60).astype(np.float32)  # spreads of hundreds of nats
    z[0, 20:] = -np.inf
    tiny = np.finfo(np.float32).tiny
    plain, normal = softmax_rows(z), softmax_rows(z, normal_only=True)
    assert ((plain > 0) & (plain < tiny)).any()  # the case the option is for
    assert not ((normal > 0) & (normal < tiny)).any()
    shifted = z - z.max(axis=-1, keepdims=True)
    kept = shifted >= np.log(tiny * z.shape[-1])
    np.testing.assert_array_equal(normal[kept], plain[kept])
    assert (normal[~kept] == 0).all()


def test_softmax_rows_is_the_textbook_quotient_and_log_softmax_its_log():
    """softmax_rows gives exp(z − max) / sum to the bit (the weights a file's logits show);
    a fully masked row gives zeros; NaN is refused. log_softmax is its logarithm."""
    z = np.random.default_rng(3).normal(size=(4, 7, 9)) * 30
    z[:, :, 5:] = -np.inf
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    np.testing.assert_array_equal(softmax_rows(z), e / e.sum(axis=-1, keepdims=True))
    np.testing.assert_array_equal(softmax_rows(np.full((2, 3), -np.inf)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        softmax_rows(np.array([[0.0, np.nan]]))
    finite = z[..., :5]
    np.testing.assert_allclose(np.exp(log_softmax(finite)), softmax_rows(finite), rtol=1e-13)
