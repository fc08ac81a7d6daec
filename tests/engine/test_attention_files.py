"""The files users already have: TransformerLens caches and attention weights without q and k.

Weights are made here from planted q and k (the faults of ``test_head_faults``), so every
statistic a file of weights gives can be compared with the same head's q-and-k diagnosis.
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from engine.analysis.head_scan import every_rule, iter_file_diagnostics, replay_file_head
from engine.analysis.head_weights import MULTIPLICATIVE_RULES, NeedsQK
from engine.analysis.heads import NEEDS_LOGITS, diagnose_head
from engine.config import ScalingRule
from engine.core.scaling import Rule
from engine.io.source import TensorFileError
from engine.io.tensors import load_tensors, write_tensors
from tests.engine.test_head_faults import HEADS, LAYERS, PLANTED, N, planted_file

_SAME = ("entropy_mean", "entropy_uniform", "p_max_mean", "saturated_share", "sink_mass",
         "sink_uniform")


def _weights_of(q: np.ndarray, k: np.ndarray, scale: float, causal: bool) -> np.ndarray:
    """softmax(c·q·kᵀ) of (..., n, d) q and k, written out independently of the engine."""
    z = scale * np.einsum("...id,...jd->...ij", q.astype(np.float64), k.astype(np.float64))
    if causal:
        z = np.where(np.tri(z.shape[-1], dtype=bool), z, -np.inf)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _stack_of(tf) -> np.ndarray:
    """(layers, batch, heads, n, n) weights of a q-and-k file at its own scale."""
    out = np.empty((len(tf.layers), tf.batch, tf.heads, tf.n, tf.n))
    for index, layer in enumerate(tf.layers):
        for head in range(tf.heads):
            q, k = tf.qk(layer, head)
            out[index, :, head] = _weights_of(q, k, tf.layer_scale(layer), tf.causal)
    return out


@pytest.fixture(scope="module", params=[False, True], ids=["bidirectional", "causal"])
def planted(request, tmp_path_factory):
    """The planted q-and-k file and the same heads as a stack of float32 weights (no meta)."""
    folder = tmp_path_factory.mktemp("planted")
    qk = load_tensors(planted_file(folder / "planted.npz", request.param))
    stacked = folder / "attentions.npy"
    np.save(stacked, _stack_of(qk).astype(np.float32))
    return qk, load_tensors(stacked)


def test_a_stack_of_weights_is_read_with_its_mask_inferred(planted) -> None:
    qk, weights = planted
    assert (weights.kind, weights.layout, weights.format) == ("weights", "stacked", "npy")
    assert (weights.layers, weights.heads, weights.n, weights.batch) == (
        tuple(range(LAYERS)), HEADS, N, 1)
    assert weights.d_k == 0 and math.isnan(weights.scale)
    assert weights.causal == qk.causal  # from the zeros above the diagonal
    with pytest.raises(TensorFileError, match="attention weights only; this needs q and k"):
        weights.qk(0, 0)


def test_weights_give_the_same_diagnosis_and_flags_as_q_and_k(planted) -> None:
    qk, weights = planted
    from_qk = {(r.layer, r.head): r.diagnostics for r in iter_file_diagnostics(qk)}
    from_weights = {(r.layer, r.head): r.diagnostics for r in iter_file_diagnostics(weights)}
    assert from_qk.keys() == from_weights.keys()
    for where, expected in from_qk.items():
        got = from_weights[where]
        assert got.flags == expected.flags, where
        assert got.source == "weights" and got.causal == expected.causal
        for key in _SAME:
            # float32 weights: ~1e-7 relative per weight
            assert getattr(got, key) == pytest.approx(getattr(expected, key), rel=1e-5,
                                                      abs=1e-5), (where, key)
        for key in NEEDS_LOGITS:
            assert math.isnan(getattr(got, key)), key
    for where, (what, flag, _) in PLANTED.items():
        assert flag in from_weights[where].flags, what


@pytest.mark.parametrize("container", ["npz-stack", "app-attn", "tl-pattern"])
def test_each_weights_layout_reads_the_same_heads(planted, tmp_path, container) -> None:
    qk, reference = planted
    stack = _stack_of(qk)
    if container == "npz-stack":
        path = tmp_path / "attn.npz"
        np.savez(path, attentions=stack)
    elif container == "app-attn":
        path = write_tensors(tmp_path / "attn.safetensors",
                             {f"layer{L}.attn": stack[L] for L in range(LAYERS)})
    else:
        path = tmp_path / "cache.npz"
        np.savez(path, **{f"blocks.{L}.attn.hook_pattern": stack[L] for L in range(LAYERS)},
                 **{f"blocks.{L}.hook_resid_pre": np.zeros((1, N, 8)) for L in range(LAYERS)})
    tf = load_tensors(path)
    assert tf.kind == "weights" and tf.causal == qk.causal
    for layer, head in [(0, 3), (2, 2), (3, 7)]:
        assert np.allclose(tf.weights(layer, head), reference.weights(layer, head), atol=1e-6)


def test_replay_from_weights_equals_replay_from_q_and_k(planted, tmp_path) -> None:
    """softmax(a·z) ∝ p^a: every rule that multiplies the logits, replayed from float64
    weights, gives the maps and statistics of the same rule computed from q and k."""
    qk, _ = planted
    path = tmp_path / "attn.npz"
    meta = {"d_k": qk.d_k, "causal": qk.causal}
    np.savez(path, attentions=_stack_of(qk), meta=np.array(json.dumps(meta)))
    weights = load_tensors(path)
    for layer, head in [(1, 1), (2, 2), (1, 4)]:
        params = {"batch_entry": 0, "rules": every_rule(Rule("temperature", temperature=3.0))}
        expected = {r.rule: r for r in replay_file_head(qk, layer, head, **params)}
        for replay in replay_file_head(weights, layer, head, **params):
            if replay.rule in MULTIPLICATIVE_RULES:
                assert not replay.missing
                want = expected[replay.rule]
                assert np.allclose(replay.weights, want.weights, atol=1e-9), replay.rule
                assert replay.diagnostics.entropy_mean == pytest.approx(
                    want.diagnostics.entropy_mean, rel=1e-9, abs=1e-12), replay.rule
                assert replay.diagnostics.flags == want.diagnostics.flags
            else:
                assert replay.missing == "q_and_k" and replay.weights is None


def test_without_d_k_only_the_rules_free_of_it_are_replayed(planted) -> None:
    _, weights = planted
    rules = every_rule(Rule("temperature", temperature=2.0))
    missing = {r.rule: r.missing for r in replay_file_head(weights, 1, 1, rules=rules)}
    assert missing == {
        ScalingRule.NONE: "d_k", ScalingRule.SQRT: "", ScalingRule.LINEAR: "d_k",
        ScalingRule.TEMPERATURE: "d_k", ScalingRule.QK_NORM: "q_and_k",
        ScalingRule.SOFTCAP: "q_and_k", ScalingRule.LOG_N: "", ScalingRule.SSMAX: "",
        ScalingRule.YARN: "", ScalingRule.LLAMA4: ""}
    with pytest.raises(NeedsQK, match="'qk_norm' needs q and k"):
        list(iter_file_diagnostics(weights, rule=Rule("qk_norm")))


def _cache(rng, *, batch: int | None, n=24, heads=4, kv_heads=2, d_head=8, layers=2,
           rot=True) -> tuple[dict[str, np.ndarray], dict]:
    """A TransformerLens-style cache_dict with attention and other hooks (float32)."""
    cache, truth = {}, {}
    lead = () if batch is None else (batch,)
    cache["hook_embed"] = rng.standard_normal((*lead, n, 16)).astype(np.float32)
    for layer in range(layers):
        q = rng.standard_normal((*lead, n, heads, d_head)).astype(np.float32)
        k = rng.standard_normal((*lead, n, kv_heads, d_head)).astype(np.float32)
        prefix = f"blocks.{layer}.attn.hook_"
        names = ("rot_q", "rot_k") if rot else ("q", "k")
        cache[prefix + names[0]], cache[prefix + names[1]] = q, k
        if rot:  # before RoPE: must not be the ones read
            cache[prefix + "q"] = np.zeros_like(q)
            cache[prefix + "k"] = np.zeros_like(k)
        cache[prefix + "z"] = np.zeros((*lead, n, heads, d_head), np.float32)
        cache[f"blocks.{layer}.hook_resid_pre"] = np.zeros((*lead, n, 16), np.float32)
        cache[f"blocks.{layer}.mlp.hook_post"] = np.zeros((*lead, n, 32), np.float32)
        truth[layer] = (q, k)
    return cache, truth


@pytest.mark.parametrize("batch", [2, None], ids=["batch", "remove_batch_dim"])
@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_a_transformer_lens_cache_is_read_with_grouped_query_keys(tmp_path, batch,
                                                                  suffix) -> None:
    rng = np.random.default_rng(5)
    cache, truth = _cache(rng, batch=batch)
    path = tmp_path / f"cache{suffix}"
    if suffix == ".npz":
        np.savez(path, **cache)
    else:
        write_tensors(path, cache)
    tf = load_tensors(path)
    assert (tf.layout, tf.kind, tf.layers, tf.heads, tf.kv_heads, tf.n, tf.d_k) == (
        "transformer_lens", "qk", (0, 1), 4, 2, 24, 8)
    assert tf.batch == (batch or 1) and tf.causal and tf.scale == pytest.approx(8 ** -0.5)
    for layer, (q, k) in truth.items():
        q4 = q if batch else q[None]
        k4 = k if batch else k[None]
        for head in range(4):
            got_q, got_k = tf.qk(layer, head)
            assert np.array_equal(got_q, q4[:, :, head, :].astype(np.float64))
            assert np.array_equal(got_k, k4[:, :, head // 2, :].astype(np.float64))


def test_transformer_lens_without_rotary_reads_hook_q(tmp_path) -> None:
    cache, truth = _cache(np.random.default_rng(1), batch=1, rot=False, kv_heads=4)
    path = tmp_path / "cache.npz"
    np.savez(path, **cache)
    q, k = load_tensors(path).qk(1, 3)
    assert np.array_equal(q[0], truth[1][0][0, :, 3].astype(np.float64))
    assert np.array_equal(k[0], truth[1][1][0, :, 3].astype(np.float64))


def test_attention_scores_give_the_logit_statistics_too(tmp_path) -> None:
    """hook_attn_scores (−inf above the diagonal): the weights, and the logits' std and
    max |logit| exactly as diagnose_head computes them from q and k."""
    rng = np.random.default_rng(9)
    q, k = rng.standard_normal((2, 1, 3, 40, 16))
    scores = np.einsum("bhid,bhjd->bhij", q, k) / 4.0
    scores = np.where(np.tri(40, dtype=bool), scores, -np.inf)
    path = tmp_path / "scores.npz"
    np.savez(path, **{"blocks.0.attn.hook_attn_scores": scores})
    tf = load_tensors(path)
    assert tf.kind == "weights" and tf.has_logits and tf.causal
    (record,) = [r for r in iter_file_diagnostics(tf) if r.head == 1]
    want = diagnose_head(q[:, 1], k[:, 1], scale=0.25, causal=True)
    got = record.diagnostics
    assert got.source == "scores"
    for key in (*_SAME, "logit_std", "max_abs_logit", "entropy_floor_at_norm"):
        assert getattr(got, key) == pytest.approx(getattr(want, key), rel=1e-9), key
    assert math.isnan(got.rho) and math.isnan(got.logit_std_theory)


@pytest.mark.parametrize(("damage", "message"), [
    (lambda w: w.__setitem__((0, 0, 1, 5, 0), -0.01), "negative weights"),
    (lambda w: w.__setitem__((0, 0, 1, 5), w[0, 0, 1, 5] * 0.9), "row 5 sums to 0.9"),
    (lambda w: w.__setitem__((1, 0, 0, 2, 2), np.nan), "NaN/inf"),
])
def test_damaged_weights_are_refused_naming_the_array(tmp_path, damage, message) -> None:
    rng = np.random.default_rng(2)
    weights = _weights_of(*rng.standard_normal((2, 2, 1, 3, 8, 4)), 0.5, causal=False)
    damage(weights)
    path = tmp_path / "bad.npz"
    np.savez(path, attentions=weights)
    with pytest.raises(TensorFileError, match=message) as caught:
        load_tensors(path)
    assert str(caught.value).startswith("bad.npz: array 'attentions'")


def test_weights_above_the_diagonal_of_a_causal_file_are_refused(tmp_path) -> None:
    weights = np.full((1, 1, 2, 6, 6), 1 / 6)
    path = tmp_path / "full.npz"
    np.savez(path, attentions=weights, meta=np.array(json.dumps({"causal": True})))
    with pytest.raises(TensorFileError, match="above the diagonal, but the file is causal"):
        load_tensors(path)


@pytest.mark.parametrize("shape", [(2, 6, 6), (1, 2, 6, 5, 1, 3)])
def test_a_single_array_of_another_shape_is_refused(tmp_path, shape) -> None:
    path = tmp_path / "one.npy"
    np.save(path, np.zeros(shape))
    with pytest.raises(TensorFileError, match=r"\(layers, batch, heads, n, n\)"):
        load_tensors(path)


def test_inspect_leaves_what_weights_cannot_give_empty(planted, tmp_path, capsys) -> None:
    from main import main

    _, weights = planted
    assert main(["inspect", str(weights.path), "--out", "-", "--quiet"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == LAYERS * HEADS
    for row in rows:
        assert row["source"] == "weights" and row["d_k"] == ""
        assert all(row[key] == "" for key in NEEDS_LOGITS)
        assert float(row["entropy_mean"]) >= 0
    assert main(["inspect", str(weights.path), "--rule", "qk_norm", "--out", "-"]) == 2
    err = capsys.readouterr().err
    assert "attentions.npy: rule 'qk_norm' needs q and k" in err
