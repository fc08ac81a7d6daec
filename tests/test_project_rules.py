"""Structural rules checked by the test command: layering contract and lint."""

from __future__ import annotations

import ast
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


# Qt must not be needed by the engine tests. Running all of them a second time without Qt took
# two of the suite's fifteen minutes, so the rule is proved in three cheaper parts that together
# cover what that run covered: the import contract (test_engine_imports_no_qt_or_gui: engine
# code never imports Qt, not even inside a function); every engine test collected and every
# fixture set up in an interpreter where importing Qt fails, with pytest-qt disabled (a module,
# conftest or fixture that needs Qt, or a test asking for qtbot, fails there); and no engine test
# importing Qt in its body (the one place the set-up run does not reach).
BLOCKED_ROOTS = {"PySide6", "shiboken6", "pyqtgraph", "superqt", "gui", "pytestqt"}

_BLOCK_QT_AND_SET_UP_ENGINE_TESTS = f"""
import importlib.abc, sys
class BlockQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {sorted(BLOCKED_ROOTS)!r}:
            raise ImportError(f"{{name}} is blocked: engine tests must run without Qt")
        return None
sys.meta_path.insert(0, BlockQt())
import pytest
sys.exit(pytest.main(["tests/engine", "-q", "-p", "no:pytest-qt", "-p", "no:cacheprovider",
                      "-o", "qt_api=", "-o", "qt_log_level_fail=", "--setup-only"]))
"""


def test_engine_tests_are_collected_and_set_up_without_qt() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _BLOCK_QT_AND_SET_UP_ENGINE_TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "tests/engine/test_models.py::" in result.stdout  # the tests were really there


def _imported_roots(tree: ast.AST) -> set[str]:
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in {"importlib.import_module", "__import__",
                                             "import_module", "pytest.importorskip"}):
            roots.add(node.args[0].value.split(".")[0])
    return roots


def test_no_engine_test_imports_qt_anywhere() -> None:
    offenders = {}
    for path in sorted((ROOT / "tests" / "engine").rglob("*.py")):
        offenders[str(path.relative_to(ROOT))] = sorted(
            _imported_roots(ast.parse(path.read_text())) & BLOCKED_ROOTS)
    assert {path: roots for path, roots in offenders.items() if roots} == {}


def test_the_import_scan_sees_imports_inside_functions() -> None:
    source = ("def test_a():\n    from gui.kit import export\n"
              "def test_b():\n    import importlib\n"
              "    importlib.import_module('PySide6.QtCore')\n")
    assert _imported_roots(ast.parse(source)) & BLOCKED_ROOTS == {"gui", "PySide6"}
