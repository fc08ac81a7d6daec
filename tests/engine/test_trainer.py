"""Side-by-side training: same init and batches, determinism, learning, divergence, snapshots."""

from __future__ import annotations

import dataclasses
import io
import math
import threading

import numpy as np
import pytest

from engine.config import ScalingRule, config_from_dict
from engine.config.train import TrainConfig
from engine.training import trainer
from engine.training.lr_results import LR_SWEEP_CSV_COLUMNS, write_lr_sweep_csv
from engine.training.lr_sweep import iter_lr_sweep, run_lr_sweep
from engine.training.session import TrainingSession
from engine.training.trainer import iter_training, run_training

# Small enough to train in about a second on a busy 2-core machine.
SMALL = TrainConfig(n=8, vocab=16, d_k=16, batch=32, steps=150, eval_size=128, lr=0.01)


def test_all_rules_start_from_the_same_weights():
    session = TrainingSession(SMALL.replace(rules=("none", "sqrt", "linear", "qk_norm")))
    flats = [run.params.flat for run in session.runs.values()]
    for flat in flats[1:]:
        assert flat is not flats[0]
        assert np.array_equal(flat, flats[0])


def test_rules_see_the_same_batches():
    # T = √d_k is exactly the 1/√d_k rule: from the same weights and batches the two runs must
    # produce identical losses at every step; a different batch stream would break this.
    cfg = SMALL.replace(steps=40, rules=("none", "sqrt", "temperature"))
    last = run_training(cfg)
    sqrt, temp = last.rules[ScalingRule.SQRT], last.rules[ScalingRule.TEMPERATURE]
    assert np.array_equal(sqrt.loss_history, temp.loss_history)
    # ... and which other rules run alongside does not change a rule's trajectory.
    alone = run_training(cfg.replace(rules=("sqrt",))).rules[ScalingRule.SQRT]
    assert np.array_equal(alone.loss_history, sqrt.loss_history)
    assert not np.array_equal(last.rules[ScalingRule.NONE].loss_history, sqrt.loss_history)


def test_deterministic_for_a_seed_and_different_across_seeds():
    cfg = SMALL.replace(steps=30)
    a, b = run_training(cfg), run_training(cfg)
    c = run_training(cfg.replace(seed=1))
    for rule in cfg.rules:
        assert np.array_equal(a.rules[rule].loss_history, b.rules[rule].loss_history)
        assert a.rules[rule].eval_loss == b.rules[rule].eval_loss
        assert np.array_equal(a.rules[rule].probe_weights, b.rules[rule].probe_weights)
        assert not np.array_equal(a.rules[rule].loss_history, c.rules[rule].loss_history)


def test_short_run_learns_retrieval():
    last = run_training(SMALL.replace(rules=("sqrt",)))
    st = last.rules[ScalingRule.SQRT]
    assert st.diverged_at is None
    # Chance is 1/16 = 0.0625; the loss starts near ln 16 ≈ 2.77.
    assert st.eval_accuracy > 0.7
    assert st.eval_loss < 0.3 * st.initial_eval_loss
    # Sharp attention on the matching key: entropy far below ln(9) ≈ 2.2 nats.
    assert st.entropy[0] < 1.0
    assert st.probe_weights.shape == (1, 1, 9)


def test_copy_back_learns_with_causal_mask():
    cfg = TrainConfig(task="copy_back", n=8, vocab=8, offset=2, d_k=16, batch=32, steps=150,
                      eval_size=64, lr=0.02, rules=("sqrt",))
    st = run_training(cfg).rules[ScalingRule.SQRT]
    assert st.eval_accuracy > 0.5  # chance 1/8
    w = st.probe_weights[0]  # rows = target positions 2..7
    assert w.shape == (6, 8)
    for r, pos in enumerate(range(2, 8)):
        assert np.all(w[r, pos + 1 :] == 0)  # causal
    assert np.mean(np.argmax(w, axis=1) == np.arange(6)) > 0.5  # attends to t − 2


def test_huge_learning_rate_diverges():
    cfg = SMALL.replace(lr=3.0, steps=60)
    snaps = list(iter_training(cfg))
    last = snaps[-1]
    assert last.done and last.step < 60  # stopped once every rule had diverged
    for st in last.rules.values():
        assert st.diverged_at is not None and 1 <= st.diverged_at < 60
        assert st.diverge_reason
        assert np.all(np.isnan(st.loss_history[st.diverged_at :]))
        assert np.all(np.isnan(st.grad_norm_history[st.diverged_at :]))
        assert st.loss_history.size == st.grad_norm_history.size == last.step


def test_a_diverged_rule_stops_and_the_others_continue():
    session = TrainingSession(SMALL.replace(steps=30, rules=("none", "sqrt")))
    session.train_step()
    session.runs[ScalingRule.NONE].params["w_q"][0, 0] = np.inf  # a blown-up weight
    while session.step < 30:
        session.train_step()
    none = session.state(session.runs[ScalingRule.NONE])
    sqrt = session.state(session.runs[ScalingRule.SQRT])
    # The attention's softmax finds the NaN logits before the loss does.
    assert none.diverged_at == 2 and "NaN" in none.diverge_reason
    assert np.all(np.isnan(none.loss_history[2:]))
    assert sqrt.diverged_at is None and np.all(np.isfinite(sqrt.loss_history))
    assert sqrt.loss_history.size == 30


def test_divergence_marks_non_finite_runs_even_with_sgd():
    last = run_training(SMALL.replace(lr=100.0, optimizer="sgd", steps=20))
    assert all(st.diverged_at is not None for st in last.rules.values())
    assert last.done and last.step < 20  # stopped once every rule had diverged


def test_snapshots_are_immutable_and_complete():
    snaps = list(iter_training(SMALL.replace(steps=25, snapshot_every=10)))
    assert snaps[0].step == 0 and not snaps[0].done
    assert snaps[-1].done and snaps[-1].step == 25
    steps = [s.step for s in snaps]
    assert steps == sorted(steps)
    assert {10, 20} <= set(steps)
    snap = snaps[-1]
    st = snap.rules[ScalingRule.SQRT]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.step = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        st.train_loss = 0.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        snap.rules[ScalingRule.NONE] = st  # type: ignore[index]
    with pytest.raises(TypeError):
        st.grad_norms["W_Q"] = 0.0  # type: ignore[index]
    for arr in (st.probe_weights, st.loss_history, st.grad_norm_history, st.entropy_history,
                snap.probe_ids):
        with pytest.raises(ValueError):
            arr[...] = 0
    # Earlier snapshots are not changed by later training.
    assert snaps[1].rules[ScalingRule.SQRT].loss_history.size == snaps[1].step
    assert set(st.grad_norms) == {"embed", "pos", "W_Q", "W_K", "W_V", "W_O", "W_U", "b_U"}
    assert all(v > 0 for v in st.grad_norms.values())
    assert len(st.entropy) == 1 and st.max_abs_logit > 0
    assert st.eval_steps[0] == 0 and st.eval_steps[-1] == 25
    assert st.entropy_history.shape == (len(st.eval_steps), 1)
    assert snap.steps_per_s > 0


def test_every_steps_gradient_norm_is_kept_whatever_the_snapshot_cadence(monkeypatch):
    # Snapshots also come on a timer, so which steps they report depends on the machine's
    # speed; the gradient-norm record (the curves and their CSV) must not.
    cfg = SMALL.replace(steps=30, rules=("none", "sqrt"))
    monkeypatch.setattr(trainer, "SNAPSHOT_INTERVAL_S", math.inf)  # only every 10 steps
    sparse = list(iter_training(cfg))
    monkeypatch.setattr(trainer, "SNAPSHOT_INTERVAL_S", 0.0)  # a very slow machine: every step
    dense = list(iter_training(cfg))
    assert [s.step for s in sparse] == [0, 10, 20, 30]
    assert [s.step for s in dense] == list(range(31))
    for rule in cfg.rules:
        history = dense[-1].rules[rule].grad_norm_history
        assert history.size == 30 and np.all(history > 0)
        # Each step's entry is the norm that step's own snapshot reported.
        assert history.tolist() == [s.rules[rule].grad_norm for s in dense[1:]]
        np.testing.assert_array_equal(sparse[-1].rules[rule].grad_norm_history, history)


def test_cancel_stops_between_snapshots():
    cancel = threading.Event()
    gen = iter_training(SMALL.replace(steps=100_000), cancel)
    first = next(gen)
    second = next(gen)
    assert second.step > first.step
    cancel.set()
    with pytest.raises(StopIteration):
        next(gen)
    # A pre-set event yields nothing at all.
    assert list(iter_training(SMALL, cancel)) == []


def test_multi_head_and_json_round_trip():
    cfg = SMALL.replace(heads=2, d_k=8, steps=5, rules=("qk_norm", "softcap"))
    assert config_from_dict(cfg.to_dict()) == cfg
    last = run_training(cfg)
    st = last.rules[ScalingRule.QK_NORM]
    assert len(st.entropy) == 2 and st.probe_weights.shape == (2, 1, 9)


def test_lr_sweep_summary_and_csv():
    cfg = SMALL.replace(steps=100, rules=("sqrt", "none"))
    items = list(iter_lr_sweep(cfg, [3.0, 0.02], seeds=2))
    assert all(it.result is None for it in items[:-1])
    result = items[-1].result
    assert result is not None and result.lrs == (0.02, 3.0) and result.seeds == (0, 1)
    assert len(result.runs) == 2 * 2 * 2
    big = result.row("sqrt", 3.0)
    assert big.diverged == 2 and not big.stable and np.isnan(big.final_loss_mean)
    small = result.row("sqrt", 0.02)
    assert small.diverged == 0 and small.stable
    assert small.final_loss_mean < 0.5 * small.initial_loss_mean
    assert result.largest_stable_lr[ScalingRule.SQRT] == 0.02
    buf = io.StringIO()
    write_lr_sweep_csv(result, buf)
    lines = buf.getvalue().splitlines()
    assert lines[0].split(",") == list(LR_SWEEP_CSV_COLUMNS)
    assert len(lines) == 1 + 2 * 2
    # The sweep reuses the trainer: same numbers as a direct run with that lr and seed.
    direct = run_training(cfg.replace(lr=0.02, seed=1)).rules[ScalingRule.SQRT]
    run = next(r for r in result.runs if r.rule is ScalingRule.SQRT and r.lr == 0.02
               and r.seed == 1)
    assert run.final_loss == direct.eval_loss


def test_lr_sweep_validation_and_cancel():
    with pytest.raises(ValueError, match="learning rates"):
        run_lr_sweep(SMALL, [0.01, -1.0], 1)
    with pytest.raises(ValueError, match="seeds"):
        run_lr_sweep(SMALL, [0.01], 0)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(RuntimeError, match="cancelled"):
        run_lr_sweep(SMALL, [0.01], 1, cancel)


def test_clipping_bounds_the_update_and_reports_unclipped_norms():
    cfg = SMALL.replace(steps=3, rules=("sqrt",), optimizer="sgd", lr=0.1)
    free = TrainingSession(cfg)
    clipped = TrainingSession(cfg.replace(clip_norm=1e-3))
    before = free.runs[ScalingRule.SQRT].params.flat.copy()
    free.train_step()
    clipped.train_step()
    a, b = free.runs[ScalingRule.SQRT], clipped.runs[ScalingRule.SQRT]
    assert a.grad_norm == b.grad_norm > 1e-3  # reported before clipping
    moved = np.linalg.norm(b.params.flat.astype(np.float64) - before)
    assert moved == pytest.approx(0.1 * 1e-3, rel=1e-3)
    na = free.state(a).grad_norms
    nb = clipped.state(b).grad_norms
    assert nb["W_Q"] == pytest.approx(na["W_Q"], rel=1e-5)


def test_failed_initial_evaluation_marks_the_rule_diverged(monkeypatch):
    import engine.training.session as session

    real = session.evaluate

    def failing(params, rule, pb):
        if rule.kind is ScalingRule.NONE:
            raise ValueError("logits contain NaN or +inf")
        return real(params, rule, pb)

    monkeypatch.setattr(session, "evaluate", failing)
    last = run_training(SMALL.replace(rules=("none", "sqrt"), steps=5))
    none, sqrt = last.rules[ScalingRule.NONE], last.rules[ScalingRule.SQRT]
    assert none.diverged_at == 0 and "held-out" in none.diverge_reason
    assert np.isnan(none.eval_loss) and none.loss_history.size == 5
    assert sqrt.diverged_at is None and last.done
