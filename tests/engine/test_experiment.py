"""Live experiments (engine.analysis.experiment):
snapshot contents, theory vs empirical, helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.correlation import correlation_rms
from engine.analysis.experiment import AttentionSnapshot, run_experiment, temperature_comparison
from engine.analysis.sampling import draw_qk
from engine.config import AttentionConfig, ScalingRule


def test_snapshot_shapes_rules_and_read_only_arrays() -> None:
    cfg = AttentionConfig(n_tokens=16, d_k=8, heads=2, d_model=16, rule="linear")
    snap = run_experiment(cfg, rules=["qk_norm", "linear"])
    assert isinstance(snap, AttentionSnapshot)
    assert list(snap.rules) == [ScalingRule.NONE, ScalingRule.LINEAR, ScalingRule.QK_NORM]
    assert snap.q.shape == snap.k.shape == (2, 16, 8) and snap.raw_scores.shape == (2, 16, 16)
    view = snap.rules[ScalingRule.LINEAR]
    assert view.scale == 1 / 8
    np.testing.assert_allclose(view.logits, snap.raw_scores / 8)
    np.testing.assert_allclose(view.weights.sum(-1), 1.0, rtol=1e-12)
    assert view.entropy.shape == view.p_max.shape == view.jac_fro.shape == (2, 16)
    for arr in (snap.q, snap.raw_scores, view.weights, view.entropy):
        with pytest.raises(ValueError):
            arr[0] = 0
    with pytest.raises(TypeError):
        snap.rules[ScalingRule.SQRT] = view  # type: ignore[index]
    with pytest.raises(ValueError, match="rules"):
        run_experiment(cfg, rules=["bogus"])


def test_deterministic_and_causal_mask() -> None:
    cfg = AttentionConfig(n_tokens=12, d_k=4, mask="causal", seed=9)
    a, b = run_experiment(cfg), run_experiment(cfg)
    np.testing.assert_array_equal(a.q, b.q)
    w = a.rules[ScalingRule.SQRT].weights[0]
    assert np.all(w[np.triu_indices(12, 1)] == 0)
    assert w[0, 0] == 1.0
    assert np.isneginf(a.rules[ScalingRule.SQRT].logits[0, 0, 1])


@pytest.mark.parametrize("rho", [0.0, 0.7])
def test_empirical_logit_variance_matches_theory(rho: float) -> None:
    cfg = AttentionConfig(n_tokens=128, d_k=64, heads=8, d_model=512, rho=rho, init_std=0.5)
    snap = run_experiment(cfg, rules=["linear", "qk_norm", "temperature", "softcap"])
    for rule, view in snap.rules.items():
        if rule is ScalingRule.SOFTCAP:
            assert math.isnan(view.logit_var_theory)
            continue
        # ~130k off-diagonal pairs, correlated through shared q and k rows: allow 5 %.
        assert view.logit_var_empirical == pytest.approx(view.logit_var_theory, rel=0.05), rule
    assert snap.rules[ScalingRule.NONE].logit_var_theory == pytest.approx(64 * 0.5**4)


def test_correlation_is_token_wise() -> None:
    cfg = AttentionConfig(n_tokens=64, d_k=256, rho=0.8, seed=2)
    q, k = draw_qk(cfg)
    diag = np.einsum("hnd,hnd->hn", q, k)
    assert diag.mean() == pytest.approx(0.8 * 256, rel=0.05)  # E[q_i·k_i] = ρ d


def test_projection_theory_with_rho() -> None:
    cfg = AttentionConfig(n_tokens=96, d_model=64, heads=4, link_heads=True, use_projection=True,
                          projection_std=0.125, rho=0.5, seed=4)
    snap = run_experiment(cfg, rules=["qk_norm"])
    assert math.isnan(snap.rules[ScalingRule.QK_NORM].logit_var_theory)
    theory = snap.rules[ScalingRule.NONE].logit_var_theory
    assert theory == pytest.approx(16 * 0.125**4 * 64 * (64 + 0.25 * 17))


def test_temperature_comparison_rows() -> None:
    cfg = AttentionConfig(n_tokens=10, d_k=16, heads=2, query_row=4, mask="causal")
    p_t, p_s, diff = temperature_comparison(cfg, 4.0, head=1)
    assert diff == 0.0 and p_t.shape == (10,)
    assert np.all(p_t[5:] == 0) and p_t.sum() == pytest.approx(1.0)
    p_hot, _, diff_hot = temperature_comparison(cfg, 100.0)
    assert diff_hot > 0 and p_hot[:5].std() < p_s[:5].std()
    with pytest.raises(ValueError, match="head"):
        temperature_comparison(cfg, 4.0, head=2)


def test_correlation_rms_against_closed_form() -> None:
    res = correlation_rms([1, 16, 256, 4096], rho=0.5, samples=50_000, seed=1)
    for key in ("none", "sqrt", "linear"):
        rel = np.abs(res[f"rms_{key}"] / res[f"theory_{key}"] - 1)
        assert np.all(rel < 5 * res["rel_sem"] + 1e-12), key
    # 1/√d normalises only at ρ = 0; with ρ ≠ 0 the RMS grows like √d, while 1/d → |ρ|.
    assert res["rms_sqrt"][-1] > 20 and res["rms_linear"][-1] == pytest.approx(0.5, rel=0.02)
    flat = correlation_rms([16, 4096], rho=0.0, samples=50_000, seed=2)
    np.testing.assert_allclose(flat["rms_sqrt"], 1.0, rtol=0.02)
    assert np.all(np.diff(correlation_rms([4, 8], 0.3, 100, 5)["d_k"]) > 0)
    with pytest.raises(ValueError, match="samples"):
        correlation_rms([4], 0.1, 1)
