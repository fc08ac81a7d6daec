"""A real head from a tensor file as the explorer's q, k: loading, configs, rules, plans."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.analysis.experiment import run_experiment, temperature_comparison
from engine.analysis.explorer import (
    ALL_RULES,
    Computed,
    Part,
    Reuse,
    iter_plan,
    plan_full,
    plan_temperature,
    snapshot_head,
)
from engine.analysis.real_head import (
    HeadRef,
    RealHead,
    explorer_config_for,
    load_head,
    own_rule,
    with_own_rule,
)
from engine.config import AttentionConfig, MaskKind, ScalingRule
from engine.core.attention import attention_logits
from engine.core.memory import MemoryBudgetError
from engine.core.stats import row_summary
from engine.io.tensors import TensorFileError, load_tensors, write_tensors

RULE_PARAMS = {"temperature": 3.0, "gain": 2.5, "cap": 1.5}


def _file(tmp_path, *, n=6, d_k=4, heads=2, layers=(0, 3), batch=None, meta=None,
          tokens=True, seed=0, name="model.npz"):
    rng = np.random.default_rng(seed)
    shape = (heads, n, d_k) if batch is None else (batch, heads, n, d_k)
    arrays = {}
    for layer in layers:
        arrays[f"layer{layer}.q"] = rng.standard_normal(shape).astype(np.float32)
        arrays[f"layer{layer}.k"] = rng.standard_normal(shape).astype(np.float32)
    words = [f"t{i}" for i in range(n)] if tokens else None
    path = write_tensors(tmp_path / name, arrays, tokens=words, meta=meta)
    return load_tensors(path), arrays


def _constructed_head(tmp_path, q, k, meta=None):
    """A one-layer, one-head file holding exactly ``q`` and ``k`` (float64)."""
    path = write_tensors(tmp_path / "made.npz", {"layer0.q": q[None], "layer0.k": k[None]},
                         meta=meta)
    return load_head(HeadRef(load_tensors(path), 0, 0))


# ------------------------------------------------------------------------------ references
def test_head_ref_validates_against_the_file(tmp_path):
    tf, _ = _file(tmp_path, batch=3)
    ref = HeadRef(tf, 3, 1, 2)
    assert (ref.layer, ref.head, ref.batch_entry) == (3, 1, 2)
    with pytest.raises(ValueError, match=r"layer 1 is not in the file \(layers: 0, 3\)"):
        HeadRef(tf, 1, 0)
    with pytest.raises(ValueError, match=r"head 2 is out of range \(0..1\)"):
        HeadRef(tf, 0, 2)
    with pytest.raises(ValueError, match=r"batch entry 3 is out of range \(0..2\)"):
        HeadRef(tf, 0, 0, 3)
    with pytest.raises(ValueError, match="head True"):
        HeadRef(tf, 0, True)
    with pytest.raises(ValueError, match="must be a TensorFile"):
        HeadRef("model.npz", 0, 0)  # type: ignore[arg-type]


def test_load_head_reads_the_batch_entry_and_the_layer_meta(tmp_path):
    meta = {"causal": True, "scale": 0.25, "layers": {"3": {"scale": 0.125, "cap": 30.0,
                                                            "name": "blocks.3"}}}
    tf, arrays = _file(tmp_path, batch=3, meta=meta)
    head = load_head(HeadRef(tf, 3, 1, 2))
    np.testing.assert_array_equal(head.q, arrays["layer3.q"][2, 1].astype(np.float64))
    np.testing.assert_array_equal(head.k, arrays["layer3.k"][2, 1].astype(np.float64))
    assert head.q.dtype == np.float64 and not head.q.flags.writeable
    assert head.tokens == tuple(f"t{i}" for i in range(6))
    assert head.causal and head.scale == 0.125 and head.cap == 30.0
    assert head.label == "model.npz · layer 3 (blocks.3) · head 1 · batch 2"
    other = load_head(HeadRef(tf, 0, 0))
    assert other.scale == 0.25 and other.cap is None
    assert other.label == "model.npz · layer 0 · head 0 · batch 0"


def test_label_without_batch(tmp_path):
    tf, _ = _file(tmp_path)
    assert load_head(HeadRef(tf, 3, 1)).label == "model.npz · layer 3 · head 1"


def test_load_head_reports_a_file_that_changed_on_disk(tmp_path):
    tf, arrays = _file(tmp_path)
    arrays["layer0.q"][1, 2, 0] = np.nan
    write_tensors(tf.path, arrays)
    with pytest.raises(TensorFileError, match=r"^model\.npz · layer 0 · head 1: .*NaN/inf"):
        load_head(HeadRef(tf, 0, 1))


# --------------------------------------------------------------------------------- the rules
@pytest.mark.parametrize("scale, cap, expected", [
    (1.0, None, (ScalingRule.NONE, None, None)),
    (0.5, None, (ScalingRule.SQRT, None, None)),  # d_k = 4
    (0.25, None, (ScalingRule.LINEAR, None, None)),
    (0.1, None, (ScalingRule.TEMPERATURE, 10.0, None)),
    (0.5, 20.0, (ScalingRule.SOFTCAP, None, 20.0)),
    (0.1, 20.0, (ScalingRule.TEMPERATURE, 10.0, None)),  # no rule caps after another scale
])
def test_own_rule_expresses_the_model_scale(tmp_path, scale, cap, expected):
    meta = {"scale": scale} if cap is None else {"scale": scale, "cap": cap}
    tf, _ = _file(tmp_path, meta=meta)
    ref = HeadRef(tf, 0, 0)
    rule, temperature, got_cap = own_rule(ref)
    assert (rule, got_cap) == expected[::2]
    if expected[1] is None:
        assert temperature is None
    else:
        assert temperature == pytest.approx(expected[1])
    assert own_rule(load_head(ref)) == own_rule(ref)


def test_own_rule_default_scale_is_sqrt_and_bad_scales_are_refused(tmp_path):
    tf, _ = _file(tmp_path)
    assert own_rule(HeadRef(tf, 0, 0)) == (ScalingRule.SQRT, None, None)
    for bad in (0.0, -1.0):
        tf, _ = _file(tmp_path, meta={"scale": bad}, name=f"bad{bad}.npz")
        with pytest.raises(ValueError, match="scale c"):
            own_rule(HeadRef(tf, 0, 0))
    # Any T > 0 is a temperature (the rule's declared range), however small c is.
    tf, _ = _file(tmp_path, meta={"scale": 1e-9}, name="tiny.npz")
    assert own_rule(HeadRef(tf, 0, 0)) == (ScalingRule.TEMPERATURE, pytest.approx(1e9), None)


def test_with_own_rule_sets_the_rule_and_keeps_what_it_cannot_express(tmp_path):
    base = AttentionConfig(rule="qk_norm", temperature=2.0, cap=7.0)
    tf, _ = _file(tmp_path, meta={"scale": 0.1})
    assert with_own_rule(HeadRef(tf, 0, 0), base) == base.replace(rule="temperature",
                                                                   temperature=10.0)
    tf, _ = _file(tmp_path, meta={"scale": 0.5, "cap": 20.0}, name="cap.npz")
    assert with_own_rule(HeadRef(tf, 0, 0), base) == base.replace(rule="softcap", cap=20.0)
    tf, _ = _file(tmp_path, meta={"scale": -1.0}, name="neg.npz")
    assert with_own_rule(HeadRef(tf, 0, 0), base) == base


def test_explorer_config_for_takes_the_geometry_and_keeps_the_rule(tmp_path):
    tf, _ = _file(tmp_path, n=6, d_k=4, meta={"causal": True})
    base = AttentionConfig(n_tokens=64, d_k=96, heads=4, d_model=384, link_heads=True,
                           rule="qk_norm", gain=3.0, temperature=2.0, cap=7.0, query_row=40,
                           rho=0.4, seed=5)
    config = explorer_config_for(HeadRef(tf, 0, 1), base)
    assert (config.n_tokens, config.d_k, config.heads, config.link_heads) == (6, 4, 1, False)
    assert config.mask is MaskKind.CAUSAL and config.query_row == 5
    assert (config.rule, config.gain, config.temperature, config.cap) == (
        ScalingRule.QK_NORM, 3.0, 2.0, 7.0)
    assert (config.rho, config.seed) == (0.4, 5)
    kept = explorer_config_for(HeadRef(tf, 0, 1), base.replace(mask="none"), keep_mask=True)
    assert kept.mask is MaskKind.NONE
    # Row 0 of a causal head sees one key: the head opens at its last row instead (issue 56);
    # a row chosen by the user stays, and a head without a mask keeps row 0.
    assert explorer_config_for(HeadRef(tf, 0, 1), base.replace(query_row=0)).query_row == 5
    assert explorer_config_for(HeadRef(tf, 0, 1), base.replace(query_row=2)).query_row == 2
    tf2, _ = _file(tmp_path, name="plain.npz")
    assert explorer_config_for(HeadRef(tf2, 0, 0), base.replace(mask="causal")).mask is (
        MaskKind.NONE)
    assert explorer_config_for(HeadRef(tf2, 0, 0), base.replace(query_row=0)).query_row == 0


def test_explorer_config_for_refuses_heads_beyond_range_or_memory(tmp_path):
    tf, _ = _file(tmp_path, n=3200, d_k=2, heads=1, layers=(0,), tokens=False)
    with pytest.raises(MemoryBudgetError, match=r"model.npz · layer 0 · head 0: .*budget"):
        explorer_config_for(HeadRef(tf, 0, 0), AttentionConfig())
    wide, _ = _file(tmp_path, n=2, d_k=9000, heads=1, layers=(0,), tokens=False,
                    name="wide.npz")
    with pytest.raises(ValueError,
                       match=r"wide.npz · layer 0 · head 0: d_k must be in \[1, 8192\], got 9000"):
        explorer_config_for(HeadRef(wide, 0, 0), AttentionConfig())


# ---------------------------------------------------------------------------- run_experiment
@pytest.mark.parametrize("causal", [False, True])
def test_equal_keys_give_uniform_rows_under_every_rule(tmp_path, causal):
    n, d = 8, 5
    rng = np.random.default_rng(1)
    q = rng.standard_normal((n, d))
    k = np.tile(rng.standard_normal(d), (n, 1))
    head = _constructed_head(tmp_path, q, k, meta={"causal": causal})
    config = explorer_config_for(head, AttentionConfig(**RULE_PARAMS))
    snap = run_experiment(config, ALL_RULES, real_head=head)
    assert snap.real_head is head and set(snap.gradients) == set(ScalingRule)
    visible = np.arange(1, n + 1) if causal else np.full(n, n)
    for rule in ScalingRule:
        view = snap.rules[rule]
        attend = np.tri(n, dtype=bool) if causal else np.ones((n, n), dtype=bool)
        expected = np.where(attend, 1.0 / visible[:, None], 0.0)
        np.testing.assert_allclose(view.weights[0], expected, atol=1e-12)
        np.testing.assert_allclose(view.entropy[0], np.log(visible), atol=1e-12)
        np.testing.assert_allclose(view.p_max[0], 1.0 / visible, atol=1e-12)
        np.testing.assert_allclose(view.jac_fro[0], np.sqrt(1.0 / visible - 1.0 / visible**2),
                                   atol=1e-12)
        assert math.isnan(view.logit_var_theory)
        grad = snap.gradients[rule]
        assert grad.rows == n and grad.saturated_share == (1 / n if causal else 0.0)
        assert grad.jac_fro_median == pytest.approx(float(np.median(view.jac_fro[0])))


def test_empirical_moments_are_over_every_unmasked_logit(tmp_path):
    rng = np.random.default_rng(2)
    head = _constructed_head(tmp_path, rng.standard_normal((7, 3)), rng.standard_normal((7, 3)),
                             meta={"causal": True})
    config = explorer_config_for(head, AttentionConfig(**RULE_PARAMS))
    snap = run_experiment(config, ALL_RULES, real_head=head)
    visible = np.tri(7, dtype=bool)
    for rule in ScalingRule:
        view = snap.rules[rule]
        finite = view.logits[0][visible]
        assert np.isneginf(view.logits[0][~visible]).all()
        assert view.logit_mean_empirical == pytest.approx(float(finite.mean()), rel=1e-12)
        assert view.logit_var_empirical == pytest.approx(float(finite.var()), rel=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_rules_on_a_real_head_equal_the_engine_logits(tmp_path, causal):
    tf, _ = _file(tmp_path, n=9, d_k=6, meta={"causal": causal})
    head = load_head(HeadRef(tf, 3, 1))
    config = explorer_config_for(head, AttentionConfig(**RULE_PARAMS))
    snap = run_experiment(config, ALL_RULES, real_head=head)
    np.testing.assert_array_equal(snap.q[0], head.q)
    for rule in ScalingRule:
        expected = attention_logits(head.q, head.k, rule=rule, mask="causal" if causal else None,
                                    **RULE_PARAMS)
        np.testing.assert_allclose(snap.rules[rule].logits[0], expected, rtol=1e-12, atol=1e-12)
        entropy, _, _ = row_summary(snap.rules[rule].weights[0])
        # The snapshot takes the entropy from the logits (engine.core.rowstats): the same
        # value as from the weights, to a few ulps.
        np.testing.assert_allclose(snap.rules[rule].entropy[0], entropy, rtol=1e-13)


def test_run_experiment_refuses_a_head_of_another_geometry(tmp_path):
    tf, _ = _file(tmp_path)
    head = load_head(HeadRef(tf, 0, 0))
    with pytest.raises(ValueError, match="do not fit the configuration"):
        run_experiment(AttentionConfig(n_tokens=6, d_k=8, d_model=8), real_head=head)


def test_random_snapshots_are_unchanged_by_the_new_fields():
    snap = run_experiment(AttentionConfig(n_tokens=8, d_k=4, d_model=4))
    assert snap.real_head is None and snap.gradients is None
    assert math.isfinite(snap.rules[ScalingRule.SQRT].logit_var_theory)


def test_real_head_requires_two_dimensional_equal_shapes(tmp_path):
    tf, _ = _file(tmp_path)
    ref = HeadRef(tf, 0, 0)
    with pytest.raises(ValueError, match=r"shape \(n, d_k\)"):
        RealHead(ref, np.zeros((1, 6, 4)), np.zeros((6, 4)), None, False, 0.5, None)
    with pytest.raises(ValueError, match="differ in shape"):
        RealHead(ref, np.zeros((6, 4)), np.zeros((5, 4)), None, False, 0.5, None)


# ---------------------------------------------------------------------------------- the plan
def test_plan_loads_the_head_and_compares_temperature_on_its_scores(tmp_path):
    tf, _ = _file(tmp_path, n=10, d_k=4)
    ref = HeadRef(tf, 0, 1)
    config = explorer_config_for(ref, AttentionConfig(query_row=3, samples=50))
    plan = plan_full(config, 1.5, None, sweep_values=(1, 4), sweep_samples_cap=20, head=ref)
    assert plan.head == ref
    parts = {p.part: p.value for p in iter_plan(plan) if p.part is not Part.SWEEP_POINT}
    snap = parts[Part.SNAPSHOT]
    assert snapshot_head(snap) == ref
    head = load_head(ref)
    np.testing.assert_array_equal(snap.raw_scores[0], head.q @ head.k.T)
    p_t, p_s, diff = temperature_comparison(config, 1.5, real_head=head)
    np.testing.assert_array_equal(parts[Part.TEMPERATURE][0], p_t)
    np.testing.assert_array_equal(parts[Part.TEMPERATURE][1], p_s)
    np.testing.assert_allclose(p_t, np.exp(snap.raw_scores[0, 3] / 1.5)
                               / np.exp(snap.raw_scores[0, 3] / 1.5).sum(), rtol=1e-12)
    assert parts[Part.TEMPERATURE][2] == diff


def test_temperature_plans_never_mix_random_and_real_snapshots(tmp_path):
    tf, _ = _file(tmp_path, n=10, d_k=4)
    ref = HeadRef(tf, 0, 1)
    config = explorer_config_for(ref, AttentionConfig())
    random_snap = run_experiment(config, ALL_RULES)
    real_snap = run_experiment(config, ALL_RULES, real_head=load_head(ref))
    assert plan_temperature(config, 2.0, random_snap, head=ref).snapshot is None
    assert plan_temperature(config, 2.0, real_snap).snapshot is None
    assert plan_temperature(config, 2.0, real_snap, head=ref).snapshot is real_snap
    assert plan_temperature(config, 2.0, random_snap).snapshot is random_snap
    other = HeadRef(tf, 0, 0)
    assert plan_temperature(config, 2.0, real_snap, head=other).snapshot is None
    # Without a usable snapshot the head is loaded again: same numbers as with it.
    fresh = next(iter_plan(plan_temperature(config, 2.0, None, head=ref))).value
    reused = next(iter_plan(plan_temperature(config, 2.0, real_snap, head=ref))).value
    np.testing.assert_array_equal(fresh[0], reused[0])
    random_t = next(iter_plan(plan_temperature(config, 2.0, None))).value
    assert not np.array_equal(random_t[0], fresh[0])


def test_full_plan_recomputes_the_snapshot_when_the_source_changes(tmp_path):
    tf, _ = _file(tmp_path, n=10, d_k=4)
    ref = HeadRef(tf, 0, 1)
    config = explorer_config_for(ref, AttentionConfig(samples=50))
    first = plan_full(config, 2.0, None, sweep_values=(1, 4), sweep_samples_cap=20)
    values = {p.part: p.value for p in iter_plan(first) if p.part is not Part.SWEEP_POINT}
    computed = Computed(config, values[Part.SNAPSHOT], values[Part.CORRELATION], first.sweep())
    real = plan_full(config, 2.0, computed, sweep_values=(1, 4), sweep_samples_cap=20,
                     head=ref)
    # The theory parts (same config) are re-used; the snapshot and comparison are the head's.
    assert {(step.part, isinstance(step, Reuse)) for step in real.steps} == {
        (Part.SNAPSHOT, False), (Part.TEMPERATURE, False), (Part.CORRELATION, True),
        (Part.SWEEP_POINT, True)}
    snap = next(iter_plan(real)).value
    assert snapshot_head(snap) == ref and snapshot_head(values[Part.SNAPSHOT]) is None


def test_a_head_already_read_is_not_read_again(tmp_path):
    tf, arrays = _file(tmp_path, n=10, d_k=4)
    ref = HeadRef(tf, 0, 1)
    config = explorer_config_for(ref, AttentionConfig())
    snap = next(iter_plan(plan_full(config, 2.0, head=ref, sweep_values=(1,))))
    computed = Computed(config, snap.value)
    # The file changes on disk: the head on screen is re-used, not re-read ...
    arrays["layer0.k"][1, 0, 0] = np.inf
    write_tensors(tf.path, arrays)
    again = next(iter_plan(plan_full(config.replace(rule="qk_norm"), 2.0, computed, head=ref,
                                     sweep_values=(1,)))).value
    assert again.real_head is snap.value.real_head
    # ... but another head, or no snapshot on screen, is read.
    with pytest.raises(TensorFileError):
        next(iter_plan(plan_full(config, 2.0, None, head=ref, sweep_values=(1,))))


def test_a_bad_head_fails_inside_the_plan(tmp_path):
    tf, arrays = _file(tmp_path, n=10, d_k=4)
    ref = HeadRef(tf, 0, 1)
    config = explorer_config_for(ref, AttentionConfig())
    arrays["layer0.k"][1, 0, 0] = np.inf
    write_tensors(tf.path, arrays)
    with pytest.raises(TensorFileError, match=r"layer0\.k"):
        list(iter_plan(plan_full(config, 2.0, head=ref, sweep_values=(1,))))


def test_safetensors_file_end_to_end(tmp_path):
    tf, arrays = _file(tmp_path, n=5, d_k=8, meta={"causal": True, "scale": 0.2},
                       name="model.safetensors")
    ref = HeadRef(tf, 3, 0)
    rule, temperature, cap = own_rule(ref)
    assert rule is ScalingRule.TEMPERATURE and temperature == pytest.approx(5.0)
    assert cap is None
    config = explorer_config_for(ref, AttentionConfig().replace(rule=rule, temperature=5.0))
    plan = plan_full(config, 5.0, head=ref, sweep_values=(1,), sweep_samples_cap=10)
    snap = next(iter_plan(plan)).value
    q = arrays["layer3.q"][0].astype(np.float64)
    k = arrays["layer3.k"][0].astype(np.float64)
    expected = attention_logits(q, k, rule="temperature", temperature=5.0, mask="causal")
    np.testing.assert_allclose(snap.rules[ScalingRule.TEMPERATURE].logits[0], expected,
                               rtol=1e-12)
    assert snap.real_head.tokens == tuple(f"t{i}" for i in range(5))
