"""Structural rules checked by the test command: layering contract and lint."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    """Find a console script next to the running interpreter (the venv), else on PATH."""
    candidate = Path(sys.executable).with_name(name)
    if candidate.exists():
        return str(candidate)
    found = shutil.which(name)
    assert found, f"{name} is not installed; install the test extra: pip install -e '.[test]'"
    return found


def test_engine_imports_no_qt_or_gui() -> None:
    result = subprocess.run(
        [_tool("lint-imports"), "--no-cache"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout


def test_ruff_clean() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


# Run the engine suite in a fresh interpreter where importing Qt fails, as on a machine
# without Qt; pytest-qt is disabled there because it would import Qt itself.
_BLOCK_QT_AND_RUN_ENGINE_TESTS = """
import importlib.abc, sys
class BlockQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"PySide6", "shiboken6", "pyqtgraph", "superqt", "gui"}:
            raise ImportError(f"{name} is blocked: engine tests must run without Qt")
        return None
sys.meta_path.insert(0, BlockQt())
import pytest
sys.exit(pytest.main(["tests/engine", "-q", "-p", "no:pytest-qt", "-p", "no:cacheprovider",
                      "-o", "qt_api=", "-o", "qt_log_level_fail=", "-x"]))
"""


def test_engine_tests_pass_without_qt() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_QT_AND_RUN_ENGINE_TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
