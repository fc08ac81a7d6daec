"""`python main.py sweep` (engine.cli.sweep): parsing, CSV output, progress, errors, no Qt."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest

import engine.cli.sweep as cli_sweep
from engine.analysis.sweep import SWEEP_CSV_COLUMNS
from engine.cli.sweep import parse_values, sweep_command
from main import build_parser

ROOT = Path(__file__).resolve().parents[2]


def _args(*argv: str):
    return build_parser().parse_args(["sweep", *argv])


def test_parse_values() -> None:
    assert parse_values("1,2,4") == (1.0, 2.0, 4.0)
    assert parse_values("0:3") == (1.0, 2.0, 4.0, 8.0)
    assert parse_values(" -1:0 ") == (0.5, 1.0)
    for bad, msg in [("1,,2", "empty"), ("a", "not a number"), ("3:1", "a <= b"),
                     ("1:x", "integers"), ("inf", "not finite"), ("1100:1101", r"2\^±1000")]:
        with pytest.raises(ValueError, match=msg):
            parse_values(bad)


def test_command_writes_csv_and_is_deterministic(tmp_path, capsys) -> None:
    out1, out2 = tmp_path / "a.csv", tmp_path / "b.csv"
    for out in (out1, out2):
        rc = sweep_command(_args("--values", "0:2", "--samples", "300", "--out", str(out)))
        assert rc == 0
    assert out1.read_text() == out2.read_text()
    rows = list(csv.reader(io.StringIO(out1.read_text())))
    assert rows[0] == list(SWEEP_CSV_COLUMNS) and len(rows) == 1 + 3 * 3
    err = capsys.readouterr().err
    # stderr is no terminal here: one line per tenth of the work (two runs), and 100 % only
    # with every point written.
    lines = err.splitlines()
    assert "\r" not in err and 2 <= len(lines) <= 2 * 11
    finished = [line for line in lines if line.startswith("100 %")]
    assert len(finished) == 2 and all(line.endswith("9/9 points") for line in finished)
    assert lines[-1] == finished[-1]


def test_quiet_stdout_and_bad_input(capsys) -> None:
    assert sweep_command(_args("--values", "2", "--samples", "50", "--quiet")) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.startswith("param,value,rule")
    assert sweep_command(_args("--values", "0", "--quiet")) == 2
    assert capsys.readouterr().err == ("error: --values 0: --param d_k takes integers in "
                                       "[1, 8192] (2^0..2^13): 0 is outside\n")
    assert sweep_command(_args("--values", "2", "--rules", "sqrt,bogus")) == 2
    assert capsys.readouterr().err.startswith("error: --rules must be one of")


@pytest.mark.parametrize(("argv", "message"), [
    # argparse's range would have said only "got 8388608".
    (["--param", "n", "--values", "4:30"],
     "--values 4:30 means 2^4..2^30 (16..1073741824); --param n takes integers in "
     "[1, 4194304] (2^0..2^22): 2^23 = 8388608 is outside"),
    (["--values", "1.5,2"],
     "--values 1.5,2: --param d_k takes integers in [1, 8192] (2^0..2^13): 1.5 is not an "
     "integer"),
    (["--param", "rho", "--values", "0.5,2"],
     "--values 0.5,2: --param rho takes numbers in [-1, 1]: 2 is outside"),
    (["--param", "s", "--values", "2,-1"],
     "--values 2,-1: --param s takes numbers in [0, 1000000]: -1 is outside"),
])
def test_a_value_out_of_range_says_what_values_meant(argv, message, capsys) -> None:
    assert sweep_command(_args(*argv, "--quiet")) == 2
    assert capsys.readouterr().err == f"error: {message}\n"


def test_keyboard_interrupt_returns_130(tmp_path, monkeypatch, capsys) -> None:
    real = cli_sweep.iter_sweep

    def interrupted(config, cancel=None, **kwargs):
        gen = real(config, cancel, **kwargs)
        yield next(gen)
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_sweep, "iter_sweep", interrupted)
    out = tmp_path / "part.csv"
    rc = sweep_command(_args("--values", "1,2", "--samples", "100", "--out", str(out)))
    assert rc == 130
    assert "interrupted: wrote 1 of 6 points" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 2  # header + the finished point survive


def test_subprocess_end_to_end_without_qt(tmp_path) -> None:
    out = tmp_path / "sweep.csv"
    code = (
        "import sys, main\n"
        "rc = main.main(['sweep', '--param', 's', '--values', '1,8', '--rules', "
        "'none,sqrt,qk_norm', '--samples', '200', '--seed', '3', '--quiet', "
        f"'--out', {str(out)!r}])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph'))\n"
        "print(rc, bad)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "0 []"
    rows = list(csv.DictReader(out.open()))
    assert [r["rule"] for r in rows] == ["none", "sqrt", "qk_norm"] * 2
    assert rows[3]["value"] == "8.0" and float(rows[3]["logit_var_theory"]) == 64.0
    # Plain `python main.py sweep` as a user would run it, output to stdout.
    res = subprocess.run([sys.executable, "main.py", "sweep", "--values", "3", "--samples", "20",
                          "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 4
