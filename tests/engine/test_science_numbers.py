"""The numbers the explorer demonstrates, reproduced with Monte Carlo tolerances.

Logit variance d_k without scaling and 1 with 1/√d_k, the entropy and p_max of n = 64 rows at
d_k = 64, the Gaussian-logit entropy and gradient figures, temperature equivalence, multi-head
and projection variances, and the softmax invariances.

Tolerance convention: a value stated to k decimals is checked to half a unit in its last digit
plus five Monte Carlo standard errors computed from the sample itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.experiment import run_experiment, temperature_comparison
from engine.analysis.sweep import run_sweep
from engine.config import AttentionConfig, SweepConfig
from engine.core.softmax import softmax
from engine.core.stats import p_max, row_entropy, softmax_jacobian


def _sem(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / math.sqrt(x.size))


def _close(value: float, stated: float, half_unit: float, sem: float) -> bool:
    return abs(value - stated) <= half_unit + 5 * sem


# Logit variance d_k, and 1 after scaling ---------------------------------------------------


@pytest.mark.parametrize("d", [16, 128])
def test_dot_product_variance_is_d_and_scaling_restores_one(d: int) -> None:
    rng = np.random.default_rng(d)
    n = 100_000
    q = rng.standard_normal((n, d), dtype=np.float32)
    k = rng.standard_normal((n, d), dtype=np.float32)
    x = np.einsum("ij,ij->i", q, k, dtype=np.float64)
    assert abs(x.mean()) < 5 * math.sqrt(d / n)  # E[q·k] = 0
    assert np.var(x) == pytest.approx(d, rel=0.03)
    assert np.var(x / math.sqrt(d)) == pytest.approx(1.0, rel=0.03)
    assert np.var(x / d) == pytest.approx(1.0 / d, rel=0.03)


def test_component_variances_scale_the_dot_product() -> None:
    rng = np.random.default_rng(11)
    d, n, sq, sk = 32, 100_000, 2.0, 0.5
    x = np.einsum("ij,ij->i", rng.standard_normal((n, d)) * sq, rng.standard_normal((n, d)) * sk)
    assert np.var(x) == pytest.approx(d * sq**2 * sk**2, rel=0.03)


# n = 64, d_k = 64: logit std, entropy, p_max per rule -----------------------------------------


def test_n64_dk64_logit_std_entropy_and_p_max_full_vectors() -> None:
    rng = np.random.default_rng(64)
    rows, n, d = 3000, 64, 64
    q = rng.standard_normal((rows, 1, d), dtype=np.float32).astype(np.float64)
    k = rng.standard_normal((rows, n, d), dtype=np.float32).astype(np.float64)
    raw = (k @ q.swapaxes(-1, -2))[..., 0]  # (rows, n), independent keys per row
    stated = {  # c: (std, entropy, p_max), the stated values
        1.0: (8.0, 0.59, 0.79),
        1 / 8: (1.0, 3.69, 0.107),
        1 / 64: (0.125, 4.15, 0.021),
    }
    for c, (std, ent, pm) in stated.items():
        logits = raw * c
        p = softmax(logits)
        h, m = row_entropy(p), p_max(p)
        assert np.std(logits) == pytest.approx(std, rel=0.03)
        assert _close(h.mean(), ent, 0.005, _sem(h)), (c, h.mean())
        half = 0.005 if pm == 0.79 else 0.0005
        assert _close(m.mean(), pm, half, _sem(m)), (c, m.mean())


def test_n64_dk64_numbers_through_the_sweep() -> None:
    points = run_sweep(SweepConfig(values=(64,), samples=20_000, seed=3))
    stated = {"none": (0.59, 0.79, 0.005), "sqrt": (3.69, 0.107, 0.0005),
              "linear": (4.15, 0.021, 0.0005)}
    for pt in points:
        ent, pm, half = stated[pt.rule.value]
        assert _close(pt.entropy_mean, ent, 0.005, pt.entropy_sem)
        assert _close(pt.p_max_mean, pm, half, pt.p_max_sem)
        assert pt.logit_var == pytest.approx(pt.logit_var_theory, rel=0.03)


# Entropy and gradients at n = 64, logits N(0, s²) ---------------------------------------------


def test_gaussian_logit_entropy_s_1_2_8() -> None:
    points = run_sweep(
        SweepConfig(param="s", values=(1.0, 2.0), rules=("none",), samples=20_000, seed=1)
    )
    for pt, stated in zip(points, (3.68, 2.64), strict=True):
        assert _close(pt.entropy_mean, stated, 0.005, pt.entropy_sem), pt.entropy_mean


def test_gaussian_logit_entropy_s8_and_the_science_discrepancy() -> None:
    (pt,) = run_sweep(
        SweepConfig(param="s", values=(8.0,), rules=("none",), samples=40_000, seed=2)
    )
    # SCIENCE says ≈ 0.56. 800,000 rows (two seeds) give 0.5757 ± 0.0006, i.e. 0.58 to two
    # decimals: the stated value is ~0.016 low. Check both the precise value and that the
    # stated one is the right ballpark (within 0.03).
    assert abs(pt.entropy_mean - 0.5757) < 0.001 + 5 * pt.entropy_sem
    assert abs(pt.entropy_mean - 0.56) < 0.03


def test_jacobian_median_and_saturated_share_s_8_16_32() -> None:
    points = run_sweep(
        SweepConfig(param="s", values=(8.0, 16.0, 32.0), rules=("none",), samples=20_000, seed=4)
    )
    stated = [(0.2, 0.05, 0.19), (0.02, 0.005, 0.48), (2e-4, 1e-4, 0.71)]
    for pt, (median, tol, share) in zip(points, stated, strict=True):
        # One significant digit is stated; for s = 32 the precise median is 2.5e-4 (800k rows),
        # on the rounding boundary, so a full unit of the stated digit is allowed there.
        assert abs(pt.jac_fro_median - median) <= tol, (pt.value, pt.jac_fro_median)
        assert pt.jac_fro_q10 < pt.jac_fro_median < pt.jac_fro_q90
        sem = math.sqrt(share * (1 - share) / pt.samples)
        # Stated in whole percent. At s = 32 the precise share is 70.3 % (800k rows), 0.7
        # points below the stated 71 %: the 5-SE margin (1.6 points) covers it.
        assert _close(pt.saturated_share, share, 0.005, sem), (pt.value, pt.saturated_share)
    # E‖J‖_F is non-monotonic: it peaks near s ≈ √(2 ln 64) ≈ 2.9 and collapses beyond.
    mid = run_sweep(
        SweepConfig(param="s", values=(1.0, 3.0, 8.0), rules=("none",), samples=5_000, seed=5)
    )
    medians = [pt.jac_fro_median for pt in mid]
    assert medians[1] > medians[0] and medians[1] > medians[2]


def test_raw_gradient_is_larger_unscaled_at_moderate_d_k() -> None:
    # ‖∂p/∂S_raw‖ = c‖J‖: at d_k = 16 the unscaled value exceeds the 1/√d_k one.
    pts = {p.rule.value: p for p in run_sweep(SweepConfig(values=(16,), samples=5000))}
    assert pts["none"].jac_raw_median > pts["sqrt"].jac_raw_median > pts["linear"].jac_raw_median
    assert pts["sqrt"].jac_raw_median == pytest.approx(pts["sqrt"].jac_fro_median / 4, rel=1e-12)


# Temperature equivalence, forward and backward ------------------------------------------------


def test_temperature_equivalence_forward() -> None:
    cfg = AttentionConfig(n_tokens=32, d_k=64, query_row=5)
    p_t, p_s, diff = temperature_comparison(cfg, math.sqrt(64))
    assert diff == 0.0
    np.testing.assert_array_equal(p_t, p_s)
    assert temperature_comparison(cfg, 3.0)[2] > 1e-3


def test_temperature_equivalence_backward_finite_differences() -> None:
    rng = np.random.default_rng(8)
    d = 64
    z = rng.standard_normal(16) * math.sqrt(d)  # unscaled logits
    t = math.sqrt(d)
    p_t = softmax(z / t)
    analytic = softmax_jacobian(p_t) / t
    h = 1e-5
    fd = np.empty((16, 16))
    for j in range(16):
        e = np.zeros(16)
        e[j] = h
        fd[:, j] = (softmax((z + e) / t) - softmax((z - e) / t)) / (2 * h)
    np.testing.assert_allclose(fd, analytic, rtol=1e-6, atol=1e-11)


# Multi-head and projections -------------------------------------------------------------------


def test_multi_head_per_head_unscaled_variance_is_d_model_over_h() -> None:
    d_model, heads = 256, 8
    cfg = AttentionConfig(
        n_tokens=128, d_model=d_model, heads=heads, link_heads=True, use_projection=True,
        projection_std=1 / math.sqrt(d_model), seed=3,
    )
    snap = run_experiment(cfg)
    assert snap.q.shape == (heads, 128, d_model // heads)
    none = snap.rules["none"]
    assert none.logit_var_theory == pytest.approx(d_model / heads)
    # Pairs share x and W within a head, so use the spread of per-head variances.
    off = ~np.eye(128, dtype=bool)
    per_head = np.array([np.var(snap.raw_scores[h][off]) for h in range(heads)])
    sem = per_head.std(ddof=1) / math.sqrt(heads)
    assert abs(per_head.mean() - d_model / heads) < 5 * sem + 0.05 * d_model / heads


# Invariances ----------------------------------------------------------------------------------


def test_invariances() -> None:
    rng = np.random.default_rng(9)
    q = rng.standard_normal((8, 16))
    k = rng.standard_normal((12, 16))
    shift = rng.standard_normal(16)
    p = softmax(q @ k.T / 4)
    np.testing.assert_allclose(softmax(q @ (k + shift).T / 4), p, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(softmax((3 * q) @ (k / 3).T / 4), p, rtol=1e-12, atol=1e-15)
