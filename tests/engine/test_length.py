"""The length lab's engine: the SSMax toy (exact), the n sweep with its per-point row cap,
and the length rules' statistics against an independent numpy computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.length import length_sweep_config, ssmax_toy
from engine.analysis.sweep import iter_sweep, run_sweep
from engine.analysis.sweep_rows import draw_rows, point_rows, setting_for
from engine.config import AttentionConfig, ScalingRule, SweepConfig, SweepParam, rules_where
from engine.core.memory import MemoryBudgetError


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("n", [1, 2, 16, 1000, 4096])
def test_ssmax_toy_matches_a_direct_softmax(n):
    z = np.full(n, -2.0)
    z[0] = 3.0
    toy = ssmax_toy([n], 0.43)
    assert toy.p_max_softmax[0] == pytest.approx(_softmax(z)[0], rel=1e-13)
    assert toy.p_max_ssmax[0] == pytest.approx(_softmax(0.43 * math.log(n) * z)[0], rel=1e-13)


def test_ssmax_toy_softmax_vanishes_while_ssmax_stays_near_one():
    toy = ssmax_toy([16, 2**10, 2**20])
    assert np.all(np.diff(toy.p_max_softmax) < 0)
    assert toy.p_max_softmax[-1] < 2e-4  # e^5/(2^20 − 1) ≈ 1.4e-4
    assert np.all(toy.p_max_ssmax > 0.96)
    assert toy.p_max_ssmax[-1] > 0.9999
    with pytest.raises(ValueError, match="integers >= 1"):
        ssmax_toy([0])
    with pytest.raises(ValueError, match="s must be"):
        ssmax_toy([4], 0.0)


def test_point_rows_caps_long_rows_and_keeps_short_points_whole():
    config = SweepConfig(param=SweepParam.N, values=(16,), samples=20_000, max_logits=1 << 20)
    assert point_rows(config, 16) == 20_000
    assert point_rows(config, 1 << 10) == 1024
    assert point_rows(config, 1 << 20) == 64  # the floor
    assert point_rows(config.replace(min_rows=2), 1 << 20) == 2
    # An explicit small sample count is kept whole: 64 rows at n = 2^20.
    assert point_rows(SweepConfig(param=SweepParam.N, values=(1 << 20,), samples=64), 1 << 20) == 64
    # The default cap (2^22 logits) leaves the default 20 000 rows up to n = 209, which covers
    # the explorer's default n = 64 and the tour; longer rows share the budget.
    assert point_rows(SweepConfig(), 209) == 20_000
    assert point_rows(SweepConfig(), 256) == 16_384


def test_length_rules_in_the_sweep_match_numpy_on_the_same_rows():
    config = SweepConfig(param=SweepParam.N, values=(64, 1024), samples=300,
                         rules=(ScalingRule.SQRT, ScalingRule.LOG_N, ScalingRule.SSMAX,
                                ScalingRule.YARN),
                         d_k=16, ssmax_s=0.6, yarn_factor=8.0, max_logits=1 << 17,
                         min_rows=2)
    points = run_sweep(config)
    for v_index, n in enumerate(config.values):
        rows = point_rows(config, n)
        st = setting_for(config, n)
        raw = np.concatenate([
            draw_rows(config, st, v_index, i, r, False)[0]
            for i, r in enumerate(_chunks(config, n, rows))])
        c = {ScalingRule.SQRT: 1 / 4, ScalingRule.LOG_N: math.log(n) / 4,
             ScalingRule.SSMAX: 0.6 * math.log(n) / 4,
             ScalingRule.YARN: (0.1 * math.log(8.0) + 1) ** 2 / 4}
        for point in (p for p in points if p.value == n):
            p = _softmax(c[point.rule] * raw)
            entropy = -np.sum(p * np.log(p), axis=-1)
            assert point.samples == rows
            # float32 exponentials (sums in float64): ~1e-7 relative here.
            assert point.entropy_mean == pytest.approx(entropy.mean(), rel=1e-6)
            assert point.p_max_mean == pytest.approx(p.max(axis=-1).mean(), rel=1e-6)
            assert point.entropy_ratio == pytest.approx(entropy.mean() / math.log(n), rel=1e-6)


def _chunks(config: SweepConfig, n: int, rows: int) -> list[int]:
    from engine.analysis.sweep_rows import chunk_rows

    per = min(chunk_rows(config, n), rows)
    return [min(per, rows - s) for s in range(0, rows, per)]


def test_fixed_scale_disperses_and_log_n_does_not():
    config = length_sweep_config(AttentionConfig(samples=200), values=(16, 1024, 65536))
    points = {(p.rule, p.value): p for p in iter_sweep(config)}
    sqrt = [points[ScalingRule.SQRT, n] for n in config.values]
    log_n = [points[ScalingRule.LOG_N, n] for n in config.values]
    # 1/√d_k: p_max → 0 and the entropy approaches ln n (ratio → 1).
    assert sqrt[0].p_max_mean > 10 * sqrt[-1].p_max_mean
    assert sqrt[-1].entropy_ratio > 0.95
    # ln n/√d_k: the entropy stays O(1) (its ratio to ln n falls), p_max stays large.
    assert all(p.p_max_mean > 0.5 for p in log_n)
    assert log_n[-1].entropy_ratio < 0.15
    assert {p.rule for p in points.values()} == set(rules_where("in_length_view")) >= {
        ScalingRule.SQRT, ScalingRule.LOG_N, ScalingRule.SSMAX, ScalingRule.YARN}


def test_long_rows_respect_the_memory_guard():
    config = SweepConfig(param=SweepParam.N, values=(1 << 22,), samples=2,
                         memory_budget_bytes=1 << 20)
    with pytest.raises(MemoryBudgetError):
        next(iter_sweep(config))


def test_entropy_ratio_is_nan_when_n_is_not_swept():
    point = run_sweep(SweepConfig(values=(4,), samples=10, rules=(ScalingRule.SQRT,)))[0]
    assert math.isnan(point.entropy_ratio)


@pytest.mark.parametrize("mask", ["none", "causal"])
def test_explorer_snapshot_length_rules_use_each_rows_keys(mask):
    from engine.analysis.experiment import run_experiment

    config = AttentionConfig(n_tokens=256, d_k=16, d_model=128, heads=8, mask=mask,
                             samples=10, ssmax_s=0.7, yarn_factor=8.0)
    snap = run_experiment(config, rules=(ScalingRule.LOG_N, ScalingRule.SSMAX, ScalingRule.YARN))
    keys = np.arange(1, 257) if mask == "causal" else np.full(256, 256)
    raw = snap.raw_scores
    for rule, c_row in ((ScalingRule.LOG_N, np.log(keys) / 4),
                        (ScalingRule.SSMAX, 0.7 * np.log(keys) / 4)):
        view = snap.rules[rule]
        visible = np.isfinite(view.logits)
        np.testing.assert_allclose(view.logits[visible], (raw * c_row[:, None])[visible],
                                   rtol=1e-13)
        assert view.scale == pytest.approx(math.log(256) * (0.7 if rule is ScalingRule.SSMAX
                                                            else 1) / 4)
        # Pooled variance of c_i·q_i·k_j (i ≠ j, unmasked) against its closed form.
        assert view.logit_var_empirical == pytest.approx(view.logit_var_theory, rel=0.05)
    yarn = snap.rules[ScalingRule.YARN]
    assert yarn.scale == pytest.approx((0.1 * math.log(8.0) + 1) ** 2 / 4)
    assert yarn.logit_var_empirical == pytest.approx(yarn.logit_var_theory, rel=0.05)


def test_both_view_sweeps_follow_the_explorers_rule_parameters() -> None:
    """The d_k sweep (laws, gradients) and the n sweep (length) take s, f, T, gain, cap, ρ and
    the seed from the explorer, and add its rule: one builder, SweepConfig.following."""
    from engine.analysis.explorer import sweep_config_for
    from engine.analysis.length import length_sweep_config
    from engine.config import AttentionConfig, ScalingRule

    config = AttentionConfig(rule="ssmax", ssmax_s=0.8, yarn_factor=16.0, temperature=3.0,
                             gain=2.0, cap=7.0, rho=0.25, seed=9, n_tokens=32, d_k=16)
    for sweep in (sweep_config_for(config), length_sweep_config(config)):
        assert (sweep.ssmax_s, sweep.yarn_factor, sweep.temperature, sweep.gain, sweep.cap,
                sweep.rho, sweep.seed) == (0.8, 16.0, 3.0, 2.0, 7.0, 0.25, 9)
        assert ScalingRule.SSMAX in sweep.rules
    assert sweep_config_for(config).n_tokens == 32 and length_sweep_config(config).d_k == 16


def test_a_sweep_gives_the_same_points_on_any_number_of_threads():
    config = SweepConfig(param=SweepParam.N, values=(16, 4096, 1 << 16), samples=300,
                         rules=(ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.SOFTCAP,
                                ScalingRule.QK_NORM, ScalingRule.SSMAX),
                         max_logits=1 << 18, dtype="float16", softmax="naive")
    serial = list(iter_sweep(config))
    assert list(iter_sweep(config, threads=3)) == serial
    with pytest.raises(ValueError, match="threads"):
        next(iter_sweep(config, threads=0))
