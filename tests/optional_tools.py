"""Skip a test whose optional tool is missing, or fail it where CI promised to install it."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing(require_env: str, what: str, remedy: str) -> NoReturn:
    """Skip the running test because ``what`` is missing; fail it when ``require_env`` is set.

    ``.ci/run`` sets ``require_env`` after installing the tool, so a tool that vanished from
    CI fails the suite instead of silently skipping the tests that need it.
    """
    if os.environ.get(require_env):
        pytest.fail(f"{require_env} is set but {what} is missing ({remedy})")
    pytest.skip(f"{what} is missing ({remedy})")
