"""Phi-3 (Phi-3 / Phi-3.5 / Phi-4 mini): fused q/k/v and gate/up, partial rotary, LongRoPE and
a window on every layer, checked against transformers on the tiny fixture (made by
tests/fixtures/phi3_fixture.py), and GGUF files of it written by gguf_convert.py.
``reference.npz`` holds 43 tokens, more than the fixture's ``original_max_position_embeddings``
of 8 (LongRoPE's long factors); ``reference-short.npz`` holds 8 (its short factors)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.models import ModelError, open_model
from engine.models.gguf_file import GgufFile
from engine.models.spec import spec_from_gguf
from tests.fixtures.gguf_convert import folder_to_gguf

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "tiny-phi3"


def _edited(tmp_path: Path, edit) -> Path:
    folder = tmp_path / "tiny-phi3"
    shutil.copytree(FIXTURE, folder)
    config = json.loads((folder / "config.json").read_text())
    edit(config)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _assert_matches(capture, ref) -> None:
    assert list(capture.token_ids) == ref["ids"].tolist()
    for layer in (0, 1):
        for name in ("q", "k"):
            want = ref[f"layer{layer}.{name}"]
            got = getattr(capture.layers[layer], name)
            assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max(), (layer, name)


@pytest.mark.parametrize("reference", ["reference", "reference-short"])
def test_q_and_k_match_transformers_with_long_and_short_factors(reference: str) -> None:
    ref = np.load(FIXTURE / f"{reference}.npz")
    capture = open_model(FIXTURE).capture(str(ref["text"]))
    assert (len(ref["ids"]) > 8) == (reference == "reference")
    _assert_matches(capture, ref)


def test_the_spec_reads_what_phi3_adds() -> None:
    spec = open_model(FIXTURE).spec
    assert spec.fused and spec.rotary_width() == 6 and spec.windows == (5, 5)
    # max_position_embeddings 64 over original 8: √(1 + ln 8 / ln 8)
    assert spec.rope_attention_factor() == pytest.approx(math.sqrt(2))
    inv = 1 / 10000.0 ** (np.arange(0, 6, 2) / 6)
    np.testing.assert_allclose(spec.rope_inverse_frequencies(n=8), inv / [1.0, 1.5, 3.0])
    np.testing.assert_allclose(spec.rope_inverse_frequencies(n=9), inv / [1.2, 4.0, 9.0])


def test_the_factors_are_chosen_by_the_texts_length(tmp_path: Path) -> None:
    """Short factors set to the long ones: the short text's q changes, the long text's not."""
    def same(config: dict) -> None:
        config["rope_parameters"]["short_factor"] = config["rope_parameters"]["long_factor"]

    model, edited = open_model(FIXTURE), open_model(_edited(tmp_path, same))
    for reference, changes in (("reference", False), ("reference-short", True)):
        text = str(np.load(FIXTURE / f"{reference}.npz")["text"])
        q, q_edited = model.capture(text).layers[0].q, edited.capture(text).layers[0].q
        assert (np.abs(q - q_edited).max() > 1e-3 * np.abs(q).max()) == changes, reference


def test_the_unturned_dimensions_pass_unchanged(tmp_path: Path) -> None:
    """Dimensions 6 and 7 of each head do not turn: at position 0 and at a later one a
    head's last two dimensions are its projection's, whatever the rotary base."""
    def other_base(config: dict) -> None:
        config["rope_parameters"]["rope_theta"] = 500.0

    text = "The quick brown fox"
    q = open_model(FIXTURE).capture(text).layers[0].q
    q_other = open_model(_edited(tmp_path, other_base)).capture(text).layers[0].q
    np.testing.assert_array_equal(q[..., 6:], q_other[..., 6:])
    assert np.abs(q[:, 1:, :6] - q_other[:, 1:, :6]).max() > 1e-3 * np.abs(q).max()


def test_the_window_is_read_and_absent_means_none(tmp_path: Path) -> None:
    def no_window(config: dict) -> None:
        del config["sliding_window"]

    assert open_model(_edited(tmp_path, no_window)).spec.windows == (None, None)


def test_a_bias_phi3_does_not_have_is_refused(tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    folder = _edited(tmp_path, lambda config: None)
    weights = load_file(folder / "model.safetensors")
    weights["layers.1.self_attn.qkv_proj.bias"] = np.zeros(64, np.float32)
    save_file(weights, folder / "model.safetensors")
    with pytest.raises(ModelError) as caught:
        open_model(folder)
    message = str(caught.value)
    assert "\n" not in message and "'layers.1.self_attn.qkv_proj.bias'" in message


def test_a_gguf_file_reads_the_converters_keys_and_factors(tmp_path: Path) -> None:
    """The file gives the turned width as rope.dimension_count, LongRoPE as two tensors
    (float32) and the attention factor and original context as metadata: the same rotary
    embedding as the folder. (q, k and weights: test_gguf_archs.py.)"""
    folder = open_model(FIXTURE).spec
    spec = open_model(folder_to_gguf(FIXTURE, tmp_path / "phi3.gguf")).spec
    assert spec.fused and spec.windows == folder.windows == (5, 5)
    assert spec.rotary_width() == 6 and spec.rope["rope_type"] == "longrope"
    for n in (8, 9):
        np.testing.assert_allclose(spec.rope_inverse_frequencies(n=n),
                                   folder.rope_inverse_frequencies(n=n), rtol=1e-7)
    assert spec.rope_attention_factor() == pytest.approx(math.sqrt(2), rel=1e-7)


def test_a_gguf_file_without_factors_or_window(tmp_path: Path) -> None:
    """Without the two tensors the file is plain RoPE, its attention factor still on cos and
    sin (as llama.cpp runs it); with only one it is refused naming the other; a window of 0
    is none (the converter's Phi-4)."""
    factors = ("rope_factors_long.weight", "rope_factors_short.weight")
    plain = open_model(folder_to_gguf(FIXTURE, tmp_path / "plain.gguf", drop=factors)).spec
    assert plain.rope["rope_type"] == "default"
    assert plain.rope_attention_factor() == pytest.approx(math.sqrt(2), rel=1e-7)
    with pytest.raises(ModelError) as caught:
        open_model(folder_to_gguf(FIXTURE, tmp_path / "half.gguf", drop=factors[1:]))
    assert "\n" not in str(caught.value) and "'rope_factors_short.weight'" in str(caught.value)

    def no_window(config: dict) -> None:
        config["sliding_window"] = None

    path = folder_to_gguf(_edited(tmp_path, no_window), tmp_path / "phi4.gguf")
    assert open_model(path).spec.windows == (None, None)


@pytest.mark.parametrize("width", [5, 0, 10])
def test_a_gguf_turned_width_that_is_no_whole_pairs_of_a_head_is_refused(
        tmp_path: Path, width: int) -> None:
    metadata = dict(GgufFile(folder_to_gguf(FIXTURE, tmp_path / "phi3.gguf")).metadata)
    metadata["phi3.rope.dimension_count"] = width
    with pytest.raises(ModelError) as caught:
        spec_from_gguf(metadata, "phi3.gguf")
    assert "\n" not in str(caught.value) and "'phi3.rope.dimension_count'" in str(caught.value)
