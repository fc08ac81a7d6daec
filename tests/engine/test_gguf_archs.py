"""GGUF files of qwen2, qwen3, gemma2, phi3, olmo2, granite and gemma3 give the q, k and
attention of the Hugging Face folder they were written from; mixtures of experts are refused
in one line naming the architecture.

The files are written here from the tiny fixture folders by ``tests/fixtures/gguf_convert.py``,
which follows llama.cpp's converter (names, NEOX rows as in the folder, Gemma's norms stored
as 1 + w), in F32 and in Q8_0. The references are transformers' (``make_model_fixtures.py``):
``reference.npz`` for Qwen, and for Gemma 2 ``reference-key-width.npz``, the folder run with
``query_pre_attn_scalar`` = the head width, since a Gemma 2 GGUF holds no scalar and llama.cpp
scales by 1/√(key width) (1/√(width / heads) at 46 layers, Gemma 2 27B); for Gemma 3
``reference-gguf.npz`` (see test_gguf_families.py). The fixtures' vocabularies are byte-level
BPE, so the files' own tokenizers are used throughout.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import gguf
import numpy as np
import pytest
from safetensors.numpy import save_file

from engine.models import ModelError, open_model
from engine.models.folder import safetensors_files
from engine.models.spec import (
    GGUF_MOE_ARCHITECTURES,
    MOE_ARCHITECTURES,
    spec_from_gguf,
    spec_from_hf_config,
)
from engine.models.weights import SafetensorsWeights
from tests.engine.test_models import weights_from_file
from tests.fixtures.gguf_convert import folder_to_gguf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
#: Each fixture with the transformers reference that a GGUF file of it must give.
CASES = [("tiny-qwen2", "reference.npz"), ("tiny-qwen3", "reference.npz"),
         ("tiny-gemma2", "reference-key-width.npz"),
         ("tiny-gemma2-sw", "reference-key-width.npz"),
         # Phi-3: 43 tokens take LongRoPE's long factors, 8 its short ones
         ("tiny-phi3", "reference.npz"), ("tiny-phi3", "reference-short.npz"),
         ("tiny-olmo2", "reference.npz"), ("tiny-granite", "reference.npz"),
         ("tiny-gemma3", "reference-gguf.npz")]
#: What llama.cpp makes of a Gemma 3 file (see test_gguf_families.py), as folder settings:
#: the head width's scale, every layer but each sixth sliding.
AS_GGUF = {"tiny-gemma3": {"query_pre_attn_scalar": 16, "sliding_window_pattern": 6}}
Q8_0 = gguf.GGMLQuantizationType.Q8_0


def _compare(capture, ref, atol: float) -> float:
    """The largest |Δ| of q, k and the attention weights over every layer; fails past atol
    (for q and k, atol times their largest entry when that is over 1)."""
    tf = capture.tensor_file()
    worst = 0.0
    for layer in tf.layers:
        for name in ("q", "k"):
            got, want = getattr(capture.layers[layer], name), ref[f"layer{layer}.{name}"]
            # relative to the largest entry past 1, as in test_models: float32 angles of
            # later positions carry ~1e-6 of it (Phi-3's q reaches 9.5)
            np.testing.assert_allclose(got, want, rtol=0, atol=atol * max(np.abs(want).max(), 1),
                                       err_msg=f"{layer} {name}")
            worst = max(worst, float(np.abs(got - want).max()))
        p = weights_from_file(tf, layer)
        np.testing.assert_allclose(p, ref[f"layer{layer}.attn"], rtol=0, atol=atol)
        worst = max(worst, float(np.abs(p - ref[f"layer{layer}.attn"]).max()))
    return worst


@pytest.mark.parametrize(("name", "reference"), CASES)
def test_an_f32_gguf_gives_transformers_q_k_and_weights(tmp_path, name, reference) -> None:
    folder = FIXTURES / name
    ref = np.load(folder / reference)
    model = open_model(folder_to_gguf(folder, tmp_path / f"{name}.gguf"))
    assert model.format == "gguf" and model.weight_types == ("F32",)
    capture = model.capture(str(ref["text"]))
    assert list(capture.token_ids) == ref["ids"].tolist()
    # The scale the file implies is the reference's (Granite's attention.scale and Gemma 3's
    # windows: test_gguf_families.py); the window is the folder's, per layer.
    scalar = float(ref["query_pre_attn_scalar"]) if "query_pre_attn_scalar" in ref else None
    if name != "tiny-granite":
        assert model.spec.scales[0] == pytest.approx((scalar or model.spec.head_dim) ** -0.5)
    if name not in AS_GGUF:
        assert model.spec.windows == open_model(folder).spec.windows
    assert _compare(capture, ref, 1e-5) > 0  # computed, not copied


def _dequantized_folder(folder: Path, out: Path, patch: dict | None = None) -> Path:
    """A copy of ``folder`` whose matrices hold what Q8_0 keeps of them (the converter's
    choice of matrices, as gguf_convert writes them), and, for Gemma 2, the scale a GGUF file
    gives it: the folder a Q8_0 file of ``folder`` should reproduce."""
    shutil.copytree(folder, out, ignore=shutil.ignore_patterns("*.safetensors", "*.json"))
    for part in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / part, out / part)
    config = json.loads((folder / "config.json").read_text())
    if config["model_type"] == "gemma2":
        config["query_pre_attn_scalar"] = config["head_dim"]
    config.update(patch or {})
    (out / "config.json").write_text(json.dumps(config))
    store = SafetensorsWeights(safetensors_files(folder))
    arrays = {}
    for weight in store.names:
        w = np.asarray(store.get(weight), dtype=np.float32)
        if w.ndim == 2 and w.shape[1] % gguf.GGML_QUANT_SIZES[Q8_0][0] == 0:
            w = gguf.quants.dequantize(gguf.quants.quantize(w, Q8_0), Q8_0)
        arrays[weight] = np.ascontiguousarray(w)
    save_file(arrays, str(out / "model.safetensors"))
    return out


@pytest.mark.parametrize(("name", "reference"), CASES)
def test_a_q8_0_gguf_gives_its_dequantized_folder(tmp_path, name, reference) -> None:
    folder = FIXTURES / name
    ref = np.load(folder / reference)
    text = str(ref["text"])
    model = open_model(folder_to_gguf(folder, tmp_path / f"{name}.q8_0.gguf", quant=Q8_0))
    assert model.weight_types == ("F32", "Q8_0")
    quantized = model.capture(text)
    dequantized = open_model(_dequantized_folder(folder, tmp_path / "dequantized",
                                                 AS_GGUF.get(name))).capture(text)
    arrays = {f"layer{layer}.{part}": getattr(cap, part)
              for layer, cap in dequantized.layers.items() for part in ("q", "k")}
    tf = dequantized.tensor_file()
    arrays.update({f"layer{layer}.attn": weights_from_file(tf, layer) for layer in tf.layers})
    # The same dequantization and float32 steps: equal to the bit here, within 1e-5 anywhere.
    _compare(quantized, arrays, 1e-5)
    # Quantization moves q by more than the F32 file's 1e-5: this test sees the Q8_0 weights.
    assert np.abs(quantized.layers[0].q - ref["layer0.q"]).max() > 1e-3


@pytest.mark.parametrize(("name", "dropped"), [
    ("tiny-qwen2", "blk.1.attn_k.bias"),  # Qwen2's q, k and v always have biases
    ("tiny-qwen3", "blk.0.attn_q_norm.weight"),
    ("tiny-gemma2", "blk.1.post_ffw_norm.weight"), ("tiny-olmo2", "blk.0.attn_q_norm.weight"),
    ("tiny-olmo2", "blk.1.post_ffw_norm.weight"), ("tiny-gemma3", "blk.1.attn_k_norm.weight"),
    ("tiny-granite", "blk.0.ffn_norm.weight"),
])
def test_a_gguf_without_a_weight_its_architecture_needs_is_refused(tmp_path, name,
                                                                   dropped) -> None:
    path = folder_to_gguf(FIXTURES / name, tmp_path / "part.gguf", drop=(dropped,))
    with pytest.raises(ModelError) as caught:
        open_model(path)
    message = str(caught.value)
    assert message.startswith(f"part.gguf: the weights lack '{dropped}' (layer ")
    assert "\n" not in message


def _gemma2_metadata(**extra) -> dict:
    return {"general.architecture": "gemma2", "gemma2.embedding_length": 2304,
            "gemma2.attention.head_count": 8, "gemma2.attention.head_count_kv": 4,
            "gemma2.attention.key_length": 256, "gemma2.attention.value_length": 256,
            "gemma2.block_count": 26, "gemma2.feed_forward_length": 9216, **extra}


def test_gemma2_gguf_scale_cap_and_windows_follow_llama_cpp() -> None:
    """Gemma 2 2B's keys: scale 1/√256 (its query_pre_attn_scalar), cap 50 and window 4096
    on the even layers when the file leaves them out; the 27B's 46 layers scale by
    1/√(4608 / 32) = 1/√144, its query_pre_attn_scalar, not by its key width 128."""
    spec = spec_from_gguf(_gemma2_metadata(), "2b.gguf")
    assert spec.family == "gemma2" and spec.norms_hold_one
    assert spec.scales == (256 ** -0.5,) * 26 and spec.cap == 50.0
    assert spec.windows[:3] == (4096, None, 4096) and spec.activation == "gelu_pytorch_tanh"
    big = spec_from_gguf(_gemma2_metadata(**{
        "gemma2.embedding_length": 4608, "gemma2.attention.head_count": 32,
        "gemma2.attention.head_count_kv": 16, "gemma2.attention.key_length": 128,
        "gemma2.attention.value_length": 128, "gemma2.block_count": 46,
        "gemma2.attn_logit_softcapping": 30.0, "gemma2.attention.sliding_window": 512}),
        "27b.gguf")
    assert big.scales[0] == 144 ** -0.5 and big.cap == 30.0 and big.windows[:2] == (512, None)


def test_a_gemma2_gguf_norm_is_not_given_its_one_twice(tmp_path) -> None:
    """The converter stores 1 + w: adding 1 again (as for a folder) is far off at layer 0."""
    folder = FIXTURES / "tiny-gemma2"
    ref = np.load(folder / "reference-key-width.npz")
    model = open_model(folder_to_gguf(folder, tmp_path / "g.gguf"))
    twice = open_model(tmp_path / "g.gguf")
    twice.spec = dataclasses.replace(twice.spec, norms_hold_one=False)
    good, bad = (m.capture(str(ref["text"])).layers[0].q for m in (model, twice))
    assert np.abs(good - ref["layer0.q"]).max() < 1e-5
    assert np.abs(bad - ref["layer0.q"]).max() > 0.1 * np.abs(ref["layer0.q"]).max()


@pytest.mark.parametrize(("key", "value"), [
    ("gemma2.attn_logit_softcapping", 0.0), ("gemma2.attn_logit_softcapping", -50.0),
    ("gemma2.attn_logit_softcapping", float("nan")), ("gemma2.attn_logit_softcapping", 1e30),
    ("gemma2.attn_logit_softcapping", "50"), ("gemma2.attention.sliding_window", 0),
    ("gemma2.attention.sliding_window", -4096), ("gemma2.attention.sliding_window", 2.5),
])
def test_a_gemma2_cap_or_window_out_of_range_is_refused_naming_it(key, value) -> None:
    """A cap outside float32's reach gives NaN weights; a window of 0 masks every key."""
    with pytest.raises(ModelError) as caught:
        spec_from_gguf(_gemma2_metadata(**{key: value}), "g.gguf")
    message = str(caught.value)
    assert message.startswith(f"g.gguf: '{key}'") and "\n" not in message, message


@pytest.mark.parametrize("arch", MOE_ARCHITECTURES)
def test_mixture_of_experts_folders_are_refused_naming_them(arch) -> None:
    config = {"model_type": arch, "hidden_size": 32, "num_attention_heads": 4,
              "num_hidden_layers": 2, "num_local_experts": 8}
    with pytest.raises(ModelError) as caught:
        spec_from_hf_config(config, "moe")
    message = str(caught.value)
    assert message == (f"moe: the architecture '{arch}' is a mixture of experts, which this "
                       "app does not model")


def _write_gguf(path: Path, arch: str, **keys: int) -> Path:
    writer = gguf.GGUFWriter(str(path), arch)
    for key, value in keys.items():
        writer.add_uint32(f"{arch}.{key}", value)
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("arch", GGUF_MOE_ARCHITECTURES)
def test_mixture_of_experts_gguf_files_are_refused_naming_them(tmp_path, arch) -> None:
    path = _write_gguf(tmp_path / "moe.gguf", arch, expert_count=8, block_count=1)
    with pytest.raises(ModelError) as caught:
        open_model(path)
    assert str(caught.value) == (f"moe.gguf: the architecture '{arch}' is a mixture of "
                                 "experts, which this app does not model")


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "gemma2"])
def test_experts_in_a_dense_architecture_are_refused(tmp_path, arch) -> None:
    """Mixtral's GGUF files say "llama" and hold expert_count."""
    path = _write_gguf(tmp_path / "mixtral.gguf", arch, expert_count=8, block_count=1,
                       embedding_length=8, **{"attention.head_count": 2})
    with pytest.raises(ModelError) as caught:
        open_model(path)
    message = str(caught.value)
    assert f"'{arch}.expert_count'" in message and "mixture of experts" in message
    assert "\n" not in message
