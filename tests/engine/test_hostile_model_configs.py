"""Hostile model configs and weights, built in code from the tiny fixtures: every config.json
value and GGUF metadata value is checked for type and range where it is read, and every weight
the forward pass uses for presence and shape, each refused in one line naming the key or the
tensor, without changing a byte of the folder.

A table has one row per case (a config edit, a weight dropped or reshaped, a GGUF metadata
edit); the counts that once built a billion-entry tuple run in a child process with a time and
memory bound; a grid of wrong types and ranges on every key read must give a ModelError or a
capture whose q and k are finite.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.core.memory import MemoryBudgetError
from engine.models import ModelError, open_model
from engine.models.blocks import activation as _activation
from engine.models.spec import ACTIVATIONS
from tests.engine.hostile_models import (
    FIXTURES,
    GGUF,
    copy_fixture,
    dropped,
    edited,
    gguf_with,
    reshaped,
    with_config,
    with_rope,
    without_rope_key,
)
from tests.engine.test_hostile_files import run_child

#: One row per case: how to build it, and the words its one-line message must hold.
CASES: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "rope_theta text": (with_rope("llama", rope_theta="abc"),
                        ("'rope_parameters.rope_theta'", "'abc'", "> 1")),
    "rope_theta 1": (with_rope("mistral", rope_theta=1), ("'rope_parameters.rope_theta'", "> 1")),
    "old-style rope_theta 0.5": (
        with_config("qwen2", lambda c: c.update(rope_parameters=None, rope_theta=0.5)),
        ("'rope_theta'", "0.5", "> 1")),
    "rms_norm_eps a list": (edited("qwen2", rms_norm_eps=[1]), ("'rms_norm_eps'", "[1]")),
    "rms_norm_eps negative": (edited("mistral", rms_norm_eps=-1e-6),
                              ("'rms_norm_eps'", "-1e-06", "≥ 1e-30 and < 1")),
    "rms_norm_eps 0": (edited("qwen3", rms_norm_eps=0), ("'rms_norm_eps'", "got 0")),
    "rms_norm_eps NaN": (edited("gemma2", rms_norm_eps=float("nan")), ("'rms_norm_eps'", "nan")),
    "layer_norm_eps text": (edited("bert", layer_norm_eps="1e-12"), ("'layer_norm_eps'",)),
    "query_pre_attn_scalar 0": (edited("gemma2", query_pre_attn_scalar=0),
                                ("'query_pre_attn_scalar'", "got 0", "≥ 1")),
    "query_pre_attn_scalar -4": (edited("gemma2", query_pre_attn_scalar=-4),
                                 ("'query_pre_attn_scalar'", "-4")),
    "rope_scaling a list": (
        with_config("qwen2", lambda c: c.update(rope_parameters=None, rope_scaling=[1, 2])),
        ("'rope_scaling'", "[1, 2]", "an object")),
    "rope_parameters.full_attention a list": (
        with_rope("qwen2", full_attention=[1]), ("'rope_parameters.full_attention'",)),
    "llama3 without factor": (without_rope_key("llama", "factor"),
                              ("'rope_parameters.factor' is missing",)),
    "llama3 without low_freq_factor": (without_rope_key("llama", "low_freq_factor"),
                                       ("'rope_parameters.low_freq_factor' is missing",)),
    "llama3 without high_freq_factor": (without_rope_key("llama", "high_freq_factor"),
                                        ("'rope_parameters.high_freq_factor' is missing",)),
    "llama3 without original positions": (
        without_rope_key("llama", "original_max_position_embeddings"),
        ("'rope_parameters.original_max_position_embeddings' is missing",)),
    "llama3 high ≤ low": (with_rope("llama", high_freq_factor=1.0, low_freq_factor=2.0),
                          ("'rope_parameters.high_freq_factor'", "> 2")),
    "llama3 factor 0": (with_rope("llama", factor=0), ("'rope_parameters.factor'", "≥ 1")),
    "linear factor -2": (with_rope("mistral", rope_type="linear", factor=-2),
                         ("'rope_parameters.factor'", "-2")),
    "rope_type yarn": (with_rope("qwen3", rope_type="yarn", factor=4.0),
                       ("'rope_parameters.rope_type'", "'yarn'", "default, linear, llama3")),
    "partial rotary": (edited("qwen3", partial_rotary_factor=0.5),
                       ("'partial_rotary_factor'", "0.5")),
    "model_type a list": (edited("llama", model_type=["llama"]),
                          ("architecture ['llama']", "not supported")),
    "model_type a number": (edited("llama", model_type=5), ("architecture 5",)),
    "attn_logit_softcapping 0": (edited("gemma2", attn_logit_softcapping=0),
                                 ("'attn_logit_softcapping'", "got 0")),
    "attn_logit_softcapping 1e-300": (edited("gemma2", attn_logit_softcapping=1e-300),
                                      ("'attn_logit_softcapping'", "≥ 0.001")),
    "rms_norm_eps 1e-300": (edited("llama", rms_norm_eps=1e-300), ("'rms_norm_eps'", "1e-300")),
    "attn_logit_softcapping 1e300": (edited("gemma2", attn_logit_softcapping=1e300),
                                     ("'attn_logit_softcapping'", "< 1e+06")),
    "sliding_window 0": (edited("gemma2", sliding_window=0), ("'sliding_window'", "got 0")),
    "sliding_window 2.5": (edited("mistral", sliding_window=2.5), ("'sliding_window'", "2.5")),
    "sliding_window text": (edited("gemma2", sliding_window="64"), ("'sliding_window'", "'64'")),
    "hidden_act a list": (edited("qwen2", hidden_act=["silu"]), ("'hidden_act'", "['silu']")),
    "hidden_act relu": (edited("llama", hidden_act="relu"),
                        ("'hidden_act'", "'relu'", "gelu, gelu_new")),
    "activation_function a number": (edited("gpt2", activation_function=0),
                                      ("'activation_function'",)),
    "scale_attn_weights text": (edited("gpt2", scale_attn_weights="yes"),
                                ("'scale_attn_weights'", "true or false")),
    "use_sliding_window 1": (edited("qwen2", use_sliding_window=1), ("'use_sliding_window'",)),
    "is_decoder": (edited("bert", is_decoder=True), ("'is_decoder'",)),
    "relative positions": (edited("bert", position_embedding_type="relative_key"),
                           ("'position_embedding_type'", "'relative_key'")),
    "mlp_bias": (edited("llama", mlp_bias=True), ("'mlp_bias'",)),
    "max_position_embeddings 10^18": (edited("qwen2", max_position_embeddings=10**18),
                                      ("'max_position_embeddings'", "16,777,216")),
    "num_hidden_layers true": (edited("mistral", num_hidden_layers=True),
                               ("'num_hidden_layers'", "True")),
    "num_hidden_layers 10^9": (edited("llama", num_hidden_layers=10**9),
                               ("'num_hidden_layers'", "1,024")),
    "n_layer -1": (edited("gpt2", n_layer=-1), ("'n_layer'", "-1")),
    "num_attention_heads 0": (edited("qwen2", num_attention_heads=0), ("'num_attention_heads'",)),
    "key heads do not divide": (edited("mistral", num_key_value_heads=3), ("cannot share",)),
    "more key heads than heads": (edited("qwen3", num_key_value_heads=8),
                                  ("'num_key_value_heads'", "from 1 to 4")),
    "odd rotary head width": (edited("mistral", head_dim=7), ("head width is 7 (odd)",)),
    "hidden not a multiple of heads": (edited("bert", hidden_size=33), ("not a multiple",)),
    "intermediate_size -1": (edited("qwen2", intermediate_size=-1), ("'intermediate_size'",)),
    "intermediate_size not the weights'": (
        edited("qwen2", intermediate_size=64),
        ("'layers.0.mlp.gate_proj.weight' has shape (48, 32)", "MLP width 64")),
    "n_positions beyond wpe": (edited("gpt2", n_positions=128),
                               ("'wpe.weight' has shape (64, 32)", "≥ 128 positions")),
    "positions beyond BERT's table": (
        edited("bert", max_position_embeddings=128),
        ("'embeddings.position_embeddings.weight'", "≥ 128 positions")),
    "attention_bias without biases": (edited("llama", attention_bias=True),
                                      ("lack", "self_attn.q_proj.bias")),
    "layers beyond the weights": (edited("qwen2", num_hidden_layers=1000,
                                         layer_types=None),
                                  ("lack 'layers.2.", "layer 2 of 1000")),
    "no post-attention norm": (dropped("qwen2", "layers.1.post_attention_layernorm.weight"),
                               ("lack 'layers.1.post_attention_layernorm.weight'",)),
    "misshaped input norm": (reshaped("mistral", "layers.0.input_layernorm.weight", (16,)),
                             ("'layers.0.input_layernorm.weight' has shape (16,)", "(32,)")),
    "no o_proj": (dropped("qwen2", "layers.0.self_attn.o_proj.weight"),
                  ("lack 'layers.0.self_attn.o_proj.weight'",)),
    "transposed down_proj": (reshaped("gemma2", "layers.1.mlp.down_proj.weight", (48, 32)),
                             ("'layers.1.mlp.down_proj.weight' has shape (48, 32)",
                              "(32, 48)")),
    "no q_norm": (dropped("qwen3", "layers.0.self_attn.q_norm.weight"),
                  ("lack 'layers.0.self_attn.q_norm.weight'",)),
    "misshaped k_norm": (reshaped("qwen3", "layers.1.self_attn.k_norm.weight", (8,)),
                         ("'layers.1.self_attn.k_norm.weight' has shape (8,)", "head width 16")),
    "no pre-feedforward norm": (dropped("gemma2", "layers.0.pre_feedforward_layernorm.weight"),
                                ("pre_feedforward_layernorm",)),
    "no embedding LayerNorm bias": (dropped("bert", "embeddings.LayerNorm.bias"),
                                    ("lack 'embeddings.LayerNorm.bias'",)),
    "misshaped token type table": (reshaped("bert", "embeddings.token_type_embeddings.weight",
                                            (2, 16)), ("token_type_embeddings", "(2, 16)")),
    "BERT output LayerNorm missing": (
        dropped("bert", "encoder.layer.1.output.LayerNorm.weight"),
        ("lack 'encoder.layer.1.output.LayerNorm.weight'",)),
    "transposed c_fc": (reshaped("gpt2", "h.0.mlp.c_fc.weight", (128, 32)),
                        ("'h.0.mlp.c_fc.weight' has shape (128, 32)", "(32, 128)")),
    "no ln_2 bias": (dropped("gpt2", "h.1.ln_2.bias"), ("lack 'h.1.ln_2.bias'",)),
    "no qwen2 q bias": (dropped("qwen2", "layers.0.self_attn.q_proj.bias"),
                        ("lack 'layers.0.self_attn.q_proj.bias'",)),
    "misshaped qwen2 k bias": (reshaped("qwen2", "layers.0.self_attn.k_proj.bias", (32,)),
                               ("'layers.0.self_attn.k_proj.bias' has shape (32,)",
                                "2 key heads × 8")),
    "an MLP bias": (reshaped("qwen2", "layers.0.mlp.gate_proj.bias", (48,)),
                    ("'layers.0.mlp.gate_proj.bias'", "bias of the MLP")),
    "GGUF yarn": (gguf_with({"llama.rope.scaling.type": "yarn"}),
                  ("'llama.rope.scaling.type'", "'yarn'", "none, linear")),
    "GGUF linear without factor": (gguf_with({"llama.rope.scaling.type": "linear"}),
                                   ("'llama.rope.scaling.factor' is missing",)),
    "GGUF linear factor 0": (gguf_with({"llama.rope.scaling.type": "linear",
                                    "llama.rope.scaling.factor": 0.0}),
                             ("'llama.rope.scaling.factor'", "≥ 1")),
    "GGUF block_count 10^9": (gguf_with({"llama.block_count": 10**9}),
                              ("'llama.block_count'", "1000000000")),
    "GGUF partial rotary": (gguf_with({"llama.rope.dimension_count": 32}),
                            ("'llama.rope.dimension_count'", "32", "partial rotary")),
    "GGUF value width": (gguf_with({"llama.attention.value_length": 32}),
                         ("'llama.attention.value_length'", "32")),
    "GGUF key width": (gguf_with({"llama.attention.key_length": 32,
                              "llama.rope.dimension_count": None}),
                       ("'blk.0.attn_q.weight' has shape (256, 256)", "4 heads × 32")),
    "GGUF odd rope": (gguf_with({"llama.attention.key_length": 63,
                             "llama.rope.dimension_count": 63}), ("63 (odd)",)),
    "GGUF freq_base text": (gguf_with({"llama.rope.freq_base": "abc"}),
                            ("'llama.rope.freq_base'", "'abc'")),
    "GGUF negative eps": (gguf_with({"llama.attention.layer_norm_rms_epsilon": -1.0}),
                          ("'llama.attention.layer_norm_rms_epsilon'", "-1.0")),
    "GGUF per-layer head counts": (gguf_with({"llama.attention.head_count": [4, 4]}),
                                   ("'llama.attention.head_count'", "[4, 4]")),
    "GGUF experts": (gguf_with({"llama.expert_count": 8}), ("'llama.expert_count'", "experts")),
    "GGUF architecture a list": (gguf_with({"general.architecture": ["llama"]}),
                                 ("architecture ['llama']",)),
    "GGUF width 0": (gguf_with({"llama.embedding_length": 0}), ("'llama.embedding_length'",)),
    "GGUF context 10^18": (gguf_with({"llama.context_length": 10**18}),
                           ("'llama.context_length'",)),
    "GGUF old linear scale": (gguf_with({"llama.rope.scale_linear": 2.0}),
                              ("'llama.rope.scale_linear'",)),
    "GGUF rotary frequency divisors of the wrong length": (
        gguf_with({}, {"output_norm.weight": "rope_freqs.weight"}),
        ("'rope_freqs.weight' has shape (256,)", "(32,)")),
    "GGUF LongRoPE factors": (gguf_with({}, {"output_norm.weight": "rope_factors_long.weight"}),
                              ("'rope_factors_long.weight'", "LongRoPE", "does not model")),
}


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_model_is_refused_in_one_line_naming_the_key(tmp_path, case) -> None:
    build, words = CASES[case]
    path = build(tmp_path)
    before = _digest(tmp_path)
    with pytest.raises(ModelError) as caught:
        open_model(path)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert message.startswith(f"{path.name}: "), message
    for word in words:
        assert word in message, message
    assert _digest(tmp_path) == before


def test_the_fixtures_themselves_open_and_capture() -> None:
    """The cases above start from these: each must be refused for its edit alone."""
    for folder in [*sorted(p for p in FIXTURES.glob("tiny-*") if p.is_dir()), GGUF]:
        model = open_model(folder)
        capture = model.capture("the lazy dog", layers=[model.spec.layers - 1])
        assert all(np.isfinite(cap.q).all() for cap in capture.layers.values()), folder


CHILD_OPEN = textwrap.dedent("""
    import resource, time
    from engine.models import ModelError, open_model
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    try:
        open_model({path!r})
    except ModelError as exc:
        print("REFUSED", exc)
    else:
        print("OPENED")
    print("SECONDS", time.perf_counter() - start)
    print("GROWN", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)
""")


@pytest.mark.parametrize("case", ["num_hidden_layers 10^9", "GGUF block_count 10^9",
                                  "layers beyond the weights", "max_position_embeddings 10^18"])
def test_huge_counts_are_refused_in_bounded_time_and_memory(tmp_path, case) -> None:
    build, words = CASES[case]
    path = build(tmp_path)
    out = run_child(CHILD_OPEN.format(path=str(path)), timeout=60)
    refused = [line for line in out.splitlines() if line.startswith("REFUSED ")]
    assert len(refused) == 1 and "Traceback" not in out, out
    assert all(word in refused[0] for word in words), out
    grown = int(next(line for line in out.splitlines() if line.startswith("GROWN"))
                .split()[1])
    # A billion-entry tuple took 7.9 GB; opening the tiny model itself takes a few MB.
    assert grown < 32 << 20, out


#: Values of the wrong type or range: text, NaN text, lists, objects, booleans, zero,
#: negatives, odd and fractional numbers, huge integers, NaN, float extremes.
HOSTILE_VALUES: list[Any] = ["abc", "NaN", [1], [[2]], {"a": 1}, True, False, 0, -4, 7, 0.5,
                             10**30, float("nan"), float("inf"), 1e308, 1e-300]
#: Every key the config readers look at, per architecture.
COMMON_KEYS = ["model_type", "hidden_size", "num_attention_heads", "intermediate_size",
               "max_position_embeddings", "num_hidden_layers"]
ROTARY_KEYS = ["num_key_value_heads", "head_dim", "rms_norm_eps", "hidden_act", "rope_theta",
               "rope_scaling", "rope_parameters", "partial_rotary_factor", "mlp_bias",
               "attention_bias", "use_sliding_window", "sliding_window"]
HF_KEYS = {
    "bert": [*COMMON_KEYS, "layer_norm_eps", "hidden_act", "position_embedding_type",
             "is_decoder"],
    "gpt2": ["n_embd", "n_head", "n_layer", "n_inner", "n_positions", "layer_norm_epsilon",
             "activation_function", "scale_attn_weights", "scale_attn_by_inverse_layer_idx"],
    "llama": [*COMMON_KEYS, *ROTARY_KEYS],
    "qwen3": [*COMMON_KEYS, *ROTARY_KEYS],
    # The windowed fixtures, whose windows are shorter than the text: every window key read.
    "qwen2-sw": [*COMMON_KEYS, *ROTARY_KEYS, "max_window_layers", "layer_types"],
    "gemma2-sw": [*COMMON_KEYS, *ROTARY_KEYS, "layer_types"],
    "gemma2": [*COMMON_KEYS, *ROTARY_KEYS, "hidden_activation", "query_pre_attn_scalar",
               "attn_logit_softcapping"],
    "olmo2": [*COMMON_KEYS, *ROTARY_KEYS],
    "granite": [*COMMON_KEYS, *ROTARY_KEYS, "attention_multiplier", "embedding_multiplier",
                "residual_multiplier", "logits_scaling"],
    "gemma3": [*COMMON_KEYS, *ROTARY_KEYS, "hidden_activation", "query_pre_attn_scalar",
               "rope_local_base_freq", "sliding_window_pattern", "layer_types",
               "use_bidirectional_attention", "final_logit_softcapping", "text_config"],
}
ROPE_KEYS = ["rope_theta", "rope_type", "factor", "low_freq_factor", "high_freq_factor",
             "original_max_position_embeddings", "full_attention"]
GGUF_KEYS = ["general.architecture", *(f"llama.{key}" for key in (
    "block_count", "context_length", "embedding_length", "feed_forward_length",
    "attention.head_count", "attention.head_count_kv", "attention.key_length",
    "attention.value_length", "rope.dimension_count", "rope.freq_base",
    "attention.layer_norm_rms_epsilon", "rope.scaling.type", "rope.scaling.factor",
    "rope.scale_linear", "expert_count"))]


def _opens_or_refuses(path: Path, case: str) -> bool:
    """Open ``path`` and capture its last layer: True if it ran (q and k finite), False if
    refused in one line; anything else fails the test naming ``case``."""
    try:
        model = open_model(path)
        capture = model.capture("The quick brown fox", layers=[model.spec.layers - 1])
    except (ModelError, MemoryBudgetError) as exc:
        assert "\n" not in str(exc), (case, str(exc))
        return False
    except Exception as exc:  # what escapes is the finding
        pytest.fail(f"{case}: {type(exc).__name__}: {exc}")
    for cap in capture.layers.values():
        assert np.isfinite(cap.q).all() and np.isfinite(cap.k).all(), case
    return True


@pytest.mark.parametrize("arch", list(HF_KEYS))
def test_every_config_key_with_hostile_values_opens_or_is_refused(tmp_path, arch) -> None:
    folder = copy_fixture(tmp_path, arch)
    base = json.loads((folder / "config.json").read_text())
    edits = [(key, value) for key in HF_KEYS[arch] for value in HOSTILE_VALUES]
    if "rope_parameters" in base:
        edits += [(f"rope_parameters.{key}", value) for key in ROPE_KEYS
                  for value in HOSTILE_VALUES]
    refused = 0
    for key, value in edits:
        config = json.loads(json.dumps(base))
        holder, _, inner = key.rpartition(".")
        (config[holder] if holder else config)[inner] = value
        (folder / "config.json").write_text(json.dumps(config))
        refused += not _opens_or_refuses(folder, f"{arch} {key}={value!r}")
    assert refused > len(edits) // 2  # the grid does reach the checks


def test_every_gguf_key_with_hostile_values_opens_or_is_refused(tmp_path) -> None:
    refused = 0
    for key in GGUF_KEYS:
        for value in HOSTILE_VALUES:
            if isinstance(value, int) and not -2**63 <= value < 2**64:
                continue  # GGUF has no such integer
            path = gguf_with({key: value})(tmp_path)
            refused += not _opens_or_refuses(path, f"{key}={value!r}")
    assert refused > len(GGUF_KEYS) * len(HOSTILE_VALUES) // 2


def test_every_activation_a_config_may_name_is_one_the_forward_pass_computes() -> None:
    """The config readers accept the names of spec.ACTIVATIONS, so each must run."""
    x = np.linspace(-3, 3, 7, dtype=np.float32)
    for name in ACTIVATIONS:
        assert np.isfinite(_activation(name)(x)).all(), name
    with pytest.raises(ModelError, match="relu"):
        _activation("relu")
