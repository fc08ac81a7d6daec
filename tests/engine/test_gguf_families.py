"""GGUF files of olmo2, granite and gemma3 are read as llama.cpp reads them: their q, k and
attention are compared with transformers' in test_gguf_archs.py; here, what each file's keys
set and what is refused.

The files are written here by ``tests/fixtures/gguf_convert.py`` (llama.cpp's converter:
Granite's q/k rows permuted as a LlamaModel's and its multipliers as ``attention.scale``,
``embedding_scale``, ``residual_scale``, ``logit_scale``; OLMo 2's and Gemma 3's rows as in the
folder; Gemma 3's norms stored as 1 + w). OLMo 2's and Granite's reference is the folder's
``reference.npz``. A Gemma 3 file holds no query_pre_attn_scalar, no window pattern and no
local RoPE base: llama.cpp scales by 1/√(key width) (1/√(width / heads) at 62 layers), slides
every layer but each sixth and turns the sliding layers by base 10000; ``reference-gguf.npz``
is transformers run on the folder with those settings (both fixture layers sliding).
"""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from engine.models import ModelError, open_model
from engine.models.spec import spec_from_gguf
from tests.fixtures.gguf_convert import folder_to_gguf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"


def test_the_files_carry_each_familys_settings(tmp_path) -> None:
    """What each file says, as the spec the forward pass runs by."""
    granite = open_model(folder_to_gguf(FIXTURES / "tiny-granite", tmp_path / "g.gguf")).spec
    assert granite.scales[0] == pytest.approx(0.2) and granite.embed_scale == pytest.approx(3)
    assert granite.residual_scale == pytest.approx(0.5)
    assert granite.logits_divisor == pytest.approx(4)
    gemma = open_model(folder_to_gguf(FIXTURES / "tiny-gemma3", tmp_path / "m.gguf")).spec
    # the folder: layer 1 full, scaled by 1/√24; the file: both sliding, 1/√16
    assert open_model(FIXTURES / "tiny-gemma3").spec.windows == (4, None)
    assert gemma.windows == (4, 4) and gemma.scales == (0.25, 0.25) and gemma.qk_norm
    assert gemma.rope == {"rope_type": "linear", "factor": 8.0}
    assert gemma.local_rope_theta == 10000.0 and gemma.norms_hold_one
    olmo = open_model(folder_to_gguf(FIXTURES / "tiny-olmo2", tmp_path / "o.gguf")).spec
    assert olmo.family == "olmo2" and olmo.qk_norm and olmo.rope_theta == 500000.0


def _metadata(arch: str, layers: int = 12, **extra) -> dict:
    return {"general.architecture": arch, f"{arch}.embedding_length": 1152,
            f"{arch}.attention.head_count": 4, f"{arch}.attention.head_count_kv": 1,
            f"{arch}.attention.key_length": 256, f"{arch}.attention.value_length": 256,
            f"{arch}.block_count": layers, f"{arch}.feed_forward_length": 6912,
            f"{arch}.rope.freq_base": 1e6, **{f"{arch}.{k}": v for k, v in extra.items()}}


def test_gemma3_gguf_windows_bases_and_scale_follow_llama_cpp() -> None:
    """Gemma 3 1B's keys: five sliding layers of six with base 10000, the sixth full with
    the file's base; no window key: no sliding layers; 62 layers (27B): 1/√(width / heads)."""
    spec = spec_from_gguf(_metadata("gemma3", **{"attention.sliding_window": 512}), "1b")
    assert spec.windows == ((512,) * 5 + (None,)) * 2 and spec.scales[0] == 256 ** -0.5
    assert (spec.rope_theta, spec.local_rope_theta, spec.cap) == (1e6, 10000.0, None)
    plain = spec_from_gguf(_metadata("gemma3"), "no-window")
    assert plain.windows == (None,) * 12 and plain.local_rope_theta is None
    big = spec_from_gguf(_metadata("gemma3", 62, embedding_length=5376,
                                   **{"attention.head_count": 32, "attention.key_length": 128,
                                      "attention.value_length": 128}), "27b")
    assert big.scales[0] == 168 ** -0.5


def test_granite_gguf_without_multipliers_scales_as_llama_cpp() -> None:
    """llama.cpp reads Granite's multipliers as optional: absent or 0, none is applied."""
    for extra in ({}, {"attention.scale": 0.0, "embedding_scale": 0.0, "residual_scale": 0.0}):
        spec = spec_from_gguf(_metadata("granite", **extra), "g")
        assert spec.scales[0] == 256 ** -0.5
        assert (spec.embed_scale, spec.residual_scale) == (1.0, 1.0)


@pytest.mark.parametrize(("arch", "key", "value", "allowed"), [
    ("granite", "rope.scaling.finetuned", False, "true (llama.cpp turns Granite's RoPE off"),
    ("granite", "attention.scale", -0.2, "got -0.2"),
    ("granite", "residual_scale", float("inf"), "got inf"),
    # OLMo 3 writes its windows under olmo2 (engine.models.gguf_keys)
    ("olmo2", "attention.sliding_window", 4096, "absent (llama.cpp's 'attention.sliding_window' "
                                                "is not modelled for olmo2)"),
    ("gemma3", "attention.sliding_window", -5, "got -5"),
])
def test_unmodelled_or_out_of_range_keys_are_refused_naming_them(arch, key, value,
                                                                 allowed) -> None:
    with pytest.raises(ModelError) as caught:
        spec_from_gguf(_metadata(arch, **{key: value}), "f.gguf")
    message = str(caught.value)
    assert message.startswith(f"f.gguf: '{arch}.{key}'") and "\n" not in message, message
    assert allowed in message, message


def test_gguf_writer_names_match_the_loaders() -> None:
    """The keys read here are gguf-py's own names for them (a typo would read a default)."""
    keys = gguf.Keys
    assert keys.Attention.SCALE.format(arch="granite") == "granite.attention.scale"
    assert keys.LLM.EMBEDDING_SCALE.format(arch="granite") == "granite.embedding_scale"
    assert keys.LLM.RESIDUAL_SCALE.format(arch="granite") == "granite.residual_scale"
    assert keys.LLM.LOGIT_SCALE.format(arch="granite") == "granite.logit_scale"
    assert keys.Rope.SCALING_FINETUNED.format(arch="granite") == "granite.rope.scaling.finetuned"
