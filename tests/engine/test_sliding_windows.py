"""Sliding windows per layer, as each family's transformers config and mask define them.

The tiny ``-sw`` fixtures (windows of 4 keys, shorter than their texts) hold transformers' own
q, k and attention weights (``tests/fixtures/make_model_fixtures.py windows``). The capture is
also checked against a plain per-layer loop written here from transformers'
Mistral source (RMSNorm, half-split RoPE, repeat_kv, eager attention under
``sliding_window_overlay``: key j kept for query i iff i − window < j ≤ i), one query row
and one head at a time in float64: it shares no code with engine.models.forward.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import load_file

from engine.analysis.head_scan import every_rule, iter_file_diagnostics, replay_file_head
from engine.core.scaling import Rule
from engine.io.tensors import TensorFileError, load_tensors
from engine.models import ModelError, open_model
from engine.models.spec import spec_from_hf_config
from tests.engine.test_models import weights_from_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
TEXT = "The quick brown fox jumps over the lazy dog, and then it runs far away."


def config_of(arch: str, **changes: Any) -> dict[str, Any]:
    config = json.loads((FIXTURES / f"tiny-{arch}" / "config.json").read_text())
    for key, value in changes.items():
        if value is _DROP:
            config.pop(key, None)
        else:
            config[key] = value
    return config


_DROP = object()


@pytest.mark.parametrize(("arch", "changes", "windows"), [
    # Gemma 2: layers 0, 2, 4 slide ((i + 1) % 2), the odd ones see everything.
    ("gemma2", {"layer_types": _DROP, "num_hidden_layers": 5}, (64, None, 64, None, 64)),
    ("gemma2", {"layer_types": ["full_attention", "sliding_attention"]}, (None, 64)),
    ("gemma2", {"sliding_window": _DROP, "layer_types": _DROP}, (4096, None)),
    # Mistral: every layer; absent means 4096 (MistralConfig), null means none.
    ("mistral", {"sliding_window": 7}, (7, 7)),
    ("mistral", {"sliding_window": _DROP}, (4096, 4096)),
    ("mistral", {}, (None, None)),
    # Qwen2 / Qwen3: only with use_sliding_window, from max_window_layers on.
    ("qwen2", {"use_sliding_window": True, "sliding_window": 9, "max_window_layers": 1,
               "layer_types": _DROP}, (None, 9)),
    ("qwen2", {"use_sliding_window": True, "sliding_window": 9, "layer_types": _DROP},
     (None, None)),  # max_window_layers defaults to 28: both layers are full
    ("qwen3", {"use_sliding_window": True, "sliding_window": 9, "max_window_layers": 0,
               "layer_types": _DROP}, (9, 9)),
    ("qwen2", {"use_sliding_window": False, "sliding_window": 9, "layer_types": _DROP},
     (None, None)),
    # Llama never builds a sliding mask, whatever its config says.
    ("llama", {"sliding_window": 5, "use_sliding_window": True}, (None, None)),
])
def test_windows_per_layer_as_transformers_reads_the_config(
        arch: str, changes: dict[str, Any], windows: tuple[int | None, ...]) -> None:
    assert spec_from_hf_config(config_of(arch, **changes), "m").windows == windows


@pytest.mark.parametrize(("arch", "changes", "words"), [
    ("qwen2", {"layer_types": ["full_attention", "sliding_attention"]},
     ("'layer_types'", "'use_sliding_window' is false", "sliding_attention")),
    ("gemma2", {"sliding_window": None}, ("'layer_types'", "'sliding_window' is null")),
    ("gemma2", {"layer_types": ["sliding_attention"]}, ("'layer_types'", "a list of 2")),
    ("gemma2", {"layer_types": ["sliding_attention", "chunked_attention"]},
     ("'layer_types[1]'", "'chunked_attention'")),
    ("qwen2", {"use_sliding_window": True, "sliding_window": 8, "layer_types": _DROP,
               "max_window_layers": -1}, ("'max_window_layers'", "-1")),
])
def test_windows_that_cannot_be_built_are_refused_in_one_line(
        arch: str, changes: dict[str, Any], words: tuple[str, ...]) -> None:
    with pytest.raises(ModelError) as caught:
        spec_from_hf_config(config_of(arch, **changes), "m")
    message = str(caught.value)
    assert "\n" not in message and all(word in message for word in words), message


#: The windowed fixtures and the window of each of their layers, as transformers built them.
WINDOWED = {"mistral-sw": (4, 4), "gemma2-sw": (4, None, 4), "qwen2-sw": (None, 4, 4)}


@pytest.mark.parametrize("name", WINDOWED)
def test_windowed_models_match_transformers(name: str, tmp_path: Path) -> None:
    folder = FIXTURES / f"tiny-{name}"
    ref = np.load(folder / "reference.npz")
    model = open_model(folder)
    assert model.spec.windows == WINDOWED[name]
    capture = model.capture(str(ref["text"]))
    assert list(capture.token_ids) == ref["ids"].tolist()
    tf = load_tensors(capture.save(tmp_path / "c.npz"))
    assert tuple(tf.layer_window(layer) for layer in tf.layers) == WINDOWED[name]
    for layer in tf.layers:
        for part in ("q", "k"):
            got, want = getattr(capture.layers[layer], part), ref[f"layer{layer}.{part}"]
            np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * max(np.abs(want).max(), 1))
        np.testing.assert_allclose(weights_from_file(tf, layer), ref[f"layer{layer}.attn"],
                                   rtol=0, atol=1e-5)


def windowed_copy(tmp_path: Path, arch: str, **changes: Any) -> Path:
    folder = tmp_path / f"tiny-{arch}"
    shutil.copytree(FIXTURES / f"tiny-{arch}", folder)
    (folder / "config.json").write_text(json.dumps(config_of(arch, **changes)))
    return folder


def _rms(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def mistral_by_hand(folder: Path, ids: list[int], window: int | None) -> dict[str, np.ndarray]:
    """q and k of layer 1 (heads, n, d) after layer 0 attended through ``window``."""
    cfg = json.loads((folder / "config.json").read_text())
    w = {name: a.astype(np.float64) for name, a in load_file(folder / "model.safetensors").items()}
    heads, kv, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, n = cfg["rms_norm_eps"], len(ids)
    inv = 1.0 / cfg["rope_parameters"]["rope_theta"] ** (np.arange(0, d, 2) / d)
    angles = np.arange(n)[:, None] * inv[None, :]
    cos, sin = np.cos(np.hstack([angles, angles])), np.sin(np.hstack([angles, angles]))

    def rope(x: np.ndarray) -> np.ndarray:  # x (n, d): x·cos + rotate_half(x)·sin
        return x * cos + np.hstack([-x[:, d // 2:], x[:, :d // 2]]) * sin

    def qkv(layer: int, x: np.ndarray) -> tuple[list[np.ndarray], ...]:
        h = _rms(x, w[f"layers.{layer}.input_layernorm.weight"], eps)
        proj = {p: h @ w[f"layers.{layer}.self_attn.{p}_proj.weight"].T for p in "qkv"}
        q = [rope(proj["q"][:, i * d:(i + 1) * d]) for i in range(heads)]
        k = [rope(proj["k"][:, i * d:(i + 1) * d]) for i in range(kv)]
        v = [proj["v"][:, i * d:(i + 1) * d] for i in range(kv)]
        return q, k, v

    x = w["embed_tokens.weight"][ids]
    q, k, v = qkv(0, x)
    out = np.zeros((n, heads * d))
    for head in range(heads):
        kh = head // (heads // kv)  # repeat_kv: each key head serves consecutive query heads
        for i in range(n):
            first = 0 if window is None else max(0, i - window + 1)
            logits = np.array([q[head][i] @ k[kh][j] for j in range(first, i + 1)]) / math.sqrt(d)
            p = np.exp(logits - logits.max())
            p /= p.sum()
            out[i, head * d:(head + 1) * d] = p @ v[kh][first:i + 1]
    x = x + out @ w["layers.0.self_attn.o_proj.weight"].T
    h = _rms(x, w["layers.0.post_attention_layernorm.weight"], eps)
    gate = h @ w["layers.0.mlp.gate_proj.weight"].T
    x = x + (gate / (1 + np.exp(-gate)) * (h @ w["layers.0.mlp.up_proj.weight"].T)) @ w[
        "layers.0.mlp.down_proj.weight"].T
    q, k, _ = qkv(1, x)
    return {"q": np.stack(q), "k": np.stack([k[i // (heads // kv)] for i in range(heads)])}


@pytest.mark.parametrize("window", [1, 5, 12])
def test_mistral_window_matches_a_plain_loop(tmp_path: Path, window: int) -> None:
    folder = windowed_copy(tmp_path, "mistral", sliding_window=window)
    capture = open_model(folder).capture(TEXT)
    ids = list(capture.token_ids)
    assert len(ids) > 2 * window  # the window cuts most rows
    assert capture.meta["layers"] == {str(i): {"scale": 0.25, "window": window} for i in (0, 1)}
    expected = mistral_by_hand(folder, ids, window)
    full = mistral_by_hand(folder, ids, None)
    for name in ("q", "k"):
        got = getattr(capture.layers[1], name)
        np.testing.assert_allclose(got, expected[name], rtol=0, atol=2e-5)
        # The window changes layer 1 far beyond that tolerance: the test can fail.
        assert np.abs(full[name] - expected[name]).max() > 1e-2
    # Layer 0's q and k come before any attention: the window cannot touch them.
    plain = open_model(FIXTURES / "tiny-mistral").capture(TEXT)
    np.testing.assert_array_equal(plain.layers[0].q, capture.layers[0].q)
    np.testing.assert_allclose(full["q"], plain.layers[1].q, rtol=0, atol=2e-5)


def test_gemma2_slides_on_even_layers_only(tmp_path: Path) -> None:
    folder = windowed_copy(tmp_path, "gemma2", sliding_window=4, layer_types=_DROP)
    capture = open_model(folder).capture(TEXT)
    assert capture.meta["layers"]["0"]["window"] == 4
    assert "window" not in capture.meta["layers"]["1"]
    plain = open_model(FIXTURES / "tiny-gemma2").capture(TEXT)
    # Layer 0 slides, so layer 1's q differs from the full-attention model's.
    assert np.abs(plain.layers[1].q - capture.layers[1].q).max() > 1e-2


def expected_uniform(n: int, window: int | None) -> tuple[float, float]:
    """Mean over rows of ln(keys seen) and of 1/(keys seen)."""
    seen = np.minimum(np.arange(1, n + 1), n if window is None else window)
    return float(np.mean(np.log(seen))), float(np.mean(1.0 / seen))


def test_heads_and_replays_use_each_layers_own_window(tmp_path: Path) -> None:
    folder = windowed_copy(tmp_path, "gemma2", sliding_window=6, layer_types=_DROP)
    tf = load_tensors(open_model(folder).capture(TEXT).save(tmp_path / "g.npz"))
    assert (tf.layer_window(0), tf.layer_window(1)) == (6, None)
    n = tf.n
    for record in iter_file_diagnostics(tf):
        entropy, sink = expected_uniform(n, tf.layer_window(record.layer))
        assert record.diagnostics.entropy_uniform == pytest.approx(entropy, rel=1e-12)
        assert record.diagnostics.sink_uniform == pytest.approx(sink, rel=1e-12)
        assert record.diagnostics.entropy_mean <= entropy + 1e-9
    outside = np.tri(n, k=-6, dtype=bool)  # key j ≤ i − 6: behind layer 0's window
    for replay in replay_file_head(tf, 0, 3, rules=every_rule(Rule.from_keywords("sqrt"))):
        assert replay.weights is not None
        assert not replay.weights[outside].any(), replay.rule
        assert (replay.weights[~np.tri(n, dtype=bool)] == 0).all()
        np.testing.assert_allclose(replay.weights.sum(axis=-1), 1.0, atol=1e-12)
    # The model's own rule under its own mask gives the weights the model used.
    q, k = tf.qk(0, 3)
    z = tf.layer_scale(0) * q[0] @ k[0].T
    cap = tf.layer_cap(0)
    z = np.where(np.tri(n, dtype=bool) & ~outside, cap * np.tanh(z / cap), -np.inf)
    own = np.exp(z - z.max(axis=-1, keepdims=True))
    own /= own.sum(axis=-1, keepdims=True)
    diagnostics = next(r.diagnostics for r in iter_file_diagnostics(tf)
                       if (r.layer, r.head) == (0, 3))
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.nansum(np.where(own > 0, own * np.log(own), 0.0), axis=-1)
    assert diagnostics.entropy_mean == pytest.approx(float(entropy.mean()), rel=1e-9)


def test_old_files_without_windows_keep_the_causal_mask(tmp_path: Path) -> None:
    tf = load_tensors(open_model(FIXTURES / "tiny-mistral").capture(TEXT).save(tmp_path / "m.npz"))
    assert tf.layer_window(0) is None
    record = next(iter_file_diagnostics(tf))
    assert record.diagnostics.entropy_uniform == pytest.approx(expected_uniform(tf.n, None)[0])


@pytest.mark.parametrize("window", [0, -3, 2.5, "8", True, 1 << 30])
def test_a_bad_window_in_a_file_is_refused(tmp_path: Path, window: Any) -> None:
    meta = {"causal": True, "layers": {"0": {"window": window}}}
    path = tmp_path / "bad.npz"
    rng = np.random.default_rng(0)
    np.savez(path, **{"layer0.q": rng.normal(size=(1, 2, 5, 4)),
                      "layer0.k": rng.normal(size=(1, 2, 5, 4)), "meta": json.dumps(meta)})
    with pytest.raises(TensorFileError, match=r"'layers\.0\.window' must be a whole number"):
        load_tensors(path)


def test_a_weights_file_of_a_windowed_model_reads_like_its_q_and_k(tmp_path: Path) -> None:
    """transformers' own weights of tiny-qwen2-sw (no soft-cap: a replay from weights is
    exact), saved as a weights-only file with the windows in meta: the same uniform
    references, entropies and replays as its q and k."""
    folder = FIXTURES / "tiny-qwen2-sw"
    ref = np.load(folder / "reference.npz")
    qk = load_tensors(open_model(folder).capture(str(ref["text"])).save(tmp_path / "qk.npz"))
    meta = {"causal": True, "d_k": qk.d_k, "scale": qk.layer_scale(0),
            "layers": {"1": {"window": 4}, "2": {"window": 4}}}
    path = tmp_path / "weights.npz"
    np.savez(path, **{f"layer{i}.attn": ref[f"layer{i}.attn"] for i in range(3)},
             meta=json.dumps(meta))
    weights = load_tensors(path)
    assert weights.kind == "weights"
    by_weights = {(r.layer, r.head): r.diagnostics for r in iter_file_diagnostics(weights)}
    for record in iter_file_diagnostics(qk):
        got = by_weights[record.layer, record.head]
        assert got.entropy_uniform == pytest.approx(record.diagnostics.entropy_uniform,
                                                    rel=1e-12)
        assert got.entropy_mean == pytest.approx(record.diagnostics.entropy_mean, abs=1e-4)
    rules = (Rule.from_keywords("linear"), Rule.from_keywords("log_n"))
    for layer in (0, 2):
        from_weights = replay_file_head(weights, layer, 1, rules=rules)
        from_qk = replay_file_head(qk, layer, 1, rules=rules)
        for a, b in zip(from_weights, from_qk, strict=True):
            np.testing.assert_allclose(a.weights, b.weights, rtol=0, atol=1e-4)
