"""OLMo 2, Granite and Gemma 3 (text): what each adds to the llama pass is read from the config,
every key of theirs is listed as modelled or known not to matter, and what is not modelled is
refused in one line naming the key. (Their q, k and attention weights are compared with
transformers in test_models.py, on the fixtures made by make_model_fixtures.py.)"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from engine.models import ModelError, open_model
from engine.models.families import IGNORED_KEYS, MODELLED_KEYS
from engine.models.spec import spec_from_hf_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
FOLDERS = {"olmo2": "tiny-olmo2", "granite": "tiny-granite", "gemma3_text": "tiny-gemma3",
           "phi3": "tiny-phi3"}
TEXT = "The quick brown fox jumps over the lazy dog."


def _edited(tmp_path: Path, arch: str, edit) -> Path:
    folder = tmp_path / arch
    shutil.copytree(FIXTURES / FOLDERS[arch], folder)
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("arch", list(FOLDERS))
def test_every_key_of_the_family_is_modelled_or_known_not_to_matter(arch: str) -> None:
    """save_pretrained writes every field the family's config class declares: each must be in
    one of the two lists, so a new field of a new transformers shows up here."""
    config = json.loads((FIXTURES / FOLDERS[arch] / "config.json").read_text())
    listed = set(MODELLED_KEYS[arch]) | set(IGNORED_KEYS[arch])
    assert set(config) - listed == set()
    assert not set(MODELLED_KEYS[arch]) & set(IGNORED_KEYS[arch])


UNMODELLED = [
    ("olmo2", "rope_parameters.rope_type", "yarn", "'rope_parameters.rope_type'"),
    ("olmo2", "partial_rotary_factor", 0.5, "'partial_rotary_factor'"),
    ("granite", "mlp_bias", True, "'mlp_bias'"),
    ("granite", "rope_parameters.rope_type", "dynamic", "'rope_parameters.rope_type'"),
    ("gemma3_text", "use_bidirectional_attention", True, "'use_bidirectional_attention'"),
    ("gemma3_text", "rope_scaling.rope_type", "yarn", "'rope_scaling.rope_type'"),
    ("gemma3_text", "rope_parameters",
     {"sliding_attention": {"rope_type": "longrope", "rope_theta": 10000.0}},
     "'rope_parameters.sliding_attention.rope_type'"),
    ("gemma3_text", "partial_rotary_factor", 0.25, "'partial_rotary_factor'"),
    ("phi3", "rope_parameters.rope_type", "dynamic", "'rope_parameters.rope_type'"),
    # 0.7 of a head of 8 turns 5 dimensions: no whole pairs
    ("phi3", "rope_parameters.partial_rotary_factor", 0.7,
     "'rope_parameters.partial_rotary_factor'"),
    ("phi3", "rope_parameters.short_factor", [1.0, 2.0], "'rope_parameters.short_factor'"),
    ("phi3", "rope_parameters.long_factor", [1.0, 0.0, 2.0], "'rope_parameters.long_factor'"),
]


@pytest.mark.parametrize(("arch", "key", "value", "named"), UNMODELLED)
def test_an_unmodelled_setting_is_refused_in_one_line_naming_the_key(
        tmp_path: Path, arch: str, key: str, value, named: str) -> None:
    def edit(config: dict) -> None:
        holder, _, inner = key.rpartition(".")
        (config[holder] if holder else config)[inner] = value

    with pytest.raises(ModelError) as caught:
        open_model(_edited(tmp_path, arch, edit))
    message = str(caught.value)
    assert "\n" not in message and named in message, message


def test_granite_multipliers_are_read_and_each_changes_the_capture(tmp_path: Path) -> None:
    spec = open_model(FIXTURES / "tiny-granite").spec
    assert spec.scales == (0.2, 0.2) and spec.scale_note == "attention_multiplier 0.2"
    assert (spec.embed_scale, spec.residual_scale, spec.logits_divisor) == (3.0, 0.5, 4.0)
    base = open_model(FIXTURES / "tiny-granite").capture(TEXT).layers[1].q
    for key in ("embedding_multiplier", "residual_multiplier"):
        folder = _edited(tmp_path / key, "granite", lambda c, key=key: c.update({key: 1.0}))
        q = open_model(folder).capture(TEXT).layers[1].q
        assert np.abs(q - base).max() > 1e-3 * np.abs(base).max(), key


def test_gemma3_layers_take_their_window_and_rope_base_from_the_pattern() -> None:
    """The fixture gives sliding_window_pattern 2 (layer 0 slides, layer 1 sees all), the
    older rope_theta / rope_local_base_freq / rope_scaling keys and a soft-cap that Gemma 3's
    attention does not apply."""
    spec = open_model(FIXTURES / "tiny-gemma3").spec
    assert spec.windows == (4, None)
    assert spec.local_rope_theta == 10000.0 and spec.local_rope == {"rope_type": "default"}
    assert spec.rope_theta == 1e6 and spec.rope == {"rope_type": "linear", "factor": 8.0}
    assert spec.cap is None and spec.qk_norm and spec.embed_scale == pytest.approx(32 ** 0.5)
    assert spec.scales[0] == pytest.approx(24 ** -0.5)


def test_gemma3_defaults_are_the_config_classes(tmp_path: Path) -> None:
    """Without the keys: five of six layers slide by 4096, bases 1e6 and 1e4, scalar 256."""
    def strip(config: dict) -> None:
        for key in ("sliding_window_pattern", "sliding_window", "rope_theta",
                    "rope_local_base_freq", "rope_scaling", "query_pre_attn_scalar"):
            config.pop(key)
        config["num_hidden_layers"] = 7

    config = json.loads(_edited(tmp_path, "gemma3_text", strip).joinpath(
        "config.json").read_text())
    spec = spec_from_hf_config(config, "tiny-gemma3")
    assert spec.windows == (4096,) * 5 + (None, 4096)
    assert (spec.rope_theta, spec.local_rope_theta) == (1e6, 1e4)
    assert spec.scales[0] == pytest.approx(256 ** -0.5)


def test_gemma3_with_a_text_config_opens_as_its_text_model(tmp_path: Path) -> None:
    """A multimodal ``gemma3`` folder: the language model's settings in ``text_config``, its
    weights under ``model.language_model.``; q and k are those of the text model."""
    folder = tmp_path / "gemma3"
    shutil.copytree(FIXTURES / "tiny-gemma3", folder)
    inner = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"],
         "text_config": inner, "vision_config": {"model_type": "siglip_vision_model"}}))
    weights = load_file(folder / "model.safetensors")
    save_file({f"model.language_model.{name}": w for name, w in weights.items()},
              folder / "model.safetensors")
    want = open_model(FIXTURES / "tiny-gemma3").capture(TEXT)
    got = open_model(folder).capture(TEXT)
    for layer in (0, 1):
        np.testing.assert_array_equal(got.layers[layer].q, want.layers[layer].q)
        np.testing.assert_array_equal(got.layers[layer].k, want.layers[layer].k)
    inner["model_type"] = "siglip_vision_model"
    (folder / "config.json").write_text(json.dumps({"model_type": "gemma3",
                                                    "text_config": inner}))
    refused = re.escape("'text_config.model_type' must be gemma3_text")
    with pytest.raises(ModelError, match=refused):
        open_model(folder)


@pytest.mark.parametrize("folder", ["tiny-gemma2", "tiny-gemma3"])
def test_an_absent_query_pre_attn_scalar_is_the_config_classes_256(folder: str) -> None:
    """Gemma2Config and Gemma3TextConfig default it to 256 whatever the head width (16 here)."""
    config = json.loads((FIXTURES / folder / "config.json").read_text())
    del config["query_pre_attn_scalar"]
    spec = spec_from_hf_config(config, folder)
    assert spec.scales[0] == pytest.approx(256 ** -0.5) and spec.head_dim == 16


def test_gemma3_as_transformers_5_writes_it_gives_the_same_q_and_k(tmp_path: Path) -> None:
    """``rope_parameters`` per attention kind and ``layer_types`` (what save_pretrained writes
    now) instead of the fixture's older keys: the same model, the same q and k."""
    def newer(config: dict) -> None:
        config["rope_parameters"] = {
            "sliding_attention": {"rope_type": "default",
                                  "rope_theta": config.pop("rope_local_base_freq")},
            "full_attention": {**config.pop("rope_scaling"),
                               "rope_theta": config.pop("rope_theta")}}
        del config["sliding_window_pattern"]
        config["layer_types"] = ["sliding_attention", "full_attention"]

    want = open_model(FIXTURES / "tiny-gemma3").capture(TEXT)
    got = open_model(_edited(tmp_path, "gemma3_text", newer)).capture(TEXT)
    for layer in (0, 1):
        np.testing.assert_array_equal(got.layers[layer].q, want.layers[layer].q)
        np.testing.assert_array_equal(got.layers[layer].k, want.layers[layer].k)
    assert got.tensor_file().layer_window(0) == 4 and got.tensor_file().layer_window(1) is None
