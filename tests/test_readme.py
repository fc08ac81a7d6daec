"""The README's promises, and those of the pages it links (docs/, benchmarks/README.md): their
Python code blocks and console commands run and print what they say, their links resolve, the
README's set-up commands are the ones CI runs, and it names the system libraries Qt's X11 (xcb)
platform plugin needs."""

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
#: The README and the pages it sends readers to for the details.
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             ROOT / "benchmarks" / "README.md"]
#: The README's limit: a user's page; the details live in DOCUMENTS.
README_MAX_LINES = 275


def _blocks(path: Path) -> list[tuple[str, str]]:
    """Fenced blocks of ``path``: (language, body) in order."""
    text = path.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```\s*$", text, re.MULTILINE | re.DOTALL)]


def _python_blocks(path: Path) -> list[tuple[str, str | None]]:
    """Each ```python block with the ```text block that follows it (its promised output)."""
    blocks = _blocks(path)
    return [(body, blocks[i + 1][1] if i + 1 < len(blocks) and blocks[i + 1][0] == "text"
             else None) for i, (lang, body) in enumerate(blocks) if lang == "python"]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


PYTHON = [(_name(path), code, expected) for path in DOCUMENTS
          for code, expected in _python_blocks(path)]


def test_the_readme_has_a_python_block_with_its_output() -> None:
    assert any(name == "README.md" and expected is not None for name, _code, expected in PYTHON)


@pytest.mark.parametrize(("name", "code", "expected"), PYTHON,
                         ids=[f"{name}-block{i}" for i, (name, _c, _e) in enumerate(PYTHON)])
def test_python_block_prints_what_the_page_says(name: str, code: str, expected: str | None,
                                                monkeypatch) -> None:
    from engine.models import SAMPLE_MODELS
    from tests.engine.test_models import sample_model_path

    for sample in SAMPLE_MODELS:  # a block on a sample model skips when it is not installed
        if sample.package in code:
            sample_model_path(sample.package)
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, name, "exec"), {"__name__": "__readme__"})
    if expected is not None:
        assert out.getvalue() == expected


#: Each ```console block: ``$ command`` lines, each followed by the output it prints.
CONSOLE = [(_name(path), body) for path in DOCUMENTS
           for lang, body in _blocks(path) if lang == "console"]
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
    assert any(name == "README.md" for name, _block in CONSOLE)
    assert all(_commands(block) for _name, block in CONSOLE)


def test_the_readme_shows_inspect_on_the_shipped_sample() -> None:
    # The sample listing is inspect's own output (compared below), not a copy that can age.
    commands = [command for name, block in CONSOLE if name == "README.md"
                for command, _out in _commands(block)]
    assert any(c.startswith("python main.py inspect resources/samples/trained_heads.npz")
               for c in commands)


@pytest.mark.skipif(shutil.which("cut") is None or shutil.which("tail") is None,
                    reason="the README's commands use cut and tail")
@pytest.mark.parametrize(("name", "block"), CONSOLE,
                         ids=[f"{name}-console{i}" for i, (name, _b) in enumerate(CONSOLE)])
def test_console_block_prints_what_the_page_says(name: str, block: str) -> None:
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


def test_the_readme_is_a_users_page() -> None:
    lines = README.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    # The first two commands: start the app, run the tests (each with its set-up).
    commands = re.findall(r"^`(python3 -m venv .*)`$", "\n".join(lines[:8]), re.MULTILINE)
    assert len(commands) == 2
    assert commands[0].endswith(".venv/bin/python main.py")
    assert commands[1].endswith(".venv/bin/python -m pytest")
    # The suite's time is stated where its command is.
    assert re.search(r"the whole suite takes [^)]*minutes", "\n".join(lines[:8]))


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    command = re.findall(r"^`(python3 -m venv .*)`$", README, re.MULTILINE)[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().splitlines()
    assert ci[-1] == command


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("path", DOCUMENTS, ids=_name)
def test_every_relative_link_resolves(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"\w+://", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        assert linked.exists(), f"{_name(path)} links {target}: no such file"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", linked.read_text(encoding="utf-8"), re.MULTILINE)
            assert anchor in {_slug(h) for h in headings}, f"{_name(path)} links {target}"
