"""The wheel holds every file the installed program reads (a wheel without them starts nowhere).

Builds the wheel the way ``pip wheel .`` does (isolated build with the build-system requirements
of pyproject.toml, fetched by pip from its cache or PyPI) from a copy of the source tree, and
reads the zip's file list. ``.ci/check_wheel.sh`` goes further: it installs the wheel into a
fresh venv and runs its ``--self-test`` from another folder.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from gui.kit.resources import RESOURCE_FILES, RESOURCE_PACKAGE

ROOT = Path(__file__).resolve().parents[1]
#: The wheel holds code, tour texts, one catalogue, a ~190 KB font subset and the ~200 KB sample
#: tensor file (measured ~1.0 MB with the readers of eleven model families and GGUF); a test
#: fixture, screenshot or font that slipped in would add megabytes.
MAX_WHEEL_BYTES = 1_400_000
#: Not copied to the build folder: build output, caches, environments, version control.
_NOT_SOURCE = shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info",
                                     "__pycache__", "*.pyc", ".*_cache", ".hypothesis", "out")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Build the wheel from a copy of the checkout (the build leaves build/ and egg-info)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet",
         "--disable-pip-version-check", "--wheel-dir", str(work / "dist"), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (work / "dist").glob("attention_scale_explorer-*.whl")
    return path


@pytest.fixture(scope="module")
def names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_wheel_ships_every_resource_the_program_reads(names):
    expected = {f"{RESOURCE_PACKAGE}/{name}" for name in RESOURCE_FILES}
    # The font's licence must travel with the font (SIL OFL 1.1), and the package marker.
    expected |= {f"{RESOURCE_PACKAGE}/fonts/OFL.txt", f"{RESOURCE_PACKAGE}/__init__.py"}
    assert sorted(expected - names) == []


def test_resource_list_names_every_shipped_data_file():
    """A new tour language, catalogue, font or sample in resources/ must be added to
    RESOURCE_FILES, so that the start-up check and the wheel test above cover it."""
    folder = ROOT / "resources"
    on_disk = {path.relative_to(folder).as_posix()
               for pattern in ("tour/*.json", "i18n/*.qm", "fonts/*.otf", "samples/*.npz")
               for path in folder.glob(pattern)}
    assert sorted(on_disk - set(RESOURCE_FILES)) == []
    assert all((folder / name).is_file() for name in RESOURCE_FILES)


def test_wheel_holds_every_module_and_no_generic_top_level_names(names):
    code = {path.relative_to(ROOT).as_posix()
            for package in ("engine", "gui") for path in (ROOT / package).rglob("*.py")}
    missing = sorted(code - names)
    assert missing == [], (
        f"{missing}: add the package to [tool.setuptools] packages in pyproject.toml")
    assert "main.py" in names
    top_level = {name.split("/")[0] for name in names if not name.endswith(".dist-info/RECORD")}
    assert "resources" not in top_level  # would clash with any other "resources" package


def test_wheel_is_small_and_leaves_out_what_the_program_does_not_read(wheel, names):
    assert wheel.stat().st_size < MAX_WHEEL_BYTES
    unread = sorted(name for name in names
                    if name.endswith((".png", ".ts")) or name.endswith("update_translations.py"))
    assert unread == []


def test_wheel_declares_both_entry_points(wheel):
    with zipfile.ZipFile(wheel) as archive:
        (entry_points,) = [name for name in archive.namelist()
                           if name.endswith(".dist-info/entry_points.txt")]
        text = archive.read(entry_points).decode("utf-8")
    assert "attention-explorer = main:main" in text.split("[gui_scripts]")[1]
    assert "attention-scale = main:cli_entry" in text.split("[console_scripts]")[1]
