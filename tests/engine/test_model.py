"""The tiny model: hand-written backward against central finite differences (float64)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.config import ScalingRule
from engine.config.train import TaskKind, TrainConfig
from engine.core.scaling import Rule
from engine.training.model import evaluate, loss_and_grad, prepare_batch
from engine.training.optim import SGD, Adam, clip_grad_norm
from engine.training.params import ModelDims, ParamSet, init_params
from engine.training.tasks import make_task

#: Every rule (a new one is checked at once).
RULES = list(ScalingRule)


def _setup(task: TaskKind, heads: int, seed: int = 0):
    config = TrainConfig(task=task, n=5, vocab=6, offset=2, d_k=3, heads=heads, d_model=5,
                         dtype="float64", init_std=0.6)
    t = make_task(config)
    dims = ModelDims(t.input_vocab, t.seq_len, config.model_width, heads, config.d_k,
                     t.n_classes)
    rng = np.random.default_rng(seed)
    params = init_params(dims, rng, init_std=0.6, channels=t.channels, dtype=np.float64)
    # Non-zero bias and a larger readout so that every gradient entry is well away from 0.
    params["b_u"][...] = rng.standard_normal(params["b_u"].shape)
    params["w_u"][...] *= 3.0
    pb = prepare_batch(t.sample(rng, 4), t, np.float64)
    return params, pb


def _spec(rule: ScalingRule) -> Rule:
    # A small cap makes the tanh of the soft-cap rule strongly non-linear in the check.
    return Rule(rule, temperature=1.7, gain=2.5, cap=1.5)


def _finite_difference(params: ParamSet, spec: Rule, pb, h: float = 1e-6) -> np.ndarray:
    flat = params.flat
    out = np.empty_like(flat)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + h
        up = evaluate(params, spec, pb).loss
        flat[i] = old - h
        down = evaluate(params, spec, pb).loss
        flat[i] = old
        out[i] = (up - down) / (2 * h)
    return out


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize(("task", "heads"), [(TaskKind.RETRIEVAL, 1), (TaskKind.COPY_BACK, 2)])
def test_gradient_matches_finite_differences(rule, task, heads, fused):
    # fused=True is the training path (the model's own attention for scalar rules);
    # fused=False runs engine.core.attention's forward and backward for every rule.
    params, pb = _setup(task, heads)
    spec = _spec(rule)
    grads = params.zeros_like()
    value = loss_and_grad(params, grads, spec, pb, fused=fused)
    assert value == pytest.approx(evaluate(params, spec, pb).loss, rel=1e-12)
    fd = _finite_difference(params, spec, pb)
    fd_set = ParamSet(params.dims, np.float64, fd)
    for name, analytic in grads.matrices().items():
        numeric = fd_set.matrices()[name]
        scale = max(np.abs(numeric).max(), 1e-3)
        err = np.abs(analytic - numeric).max() / scale
        assert err < 2e-6, f"{rule} {task} {name}: relative error {err:.2e}"
    # Every matrix takes part: the check is not vacuous.
    assert all(np.abs(m).max() > 1e-6 for m in grads.matrices().values())


@pytest.mark.parametrize("rule", RULES)
def test_fused_training_path_matches_engine_attention(rule):
    params, pb = _setup(TaskKind.COPY_BACK, 2, seed=4)
    spec = _spec(rule)
    g_fused, g_ref = params.zeros_like(), params.zeros_like()
    l_fused = loss_and_grad(params, g_fused, spec, pb, fused=True)
    l_ref = loss_and_grad(params, g_ref, spec, pb, fused=False)
    assert l_fused == pytest.approx(l_ref, rel=1e-12)
    assert np.allclose(g_fused.flat, g_ref.flat, rtol=1e-10, atol=1e-13)


def test_causal_mask_blocks_future_tokens():
    # With the causal mask, the output at the target positions must not depend on later tokens.
    params, pb = _setup(TaskKind.COPY_BACK, 1)
    spec = _spec(ScalingRule.SQRT)
    base = evaluate(params, spec, pb)
    # Only the last position sees the last token; perturbing it changes only that row's output.
    assert np.allclose(np.triu(base.weights[0], k=pb.positions[0] + 1), 0.0)
    row = base.weights[0]
    for r, pos in enumerate(pb.positions):
        assert np.all(row[r, pos + 1 :] == 0.0)
        assert row[r, : pos + 1].sum() == pytest.approx(1.0)


def test_float32_and_float64_agree():
    params, pb = _setup(TaskKind.RETRIEVAL, 1)
    p32 = ParamSet(params.dims, np.float32, params.flat.astype(np.float32))
    pb32 = dataclasses.replace(pb, onehot=pb.onehot.astype(np.float32))
    spec = _spec(ScalingRule.SQRT)
    g64, g32 = params.zeros_like(), p32.zeros_like()
    l64 = loss_and_grad(params, g64, spec, pb)
    l32 = loss_and_grad(p32, g32, spec, pb32)
    assert g32.flat.dtype == np.float32
    assert l32 == pytest.approx(l64, rel=1e-5)
    assert np.allclose(g32.flat, g64.flat, rtol=1e-3, atol=1e-5)


def test_adam_matches_reference_formula():
    rng = np.random.default_rng(1)
    p = rng.standard_normal(7)
    ref = p.copy()
    m = np.zeros(7)
    v = np.zeros(7)
    opt = Adam(7, 0.05, np.dtype(np.float64))
    for t in range(1, 6):
        g = rng.standard_normal(7)
        opt.step(p, g)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        ref -= 0.05 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    assert np.allclose(p, ref, rtol=1e-12, atol=1e-14)


def test_sgd_and_clipping():
    p = np.ones(3)
    SGD(3, 0.5, np.dtype(np.float64)).step(p, np.array([2.0, 0.0, -2.0]))
    assert np.allclose(p, [0.0, 1.0, 2.0])
    g = np.array([3.0, 4.0])
    assert clip_grad_norm(g, 1.0) == pytest.approx(5.0)
    assert np.allclose(g, [0.6, 0.8])
    g = np.array([0.3, 0.4])
    clip_grad_norm(g, 1.0)
    assert np.allclose(g, [0.3, 0.4])


@pytest.mark.parametrize("task", list(TaskKind))
def test_tasks_have_the_documented_structure(task):
    config = TrainConfig(task=task, n=6, vocab=8, offset=2)
    t = make_task(config)
    b = t.sample(np.random.default_rng(3), 50)
    assert b.ids.shape == (50, t.seq_len, t.channels)
    assert b.targets.shape == (50, len(t.target_positions))
    assert not b.ids.flags.writeable
    if task is TaskKind.RETRIEVAL:
        keys, values = b.ids[:, :6, 0], b.ids[:, :6, 1] - 8
        assert all(len(set(row)) == 6 for row in keys)  # distinct keys
        assert np.all(b.ids[:, 6, 1] == 16)  # query marker
        match = keys == b.ids[:, 6, 0][:, None]
        assert np.all(match.sum(axis=1) == 1)
        assert np.array_equal(values[match], b.targets[:, 0])
    else:
        assert np.array_equal(b.targets, b.ids[:, :4, 0])  # token at t − 2 for t = 2..5
        assert t.target_positions == (2, 3, 4, 5)
    assert t.chance_loss == pytest.approx(np.log(8))


def test_config_validation_and_round_trip():
    from engine.config import config_from_json

    c = TrainConfig(rules=("sqrt", "qk_norm"), d_k=16, heads=2, task="copy_back", n=8)
    assert c.model_width == 32
    assert config_from_json(c.to_json()) == c
    assert c.replace(d_k=8).model_width == 16
    for bad, word in [
        (dict(rules=()), "rules"),
        (dict(rules=("sqrt", "sqrt")), "repeat"),
        (dict(rules=("bogus",)), "rules"),
        (dict(lr=0.0), "lr"),
        (dict(steps=0), "steps"),
        (dict(task="retrieval", n=40, vocab=32), "vocab"),
        (dict(task="copy_back", n=4, offset=4), "offset"),
        (dict(optimizer="rmsprop"), "optimizer"),
        (dict(dtype="float16"), "dtype"),
    ]:
        with pytest.raises(ValueError, match=word):
            TrainConfig(**bad)
