"""The trained-heads tensor file: its logits are the model's, it opens, every head diagnoses."""

from __future__ import annotations

import math
import shlex

import numpy as np
import pytest

from engine.analysis.heads import diagnose_head
from engine.cli.train import train_command_line
from engine.config import ScalingRule, rules_where
from engine.config.train import TrainConfig
from engine.core.attention import attention_logits
from engine.io.tensors import load_tensors
from engine.training.export_qk import MAX_BATCH, token_labels, write_trained_tensors
from engine.training.session import TrainingSession
from engine.training.trainer import iter_training

# Every rule with one c per layer (from the rules' declaration: a new rule is covered at once).
ALL_RULES = tuple(rule.value for rule in ScalingRule if not rule.length_dependent)
# Rules whose c depends on the keys a row sees: the file folds the per-row c into q (with
# 1/√d_k beside them).
LENGTH_RULES = ("sqrt", *(rule.value for rule in rules_where("per_row")))
SMALL = TrainConfig(rules=ALL_RULES, d_k=8, heads=2, n=6, vocab=12, batch=16, steps=12,
                    lr=0.01, eval_size=10, temperature=3.0, gain=2.5, cap=4.0)


def _trained(config: TrainConfig) -> TrainingSession:
    session = TrainingSession(config)
    for _ in iter_training(config, session=session):
        pass
    return session


def _model_logits(session: TrainingSession, index: int, size: int) -> np.ndarray:
    """The model's attention logits (B, h, P, T) of the first ``size`` held-out sequences,
    projected here from the trained weights and scored by engine.core.attention."""
    run = session.trained_runs()[index]
    params, dims, task = run.params, session.dims, session.task
    ids = np.asarray(session.eval_batch.ids[:size])
    x = sum(params["embed"][ids[:, :, c]] for c in range(ids.shape[2])) + params["pos"]
    pos = np.asarray(task.target_positions)
    w_k = params["w_kv"][:, : dims.hd]

    def heads(a: np.ndarray) -> np.ndarray:
        return a.reshape(*a.shape[:2], dims.heads, dims.d_k).transpose(0, 2, 1, 3)

    q, k = heads(x[:, pos] @ params["w_q"]), heads(x @ w_k)
    mask = None
    if task.mask.value == "causal":
        mask = np.arange(dims.seq_len)[None, :] <= pos[:, None]
    return attention_logits(q, k, mask=mask, rule=run.scaling)


def _file_logits(tf, layer: int, head: int) -> np.ndarray:
    q, k = tf.qk(layer, head)
    logits = tf.layer_scale(layer) * q @ k.swapaxes(-1, -2)
    cap = tf.layer_cap(layer)
    return logits if cap is None else cap * np.tanh(logits / cap)


@pytest.mark.parametrize("rules", [ALL_RULES, LENGTH_RULES])
@pytest.mark.parametrize("task", ["retrieval", "copy_back"])
def test_file_logits_equal_the_models_attention_logits(tmp_path, task, rules):
    config = SMALL.replace(task=task, offset=2, rules=rules)
    session = _trained(config)
    path = write_trained_tensors(tmp_path / "heads.npz", session, command="test")
    tf = load_tensors(path)
    assert tf.layers == tuple(range(len(rules))) and tf.heads == 2
    assert tf.n == session.task.seq_len and tf.d_k == 8 and tf.batch == config.eval_size
    assert tf.causal == (task == "copy_back") and tf.dtype == "float32"
    pos = list(session.task.target_positions)
    for layer, rule in enumerate(rules):
        assert tf.layer_name(layer) == rule
        model = _model_logits(session, layer, tf.batch)
        for head in range(tf.heads):
            got = _file_logits(tf, layer, head)[:, pos]  # the scored query rows
            want = model[:, head].astype(np.float64)
            keep = np.isfinite(want)
            assert keep.any()
            np.testing.assert_allclose(got[keep], want[keep], rtol=2e-5, atol=2e-5)
        # The session's own held-out forward (engine.training.model.evaluate) agrees too.
        state = session.state(session.runs[ScalingRule(rule)])
        file_max = max(np.max(np.abs(_file_logits(tf, layer, h)[:, pos][np.isfinite(model[:, h])]))
                       for h in range(tf.heads))
        assert file_max == pytest.approx(state.max_abs_logit, rel=2e-5)


def test_layer_meta_states_each_rules_scale_cap_and_what_was_written(tmp_path):
    session = _trained(SMALL)
    tf = load_tensors(write_trained_tensors(tmp_path / "heads.npz", session, command="cmd"))
    d_k = 8
    scales = {"none": 1.0, "sqrt": 1 / math.sqrt(d_k), "linear": 1 / d_k,
              "temperature": 1 / 3.0, "qk_norm": 2.5, "softcap": 1 / math.sqrt(d_k),
              "yarn": (0.1 * math.log(4.0) + 1) ** 2 / math.sqrt(d_k)}
    for layer, rule in enumerate(ALL_RULES):
        assert tf.layer_scale(layer) == pytest.approx(scales[rule])
        assert tf.layer_cap(layer) == (4.0 if rule == "softcap" else None)
        entry = tf.meta["layers"][str(layer)]
        assert entry["steps"] == SMALL.steps and entry["diverged_at"] is None
        assert set(tf.meta["where"]) >= {"positions", rule}
    # QK-norm: the written q and k are unit vectors (the model's normalised operands).
    q, k = tf.qk(ALL_RULES.index("qk_norm"), 1)
    np.testing.assert_allclose(np.linalg.norm(q, axis=-1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(k, axis=-1), 1.0, rtol=1e-6)
    meta = tf.meta
    assert meta["seed"] == 0 and meta["command"] == "cmd" and meta["step"] == SMALL.steps
    assert TrainConfig.from_dict(meta["config"]) == SMALL
    assert meta["target_positions"] == [SMALL.n] and meta["causal"] is False
    assert "held-out" in meta["batch"] and "batch entry 0" in meta["tokens_of"]
    assert tf.tokens == token_labels(session.task, session.eval_batch)
    ids = session.eval_batch.ids[0]
    assert tf.tokens[0] == f"k{ids[0, 0]}:v{ids[0, 1] - SMALL.vocab}"
    assert tf.tokens[-1] == f"k{ids[-1, 0]}?"


def test_every_head_diagnoses_with_the_files_own_scale(tmp_path):
    session = _trained(SMALL.replace(task="copy_back", offset=1))
    tf = load_tensors(write_trained_tensors(tmp_path / "heads.safetensors", session))
    assert tf.format == "safetensors"
    for layer in tf.layers:
        for head in range(tf.heads):
            q, k = tf.qk(layer, head)
            diag = diagnose_head(q, k, scale=tf.layer_scale(layer), cap=tf.layer_cap(layer),
                                 causal=tf.causal)
            assert diag.n == tf.n and diag.causal and 0 < diag.p_max_mean <= 1
            assert diag.max_abs_logit == pytest.approx(np.max(np.abs(
                _file_logits(tf, layer, head)[:, np.tri(tf.n, dtype=bool)])), rel=1e-12)


def test_batch_is_capped_and_a_non_finite_run_is_skipped_but_keeps_the_numbering(tmp_path):
    config = SMALL.replace(rules=("none", "sqrt", "linear"), eval_size=40, steps=2)
    session = _trained(config)
    session.runs[ScalingRule.SQRT].params["w_q"][0, 0] = np.nan  # as after a blow-up
    tf = load_tensors(write_trained_tensors(tmp_path / "heads.npz", session))
    assert tf.batch == MAX_BATCH
    assert tf.layers == (0, 2) and tf.layer_name(2) == "linear"
    assert "sqrt" in tf.meta["skipped"]
    for run in session.runs.values():
        run.params["w_kv"][...] = np.inf
    with pytest.raises(ValueError, match="no trained run has finite q and k"):
        write_trained_tensors(tmp_path / "none.npz", session)
    with pytest.raises(ValueError, match=r"\.npz or \.safetensors"):
        write_trained_tensors(tmp_path / "heads.txt", session)
    assert not (tmp_path / "heads.txt").exists() and not (tmp_path / "none.npz").exists()


def test_trained_runs_are_copies_and_a_used_session_is_refused():
    session = _trained(SMALL.replace(rules=("sqrt",), steps=3))
    (run,) = session.trained_runs()
    before = run.params.flat.copy()
    session.runs[ScalingRule.SQRT].params.flat[:] += 1.0
    np.testing.assert_array_equal(run.params.flat, before)
    with pytest.raises(ValueError, match="new TrainingSession"):
        next(iter_training(session.config, session=session))
    with pytest.raises(ValueError, match="new TrainingSession"):
        next(iter_training(SMALL, session=TrainingSession(SMALL.replace(seed=1))))


def test_train_command_line_reproduces_the_config():
    config = TrainConfig(rules=("none", "sqrt"), task="copy_back", clip_norm=1.5, eval_size=8,
                         lr=0.003, seed=4)
    words = shlex.split(train_command_line(config))
    assert words[:3] == ["python", "main.py", "train"]
    options = dict(zip(words[3::2], words[4::2], strict=True))
    assert options == {"--task": "copy_back", "--rules": "none,sqrt", "--d-k": "64",
                       "--clip-norm": "1.5", "--eval-size": "8", "--lr": "0.003", "--seed": "4"}
    assert train_command_line(config.replace(cap=3.0)) is None  # cap has no option
