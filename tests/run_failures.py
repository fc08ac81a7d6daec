"""Fail the whole run for a problem found after the last test, which no single test owns.

Under pytest-xdist each worker finds its own and hands it to the controller in its
``workeroutput``; the controller reports it (tests/conftest.py).
"""

from __future__ import annotations

import pytest

#: The ``workeroutput`` entry that carries a worker's messages to the controller.
WORKER_OUTPUT_KEY = "run_failures"


def fail_run(session: pytest.Session, message: str) -> None:
    """Report ``message`` and make the run fail (from a pytest-xdist worker: via its controller)."""
    worker_output = getattr(session.config, "workeroutput", None)
    if worker_output is not None:
        worker_output.setdefault(WORKER_OUTPUT_KEY, []).append(message)
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message, red=True)
    else:
        print(message)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
