"""Every head of a file in turn, and one head replayed under every rule."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from engine.analysis.head_scan import every_rule, iter_file_diagnostics, replay_head
from engine.analysis.heads import diagnose_head
from engine.config import ScalingRule
from engine.core import tiled
from engine.core.attention import scaled_dot_product_attention
from engine.core.parallel import get_num_threads
from engine.core.scaling import Rule
from engine.io.tensors import TensorFile, load_tensors, write_tensors

RNG_SEED = 20261201


def _file(tmp_path, layers=(0, 2), heads=3, meta=None):
    rng = np.random.default_rng(RNG_SEED)
    arrays = {f"layer{layer}.{part}": rng.standard_normal((2, heads, 7, 4)).astype(np.float32)
              for layer in layers for part in ("q", "k")}
    return load_tensors(write_tensors(tmp_path / "qk.npz", arrays, meta=meta))


def test_every_head_in_layer_order_with_the_layers_own_scale(tmp_path) -> None:
    tf = _file(tmp_path, meta={"causal": True, "layers": {"2": {"scale": 1.0, "cap": 3.0}}})
    records = list(iter_file_diagnostics(tf))
    assert [(r.layer, r.head) for r in records] == [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1),
                                                    (2, 2)]
    own = diagnose_head(*tf.qk(2, 1), scale=1.0, cap=3.0, causal=True)
    assert records[4].diagnostics == own
    assert records[0].diagnostics == diagnose_head(*tf.qk(0, 0), scale=0.5, causal=True)


def test_a_replayed_rule_replaces_every_layers_scale(tmp_path) -> None:
    tf = _file(tmp_path, meta={"scale": 3.0})
    record = next(iter_file_diagnostics(tf, rule=Rule("linear")))
    assert record.diagnostics.scale == 0.25 and record.diagnostics.rule == "linear"


def test_cancel_stops_between_heads(tmp_path) -> None:
    tf = _file(tmp_path)
    cancel = threading.Event()
    seen = []
    for record in iter_file_diagnostics(tf, cancel=cancel):
        seen.append(record)
        cancel.set()
    assert len(seen) == 1


def test_a_bad_head_is_named(tmp_path, monkeypatch) -> None:
    tf = _file(tmp_path)
    monkeypatch.setattr(TensorFile, "qk", lambda *_: (np.ones((1, 3, 4)), np.ones((1, 3, 5))))
    with pytest.raises(ValueError, match=r"^layer 0 head 0: q and k must have the same shape"):
        next(iter_file_diagnostics(tf, rule=Rule("temperature", temperature=2.0)))


@pytest.mark.parametrize("causal", [False, True])
def test_replay_weights_are_the_engines_attention_under_each_rule(causal) -> None:
    rng = np.random.default_rng(RNG_SEED)
    q, k = 4.0 * rng.standard_normal((3, 6, 8)), rng.standard_normal((3, 6, 8))
    params = {"temperature": 2.0, "gain": 5.0, "cap": 1.5}
    replays = replay_head(q, k, causal=causal, batch_entry=1,
                          rules=every_rule(Rule("sqrt", **params)))
    assert [r.rule for r in replays] == list(ScalingRule)
    for replay in replays:
        expected = scaled_dot_product_attention(
            q[1], k[1], np.eye(6, 8), rule=replay.rule, mask="causal" if causal else None,
            **params).weights
        np.testing.assert_allclose(replay.weights, expected, rtol=1e-12, atol=1e-15)
        assert replay.diagnostics == diagnose_head(q, k, rule=replay.rule, causal=causal,
                                                   **params)
        assert not replay.weights.flags.writeable
    # 4σ queries: unscaled rows are sharper than the 1/√d_k ones.
    by_rule = {r.rule: r.diagnostics for r in replays}
    assert by_rule[ScalingRule.NONE].p_max_mean > by_rule[ScalingRule.SQRT].p_max_mean


def test_a_replay_is_cancelled_inside_a_rules_diagnostics(monkeypatch) -> None:
    """A long head (n = 2048): a cancel set while the first rule's diagnostics run stops them
    within a tile per thread, and no rule is returned (not even the one being computed)."""
    rng = np.random.default_rng(RNG_SEED)
    q, k = rng.standard_normal((1, 2048, 16)), rng.standard_normal((1, 2048, 16))
    cancel = threading.Event()
    tiles = []
    real_write = tiled.write_logits

    def write_and_cancel(qs, ks, cap, out, *args):
        tiles.append(qs.shape[-2])
        cancel.set()  # as if the user clicked another head while the first rule ran
        return real_write(qs, ks, cap, out, *args)

    monkeypatch.setattr(tiled, "write_logits", write_and_cancel)
    assert replay_head(q, k, causal=True, rules=every_rule(Rule("sqrt")), cancel=cancel) == ()
    assert 1 <= len(tiles) <= get_num_threads()


def test_replay_refuses_a_batch_entry_out_of_range() -> None:
    q = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match="batch entry 2"):
        replay_head(q, q, causal=False, batch_entry=2, rules=(Rule("sqrt"),))


def test_ratios_against_the_law_and_ln_n() -> None:
    rng = np.random.default_rng(RNG_SEED)
    q, k = rng.standard_normal((4, 64, 32)), rng.standard_normal((4, 64, 32))
    diag = diagnose_head(q, k)
    assert diag.logit_std_ratio == diag.logit_std / diag.logit_std_theory
    assert 0.9 < diag.logit_std_ratio < 1.1  # Gaussian q, k follow the √d_k law
    assert diag.entropy_fraction == diag.entropy_mean / np.log(64)
    flat = diagnose_head(np.zeros((1, 5, 3)), np.ones((1, 5, 3)))
    assert np.isnan(flat.logit_std_ratio) and flat.entropy_fraction == pytest.approx(1.0)


def test_zhai_rows_match_the_scalar_bound() -> None:
    from engine.core.theory import zhai_min_entropy, zhai_min_entropy_rows

    n = np.array([1, 2, 5, 64, 512, 512])
    sigma = np.array([3.0, 0.0, 1.5, 10.0, 0.3, 400.0])
    rows = zhai_min_entropy_rows(n, sigma)
    assert rows[0] == 0.0
    for i in range(1, len(n)):
        assert rows[i] == pytest.approx(zhai_min_entropy(int(n[i]), sigma[i]), rel=1e-12)
    with pytest.raises(ValueError):
        zhai_min_entropy_rows(np.array([0]), np.array([1.0]))


@pytest.mark.parametrize("causal", [False, True])
def test_the_zhai_bound_is_below_the_entropy_and_attained_by_extremal_rows(causal) -> None:
    """Random heads stay above the bound; a head whose every row has the extremal logits
    (one key high, the others equal) sits on it, and uniform rows give ln m both ways."""
    from engine.core.theory import zhai_min_entropy

    rng = np.random.default_rng(RNG_SEED)
    for scale in (0.1, 1.0, 8.0):
        q, k = scale * rng.standard_normal((2, 16, 8)), rng.standard_normal((2, 16, 8))
        d = diagnose_head(q, k, causal=causal)
        assert d.entropy_floor_at_norm <= d.entropy_mean + 1e-12
        assert d.entropy_above_floor == d.entropy_mean - d.entropy_floor_at_norm
    # Keys: key 0 along e_0, every other key 0: each query e_0·a scores a on key 0, 0 elsewhere.
    n, a = 12, 3.0
    k = np.zeros((1, n, 4))
    k[0, 0, 0] = 1.0
    q = np.zeros((1, n, 4))
    q[0, :, 0] = a
    d = diagnose_head(q, k, scale=1.0)
    sigma = a * np.sqrt((n - 1) / n)  # norm of the centred row (a, 0, …, 0)
    assert d.entropy_floor_at_norm == pytest.approx(zhai_min_entropy(n, sigma), rel=1e-12)
    assert d.entropy_mean == pytest.approx(d.entropy_floor_at_norm, rel=1e-12)
    uniform = diagnose_head(q, np.ones((1, n, 4)), scale=1.0, causal=causal)
    assert uniform.entropy_above_floor == pytest.approx(0.0, abs=1e-12)


def test_a_long_head_is_cancelled_inside_and_diagnosed_in_tiles(tmp_path, monkeypatch) -> None:
    """n = 2048: a head is computed in tiles of rows (64 rows of float64 logits, 1 MiB); a
    cancel set while the first tile runs ends the scan before that head is reported, at most
    one more tile per thread is started, and the tiled results equal one-tile ones."""
    rng = np.random.default_rng(RNG_SEED)
    arrays = {f"layer0.{part}": rng.standard_normal((1, 2, 2048, 8)) for part in "qk"}
    tf = load_tensors(write_tensors(tmp_path / "long.npz", arrays, meta={"causal": True}))
    cancel = threading.Event()
    calls = []
    real_write = tiled.write_logits

    def write_and_cancel(qs, ks, cap, out, *args):
        calls.append(qs.shape[-2])  # the tile's query rows
        cancel.set()  # as if the user pressed Cancel while the first tile was computed
        return real_write(qs, ks, cap, out, *args)

    with monkeypatch.context() as patch:
        patch.setattr(tiled, "write_logits", write_and_cancel)
        assert list(iter_file_diagnostics(tf, cancel=cancel)) == []
    assert 1 <= len(calls) <= get_num_threads()
    assert set(calls) == {tiled.TILE_BYTES // (8 * 2048)}
    q, k = tf.qk(0, 1)
    tiles = diagnose_head(q, k, causal=True)
    with monkeypatch.context() as patch:
        patch.setattr(tiled, "TILE_BYTES", 8 * 2048 * 2048)  # one tile of every row
        whole = diagnose_head(q, k, causal=True)
    for name in ("logit_std", "max_abs_logit", "entropy_mean", "entropy_floor_at_norm",
                 "p_max_mean", "saturated_share", "sink_mass"):
        assert getattr(tiles, name) == pytest.approx(getattr(whole, name), rel=1e-12)


def test_replay_counts_every_rules_map_against_the_budget() -> None:
    """A replay keeps one (n, n) map per rule: all of them are counted against the budget,
    before anything is allocated, so a tiny file of long q, k is refused at once."""
    import resource

    from engine.core.memory import MemoryBudgetError, get_memory_budget

    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 11_000, 1))
    k = rng.standard_normal((1, 11_000, 1))
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rules = len(ScalingRule)
    with pytest.raises(MemoryBudgetError, match=rf"{rules} rules \({rules + 1} float64 maps of "
                       r"11000×11000; n ≤ \d+ fits\)"):
        replay_head(q, k, causal=False, rules=every_rule(Rule("sqrt")))
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - peak_before
    assert grown < get_memory_budget()
    assert len(replay_head(q[:, :256], k[:, :256], causal=True,
                           rules=every_rule(Rule("sqrt")))) == rules
