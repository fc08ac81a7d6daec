"""The training curves' CSV (``export``'s train_curves.csv) is a function of the run's seed, not
of how fast the training process went: snapshots come every ``snapshot_every`` steps and also on
a timer, so a loaded machine reports other steps than an idle one."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from gui.kit.export import export_view
from gui.train.state import TrainState
from tests.gui.conftest import HANG_MS
from tests.gui.train_runs import SMALL, shown_step

#: Long enough for several stalls while it trains.
RUN = SMALL.replace(steps=200)
#: How long each stall holds the training process: longer than the trainer's snapshot timer
#: (50 ms), so that the step after it is reported whatever its number.
STALL_S = 0.08


def _training_process() -> multiprocessing.process.BaseProcess | None:
    found = [p for p in multiprocessing.active_children() if p.name == "attention-training"]
    return found[0] if found else None


def _train(tab, qtbot, stall: bool) -> int:
    """Train :data:`RUN` to the end; with ``stall``, stop the training process for
    :data:`STALL_S` again and again (as a busy machine would). Returns the stalls that came
    while the run was between its first and last step."""
    assert tab.start_training()
    stalls = 0
    while stall and tab.controller.state() is not TrainState.IDLE:
        child = _training_process()
        in_run = 0 < shown_step(tab) < RUN.steps
        if child is not None and child.pid is not None:
            os.kill(child.pid, signal.SIGSTOP)
            try:
                time.sleep(STALL_S)
            finally:
                os.kill(child.pid, signal.SIGCONT)
            stalls += in_run
        qtbot.wait(20)  # the GUI takes the snapshots that came meanwhile
    assert tab.wait_until_idle(HANG_MS)
    assert shown_step(tab) == RUN.steps
    return stalls


def _csv(tab, folder: Path) -> str:
    (path,) = export_view(tab.curves, folder, 400, 300, formats=("csv",))
    return path.read_text(encoding="utf-8")


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP / SIGCONT")
def test_the_curves_csv_is_the_same_when_the_training_process_stalls(make_train_tab, qtbot,
                                                                       tmp_path):
    tab = make_train_tab(RUN)
    _train(tab, qtbot, stall=False)
    steady = _csv(tab, tmp_path / "steady")
    stalls = _train(tab, qtbot, stall=True)
    assert stalls >= 3, "the stalls did not come while the run trained"
    assert _csv(tab, tmp_path / "stalled") == steady
    # Every step's gradient norm, as every step's training loss, per rule.
    rows = steady.splitlines()[1:]
    for series in ("train_loss", "grad_norm"):
        assert sum(f",{series}," in row for row in rows) == len(RUN.rules) * RUN.steps
