"""Structural rules checked by the test command: layering contract and lint."""

from __future__ import annotations

import ast
import importlib.util
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


#: The longest source file: past it a module holds more than one concern (it is what the
#: review of issue H found true of every file, and what kept it true).
MAX_SOURCE_LINES = 400


def test_no_source_file_is_longer_than_the_limit() -> None:
    sources = [*ROOT.glob("engine/**/*.py"), *ROOT.glob("gui/**/*.py"),
               *ROOT.glob("benchmarks/*.py"), ROOT / "main.py"]
    long = {str(path.relative_to(ROOT)): lines for path in sources
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_SOURCE_LINES}
    assert len(sources) > 100 and not long, long


# Qt must not be needed by the engine tests (they run where Qt cannot be installed). Proved
# without running them a second time, in three parts: engine code never imports Qt, not even
# inside a function (test_engine_imports_no_qt_or_gui); no engine test file imports Qt anywhere,
# nor does what it imports at module level from the rest of the repository (main.py, helpers
# in tests/, the Qt-free modules of gui/ such as gui.kit.choices), transitively with the
# packages holding them; and no engine test or fixture asks for a pytest-qt fixture.
QT_ROOTS = {"PySide6", "shiboken6", "pyqtgraph", "superqt", "pytestqt"}
_IMPORTERS = {"importlib.import_module", "__import__", "import_module", "pytest.importorskip"}


def _imported_modules(tree: ast.AST, module_level_only: bool = False) -> set[str]:
    """Dotted names of the modules ``tree`` imports: every import, or only those that run when
    the module is imported (not the ones inside a function)."""
    names: set[str] = set()
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in _IMPORTERS):
            names.add(node.args[0].value)
        if module_level_only and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef
                                            | ast.Lambda):
            continue
        pending.extend(ast.iter_child_nodes(node))
    return names


def _repository_files(module: str) -> list[Path]:
    """The files importing ``module`` runs in this repository: its packages' ``__init__.py``
    (outermost first) and its own file; none when it is not one of the repository's."""
    parts = module.split(".")
    files = []
    for depth in range(1, len(parts) + 1):
        path = ROOT.joinpath(*parts[:depth])
        files += [c for c in (path / "__init__.py", path.with_suffix(".py")) if c.is_file()]
    return files


def _qt_reached_from(path: Path) -> set[str]:
    """The Qt modules ``path`` imports anywhere or reaches through the repository modules it
    imports (their module-level imports, followed transitively)."""
    found, seen = set(), {path}
    pending = [(path, False)]
    while pending:
        current, module_level_only = pending.pop()
        for module in _imported_modules(ast.parse(current.read_text()), module_level_only):
            if module.split(".")[0] in QT_ROOTS:
                found.add(module)
            elif module.split(".")[0] == "engine":
                continue  # engine/ is lint-imports' (test_engine_imports_no_qt_or_gui)
            else:
                for file in _repository_files(module):
                    if file not in seen:
                        seen.add(file)
                        pending.append((file, True))
    return found


def _pytest_qt_fixtures() -> set[str]:
    """The fixtures pytest-qt defines, read from its plugin's source."""
    plugin = Path(importlib.util.find_spec("pytestqt.plugin").origin)
    return {node.name for node in ast.walk(ast.parse(plugin.read_text()))
            if isinstance(node, ast.FunctionDef)
            and any("pytest.fixture" in ast.unparse(d) for d in node.decorator_list)}


def _asked_fixtures(tree: ast.AST) -> set[str]:
    """Parameter names of every function, and every string (as in ``usefixtures("…")``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names |= {arg.arg for arg in (*node.args.posonlyargs, *node.args.args,
                                          *node.args.kwonlyargs)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return names


#: The engine tests and the conftest above them, which pytest imports to run them.
ENGINE_TESTS = [ROOT / "tests" / "conftest.py", *sorted((ROOT / "tests" / "engine").rglob("*.py"))]


def test_no_engine_test_reaches_qt_through_its_imports() -> None:
    offenders = {str(path.relative_to(ROOT)): _qt_reached_from(path) for path in ENGINE_TESTS}
    assert {path: sorted(found) for path, found in offenders.items() if found} == {}


def test_no_engine_test_asks_for_a_qt_fixture() -> None:
    qt_fixtures = _pytest_qt_fixtures()
    assert {"qtbot", "qapp"} <= qt_fixtures
    offenders = {str(path.relative_to(ROOT)): _asked_fixtures(ast.parse(path.read_text()))
                 & qt_fixtures for path in ENGINE_TESTS}
    assert {path: sorted(asked) for path, asked in offenders.items() if asked} == {}


def test_the_import_scan_follows_helpers_and_sees_imports_inside_functions(tmp_path) -> None:
    test_file = tmp_path / "test_x.py"
    test_file.write_text("import main\n"  # imports the window inside a function only
                         "def test_a():\n    from gui.kit import export\n"
                         "def test_b():\n    import importlib\n"
                         "    importlib.import_module('PySide6.QtCore')\n")
    # gui.kit.export is followed to the Qt it imports; PySide6.QtCore is named directly.
    assert {"PySide6.QtCore", "PySide6.QtWidgets", "pyqtgraph"} <= _qt_reached_from(test_file)
    test_file.write_text("import main\nfrom gui.kit.choices import FORMATS\n")
    assert _qt_reached_from(test_file) == set()  # gui's Qt-free modules (and packages) pass
    test_file.write_text("from tests.gui import pixels\n")  # a helper that imports Qt
    assert "PySide6.QtGui" in _qt_reached_from(test_file)
