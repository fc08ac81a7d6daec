"""The app reads files written by real transformers and TransformerLens code, and its numbers
agree with the attention weights those libraries computed.

The fixtures in ``tests/fixtures/real`` were made by ``tests/fixtures/make_real_fixtures.py``
(run by hand with torch, transformers and TransformerLens; see its docstring) from two tiny
models with random weights, rotary embeddings and grouped-query attention (4 query heads,
2 key heads): a TransformerLens ``HookedTransformer`` (``run_with_cache``) and a Hugging Face
``LlamaForCausalLM`` (``output_attentions=True``, and q and k captured after RoPE by the
the recipe in docs/tensor-format.md). Nothing here imports torch.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import numpy as np
import pytest

from engine.analysis.head_scan import iter_file_diagnostics, replay_file_head
from engine.core.scaling import Rule
from engine.io.tensors import load_tensors

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "tests" / "fixtures" / "real"
REFERENCE = np.load(REAL / "tl_reference.npz")
#: What the libraries' float32 softmax and ours (float64) may differ by.
TOLERANCE = 1e-5


def _weights(tf, layer: int, head: int, batch_entry: int) -> np.ndarray:
    """The app's attention weights of one head: 1/√d_k is these models' own scale."""
    (replay,) = replay_file_head(tf, layer, head, batch_entry=batch_entry, rules=(Rule("sqrt"),))
    return replay.weights


@pytest.mark.parametrize("name", ["tl_cache.safetensors", "tl_cache_full.safetensors"])
def test_transformer_lens_q_and_k_give_its_hook_pattern(name) -> None:
    tf = load_tensors(REAL / name)
    assert (tf.layout, tf.kind, tf.layers, tf.heads, tf.kv_heads, tf.n, tf.d_k, tf.batch) == (
        "transformer_lens", "qk", (0, 1), 4, 2, 12, 8, 2)
    assert tf.causal
    for layer in tf.layers:  # TransformerLens divides by attn_scale = √d_head
        assert tf.layer_scale(layer) == pytest.approx(1 / float(REFERENCE[f"attn_scale{layer}"]))
        for head in range(tf.heads):
            for batch_entry in range(tf.batch):
                assert np.abs(_weights(tf, layer, head, batch_entry)
                              - REFERENCE[f"pattern{layer}"][batch_entry, head]
                              ).max() < TOLERANCE


def test_a_cache_without_its_batch_dimension_is_read_too() -> None:
    tf = load_tensors(REAL / "tl_cache_nobatch.npz")
    assert (tf.batch, tf.heads, tf.kv_heads) == (1, 4, 2)
    for layer in tf.layers:
        for head in range(tf.heads):
            assert np.abs(_weights(tf, layer, head, 0)
                          - REFERENCE[f"pattern_nobatch{layer}"][head]).max() < TOLERANCE


def test_transformer_lens_scores_give_the_same_diagnosis_as_its_q_and_k() -> None:
    scores = load_tensors(REAL / "tl_scores_only.npz")
    assert (scores.kind, scores.has_logits, scores.causal) == ("weights", True, True)
    qk = load_tensors(REAL / "tl_cache.safetensors")
    for got, want in zip(iter_file_diagnostics(scores), iter_file_diagnostics(qk), strict=True):
        g, w = got.diagnostics, want.diagnostics
        assert g.source == "scores" and g.flags == w.flags
        for key in ("logit_std", "max_abs_logit", "entropy_mean", "p_max_mean", "sink_mass",
                    "entropy_floor_at_norm"):
            assert getattr(g, key) == pytest.approx(getattr(w, key), rel=1e-5, abs=1e-6), key
        assert np.abs(scores.weights(got.layer, got.head)
                      - REFERENCE[f"pattern{got.layer}"][:, got.head]).max() < TOLERANCE


def test_the_readme_recipe_captures_q_and_k_that_give_transformers_weights() -> None:
    """q and k captured after RoPE, keys repeated per query head: softmax(c·q·kᵀ) is the
    output_attentions transformers computed (before RoPE it is not: see the next test)."""
    attentions = np.load(REAL / "hf_llama_attentions.npy")
    tf = load_tensors(REAL / "hf_llama_qk.npz")
    assert (tf.layout, tf.heads, tf.n, tf.d_k, tf.batch, tf.causal) == ("app", 4, 10, 8, 2, True)
    assert tf.scale == pytest.approx(8 ** -0.5)
    for layer in tf.layers:
        for head in range(tf.heads):
            for batch_entry in range(tf.batch):
                assert np.abs(_weights(tf, layer, head, batch_entry)
                              - attentions[layer, batch_entry, head]).max() < TOLERANCE


def test_transformers_attention_weights_give_the_diagnosis_of_its_q_and_k() -> None:
    weights = load_tensors(REAL / "hf_llama_attentions.npy")
    assert (weights.layout, weights.kind, weights.layers, weights.heads, weights.n,
            weights.batch, weights.causal) == ("stacked", "weights", (0, 1), 4, 10, 2, True)
    qk = load_tensors(REAL / "hf_llama_qk.npz")
    flagged = 0
    for got, want in zip(iter_file_diagnostics(weights), iter_file_diagnostics(qk),
                         strict=True):
        g, w = got.diagnostics, want.diagnostics
        assert g.flags == w.flags
        flagged += bool(g.flags)
        for key in ("entropy_mean", "p_max_mean", "saturated_share", "sink_mass"):
            assert getattr(g, key) == pytest.approx(getattr(w, key), rel=1e-5, abs=1e-6), key
        assert math.isnan(g.logit_std) and math.isfinite(w.logit_std)
    assert flagged  # the fixture's layer 1 has its queries grown: sharp heads


def test_inspect_reads_both_real_layouts(capsys) -> None:
    from main import main

    for name, source in (("tl_cache.safetensors", "qk"), ("hf_llama_attentions.npy", "weights")):
        assert main(["inspect", str(REAL / name), "--out", "-", "--quiet"]) == 0
        rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
        assert len(rows) == 8 and {row["source"] for row in rows} == {source}


def _snippets(text: str) -> dict[str, str]:
    pattern = re.compile(r"^( *)# --- snippet: ([\w-]+) ---\n(.*?)^\1# --- end snippet ---",
                         re.M | re.S)
    out = {}
    for indent, name, body in pattern.findall(text):
        lines = [line[len(indent):] if line.startswith(indent) else line
                 for line in body.splitlines()]
        out[name] = "\n".join(lines).strip()
    return out


def test_the_format_page_quotes_the_producer_snippets_that_made_the_fixtures() -> None:
    """The three producer snippets of docs/tensor-format.md are the code that wrote these
    files, verbatim."""
    script = _snippets((ROOT / "tests" / "fixtures" / "make_real_fixtures.py").read_text())
    assert set(script) == {"tl-cache", "hf-attentions", "hf-qk-after-rope"}
    readme = (ROOT / "docs" / "tensor-format.md").read_text(encoding="utf-8")
    for name, code in script.items():
        assert code in readme, name
