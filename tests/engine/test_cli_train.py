"""``main.py train`` and ``main.py lr-sweep`` end to end (subprocess; never imports Qt), and
the bad input they refuse before any work (in this process)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--n", "8", "--d-k", "16", "--batch", "16"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args],
        capture_output=True, text=True, env=env, timeout=120, cwd=ROOT,
    )


def test_train_json_end_to_end():
    proc = _run("train", "--task", "retrieval", "--rules", "none,sqrt,linear", *SMALL,
                "--steps", "30", "--lr", "0.01", "--seed", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    assert set(summary["rules"]) == {"none", "sqrt", "linear"}
    assert summary["steps"] == 30 and summary["steps_per_s"] > 0
    for rule in summary["rules"].values():
        for key in ("final_train_loss", "final_eval_loss", "eval_accuracy", "steps_per_s"):
            assert isinstance(rule[key], float)
        assert rule["diverged_at"] is None
        assert 0.0 <= rule["eval_accuracy"] <= 1.0
    assert summary["config"]["kind"] == "train" and summary["config"]["d_k"] == 16
    assert "step 30/30" in proc.stderr  # progress goes to stderr
    assert "PySide6" not in proc.stderr


def test_train_is_deterministic_and_reports_divergence():
    args = ("train", "--rules", "sqrt", *SMALL, "--steps", "10", "--lr", "50", "--json",
            "--quiet")
    a, b = _run(*args), _run(*args)
    assert a.returncode == 0 and a.stderr == ""
    ra, rb = json.loads(a.stdout)["rules"]["sqrt"], json.loads(b.stdout)["rules"]["sqrt"]
    assert ra["diverged_at"] is not None and ra["diverged_at"] == rb["diverged_at"]
    assert ra["final_eval_loss"] == rb["final_eval_loss"]


def test_train_text_summary():
    proc = _run("train", "--rules", "sqrt,qk_norm", "--task", "copy_back", *SMALL,
                "--steps", "5", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "sqrt" in proc.stdout and "qk_norm" in proc.stdout and "steps/s" in proc.stdout


@pytest.mark.parametrize(
    ("args", "word"),
    [
        (("train", "--rules", "none,bogus"), "rules"),
        (("train", "--steps", "0"), "steps"),
        (("train", "--lr", "-1"), "lr"),
        (("train", "--n", "64", "--d-k", "8"), "vocab"),
        (("lr-sweep", "--lrs", "0.01,abc"), "--lrs"),
        (("lr-sweep", "--lrs", "0.01", "--seeds", "0"), "seeds"),
        (("lr-sweep", "--lrs", "0.01", "--out", "/nonexistent-dir/x.csv"), "--out"),
        (("train", "--tensors-out", "/nonexistent-dir/heads.npz"), "--tensors-out"),
        (("train", "--tensors-out", "heads.csv"), ".npz or .safetensors"),
    ],
)
def test_bad_input_exits_2_with_error(args, word, capsys):
    # Refused before any work: run in this process (a subprocess per case only adds startup).
    from main import main

    assert main(list(args)) == 2
    printed = capsys.readouterr()
    assert printed.err.startswith("error: ") and word in printed.err
    assert printed.out == ""


def test_an_unknown_task_is_refused_with_the_choices():
    # --task lists its choices, so argparse refuses another with its usage line.
    proc = _run("train", "--task", "sorting")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "argument --task: invalid choice: 'sorting'" in proc.stderr
    assert "retrieval" in proc.stderr and "copy_back" in proc.stderr


def test_lr_sweep_writes_csv(tmp_path):
    out = tmp_path / "sweep.csv"
    proc = _run("lr-sweep", "--rules", "none,sqrt", *SMALL, "--steps", "20",
                "--lrs", "0.01,5", "--seeds", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 4
    assert {(r["rule"], r["lr"]) for r in rows} == {
        ("none", "0.01"), ("none", "5"), ("sqrt", "0.01"), ("sqrt", "5")}
    for r in rows:
        assert r["seeds"] == "0;1" and r["n_seeds"] == "2"
        assert 0 <= int(r["diverged"]) <= 2
    assert "largest stable learning rate" in proc.stdout
    assert "sqrt" in proc.stdout and "none" in proc.stdout
    # CSV to stdout: then the report goes to stderr and stdout is pure CSV.
    proc = _run("lr-sweep", "--rules", "sqrt", *SMALL, "--steps", "5", "--lrs", "0.01",
                "--seeds", "1", "--quiet")
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0].startswith("task,d_k,")
    assert "largest stable" in proc.stderr


def test_cli_never_imports_qt():
    code = (
        "import sys, main; rc = main.main(['train', '--rules', 'sqrt', '--n', '4', '--d-k', '4',"
        " '--batch', '4', '--steps', '2', '--quiet', '--json']); "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph')]; "
        "print(rc, bad, file=sys.stderr)"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)
    assert proc.stderr.strip() == "0 []"


def test_model_and_task_flags_reach_the_config():
    proc = _run("train", "--task", "copy_back", "--rules", "sqrt", *SMALL, "--steps", "10",
                "--vocab", "12", "--offset", "3", "--init-std", "0.05", "--clip-norm", "1.5",
                "--eval-size", "32", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    config = json.loads(proc.stdout)["config"]
    assert (config["vocab"], config["offset"], config["init_std"]) == (12, 3, 0.05)
    assert (config["clip_norm"], config["eval_size"]) == (1.5, 32)


def test_train_tensors_out_writes_the_trained_heads(tmp_path):
    from engine.io.tensors import load_tensors

    out = tmp_path / "heads.npz"
    proc = _run("train", "--task", "copy_back", "--rules", "none,qk_norm", *SMALL,
                "--steps", "5", "--seed", "3", "--json", "--tensors-out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tensors_out"] == str(out)  # stdout stays one JSON object
    assert f"wrote {out}" in proc.stderr
    tf = load_tensors(out)
    assert tf.layers == (0, 1) and [tf.layer_name(i) for i in tf.layers] == ["none", "qk_norm"]
    assert tf.causal and tf.n == 8 and tf.d_k == 16 and tf.batch == 16
    assert tf.meta["seed"] == 3 and tf.meta["config"]["task"] == "copy_back"
    assert tf.meta["command"] == (
        "python main.py train --task copy_back --rules none,qk_norm --d-k 16 --n 8 --batch 16 "
        f"--steps 5 --lr 0.01 --seed 3 --tensors-out {out}")


@pytest.mark.parametrize("command", [
    ["train", *SMALL, "--steps", "20000"],
    ["lr-sweep", *SMALL, "--steps", "4000", "--lrs", "0.01,0.1", "--out", "{out}"]])
def test_ctrl_c_writes_nothing_and_exits_130(tmp_path, command):
    import signal

    out = tmp_path / "lr.csv"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), *(a.format(out=out) for a in command)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)))
    first = proc.stderr.readline()  # the 10 % progress line: the steps have begun
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, first + stderr
    assert stderr.rstrip().endswith("interrupted: nothing written") and "Traceback" not in stderr
    assert stdout == "" and not out.exists()
