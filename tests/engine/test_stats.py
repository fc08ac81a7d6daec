"""Row statistics and the softmax Jacobian (engine.core.stats):
identities, stability, edge cases."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from engine.core.softmax import softmax
from engine.core.stats import (
    effective_support,
    jacobian_fro_norm,
    jacobian_spectral_norm,
    logit_moments,
    p_max,
    row_entropy,
    row_summary,
    saturated_share,
    softmax_jacobian,
)


def _rows_by_n(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for n in (2, 3, 7, 32):
        for s in (0.1, 1.0, 4.0, 10.0):
            out.append(softmax(rng.standard_normal((40, n)) * s))
        out.append(rng.dirichlet(np.full(n, 0.3), size=40))
    return out


def _naive_fro(p: np.ndarray) -> np.ndarray:
    s2 = np.sum(p**2, axis=-1)
    return s2 - 2 * np.sum(p**3, axis=-1) + s2**2  # squared norm, cancels near one-hot


def _decimal_fro(z: np.ndarray, digits: int = 60) -> float:
    """‖J‖_F of softmax(z) in 60-digit decimal arithmetic, straight from the definition."""
    with localcontext() as ctx:
        ctx.prec = digits
        zs = [Decimal(float(v)) for v in z]
        m = max(zs)
        e = [(v - m).exp() for v in zs]
        total = sum(e)
        p = [v / total for v in e]
        sq = Decimal(0)
        for i, pi in enumerate(p):
            for j, pj in enumerate(p):
                entry = (pi if i == j else Decimal(0)) - pi * pj
                sq += entry * entry
        return float(sq.sqrt())


# ---------------------------------------------------------------------------------------------
# Entropy, p_max, support, saturation
# ---------------------------------------------------------------------------------------------


def test_entropy_uniform_onehot_and_zeros_without_warnings() -> None:
    n = 10
    assert row_entropy(np.full(n, 1 / n)) == pytest.approx(math.log(n), rel=1e-14)
    onehot = np.zeros(n)
    onehot[3] = 1.0
    assert row_entropy(onehot) == 0.0
    # zeros: 0·log 0 = 0, no RuntimeWarning (pytest turns those into errors here)
    p = np.array([0.5, 0.5, 0.0, 0.0])
    assert row_entropy(p) == pytest.approx(math.log(2), rel=1e-14)
    assert row_entropy(np.zeros((2, 3))).tolist() == [0.0, 0.0]  # fully masked rows


def test_entropy_matches_definition_on_random_rows() -> None:
    for p in _rows_by_n():
        ref = -np.sum(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0), axis=-1)
        np.testing.assert_allclose(row_entropy(p), ref, rtol=1e-12, atol=1e-15)


def test_entropy_near_one_hot_is_accurate() -> None:
    # p = (1 − 3δ, δ, δ, δ): H = −(1−3δ)log(1−3δ) − 3δ log δ, evaluated with log1p.
    delta = 2.0**-40
    p = np.array([1 - 3 * delta, delta, delta, delta])
    ref = -(1 - 3 * delta) * math.log1p(-3 * delta) - 3 * delta * math.log(delta)
    assert row_entropy(p) == pytest.approx(ref, rel=1e-13)


def test_p_max_support_and_saturation() -> None:
    p = np.array([[0.25, 0.25, 0.25, 0.25], [0.995, 0.005, 0, 0], [0.6, 0.4, 0, 0]])
    np.testing.assert_array_equal(p_max(p), [0.25, 0.995, 0.6])
    np.testing.assert_allclose(effective_support(p[:1]), [4.0], rtol=1e-14)
    assert effective_support(np.array([1.0, 0.0])) == 1.0
    assert saturated_share(p) == pytest.approx(1 / 3)
    assert saturated_share(p, threshold=0.5) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="threshold"):
        saturated_share(p, threshold=1.0)


def test_row_summary_matches_the_separate_functions() -> None:
    for p in _rows_by_n(3):
        h, pm, j = row_summary(p)
        np.testing.assert_array_equal(h, row_entropy(p))
        np.testing.assert_array_equal(pm, p_max(p))
        np.testing.assert_array_equal(j, jacobian_fro_norm(p))


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one axis"):
        row_entropy(np.float64(1.0))
    with pytest.raises(ValueError, match="at least one entry"):
        p_max(np.zeros((3, 0)))


# ---------------------------------------------------------------------------------------------
# Jacobian identities of the softmax, all to 1e-9
# ---------------------------------------------------------------------------------------------


def test_jacobian_is_symmetric_psd_with_zero_row_sums_and_trace() -> None:
    for p in _rows_by_n():
        jac = softmax_jacobian(p)
        np.testing.assert_allclose(jac, jac.swapaxes(-1, -2), atol=1e-15)
        assert np.linalg.eigvalsh(jac).min() >= -1e-12
        np.testing.assert_allclose(jac.sum(axis=-1), 0.0, atol=1e-9)
        trace = np.trace(jac, axis1=-2, axis2=-1)
        np.testing.assert_allclose(trace, 1 - np.sum(p**2, axis=-1), atol=1e-9)
        lam = jacobian_spectral_norm(p)
        assert lam.max() <= 0.5 + 1e-9
        np.testing.assert_allclose(lam, np.linalg.eigvalsh(jac)[..., -1], atol=1e-12)


def test_jacobian_matches_finite_differences_of_softmax() -> None:
    rng = np.random.default_rng(5)
    z = rng.standard_normal(6) * 2
    p = softmax(z)
    h = 1e-6
    fd = np.empty((6, 6))
    for j in range(6):
        e = np.zeros(6)
        e[j] = h
        fd[:, j] = (softmax(z + e) - softmax(z - e)) / (2 * h)
    np.testing.assert_allclose(softmax_jacobian(p), fd, rtol=1e-6, atol=1e-10)


def test_spectral_norm_extremes() -> None:
    assert jacobian_spectral_norm(np.array([0.5, 0.5])) == pytest.approx(0.5, abs=1e-12)
    for n in (2, 5, 64):
        assert jacobian_spectral_norm(np.full(n, 1 / n)) == pytest.approx(1 / n, abs=1e-12)
        fro = jacobian_fro_norm(np.full(n, 1 / n))
        assert fro == pytest.approx(math.sqrt(n - 1) / n, rel=1e-12)
    # p_max = 1 − ε  ⇒  ‖J‖₂ ≤ 2ε
    rng = np.random.default_rng(2)
    for eps in (1e-1, 1e-3, 1e-8, 1e-12):
        for n in (2, 4, 16):
            rest = rng.dirichlet(np.ones(n - 1)) * eps
            p = np.concatenate([[1 - eps], rest])
            assert jacobian_spectral_norm(p) <= 2 * eps * (1 + 1e-9)


def test_spectral_norm_refuses_huge_batches() -> None:
    with pytest.raises(ValueError, match="fewer rows"):
        jacobian_spectral_norm(np.full((600, 256), 1 / 256))


# ---------------------------------------------------------------------------------------------
# Stable Frobenius norm near one-hot
# ---------------------------------------------------------------------------------------------


def test_fro_norm_matches_explicit_matrix_norm() -> None:
    for p in _rows_by_n(1):
        ref = np.linalg.norm(softmax_jacobian(p), axis=(-2, -1))
        np.testing.assert_allclose(jacobian_fro_norm(p), ref, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("std", [16.0, 32.0, 64.0])
def test_fro_norm_is_accurate_on_one_hot_like_rows(std: float) -> None:
    rng = np.random.default_rng(int(std))
    z = rng.standard_normal((12, 16)) * std
    p = softmax(z)
    ours = jacobian_fro_norm(p)
    ref = np.array([_decimal_fro(row) for row in z])
    assert np.all(ours >= 0)
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    # The textbook expansion is what this guards against: it is wrong by orders of magnitude
    # (often negative) on the same rows, so this test would catch a naive implementation.
    naive = _naive_fro(p)
    assert np.any(np.abs(naive - ref**2) > 0.5 * ref**2)


def test_fro_norm_exact_rational_reference() -> None:
    delta = 2.0**-30  # 1 − 3δ is exactly representable, so p sums to exactly 1
    p = [1 - 3 * delta, delta, delta, delta]
    fp = [Fraction(v) for v in p]
    assert sum(fp) == 1
    sq = sum(((fp[i] if i == j else 0) - fp[i] * fp[j]) ** 2 for i in range(4) for j in range(4))
    ref = math.sqrt(sq)  # Fraction -> float is correctly rounded; sqrt adds half an ulp
    assert jacobian_fro_norm(np.array(p)) == pytest.approx(ref, rel=1e-14)
    assert abs(math.sqrt(max(_naive_fro(np.array(p)), 0.0)) - ref) > 0.1 * ref


def test_fro_norm_survives_underflow_of_squares() -> None:
    eps = 1e-200  # p² underflows to 0, but ‖J‖_F = 2ε(1−ε) is representable
    p = np.array([1 - eps, eps])
    assert jacobian_fro_norm(p) == pytest.approx(2 * eps, rel=1e-14)
    assert jacobian_fro_norm(np.array([1.0, 0.0, 0.0])) == 0.0
    assert jacobian_fro_norm(np.array([1.0])) == 0.0
    assert jacobian_fro_norm(np.zeros(4)) == 0.0  # fully masked row


def test_fro_norm_with_column_scale_matches_explicit_product() -> None:
    rng = np.random.default_rng(7)
    for p in _rows_by_n(2):
        d = rng.uniform(0.1, 2.0, size=p.shape)
        ref = np.linalg.norm(softmax_jacobian(p) * d[..., None, :], axis=(-2, -1))
        np.testing.assert_allclose(jacobian_fro_norm(p, col_scale=d), ref, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Logit moments
# ---------------------------------------------------------------------------------------------


def test_logit_moments_skip_masked_entries() -> None:
    logits = np.array([[1.0, -np.inf], [3.0, 5.0]])
    mean, var = logit_moments(logits)
    assert mean == pytest.approx(3.0) and var == pytest.approx(8 / 3)
    mask = np.array([[True, True], [False, True]])
    mean, var = logit_moments(logits, mask)
    assert mean == pytest.approx(3.0) and var == pytest.approx(4.0)
    assert all(math.isnan(v) for v in logit_moments(np.full(3, -np.inf)))
    with pytest.raises(ValueError, match="finite"):
        logit_moments(np.array([1.0, np.nan]))
