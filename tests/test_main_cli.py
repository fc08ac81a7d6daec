"""The top-level command line: help, version, argument parsing, refusals before anything opens,
and a quiet end when stdout is closed early (all in subprocesses, as a user runs them)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from main import build_parser

ROOT = Path(__file__).resolve().parents[1]


def run_main(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_help_lists_every_subcommand() -> None:
    result = run_main("--help")
    assert result.returncode == 0, result.stderr
    for command in ("sweep", "train", "lr-sweep", "export", "inspect", "capture", "intervene",
                    "--self-test", "--version"):
        assert command in result.stdout
    # Says which invocation opens a window (only the plain program) and that --headless ends.
    text = " ".join(result.stdout.split())
    assert "None of the COMMANDs opens a window" in text
    assert "--headless builds it offscreen, checks it and exits" in text
    # Every option the window takes is named where the help says what opens it.
    assert ("Only the plain program (optionally with --session, --tensors, --model and --lang) "
            "opens the explorer window") in text


def test_the_console_script_calls_itself_attention_scale() -> None:
    probe = "import sys, main; sys.argv = ['attention-scale', '--help']; main.cli_entry()"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: attention-scale ")
    assert "attention-explorer" not in result.stdout


def test_lang_offers_the_ui_languages() -> None:
    parser = build_parser()
    assert parser.parse_args(["--lang", "zh_CN"]).lang == "zh_CN"
    assert parser.parse_args(["--lang", "zh_CN", "export", "--out", "x"]).lang == "zh_CN"
    assert parser.parse_args(["export", "--out", "x", "--lang", "en"]).lang == "en"
    result = run_main("--lang", "fr")
    assert result.returncode == 2 and "invalid choice: 'fr'" in result.stderr


def test_every_engine_command_runs_a_function_of_its_own_module() -> None:
    import argparse
    import importlib

    from main import ENGINE_COMMANDS

    parser = build_parser()
    commands = next(action for action in parser._actions
                    if isinstance(action, argparse._SubParsersAction)).choices
    assert set(commands) - {"export"} == set(ENGINE_COMMANDS)
    for module, function in ENGINE_COMMANDS.values():
        assert callable(getattr(importlib.import_module(f"engine.cli.{module}"), function))


def test_parser_rejects_unknown_command() -> None:
    result = run_main("frobnicate")
    assert result.returncode == 2
    assert "invalid choice" in result.stderr


def test_version_is_the_project_version() -> None:
    with open(ROOT / "pyproject.toml", "rb") as handle:
        expected = tomllib.load(handle)["project"]["version"]
    result = run_main("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"attention-explorer {expected}"


def test_version_falls_back_to_pyproject_when_not_installed(monkeypatch) -> None:
    from importlib import metadata

    import main

    def not_installed(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", not_installed)
    with open(ROOT / "pyproject.toml", "rb") as handle:
        assert main.version() == tomllib.load(handle)["project"]["version"]


@pytest.mark.parametrize(("words", "meant"), [
    (["--vers"], "--version"),
    (["sweep", "--values", "1", "--samp", "3"], "--samples"),
    (["train", "--step", "1"], "--steps"),
    (["lr-sweep", "--seed", "0"], "--seeds"),  # would silently have meant --seeds 0
    (["export", "--out", "x", "--widt", "700"], "--width"),
    (["inspect", "f.npz", "--out", "-", "--rul", "sqrt"], "--rule"),
    (["capture", "m", "--text", "t", "--out", "x.npz", "--max-tok", "4"], "--max-tokens"),
    (["intervene", "m", "--text", "t", "--out", "x.csv", "--alpha", "2"], "--alphas"),
], ids=lambda value: value[0].lstrip("-") if isinstance(value, list) else "")
def test_no_parser_accepts_abbreviations(words: list[str], meant: str, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(words)
    abbreviated = next(word for word in reversed(words) if word.startswith("--"))
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.endswith(f"error: unrecognized option {abbreviated} (did you mean {meant}?)")


@pytest.mark.parametrize(("words", "message"), [
    # argparse alone said "the following arguments are required: --values".
    (["sweep", "--valuse", "1,2"], "sweep: error: unrecognized option --valuse (did you mean "
                                   "--values?)"),
    # ...and "unrecognized arguments: --rule sqrt", as if the program had no such option.
    (["sweep", "--values", "2", "--rule", "sqrt"], "sweep: error: unrecognized option --rule "
                                                   "(did you mean --rules?)"),
    (["sweep", "--values=2", "--sed=3"], "sweep: error: unrecognized option --sed (did you "
                                         "mean --seed?)"),
    (["--modle", "m.gguf"], "attention-explorer: error: unrecognized option --modle (did you "
                            "mean --model?)"),
    # Nothing near: no guess.
    (["inspect", "f.npz", "--zzzzzz"], "inspect: error: unrecognized option --zzzzzz"),
], ids=["required", "stray", "joined", "window", "far"])
def test_a_mistyped_option_is_named_with_the_near_one(words: list[str], message: str) -> None:
    result = run_main(*words)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith(message), result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("words", [["--values", "-3:1"], ["--values=-3:1"]],
                         ids=["separate", "joined"])
def test_sweep_takes_a_negative_power_range(words: list[str]) -> None:
    result = run_main("sweep", "--param", "s", *words, "--rules", "sqrt", "--samples", "50",
                      "--quiet")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[1:]
    assert [float(row.split(",")[1]) for row in rows] == [0.125, 0.25, 0.5, 1.0, 2.0]


def test_sweep_into_a_closed_pipe_ends_quietly() -> None:
    # `main.py sweep ... | head -1`: the reader goes away after the first line.
    proc = subprocess.Popen(
        [sys.executable, "main.py", "sweep", "--param", "s", "--values", "0:12",
         "--samples", "2000", "--quiet"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("param,value,rule")
    proc.stdout.close()
    code = proc.wait(timeout=60)
    err = proc.stderr.read()
    proc.stderr.close()
    assert code == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err


@pytest.mark.parametrize("content", [
    "[" * 100_000 + "]" * 100_000,
    '{"app": "attention-scale-explorer", "version": 1, "attention": {"d_k": ' + "7" * 5000 + "}}",
], ids=["deep-nesting", "5000-digits"])
def test_a_hostile_session_is_a_one_line_error_before_any_window(tmp_path: Path,
                                                                 content: str) -> None:
    # export refuses the same sessions in-process (tests/gui/test_headless.py).
    session = tmp_path / "hostile.json"
    session.write_text(content, encoding="utf-8")
    result = run_main("--session", str(session))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --session: hostile.json"), result.stderr


def test_self_test_refuses_a_bad_folder_before_opening_anything(tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    for folder, reason in ((a_file, "is a file, not a folder"),
                           (a_file / "sub", "cannot create files in")):
        result = run_main("--self-test", str(folder))
        assert result.returncode == 2, result.stdout + result.stderr
        assert reason in result.stderr and "Traceback" not in result.stderr
        assert "SELF-TEST" not in result.stdout  # refused before any window opened
        assert a_file.read_text(encoding="utf-8") == "x"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses Linux's sysfs as root")
def test_self_test_refuses_a_read_only_folder(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # Root writes through permission bits; sysfs takes no new files, not even from root.
        folder = Path("/sys/kernel")
        result = run_main("--self-test", str(folder))
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o500)
        try:
            result = run_main("--self-test", str(folder))
        finally:
            folder.chmod(0o700)
    assert result.returncode == 2
    assert f"cannot create files in {folder}" in result.stderr


def test_export_refuses_a_non_empty_folder_and_a_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "session.json").write_text("mine", encoding="utf-8")
    result = run_main("export", "--out", str(out))
    assert result.returncode == 2
    assert "already holds files" in result.stderr and "--force" in result.stderr
    assert (out / "session.json").read_text(encoding="utf-8") == "mine"
    result = run_main("export", "--out", str(out / "session.json"))
    assert result.returncode == 2
    assert "is a file, not a folder" in result.stderr


def test_export_help_documents_out_force_and_sizes() -> None:
    text = " ".join(run_main("export", "--help").stdout.split())
    assert "--force" in text and "non-empty --out folder" in text
    assert "folder to write into" in text
    assert "16..8192" in text


@pytest.mark.parametrize("size", [["--width", "100000", "--height", "100000"],
                                  ["--width", "8"], ["--height", "8193"], ["--width", "wide"]])
def test_export_refuses_a_bad_size_before_rendering(tmp_path: Path, size: list[str]) -> None:
    result = run_main("export", "--out", str(tmp_path / "out"), *size, timeout=30)
    assert result.returncode == 2
    assert "QPainter" not in result.stderr
    assert "16..8192" in result.stderr or "not an integer" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_bad_tensors_file_is_a_one_line_error_before_any_window(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.npz"
    result = run_main("--tensors", str(missing))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --tensors:"), result.stderr
    assert "nowhere.npz" in lines[0]


def test_tensors_opens_the_window_on_the_heads_tab_and_exits_cleanly(tmp_path: Path) -> None:
    """``main.py --tensors FILE``: the window starts with the file's scan running and closes at
    its first paint (the scan is cancelled, the threads end, exit code 0)."""
    from gui.app import EXIT_AFTER_SHOW_ENV
    from gui.kit.resources import sample_tensors_path
    from gui.kit.settings import SETTINGS_DIR_ENV

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", EXIT_AFTER_SHOW_ENV: "1",
           SETTINGS_DIR_ENV: str(tmp_path)}
    result = subprocess.run([sys.executable, "main.py", "--tensors", str(sample_tensors_path())],
                            cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert "first paint" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_export_options_and_lang_parse_without_qt() -> None:
    # Formats, sizes and languages come from the window's own definitions (gui.kit.choices),
    # which load no Qt: a headless command's parsing must not pay for it.
    probe = ("import sys, main; args = main.build_parser().parse_args(['--lang', 'zh_CN', "
             "'export', '--out', 'x', '--formats', 'CSV,png,csv', '--width', '640']); "
             "print(args.formats, args.width, "
             "[m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')])")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "('csv', 'png') 640 []"
    refused = run_main("export", "--out", "x", "--formats", "png,gif")
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith("unknown export format gif: choose from png, svg, "
                                           "pdf, csv")


@pytest.mark.parametrize("preset", [None, "20"])
def test_openblas_spin_is_shortened_before_numpy_loads(preset: str | None) -> None:
    # OpenBLAS reads the variable once, when numpy loads it: main must set it before that, and
    # leave a value the user chose.
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_THREAD_TIMEOUT"}
    if preset is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = preset
    probe = ("import os, sys, main; "
             "print('numpy' in sys.modules, os.environ['OPENBLAS_THREAD_TIMEOUT'])")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", preset or "16"]
