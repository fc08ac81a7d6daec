"""TrainingProcess: jobs in a child process, with Stop, Pause, errors and export (no Qt)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from engine.config.train import TrainConfig
from engine.core.memory import MemoryBudgetError
from engine.io.tensors import load_tensors
from engine.training.process import (
    TrainingProcess,
    export_job,
    lr_sweep_job,
    train_job,
)
from engine.training.trainer import iter_training

SMALL = TrainConfig(rules=("none", "sqrt"), d_k=8, d_model=16, n=6, vocab=8, batch=16,
                    steps=40, lr=0.01, eval_size=32, snapshot_every=5)
LONG = SMALL.replace(steps=1_000_000)
ROOT = Path(__file__).resolve().parents[2]

# A parent that pauses a long run, prints its child's pid, and waits to be killed.
_PAUSING_PARENT = """
import sys, threading, time
from engine.config.train import TrainConfig
from engine.training.process import TrainingProcess, train_job
if __name__ == "__main__":
    training = TrainingProcess()
    cancel, running = threading.Event(), threading.Event()
    running.set()
    items = training.run(train_job(TrainConfig(d_k=8, d_model=16, steps=10**6)), cancel, running)
    next(items)
    running.clear()
    # The generator passes the pause on when it is next resumed. Whether the child sends one
    # more item first depends on scheduling (a child descheduled right after its first send
    # sees the pause and sends nothing more), so resume it in a thread that may block, and
    # wait for the pause to have been passed on instead of for an item.
    threading.Thread(target=next, args=(items, None), daemon=True).start()
    deadline = time.monotonic() + 60
    while not training._paused.value and time.monotonic() < deadline:
        time.sleep(0.01)
    print(training.pid, flush=True)
    time.sleep(60)
"""


@pytest.fixture
def process():
    training = TrainingProcess()
    yield training
    training.close()
    assert not training.is_alive()


def _events() -> tuple[threading.Event, threading.Event]:
    running = threading.Event()
    running.set()
    return threading.Event(), running


def test_the_child_trains_exactly_what_the_engine_trains_here(process):
    snapshots = list(process.run(train_job(SMALL), *_events()))
    here = list(iter_training(SMALL))
    assert snapshots[-1].step == here[-1].step == SMALL.steps
    for rule, state in here[-1].rules.items():
        child = snapshots[-1].rules[rule]
        np.testing.assert_array_equal(child.loss_history, state.loss_history)
        assert child.eval_loss == state.eval_loss
    assert type(snapshots[-1].rules) is type(here[-1].rules)  # still a read-only mapping


def test_stop_ends_a_long_run(process):
    """A run of a million steps ends only because of the Stop (a hang fails the test)."""
    cancel, running = _events()
    items = process.run(train_job(LONG), cancel, running)
    first = next(items)
    cancel.set()
    rest: list = []
    reader = threading.Thread(target=lambda: rest.extend(items), daemon=True)
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), "the run went on after Stop"
    assert all(first.step <= snap.step < LONG.steps for snap in rest)


def test_pause_holds_the_child_and_resume_goes_on(process):
    cancel, running = _events()
    items = process.run(train_job(LONG), cancel, running)
    received = [next(items)]
    reader = threading.Thread(target=lambda: received.extend(items), daemon=True)
    running.clear()
    reader.start()
    time.sleep(0.5)  # the items already on their way arrive; then the child waits
    paused_at = len(received)
    time.sleep(0.4)
    assert len(received) == paused_at  # nothing new while paused
    running.set()
    deadline = time.perf_counter() + 5
    while len(received) == paused_at and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert len(received) > paused_at and received[-1].step > received[paused_at - 1].step
    cancel.set()
    reader.join(5)
    assert not reader.is_alive()


def test_a_failing_job_raises_its_error_here_and_the_child_serves_on(process):
    too_large = TrainConfig(d_k=1024, heads=16)
    with pytest.raises(MemoryBudgetError, match="memory budget"):
        list(process.run(train_job(too_large), *_events()))
    assert len(list(process.run(train_job(SMALL), *_events()))) > 1


def test_export_writes_the_last_trained_session(process, tmp_path):
    with pytest.raises(LookupError):
        list(process.run(export_job(str(tmp_path / "none.safetensors"), ""), *_events()))
    list(process.run(train_job(SMALL), *_events()))
    path = tmp_path / "heads.safetensors"
    (written,) = process.run(export_job(str(path), "test"), *_events())
    assert written == str(path)
    assert load_tensors(path).heads >= 1  # a readable tensor file of the trained heads
    with pytest.raises(OSError):
        list(process.run(export_job(str(tmp_path / "no" / "such" / "dir.npz"), ""),
                         *_events()))


def test_a_learning_rate_sweep_runs_in_the_child(process):
    items = list(process.run(lr_sweep_job(SMALL.replace(steps=10), (0.001, 0.1), 1),
                             *_events()))
    assert items and float(items[-1].fraction) == 1.0


def test_a_reader_that_stops_early_leaves_the_next_job_clean(process):
    items = process.run(train_job(LONG), *_events())
    next(items)
    items.close()  # stops the job and waits for its end
    snapshots = list(process.run(train_job(SMALL), *_events()))
    assert snapshots[-1].step == SMALL.steps and snapshots[0].step == 0


def test_a_child_that_dies_fails_the_job_and_a_new_child_takes_the_next(process):
    items = process.run(train_job(LONG), *_events())
    next(items)
    os.kill(process.pid, 9)
    with pytest.raises(ChildProcessError,
                       match="ended by SIGKILL, often the system running out of memory"):
        list(items)
    assert list(process.run(train_job(SMALL), *_events()))[-1].step == SMALL.steps


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_paused_child_ends_when_its_parent_is_killed(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(_PAUSING_PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    child = int(parent.stdout.readline())
    assert _running(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)
