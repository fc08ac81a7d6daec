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


def test_engine_tests_do_not_import_qt() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests" / "engine").glob("*.py")
        if any(word in path.read_text(encoding="utf-8") for word in ("PySide6", "pyqtgraph"))
    ]
    assert offenders == []
