"""Closed forms (engine.core.theory) against their definitions, Monte Carlo and bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.core import theory
from engine.core.softmax import softmax
from engine.core.stats import jacobian_fro_norm, jacobian_spectral_norm, p_max, row_entropy


def test_variance_formulas_per_rule() -> None:
    d = 64
    assert theory.dot_product_variance(d) == 64
    assert theory.dot_product_variance(d, 2.0, 0.5) == 64
    assert theory.scaled_logit_variance("none", d) == pytest.approx(64)
    assert theory.scaled_logit_variance("sqrt", d) == pytest.approx(1)
    assert theory.scaled_logit_variance("linear", d) == pytest.approx(1 / 64)
    assert theory.scaled_logit_variance("temperature", d, temperature=4.0) == pytest.approx(4)
    assert theory.scaled_logit_variance("qk_norm", d) == pytest.approx(1)
    assert theory.scaled_logit_variance("qk_norm", d, gain=2.0) == pytest.approx(4 / 64)
    assert math.isnan(theory.scaled_logit_variance("softcap", d))
    assert math.isnan(theory.scaled_logit_variance("qk_norm", d, rho=0.5))
    assert theory.scaled_logit_variance("sqrt", d, rho=0.5) == pytest.approx(1.25)
    assert theory.scaled_logit_variance("none", d, sigma=2.0) == pytest.approx(64 * 16)
    with pytest.raises(ValueError, match="temperature"):
        theory.scaled_logit_variance("temperature", d)
    with pytest.raises(ValueError, match="rho"):
        theory.correlated_dot_mean(4, 1.5)


def test_projected_variances() -> None:
    assert theory.projected_component_variance(64, 0.125) == pytest.approx(1.0)
    assert theory.projected_dot_product_variance(8, 64, 0.125) == pytest.approx(8.0)
    assert theory.projected_offdiag_variance(8, 64, 0.125, 0.0) == pytest.approx(8.0)
    # ρ adds ρ² d_model d_k (d_k+1) s⁴
    assert theory.projected_offdiag_variance(8, 64, 0.125, 0.5) == pytest.approx(
        8.0 + 0.25 * 64 * 8 * 9 * 0.125**4
    )


def test_projected_offdiag_variance_monte_carlo() -> None:
    rng = np.random.default_rng(0)
    dm, d, s, rho = 16, 4, 0.3, 0.6
    vals = []
    for _ in range(400):
        x = rng.standard_normal((40, dm))
        wq, wk = rng.standard_normal((2, dm, d)) * s
        q, xi = x @ wq, x @ wk
        k = rho * q + math.sqrt(1 - rho**2) * xi
        vals.append((q[:20] * k[20:]).sum(-1))
    vals = np.concatenate(vals)
    ref = theory.projected_offdiag_variance(d, dm, s, rho)
    # The 20 pairs within one weight draw are correlated: use the spread of per-draw means.
    per_draw = (vals**2).reshape(400, 20).mean(axis=1)
    sem = per_draw.std(ddof=1) / math.sqrt(400)
    assert abs(per_draw.mean() - ref) < 5 * sem


def test_correlated_moments_full_vectors() -> None:
    rng = np.random.default_rng(1)
    d, rho, n = 32, 0.5, 100_000
    q = rng.standard_normal((n, d))
    k = rho * q + math.sqrt(1 - rho**2) * rng.standard_normal((n, d))
    x = np.einsum("ij,ij->i", q, k)
    mean_ref = theory.correlated_dot_mean(d, rho)
    m2_ref = theory.correlated_dot_second_moment(d, rho)
    assert mean_ref == 16 and m2_ref == pytest.approx(0.25 * 1024 + 32 * 1.25)
    assert abs(x.mean() - mean_ref) < 5 * x.std() / math.sqrt(n)
    assert abs((x**2).mean() - m2_ref) < 5 * (x**2).std() / math.sqrt(n)
    assert theory.correlated_dot_variance(d, rho) == pytest.approx(d * (1 + rho**2))
    assert theory.correlated_rms(d, rho, 1 / d) == pytest.approx(math.sqrt(m2_ref) / d)


def test_softcap_gaussian_approximation_limits() -> None:
    assert theory.softcap_logit_variance_gaussian(0.1, 50) == pytest.approx(0.01, rel=1e-4)
    assert theory.softcap_logit_variance_gaussian(1e4, 1.0) == pytest.approx(1.0, rel=1e-2)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(400_000) * 3.0
    mc = np.var(2.0 * np.tanh(x / 2.0))
    assert theory.softcap_logit_variance_gaussian(3.0, 2.0) == pytest.approx(mc, rel=1e-2)


def test_gaussian_max_bounds_and_refinement() -> None:
    rng = np.random.default_rng(4)
    for n in (16, 64, 1024):
        z = rng.standard_normal((4000, n))
        emp = z.max(axis=1).mean()
        sem = z.max(axis=1).std() / math.sqrt(4000)
        assert emp < theory.gaussian_max_upper(n)
        # The Gumbel refinement is a few percent off at these n; check it is much closer.
        assert abs(theory.gaussian_max_refined(n) - emp) < 0.05 * emp + 5 * sem
        assert abs(theory.gaussian_max_refined(n) - emp) < abs(theory.gaussian_max_upper(n) - emp)
    assert theory.gaussian_max_upper(64, 8.0) == pytest.approx(8 * math.sqrt(2 * math.log(64)))


def test_small_s_entropy_and_freezing_threshold() -> None:
    rng = np.random.default_rng(5)
    n, s = 64, 0.2
    h = row_entropy(softmax(rng.standard_normal((20000, n)) * s))
    sem = h.std() / math.sqrt(h.size)
    # Fourth-order terms are O(s⁴) ≈ 1.6e-3 · const; allow them plus Monte Carlo error.
    assert abs(h.mean() - theory.entropy_small_s(n, s)) < 2e-3 + 5 * sem
    assert theory.freezing_threshold(64) == pytest.approx(2.884, abs=1e-3)


@pytest.mark.parametrize("n", [2, 4, 8, 64])
@pytest.mark.parametrize("sigma", [0.5, 2.0, 6.0])
def test_zhai_bound_is_a_lower_bound_and_attained(n: int, sigma: float) -> None:
    bound = theory.zhai_min_entropy(n, sigma)
    ext = theory.zhai_extremal_logits(n, sigma)
    assert np.linalg.norm(ext) == pytest.approx(sigma)
    assert row_entropy(softmax(ext)) == pytest.approx(bound, rel=1e-12)
    rng = np.random.default_rng(n * 100 + int(sigma * 10))
    z = rng.standard_normal((20000, n))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    radius = sigma * rng.uniform(0, 1, size=(20000, 1)) ** (1 / n)
    for zz in (z * sigma, z * radius):
        assert row_entropy(softmax(zz)).min() >= bound - 1e-12
    # Small perturbations of the extremal vector, projected back to the sphere, never do better.
    pert = ext + 0.05 * sigma * rng.standard_normal((2000, n))
    pert *= sigma / np.linalg.norm(pert, axis=1, keepdims=True)
    assert row_entropy(softmax(pert)).min() >= bound - 1e-12


def test_qk_norm_and_softcap_p_max_bounds_hold() -> None:
    rng = np.random.default_rng(6)
    n, d = 32, 16
    for g in (1.0, 4.0, 8.0):
        q = rng.standard_normal((500, d)) * rng.uniform(0.1, 100, size=(500, 1))
        k = rng.standard_normal((500, n, d))
        qh = q / np.linalg.norm(q, axis=-1, keepdims=True)
        kh = k / np.linalg.norm(k, axis=-1, keepdims=True)
        logits = g * np.einsum("rd,rnd->rn", qh, kh)
        assert p_max(softmax(logits)).max() <= theory.qk_norm_p_max_bound(n, g) + 1e-12
        extreme = np.full(n, -g)
        extreme[0] = g
        assert p_max(softmax(extreme)) == pytest.approx(theory.qk_norm_p_max_bound(n, g))
    for cap in (0.5, 2.0, 50.0):
        raw = rng.standard_normal((500, n)) * 1000
        capped = cap * np.tanh(raw / cap)
        assert p_max(softmax(capped)).max() <= theory.softcap_p_max_bound(n, cap) + 1e-12
    assert theory.softcap_p_max_bound(64, 50.0) == pytest.approx(1.0)  # bounds growth only


def test_uniform_jacobian_norms() -> None:
    for n in (1, 2, 10, 256):
        p = np.full(n, 1 / n)
        assert jacobian_fro_norm(p) == pytest.approx(theory.uniform_jacobian_fro_norm(n), abs=1e-15)
        assert jacobian_spectral_norm(p) == pytest.approx(
            theory.uniform_jacobian_spectral_norm(n), abs=1e-12
        )
