"""Headless commands: ``export --out DIR``, ``--self-test DIR`` and ``--headless`` (run
in-process, and as a user runs them in a subprocess where their output or their end matters)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import AttentionConfig, ScalingRule
from gui.kit.export import image_stats
from gui.kit.session import Session, save_session
from main import main
from tests.gui.conftest import HANG_MS

SMALL = AttentionConfig(n_tokens=16, d_k=8, d_model=8, samples=100, seed=3)


def test_export_command_renders_every_view(qapp, tmp_path, capsys, isolated_settings):
    """``export`` as a user runs it: every view as PNG, SVG and CSV at the asked size, the
    session's settings kept; it prints only the files it wrote (no Qt plugin noise) and writes
    no settings."""
    session = tmp_path / "small.json"
    save_session(session, Session(SMALL, current_view="laws", temperature=2.0))
    out = tmp_path / "out"
    out.mkdir()
    (out / "session.json").write_text("an older export", encoding="utf-8")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    # A folder that holds files is refused without --force (tests/test_main_cli.py) ...
    assert main(["export", "--out", str(out), "--session", str(session)]) == 2
    assert "--force" in capsys.readouterr().err
    assert (out / "session.json").read_text(encoding="utf-8") == "an older export"
    # ... and written into with it (files of the same name replaced, others kept).
    done = _run(["export", "--out", str(out), "--session", str(session), "--force",
                 "--width", "700", "--height", "450", "--lang", "zh_CN"], isolated_settings)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "This plugin does not support propagateSizeHints()"
    printed = done.stdout.splitlines()
    assert all(Path(line).parent == out for line in printed)
    assert not any(isolated_settings.iterdir())
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    from gui.explorer.views import ALL_VIEWS

    for cls in ALL_VIEWS:
        stats = image_stats(out / f"{cls.key}.png")
        assert (stats["width"], stats["height"]) == (700, 450)
        assert stats["non_background"] > 0.02 and stats["colors"] > 16, cls.key
        assert (out / f"{cls.key}.svg").stat().st_size > 0
        assert str(out / f"{cls.key}.csv") in printed
    saved = json.loads((out / "session.json").read_text(encoding="utf-8"))
    assert saved["attention"] == SMALL.to_dict()
    assert saved["view"]["temperature"] == 2.0
    # The laws view's CSV holds the finished sweep (11 d_k values × 3 rules).
    assert len((out / "laws.csv").read_text(encoding="utf-8").splitlines()) == 1 + 11 * 3
    # The Train views' demo agrees with docs/training.md's table (a smaller lr is stable without
    # scaling than with 1/√d_k or 1/d_k) instead of finding no stable lr for "none".
    with (out / "train_lr_sweep.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    largest = {row["rule"]: row["largest_stable_lr"] for row in rows}
    assert set(largest) == {"none", "sqrt", "linear"}
    assert all(largest.values()), largest
    assert float(largest["none"]) < float(largest["sqrt"]) <= float(largest["linear"])
    assert max(float(row["lr"]) for row in rows) <= 0.1


@pytest.mark.parametrize("content", [
    '{"app": "other"}',
    "[" * 100_000 + "]" * 100_000,
    '{"app": "attention-scale-explorer", "version": 1, "attention": {"d_k": ' + "7" * 5000 + "}}",
], ids=["foreign", "deep-nesting", "5000-digits"])
def test_export_command_refuses_a_corrupt_session(qapp, tmp_path, capsys, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    assert main(["export", "--out", str(tmp_path / "o"), "--session", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --session: bad.json") and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists()


@pytest.fixture(scope="module")
def self_test(qapp, tmp_path_factory):
    """One ``--self-test`` run (with ``--model``: every check of the plain run, and the
    capture) shared by the tests below; settings saved beforehand, to see them left alone.

    Returns the exit code, the printed text, the output folder, the settings folder's files
    before the run and the same files after it.
    """
    from gui.kit.settings import SETTINGS_DIR_ENV, open_settings
    from tests.engine.test_models import FIXTURES

    folder = tmp_path_factory.mktemp("self-test")
    settings_dir = folder / "settings"
    settings_dir.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SETTINGS_DIR_ENV, str(settings_dir))
        settings = open_settings()
        settings.set("model/text", "an old text " * 40)
        settings.set("model/max_tokens", 3)
        settings.set("model/layers", "1")
        settings.set("export/last_dir", "/somewhere/else")
        settings.sync()
        before = {path.name: path.read_bytes() for path in settings_dir.iterdir()}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(["--self-test", str(folder / "st"), "--model",
                         str(FIXTURES / "tiny-llama")])
        after = {path.name: path.read_bytes() for path in settings_dir.iterdir()}
    return code, printed.getvalue(), folder / "st", before, after


def test_self_test_passes_and_reports(self_test):
    code, out, folder, before, after = self_test
    assert code == 0, out
    assert "SELF-TEST PASSED" in out
    assert "FAIL" not in out
    for name in ("n_tokens", "link_heads", "gain", "temperature view T", "invalid heads refused"):
        assert name in out
    # The shipped sample tensor file opens and every head is diagnosed (unscaled head flagged).
    assert "sample tensors trained_heads.npz: 3 heads diagnosed" in out
    assert "none/0: saturated" in out
    # ... in the Heads tab, whose first flagged head the explorer then shows.
    assert "explorer shows trained_heads.npz · layer 0 (none) · head 0" in out
    assert f"replayed under {len(ScalingRule)} rules" in out
    assert (folder / "correlation.png").exists()
    assert (folder / "heads.png").exists()
    # The headless commands never write the user's (here: the isolated) settings.
    assert before and after == before


def test_self_test_captures_a_model_without_using_or_changing_saved_choices(self_test):
    from gui.heads.capture_dialog import DEFAULT_TEXT
    from tests.engine.test_models import FIXTURES

    code, out, _folder, before, after = self_test
    assert code == 0, out
    line = next(line for line in out.splitlines() if "model capture" in line)
    # The dialog's own defaults, not the 3 tokens and layer 1 saved before the run.
    from engine.models import open_model
    tokenizer = open_model(FIXTURES / "tiny-llama").tokenizer
    expected = len(tokenizer.encode_text(DEFAULT_TEXT, 128).ids)
    assert f": {expected} tokens" in line, line
    # After the capture the explorer shows one of its heads (so heads.png is not empty).
    assert "explorer shows tiny-llama" in out
    assert after == before


def test_run_app_opens_session_and_saves_settings_on_close(qapp, tmp_path, isolated_settings):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gui.kit.settings import open_settings
    from gui.main_window import MainWindow

    session = tmp_path / "start.json"
    save_session(session, Session(SMALL, current_view="gradients", temperature=4.0))
    seen = []

    def close_when_settled() -> None:
        windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
        window = windows[-1]
        window.wait_until_settled(HANG_MS)
        seen.append((window.controller.results().config, window.current_view().key))
        window.close()

    QTimer.singleShot(0, close_when_settled)
    # The plain program (offscreen here: conftest sets QT_QPA_PLATFORM) runs until closed.
    assert main(["--session", str(session)]) == 0
    assert seen == [(SMALL, "gradients")]
    settings = open_settings()
    assert settings.get("session/last_path") == str(session)
    assert AttentionConfig.from_json(settings.get("attention/config")) == SMALL
    assert settings.get("window/current_view") == "gradients"
    assert settings.get("window/temperature") == 4.0


ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], settings: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    from gui.kit.settings import SETTINGS_DIR_ENV

    env = {key: value for key, value in os.environ.items()
           if key not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env[SETTINGS_DIR_ENV] = str(settings)
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_headless_checks_the_window_and_ends(tmp_path, isolated_settings):
    """``--headless`` without a display: builds the window offscreen, opens the session and the
    tensor file, reports what arrived and exits (the timeout proves that it ends)."""
    from gui.kit.resources import sample_tensors_path

    session = tmp_path / "start.json"
    save_session(session, Session(SMALL, current_view="gradients", temperature=4.0))
    done = _run(["--headless", "--session", str(session), "--tensors",
                 str(sample_tensors_path()), "--lang", "zh_CN"], isolated_settings)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "window built on Qt's offscreen platform, UI language 简体中文 (zh_CN)"
    assert lines[1].startswith("explorer results in ")
    assert "session start.json: opened, explorer view gradients" in lines
    assert "tensors trained_heads.npz: 3 heads diagnosed (3 layers × 1), 3 flagged" in lines
    assert lines[-1].startswith("closed in ")
    assert done.stderr == ""  # nothing but the check's own lines (no Qt plugin noise)
    assert not any(isolated_settings.iterdir()), "a check must not write the settings"


def test_headless_reports_a_problem_with_exit_1(tmp_path, isolated_settings):
    import numpy as np

    bad = tmp_path / "nan_heads.npz"
    q = np.ones((1, 4, 8), dtype=np.float32)
    k = q.copy()
    k[0, 1, 2] = np.nan  # the file opens; the Heads tab refuses its values
    np.savez(bad, **{"layer0.q": q, "layer0.k": k})
    done = _run(["--headless", "--tensors", str(bad)], isolated_settings)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("error: ") and "nan_heads.npz" in done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("closed in ")


def test_without_a_display_the_window_explains_the_commands_that_need_none(isolated_settings):
    done = _run([], isolated_settings, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    message = " ".join(done.stderr.split())
    assert message.startswith("No display found")
    for command in ("'export --out DIR'", "'--self-test DIR'", "'--headless' checks"):
        assert command in message
