"""A missing or damaged resource file ends the program with a message and exit status 1.

Each case copies ``resources/`` to a temporary folder, damages one file, points the program at
the copy (``$ATTENTION_EXPLORER_RESOURCES``) and starts a real entry point in a subprocess. A bad
``tour.json`` raises inside the window's constructor after its worker threads started: unless the
window stops them first, the process aborts with "QThread: Destroyed while thread … is still
running" (exit 134).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gui.kit import resources
from gui.kit.resources import RESOURCE_PACKAGE, RESOURCES_ENV, resource_dir
from gui.kit.settings import SETTINGS_DIR_ENV

ROOT = Path(__file__).resolve().parents[2]


def _corrupt_json(folder: Path) -> str:
    (folder / "tour" / "tour.json").write_text('{"steps": [', encoding="utf-8")
    return "tour.json"


def _invalid_steps(folder: Path) -> str:
    (folder / "tour" / "tour.json").write_text(json.dumps({"steps": 3}), encoding="utf-8")
    return "tour.json"


def _missing_tour(folder: Path) -> str:
    (folder / "tour" / "tour.json").unlink()
    return "tour.json"


def _damaged_font(folder: Path) -> str:
    font = folder / "fonts" / "ExplorerNotoSansSC-Subset.otf"
    font.write_bytes(font.read_bytes()[:1000])  # a truncated download
    return font.name


def _damaged_catalogue(folder: Path) -> str:
    (folder / "i18n" / "explorer_zh_CN.qm").write_bytes(b"not a catalogue\n")
    return "explorer_zh_CN.qm"


@pytest.mark.parametrize(
    ("damage", "command"),
    [
        # The window's constructor reads the tour after its worker threads started.
        (_corrupt_json, ["--headless"]),
        (_invalid_steps, ["--self-test", "{tmp}/self-test"]),
        # Found by the start-up check, before any window exists.
        (_missing_tour, ["--headless"]),
        (_damaged_font, ["export", "--out", "{tmp}/export"]),
        (_damaged_catalogue, ["--self-test", "{tmp}/self-test"]),
    ],
    ids=["corrupt-tour-window", "invalid-tour-self-test", "missing-tour-window",
         "damaged-font-export", "damaged-catalogue-self-test"],
)
def test_damaged_resource_gives_message_and_exit_1(tmp_path, isolated_settings, damage,
                                                   command):
    folder = tmp_path / "resources"
    shutil.copytree(ROOT / "resources", folder)
    culprit = damage(folder)
    env = {**os.environ, RESOURCES_ENV: str(folder), SETTINGS_DIR_ENV: str(isolated_settings),
           "QT_QPA_PLATFORM": "offscreen"}
    args = [part.format(tmp=tmp_path) for part in command]
    # From another folder, as a user would start it; a dialog would block until the timeout.
    done = subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "attention-explorer: cannot start:" in done.stderr
    assert culprit in done.stderr
    assert "QThread: Destroyed" not in done.stderr
    assert "Traceback" not in done.stderr
    assert not any(isolated_settings.iterdir()), "a failed start must not write settings"


def test_resource_dir_prefers_override_then_checkout(monkeypatch, tmp_path):
    monkeypatch.delenv(RESOURCES_ENV, raising=False)
    assert resource_dir() == ROOT / "resources"
    monkeypatch.setenv(RESOURCES_ENV, str(tmp_path))
    assert resource_dir() == tmp_path


def test_installed_layout_uses_the_package_not_a_foreign_resources_folder(monkeypatch, tmp_path):
    """In site-packages, ``resources/`` beside ``gui/`` may belong to another distribution."""
    import importlib.util

    site = tmp_path / "site-packages"
    (site / "resources").mkdir(parents=True)  # someone else's top-level "resources" package
    (site / "resources" / "__init__.py").write_text("", encoding="utf-8")
    package = site / RESOURCE_PACKAGE
    (package / "tour").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    installed = site / "gui" / "kit" / "resources.py"  # the module as pip installs it
    installed.parent.mkdir(parents=True)
    shutil.copy(resources.__file__, installed)
    spec = importlib.util.spec_from_file_location("installed_resources", installed)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delenv(RESOURCES_ENV, raising=False)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, RESOURCE_PACKAGE, raising=False)
    assert module.resource_dir() == package.resolve()
    assert module.resource_path("tour", "tour.json") == package.resolve() / "tour" / "tour.json"
