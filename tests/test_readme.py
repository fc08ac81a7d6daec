"""The README's promises: its Python code blocks and its console commands run and print what it
says, and it names the system libraries Qt's X11 (xcb) platform plugin needs."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: Fenced blocks: (language, body) in order.
BLOCKS = [(m.group(1), m.group(2))
          for m in re.finditer(r"^```(\w*)\n(.*?)^```\s*$", README, re.MULTILINE | re.DOTALL)]
#: Each ```python block with the ```text block that follows it (its promised output), if any.
PYTHON = [(body, BLOCKS[i + 1][1] if i + 1 < len(BLOCKS) and BLOCKS[i + 1][0] == "text" else None)
          for i, (lang, body) in enumerate(BLOCKS) if lang == "python"]


def test_the_readme_has_a_python_block_with_its_output() -> None:
    assert any(expected is not None for _code, expected in PYTHON)


@pytest.mark.parametrize(("code", "expected"), PYTHON,
                         ids=[f"block{i}" for i in range(len(PYTHON))])
def test_readme_python_block_prints_what_the_readme_says(code: str, expected: str | None,
                                                         monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    if expected is not None:
        assert out.getvalue() == expected


#: Each ```console block: ``$ command`` lines, each followed by the output it prints.
CONSOLE = [body for lang, body in BLOCKS if lang == "console"]
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")


def _commands(block: str) -> list[tuple[str, str]]:
    runs: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            runs.append((line[2:].strip(), ""))
        else:
            assert runs, f"console block output before its command: {line!r}"
            runs[-1] = (runs[-1][0], runs[-1][1] + line)
    return runs


def _same_output(printed: str, promised: str) -> bool:
    """Equal text, numbers to 1e-9 relative (the last bits of a float may differ by BLAS)."""
    if _NUMBER.sub("#", printed) != _NUMBER.sub("#", promised):
        return False
    pairs = zip(_NUMBER.findall(printed), _NUMBER.findall(promised), strict=True)
    return all(math.isclose(float(a), float(b), rel_tol=1e-9) for a, b in pairs)


def test_the_readme_has_a_console_block() -> None:
    assert CONSOLE and all(_commands(block) for block in CONSOLE)


@pytest.mark.skipif(shutil.which("cut") is None, reason="the README's commands use cut")
@pytest.mark.parametrize("block", CONSOLE, ids=[f"console{i}" for i in range(len(CONSOLE))])
def test_readme_console_block_prints_what_the_readme_says(block: str) -> None:
    for command, promised in _commands(block):
        assert command.startswith("python main.py "), command
        line = shlex.quote(sys.executable) + command.removeprefix("python")
        done = subprocess.run(line, shell=True, cwd=ROOT, capture_output=True, text=True,
                              timeout=300, check=False)
        assert done.returncode == 0, done.stderr
        assert _same_output(done.stdout, promised), (command, done.stdout)


def _debian_package(soname: str) -> str:
    """``libxcb-icccm.so.4`` → ``libxcb-icccm4``; ``libxkbcommon-x11.so.0`` → ``…-x11-0``."""
    name, version = soname.split(".so.")
    name = name.lower()
    return f"{name}-{version}" if name[-1].isdigit() else f"{name}{version}"


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="the README's list is of Debian packages for Linux")
def test_readme_names_the_x11_libraries_of_the_qt_xcb_plugin() -> None:
    # On Linux the pinned PySide6-Essentials wheel ships the xcb plugin and Debian's libc-bin
    # ships ldd: their absence is a broken install, not a reason to skip.
    spec = importlib.util.find_spec("PySide6")
    assert spec is not None and spec.origin is not None, "PySide6 is not installed"
    assert shutil.which("ldd") is not None, "ldd is missing (Debian package libc-bin)"
    plugin = Path(spec.origin).parent / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    assert plugin.exists(), f"PySide6 has no xcb platform plugin at {plugin}"
    linked = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True,
                            check=True).stdout
    sonames = set(re.findall(r"^\s*(lib(?:xcb|xkb|X11)[\w-]*\.so\.\d+)", linked, re.MULTILINE))
    # Present wherever X11 runs, or already in the README's offscreen list.
    base = {"libxcb1", "libx11-6", "libxkbcommon0"}
    needed = {_debian_package(s) for s in sonames} - base
    assert "libxcb-cursor0" in needed  # the parsing found the plugin's libraries
    x11_paragraph = README[README.index("A real X11 display"):]
    x11_paragraph = x11_paragraph[: x11_paragraph.index("\n\n")]
    missing = sorted(p for p in needed if not re.search(rf"\b{re.escape(p)}\b", x11_paragraph))
    assert not missing, f"README's X11 package list lacks {missing}"
