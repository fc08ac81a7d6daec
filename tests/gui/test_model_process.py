"""The Model tab's child process runs the engine niced: when the window and the child want the
same core, the window gets it."""

from __future__ import annotations

import os

import pytest

from gui.model.process import CHILD_NICENESS, SweepProcess
from gui.model.task import ContinuationReady, ModelTask
from tests.engine.test_models import FIXTURES

TINY = FIXTURES / "tiny-gpt2"


@pytest.mark.skipif(not hasattr(os, "nice"), reason="niceness is POSIX")
def test_the_child_runs_at_a_lower_priority_than_the_window():
    task = ModelTask(path=str(TINY), text="The cat sat on the mat.", alphas=(1.0,),
                     kind="continue", chosen_alpha=2.0, new_tokens=2)
    process = SweepProcess()
    try:
        messages = list(process.run(1, task, lambda: False))
        pid = process.child_pid()
        assert pid is not None and pid != os.getpid()
        ours = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, ours + CHILD_NICENESS)
    finally:
        process.close()
    assert process.child_pid() is None
    # It still answered as before: the continuation under the chosen α.
    continuations = [m for m in messages if isinstance(m, ContinuationReady)]
    assert [(c.own, c.alpha) for c in continuations] == [(False, 2.0)]
    assert continuations[0].continuation is not None
