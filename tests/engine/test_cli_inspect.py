"""`python main.py inspect`: one CSV row per head of a tensor file, as diagnose_head gives it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

import main
from engine.analysis.heads import diagnose_head
from engine.cli.inspect import COLUMNS
from engine.io.tensors import load_tensors, write_tensors

RNG_SEED = 20231201


def _file(path: Path, layers=(0, 3), heads=2, meta=None, edit=None) -> Path:
    """A tensor file of (batch 2, heads, n 16, d_k 8) q and k per layer, scale 0.25."""
    rng = np.random.default_rng(RNG_SEED)
    arrays = {f"layer{layer}.{part}": rng.standard_normal((2, heads, 16, 8))
              for layer in layers for part in "qk"}
    if edit is not None:
        edit(arrays)
    return write_tensors(path, arrays, meta={"scale": 0.25, **(meta or {})})


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_inspect_writes_one_row_per_layer_and_head(tmp_path, capsys) -> None:
    path = _file(tmp_path / "model.npz", meta={"causal": True})
    out = tmp_path / "report.csv"
    assert main.main(["inspect", str(path), "--out", str(out)]) == 0
    rows = _rows(out.read_text(encoding="utf-8"))
    assert tuple(rows[0]) == COLUMNS
    assert [(int(r["layer"]), int(r["head"])) for r in rows] == [(0, 0), (0, 1), (3, 0), (3, 1)]
    tf = load_tensors(path)
    for row in rows:
        expected = diagnose_head(*tf.qk(int(row["layer"]), int(row["head"])), scale=0.25,
                                 causal=True)
        assert float(row["scale"]) == 0.25 and row["causal"] == "1"
        # Every number is written as a plain float literal (repr of a Python float).
        for column in ("logit_std", "logit_std_theory", "max_abs_logit", "entropy_mean",
                       "entropy_uniform", "entropy_floor_at_norm", "p_max_mean",
                       "saturated_share", "sink_mass", "rho"):
            assert float(row[column]) == getattr(expected, column), column
    assert "inspect: 4/4 heads" in capsys.readouterr().err


def test_inspect_reads_safetensors_too(tmp_path, capsys) -> None:
    path = _file(tmp_path / "model.safetensors", heads=3)
    assert main.main(["inspect", str(path), "--out", "-", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ",".join(COLUMNS) and len(out.splitlines()) == 1 + 2 * 3


def test_inspect_to_stdout_with_a_replayed_rule(tmp_path, capsys) -> None:
    path = _file(tmp_path / "model.npz")
    assert main.main(["inspect", str(path), "--rule", "softcap", "--cap", "0.5", "--out", "-",
                      "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    rows = _rows(captured.out)
    assert len(rows) == 4 and {r["rule"] for r in rows} == {"softcap"}
    assert all(float(r["max_abs_logit"]) <= 0.5 for r in rows)


def test_inspect_flags_are_joined_with_semicolons(tmp_path, capsys) -> None:
    def sink(arrays):  # key 0 dominates every row: a sink, and the rows saturate
        q, k = arrays["layer1.q"], arrays["layer1.k"]
        k[...] = q
        k[:, :, 0] = 40.0  # (batch, heads, n, d_k): every component of token 0
        q[...] = np.abs(q) + 1.0

    path = _file(tmp_path / "model.npz", layers=(1,), heads=1, edit=sink)
    assert main.main(["inspect", str(path), "--rule", "none", "--out", "-", "--quiet"]) == 0
    assert _rows(capsys.readouterr().out)[0]["flags"] == "saturated;sink"


def test_inspect_errors_exit_2_with_one_line(tmp_path, capsys) -> None:
    def nan(arrays):
        arrays["layer0.k"][0, 0, 0, 0] = np.nan

    bad = _file(tmp_path / "bad.npz", edit=nan)
    assert main.main(["inspect", str(bad), "--out", str(tmp_path / "r.csv")]) == 2
    assert capsys.readouterr().err == ("error: bad.npz: array 'layer0.k': 1 NaN/inf values "
                                       "(in head 0)\n")
    good = _file(tmp_path / "good.npz")
    # A replay parameter the engine refuses: one line, no traceback.
    assert main.main(["inspect", str(good), "--rule", "temperature", "--out", "-",
                      "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: temperature is required")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main.main(["inspect", str(good), "--out", str(tmp_path / "no" / "r.csv")]) == 2
    assert "cannot write --out" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main.main(["inspect", str(good), "--rule", "cubic", "--out", "-"])
    assert "inspect" in main.build_parser().format_help()


def test_inspect_uses_each_layers_own_scale_and_cap(tmp_path, capsys) -> None:
    """``meta.layers`` gives a layer its own scale (and cap); the others keep the file's."""
    path = _file(tmp_path / "layers.npz", layers=(0, 1, 2), heads=1,
                 meta={"layers": {"1": {"name": "unscaled", "scale": 1.0}, "2": {"cap": 0.75}}})
    assert main.main(["inspect", str(path), "--out", "-", "--quiet"]) == 0
    rows = {int(r["layer"]): r for r in _rows(capsys.readouterr().out)}
    tf = load_tensors(path)
    assert [float(rows[layer]["scale"]) for layer in (0, 1, 2)] == [0.25, 1.0, 0.25]
    assert float(rows[1]["logit_std"]) == diagnose_head(*tf.qk(1, 0), scale=1.0).logit_std
    capped = diagnose_head(*tf.qk(2, 0), scale=0.25, cap=0.75)
    assert float(rows[2]["max_abs_logit"]) == capped.max_abs_logit <= 0.75


def test_inspect_without_out_prints_a_table_to_read(tmp_path, capsys) -> None:
    path = _file(tmp_path / "model.npz", meta={"causal": True,
                                               "layers": {"3": {"name": "unscaled run"}}})
    assert main.main(["inspect", str(path), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert lines[0].split() == ["layer", "head", "n", "entropy/uniform", "p_max", "saturated",
                                "sink", "logit", "std", "max|logit|", "flags"]
    assert len(lines) == 1 + 4 + 1
    tf = load_tensors(path)
    for line, (layer, head) in zip(lines[1:5], [(0, 0), (0, 1), (3, 0), (3, 1)], strict=True):
        d = diagnose_head(*tf.qk(layer, head), scale=0.25, causal=True)
        label = "3 unscaled run" if layer == 3 else "0"
        assert line.startswith(label + " ")
        cells = line[len(label):].split()
        assert cells[:7] == [str(head), "16", f"{d.entropy_mean / d.entropy_uniform:.3f}",
                             f"{d.p_max_mean:.3f}", f"{d.saturated_share:.3f}",
                             f"{d.sink_mass:.3f}", f"{d.logit_std:.3g}"]
        assert float(cells[7]) == pytest.approx(d.max_abs_logit, rel=5e-3)
        assert "e" not in cells[7]  # never 1.2e+02: a number people read
        assert cells[8:] == ([", ".join(d.flags)] if d.flags else ["-"])
    flagged = sum(line.split()[-1] != "-" for line in lines[1:5])
    assert lines[-1] == (f"{flagged} of 4 heads flagged; --out FILE writes every number as CSV")
    # Columns line up under their titles: every row is as wide as the header up to the flags.
    flags_at = lines[0].index("flags")
    assert all(line[flags_at - 2:flags_at] == "  " for line in lines[1:5])


def test_the_table_of_a_weights_file_leaves_the_logits_blank(tmp_path, capsys) -> None:
    rng = np.random.default_rng(RNG_SEED)
    logits = rng.standard_normal((1, 2, 8, 8))
    weights = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    path = write_tensors(tmp_path / "w.npz", {"layer0.attn": weights})
    assert main.main(["inspect", str(path), "--quiet"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:3]]
    assert all(row[7:9] == ["-", "-"] for row in rows)  # logit std, max|logit|: need q and k
    assert all(0 < float(row[3]) <= 1 for row in rows)


@pytest.mark.parametrize(("option", "value"), [("--temperature", "0"), ("--gain", "0"),
                                               ("--cap", "-1")])
def test_a_refused_rule_parameter_is_named_by_its_option(tmp_path, capsys, option, value) -> None:
    rule = {"--temperature": "temperature", "--gain": "qk_norm", "--cap": "softcap"}[option]
    path = _file(tmp_path / "model.npz")
    assert main.main(["inspect", str(path), "--rule", rule, option, value, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option} must be a positive finite number") and err.count(
        "\n") == 1, err
