"""The fast snapshot path: logits derived from the raw scores agree with the attention module."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.experiment import raw_scores, run_experiment, temperature_comparison
from engine.analysis.sampling import draw_qk, draw_scores
from engine.config import AttentionConfig, ScalingRule
from engine.core.attention import attention_logits
from engine.core.softmax import softmax

ALL = tuple(ScalingRule)


@pytest.mark.parametrize("mask", ["none", "causal"])
@pytest.mark.parametrize("use_projection", [False, True])
def test_every_rule_matches_attention_logits(mask: str, use_projection: bool) -> None:
    cfg = AttentionConfig(n_tokens=20, d_k=8, heads=2, d_model=16, mask=mask, rho=0.3,
                          use_projection=use_projection, gain=3.0, cap=2.0, temperature=1.7)
    snap = run_experiment(cfg, rules=ALL)
    for rule, view in snap.rules.items():
        expected = attention_logits(snap.q, snap.k, rule=rule, temperature=cfg.temperature,
                                    gain=cfg.gain, cap=cfg.cap, mask=mask)
        np.testing.assert_allclose(view.logits, expected, rtol=1e-12, atol=1e-12,
                                   err_msg=str(rule))
        np.testing.assert_allclose(view.weights, softmax(expected), rtol=1e-10, atol=1e-15)


def test_default_qk_norm_gain_is_sqrt_d_k() -> None:
    cfg = AttentionConfig(n_tokens=16, d_k=9)
    logits = run_experiment(cfg, rules=["qk_norm"]).rules[ScalingRule.QK_NORM].logits
    assert np.abs(logits).max() <= 3.0 + 1e-12  # g·cos with g = √9
    q, k = draw_qk(cfg)
    cos = (q[0, 2] @ k[0, 5]) / (np.linalg.norm(q[0, 2]) * np.linalg.norm(k[0, 5]))
    assert logits[0, 2, 5] == pytest.approx(3.0 * cos, rel=1e-12)


def test_equal_scales_share_arrays_and_variance_matches_numpy() -> None:
    cfg = AttentionConfig(n_tokens=32, d_k=16, temperature=4.0, mask="causal")
    snap = run_experiment(cfg, rules=ALL)
    sqrt, temp = snap.rules[ScalingRule.SQRT], snap.rules[ScalingRule.TEMPERATURE]
    assert temp.weights is sqrt.weights and temp.scale == sqrt.scale == 0.25
    select = np.tri(32, dtype=bool) & ~np.eye(32, dtype=bool)
    for rule, view in snap.rules.items():
        finite = view.logits[:, select]
        assert view.logit_var_empirical == pytest.approx(float(np.var(finite)), rel=1e-9), rule


def test_sigma_change_reuses_draws_but_gives_exact_numbers() -> None:
    base = AttentionConfig(n_tokens=12, d_k=6, seed=3)
    q1, k1 = draw_qk(base)
    q2, k2 = draw_qk(base.replace(init_std=2.0))
    np.testing.assert_array_equal(q2, q1 * 2.0)
    np.testing.assert_array_equal(k2, k1 * 2.0)
    # The memoised normals are never handed out writable or mutated by a caller.
    q1[0, 0, 0] = 99.0
    np.testing.assert_array_equal(draw_qk(base)[0], q2 / 2.0)


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_temperature_comparison_from_snapshot_is_bit_identical(mask: str) -> None:
    cfg = AttentionConfig(n_tokens=24, d_k=64, heads=2, query_row=7, mask=mask)
    snap = run_experiment(cfg)
    for temperature in (0.5, math.sqrt(64), 30.0):
        direct = temperature_comparison(cfg, temperature, head=1)
        reused = temperature_comparison(cfg, temperature, head=1, snapshot=snap)
        np.testing.assert_array_equal(direct[0], reused[0])
        np.testing.assert_array_equal(direct[1], reused[1])
        assert direct[2] == reused[2]
    assert temperature_comparison(cfg, 8.0, snapshot=snap)[2] == 0.0
    with pytest.raises(ValueError, match="snapshot"):
        temperature_comparison(cfg.replace(seed=1), 2.0, snapshot=snap)


def test_raw_scores_is_q_k_transpose() -> None:
    q, k = draw_qk(AttentionConfig(n_tokens=5, d_k=3, heads=2, d_model=6))
    np.testing.assert_allclose(raw_scores(q, k), np.einsum("hid,hjd->hij", q, k), rtol=1e-12)


@pytest.mark.parametrize(("sigma", "rho", "projection"), [
    (1.0, 0.0, False), (0.7, 0.0, False), (2.5, 0.6, False), (0.3, -0.9, False), (1.3, 0.4, True)])
def test_scores_from_memoised_unit_products_are_q_k_transpose(sigma, rho, projection) -> None:
    config = AttentionConfig(n_tokens=33, d_k=24, heads=3, d_model=72, init_std=sigma, rho=rho,
                             use_projection=projection, seed=4)
    q, k, raw = draw_scores(config)
    drawn_q, drawn_k = draw_qk(config)
    np.testing.assert_array_equal(q, drawn_q)
    np.testing.assert_array_equal(k, drawn_k)
    np.testing.assert_allclose(raw, raw_scores(q, k), rtol=1e-13, atol=1e-13 * sigma**2 * 24)
    if (sigma == 1.0 and rho == 0.0) or projection:
        np.testing.assert_array_equal(raw, raw_scores(q, k))
    np.testing.assert_array_equal(run_experiment(config).raw_scores, raw)


def test_a_snapshot_is_the_same_on_several_threads():
    config = AttentionConfig(n_tokens=48, d_k=16, d_model=64, heads=4, mask="causal",
                             rule="softcap", cap=5.0)
    serial = run_experiment(config, rules=tuple(ScalingRule))
    parallel = run_experiment(config, rules=tuple(ScalingRule), threads=3)
    assert list(parallel.rules) == list(serial.rules)
    for rule, view in serial.rules.items():
        other = parallel.rules[rule]
        for name in ("logits", "weights", "entropy", "p_max", "jac_fro"):
            np.testing.assert_array_equal(getattr(other, name), getattr(view, name))
        assert other.logit_var_empirical == view.logit_var_empirical


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_weights_left_out_of_the_snapshot_are_the_same_numbers_when_read(mask: str):
    config = AttentionConfig(n_tokens=40, d_k=16, d_model=32, heads=2, mask=mask,
                             rule="ssmax", init_std=2.0, query_row=7)
    full = run_experiment(config, rules=ALL, threads=2)
    lean = run_experiment(config, rules=ALL, threads=2, stored_weights=["ssmax", "sqrt"])
    left_out = [rule for rule, view in lean.rules.items() if view.stored_weights is None]
    assert ScalingRule.NONE in left_out and ScalingRule.SSMAX not in left_out
    assert all(list(lean.rules[rule].stored_rows) == [7] for rule in left_out)
    for rule, view in full.rules.items():
        other = lean.rules[rule]
        for name in ("logits", "entropy", "p_max", "jac_fro"):
            np.testing.assert_array_equal(getattr(other, name), getattr(view, name))
        for head in range(2):
            for row in (0, 7, 39):
                np.testing.assert_array_equal(other.row_weights(head, row), view.weights[head, row])
        np.testing.assert_array_equal(other.weights, view.weights)
        with pytest.raises(ValueError):
            other.weights[0, 0, 0] = 1.0
    with pytest.raises(ValueError, match="rules"):
        run_experiment(config, stored_weights=["bogus"])


def test_run_tasks_keeps_the_order_and_raises_the_first_error():
    from engine.core.parallel import run_tasks

    assert run_tasks(lambda a, b: a * b, [(i, 2) for i in range(7)], threads=3) == [
        0, 2, 4, 6, 8, 10, 12]

    def fail(i: int) -> int:
        if i == 4:
            raise ArithmeticError("task 4")
        return i

    with pytest.raises(ArithmeticError, match="task 4"):
        run_tasks(fail, [(i,) for i in range(6)], threads=2)
    with pytest.raises(ValueError, match="threads"):
        run_tasks(fail, [(1,)], threads=0)
