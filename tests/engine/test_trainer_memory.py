"""The trainer's memory guard and its stop points inside a step (no Qt)."""

from __future__ import annotations

import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

import engine
from engine.analysis.experiment import check_snapshot_memory
from engine.config import AttentionConfig, ScalingRule
from engine.config.train import TrainConfig
from engine.core.memory import MemoryBudgetError
from engine.training.session import TrainingSession, check_training_memory, estimate_training_bytes
from engine.training.trainer import iter_training

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "config",
    [
        TrainConfig(d_k=64, heads=1),
        TrainConfig(d_k=32, heads=4, n=64, vocab=64),
        TrainConfig(task="copy_back", d_k=16, heads=2, n=48, rules=("none", "sqrt")),
        TrainConfig(d_k=32, optimizer="sgd", batch=16, eval_size=300),
    ],
    ids=["default", "four-heads-long", "copy-back", "sgd"],
)
def test_estimate_bounds_the_measured_peak(config):
    tracemalloc.start()
    try:
        session = TrainingSession(config)
        session.train_step()
        session.train_step()
        session.evaluate()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    estimate = estimate_training_bytes(config)
    # An upper bound, but not so loose that it refuses what would fit.
    assert peak <= estimate <= 3 * peak, (peak, estimate)


def test_too_large_a_model_is_refused_before_allocating():
    config = TrainConfig(d_k=1024, heads=16)
    with pytest.raises(MemoryBudgetError) as info:
        TrainingSession(config)
    text = str(info.value)
    assert "d_model 16384" in text and "d_k 1024" in text and "memory budget" in text
    check_training_memory(config, budget=estimate_training_bytes(config))  # fits exactly


def test_budget_follows_the_engine_setting():
    config = TrainConfig(d_k=256, heads=4)
    needed = estimate_training_bytes(config)
    old = engine.get_memory_budget()
    try:
        engine.set_memory_budget(needed - 1)
        with pytest.raises(MemoryBudgetError):
            check_training_memory(config)
        engine.set_memory_budget(needed)
        check_training_memory(config)
    finally:
        engine.set_memory_budget(old)


def test_cli_refuses_a_model_too_large_without_a_traceback():
    for command in ("train", "lr-sweep"):
        done = subprocess.run(
            [sys.executable, str(ROOT / "main.py"), command, "--d-k", "1024", "--heads", "16",
             "--steps", "2", "--quiet"],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert "memory budget" in done.stderr and "d_k 1024" in done.stderr


def test_a_step_stops_between_rules():
    session = TrainingSession(TrainConfig(d_k=16, steps=5))
    calls = []

    def stop_after_first_rule() -> bool:
        calls.append(1)
        return len(calls) > 1

    assert not session.train_step(stop_after_first_rule)
    assert len(calls) == 2  # checked before the first rule (go) and the second (stop)
    assert session.evaluate(lambda: False)
    assert not session.evaluate(lambda: True)


def test_cancel_set_during_a_step_ends_the_run_at_the_next_rule():
    cancel = threading.Event()
    config = TrainConfig(d_k=16, steps=1000)
    items = iter_training(config, cancel)
    first = next(items)
    assert first.step == 0
    cancel.set()
    assert list(items) == []


def test_snapshot_memory_check_matches_the_experiment():
    fits = AttentionConfig(n_tokens=2048, heads=1, d_k=64, d_model=64)
    check_snapshot_memory(fits, tuple(ScalingRule))
    too_big = AttentionConfig(n_tokens=4096, heads=1, d_k=64, d_model=64)
    with pytest.raises(MemoryBudgetError, match="4096×4096"):
        check_snapshot_memory(too_big, tuple(ScalingRule))
