"""Llama 3's rope scaling read from a GGUF file (``rope_freqs.weight``) gives the q and k of the
Hugging Face folder the file was written from.

transformers' own GGUF loader ignores ``rope_freqs``, so a reference computed by it from the
file would share the error; the folder is the reference instead (``test_models.py`` checks the
folder's capture against transformers). The file is written here from ``tiny-llama`` (rope
scaling llama3: theta 500,000, factor 8, original context 16) by
``tests/fixtures/gguf_convert.py``, which follows llama.cpp's converter.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from engine.models import ModelError, open_model
from engine.models.spec import spec_from_hf_config
from tests.fixtures.gguf_convert import llama3_rope_factors, llama_folder_to_gguf

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "tests" / "fixtures" / "models" / "tiny-llama"
TEXT = str(np.load(FOLDER / "reference.npz")["text"])


def _captures(gguf: Path):
    return open_model(FOLDER).capture(TEXT), open_model(gguf).capture(TEXT)


def test_a_llama3_gguf_gives_the_folders_q_and_k(tmp_path) -> None:
    gguf = llama_folder_to_gguf(FOLDER, tmp_path / "tiny-llama3.gguf")
    divisors = open_model(gguf).spec.rope["freq_factors"]
    # The fixture's pairs take both of the scaled branches: a blend (wavelength 6.3 between
    # 16/4 and 16/1) and the full factor 8 (wavelengths 167 and longer).
    assert 1 < divisors[0] < 8 and divisors[1:] == (8.0, 8.0, 8.0)
    folder, from_gguf = _captures(gguf)
    assert list(from_gguf.token_ids) == list(folder.token_ids)
    assert len(folder.token_ids) > 16  # past the original context, where the scaling acts
    for layer in (0, 1):
        for name in ("q", "k"):
            want = getattr(folder.layers[layer], name)
            got = getattr(from_gguf.layers[layer], name)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-5, err_msg=f"{layer} {name}")


def test_the_same_gguf_without_rope_freqs_is_far_off(tmp_path) -> None:
    """What the app computed before (and what a file missing the tensor gives): plain RoPE,
    so the comparison above can tell the scaling apart from its absence."""
    gguf = llama_folder_to_gguf(FOLDER, tmp_path / "plain.gguf", rope_freqs=False)
    assert "freq_factors" not in open_model(gguf).spec.rope
    folder, plain = _captures(gguf)
    for layer in (0, 1):
        want, got = folder.layers[layer].q, plain.layers[layer].q
        assert np.abs(got - want).max() > 0.5 * np.abs(want).max()


@pytest.mark.parametrize(("theta", "head_dim", "factor", "low", "high", "original"), [
    (500000.0, 128, 8.0, 1.0, 4.0, 8192),  # Llama 3.1 8B
    (500000.0, 64, 32.0, 1.0, 4.0, 8192),  # Llama 3.2 1B
    (10000.0, 16, 4.0, 1.0, 4.0, 64),  # every branch at a small width
    (500000.0, 8, 8.0, 1.0, 4.0, 16),  # the fixture
])
def test_folder_frequencies_are_the_converters_divisions(theta, head_dim, factor, low, high,
                                                         original) -> None:
    """The folder's llama3 frequencies (spec.py, from transformers' formula) equal
    theta^(-2i/d) divided by the converter's divisors, pair by pair."""
    rope = {"rope_type": "llama3", "rope_theta": theta, "factor": factor,
            "low_freq_factor": low, "high_freq_factor": high,
            "original_max_position_embeddings": original}
    config = {"model_type": "llama", "hidden_size": 4 * head_dim, "num_attention_heads": 4,
              "head_dim": head_dim, "num_hidden_layers": 1, "intermediate_size": 8,
              "rope_parameters": rope}
    spec = spec_from_hf_config(config, "cfg")
    base = theta ** -(np.arange(0, head_dim, 2) / head_dim)
    divisors = llama3_rope_factors(theta, head_dim, rope)
    np.testing.assert_allclose(spec.rope_inverse_frequencies(), base / divisors, rtol=1e-6)
    wavelengths = 2 * math.pi / base
    if head_dim == 16:  # this row was chosen so that each branch holds a pair
        assert (wavelengths < original / high).any() and (wavelengths > original / low).any()
        assert ((divisors > 1) & (divisors < factor)).any()


@pytest.mark.parametrize(("divisors", "words"), [
    (np.ones(3), ("'rope_freqs.weight' has shape (3,)", "head width of 8", "(4,)")),
    (np.array([1.0, 0.0, 8.0, 8.0]), ("'rope_freqs.weight' holds 0 for pair 1", "> 0")),
    (np.array([1.0, 8.0, -8.0, 8.0]), ("holds -8 for pair 2",)),
])
def test_unusable_rope_freqs_are_refused_in_one_line(tmp_path, divisors, words) -> None:
    gguf = llama_folder_to_gguf(FOLDER, tmp_path / "bad.gguf", rope_freqs=divisors)
    with pytest.raises(ModelError) as caught:
        open_model(gguf)
    message = str(caught.value)
    assert message.startswith("bad.gguf: ") and "\n" not in message, message
    for word in words:
        assert word in message, message
