"""``main.py export --tensors FILE --head L,H --out DIR``: the explorer views of a real head."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from engine.analysis.experiment import run_experiment
from engine.analysis.explorer import ALL_RULES
from engine.analysis.real_head import HeadRef, explorer_config_for, load_head, with_own_rule
from engine.config import AttentionConfig, ScalingRule
from engine.io.tensors import load_tensors, write_tensors
from gui.explorer.views import ALL_VIEWS
from gui.kit.export import image_stats
from main import main

N, D_K = 10, 4


@pytest.fixture
def tensor_path(tmp_path):
    rng = np.random.default_rng(5)
    arrays = {f"layer{layer}.{part}": rng.standard_normal((2, 3, N, D_K)).astype(np.float32)
              for layer in (0, 2) for part in "qk"}
    return write_tensors(tmp_path / "model.npz", arrays, tokens=[f"t{i}" for i in range(N)],
                         meta={"causal": True, "scale": 1.0})


def test_export_renders_the_views_of_the_chosen_head(qapp, tmp_path, tensor_path, capsys):
    out = tmp_path / "out"
    code = main(["export", "--tensors", str(tensor_path), "--head", "2,1", "--batch", "1",
                 "--out", str(out), "--width", "640", "--height", "420"])
    printed = capsys.readouterr().out.split()
    assert code == 0
    for cls in ALL_VIEWS:
        stats = image_stats(out / f"{cls.key}.png")
        assert (stats["width"], stats["height"]) == (640, 420)
        assert stats["non_background"] > 0.02 and stats["colors"] > 16, cls.key
        assert str(out / f"{cls.key}.csv") in printed
    assert not (out / "train_curves.png").exists()  # the Train views do not show the head
    # heatmap.csv holds the head's logits: the model's own scale c = 1 is the rule "none".
    ref = HeadRef(load_tensors(tensor_path), 2, 1, 1)
    config = explorer_config_for(ref, with_own_rule(ref, AttentionConfig()))
    assert config.rule is ScalingRule.NONE
    snap = run_experiment(config, ALL_RULES, real_head=load_head(ref))
    with (out / "heatmap.csv").open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    rows = [row for row in table if row["rule"] == "none"]
    # Rule "none" is compared with 1/√d_k (not with itself): the CSV lists both panels.
    assert len(rows) == N * N
    assert len([row for row in table if row["rule"] == "sqrt"]) == N * N
    logits = np.array([float(row["logit"]) for row in rows]).reshape(N, N)
    np.testing.assert_allclose(logits, snap.rules[ScalingRule.NONE].logits[0], rtol=1e-12)
    assert np.isneginf(logits[0, 1:]).all()  # causal


@pytest.mark.parametrize("argv, message", [
    (["--tensors", "{missing}", "--head", "0,0"], "error: --tensors: "),
    (["--tensors", "{file}", "--head", "1,0"], "error: --head: model.npz: layer 1 is not in"),
    (["--tensors", "{file}", "--head", "0,5"], "error: --head: model.npz: head 5 is out of"),
    (["--tensors", "{file}", "--head", "0,0", "--batch", "3"], "batch entry 3 is out of"),
    (["--tensors", "{file}", "--head", "zero"], "error: --head: expected L,H"),
    (["--tensors", "{file}"], "error: --tensors needs --head L,H"),
    (["--head", "0,0"], "error: --head and --batch need --tensors FILE"),
])
def test_bad_tensor_options_give_one_line_and_exit_2(tmp_path, tensor_path, capsys, argv,
                                                      message):
    words = [w.format(missing=tmp_path / "nope.npz", file=tensor_path) for w in argv]
    assert main(["export", *words, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) or message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "out").exists()
