"""Progress of the headless commands: a redrawn line on a terminal, a line per tenth elsewhere,
and a percentage that reaches 100 % only with the work (engine only)."""

from __future__ import annotations

import io

import pytest

from engine.cli import progress as progress_module
from engine.cli.progress import Progress
from engine.cli.train import lr_sweep_command, train_command
from main import build_parser


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_percent_rounds_down_and_reaches_100_only_when_done() -> None:
    assert Progress.percent(0.996) == 99 and Progress.percent(1.0) == 99
    assert Progress.percent(1.0, done=True) == 100 and Progress.percent(0.5, done=True) == 100
    assert Progress.percent(0.0) == 0 and Progress.percent(float("nan")) == 0


def test_off_a_terminal_one_line_per_tenth() -> None:
    stream = io.StringIO()
    bar = Progress(stream)
    for i in range(1001):
        bar.update(i / 1000, f"{i}/1000", done=i == 1000)
    bar.end()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert [line.split(" %")[0].strip() for line in lines] == [
        "10", "20", "30", "40", "50", "60", "70", "80", "90", "100"]
    assert lines[-1] == "100 %  1000/1000"


def test_on_a_terminal_the_line_is_redrawn(monkeypatch) -> None:
    monkeypatch.setattr(progress_module, "REDRAW_INTERVAL_S", 0.0)
    stream = _Terminal()
    bar = Progress(stream)
    for i in range(5):
        bar.update(i / 4, f"{i}/4", done=i == 4)
    bar.end()
    text = stream.getvalue()
    assert text.count("\r\x1b[K") == 5 and text.endswith("100 %  4/4\n")
    quiet = io.StringIO()
    Progress(quiet, quiet=True).update(1.0, "x", done=True)
    assert quiet.getvalue() == ""


def test_train_shows_a_dash_before_the_first_evaluation(monkeypatch, capsys) -> None:
    # Step 0 has no training loss yet: "nan" there read as a divergence.
    monkeypatch.setattr(progress_module, "REDRAW_INTERVAL_S", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    args = build_parser().parse_args(["train", "--steps", "20", "--d-k", "8", "--n", "4",
                                      "--vocab", "8", "--eval-size", "8", "--rules", "none,sqrt"])
    assert train_command(args) == 0
    first = terminal.getvalue().split("\r\x1b[K")[1]
    assert first.startswith("  0 %  step 0/20") and "none –  sqrt –" in first
    assert "nan" not in terminal.getvalue()
    assert terminal.getvalue().rstrip("\n").split("\r\x1b[K")[-1].startswith("100 %  step 20/20")
    capsys.readouterr()


@pytest.mark.parametrize("tty", [False, True])
def test_lr_sweep_percentage_matches_its_runs(monkeypatch, capsys, tty) -> None:
    monkeypatch.setattr(progress_module, "REDRAW_INTERVAL_S", 0.0)
    stream = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    args = build_parser().parse_args(["lr-sweep", "--steps", "5", "--d-k", "8", "--n", "4",
                                      "--vocab", "8", "--eval-size", "8", "--rules", "sqrt",
                                      "--lrs", "0.01,0.1", "--seeds", "2", "--out", "-"])
    assert lr_sweep_command(args) == 0
    lines = [line for line in stream.getvalue().replace("\r\x1b[K", "\n").splitlines()
             if " %  " in line]
    for line in lines:
        percent = int(line.split(" %")[0])
        if "runs done" in line:
            done, total = map(int, line.split(" %  ")[1].split(" runs")[0].split("/"))
            # A finished run counts once: the percentage is at least its share, below the next.
            assert 100 * done // total <= percent < 100 * (done + 1) // total or percent == 100
    assert lines[-1] == "100 %  4/4 runs done"
    capsys.readouterr()
