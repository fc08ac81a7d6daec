"""Shared pytest setup: make the repository importable and keep Qt offscreen."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Tests never need a display; set before any test module can import Qt.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# A shell without job control (`cmd &` in a script) starts its background commands with
# SIGINT ignored, and every child inherits that: the Ctrl-C tests, which send a real SIGINT
# to a child, then saw it run to the end (exit 0, not 130). Their children must get it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from tests.run_failures import WORKER_OUTPUT_KEY, fail_run  # noqa: E402  (needs ROOT on the path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (pyproject's addopts): one per core for the suite, none for the
    tests of one file (they run in this process, without the workers' start-up)."""
    files = {str(arg).split("::")[0] for arg in config.args}
    if len(files) == 1 and (config.invocation_params.dir / files.pop()).is_file():
        return 0
    if hasattr(os, "sched_getaffinity"):  # Linux: the cores this process may use
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


#: Test files that share a per-process cache (tests/engine/tour_results.py): one worker runs
#: them, so that the cache is filled once.
ON_ONE_WORKER = ("tests/engine/test_tour_claims.py", "tests/engine/test_tour_labs.py",
                 "tests/gui/test_tour.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` (pyproject's addopts), with the files of :data:`ON_ONE_WORKER` as one
    unit of work. (pytest-xdist's own ``xdist_group`` mark has no effect on pytest 9.2's
    node ids.)"""
    if config.getvalue("dist") != "loadfile":
        return None
    assert all((ROOT / name).is_file() for name in ON_ONE_WORKER), ON_ONE_WORKER
    from xdist.scheduler import LoadFileScheduling

    class SharedCachesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return ON_ONE_WORKER[0] if path in ON_ONE_WORKER else path

    return SharedCachesTogether(config, log)


_FROM_WORKERS: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """Keep what a pytest-xdist worker found after its last test (tests/run_failures.py)."""
    _FROM_WORKERS.extend(getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY, []))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run for what the workers found after their last tests."""
    for message in _FROM_WORKERS:
        fail_run(session, message)
