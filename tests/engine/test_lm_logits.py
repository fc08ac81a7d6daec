"""text_logits: the next-token logits every score is computed from, under an intervention."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.core.memory import MemoryBudgetError, format_bytes
from engine.core.scaling import Rule
from engine.models import (
    CaptureCancelled,
    Intervention,
    Model,
    ModelError,
    open_model,
    score_text,
    text_logits,
)
from engine.models.scoring import prepare_text
from tests.engine.lm_models import FIXTURES, TEXT, bert_with_mlm, tied_llama, token_losses


@pytest.mark.parametrize("intervention", [
    Intervention(), Intervention(alpha=8.0), Intervention(alpha=0.5, layers=(1,)),
    Intervention(rule=Rule("softcap", cap=1.0), layers=(0,), heads=(1,)),
    Intervention(precision="bfloat16")])
def test_the_logits_give_the_scores_losses_and_predictions(intervention: Intervention) -> None:
    model = open_model(FIXTURES / "tiny-gemma2-sw")  # soft-caps, windows, a final cap
    result = text_logits(model, TEXT, intervention)
    score = score_text(model, TEXT, intervention)
    assert result.token_ids == score.token_ids and result.tokens == score.tokens
    assert result.intervention == intervention
    n, vocab = len(score.token_ids), model.lm_head().vocab
    assert result.logits.shape == (n, vocab) and result.logits.dtype == np.float32
    assert not result.logits.flags.writeable
    np.testing.assert_allclose(token_losses(result.logits, result.token_ids),
                               score.token_losses, rtol=1e-6, atol=1e-6)
    for row, predictions in zip(result.logits, score.predictions, strict=True):
        top = np.argsort(-row, kind="stable")[:len(predictions)]
        assert [p.token_id for p in predictions] == top.tolist()


def test_an_intervention_changes_the_logits(llama: Model) -> None:
    own = text_logits(llama, TEXT).logits
    assert not np.array_equal(own, text_logits(llama, TEXT, Intervention(alpha=8.0)).logits)
    np.testing.assert_array_equal(own, text_logits(llama, TEXT, Intervention(alpha=1.0,
                                                                             layers=(0,))).logits)


def test_each_row_sees_only_the_tokens_up_to_it(llama: Model) -> None:
    whole = text_logits(llama, TEXT, max_tokens=12).logits
    for n in (1, 5):
        part = text_logits(llama, TEXT, max_tokens=n).logits
        assert part.shape[0] == n
        np.testing.assert_allclose(part, whole[:n], rtol=1e-5, atol=1e-5)


def test_progress_counts_the_layers_then_the_head(llama: Model) -> None:
    steps: list[tuple[int, int]] = []
    text_logits(llama, TEXT, progress=lambda *step: steps.append(step))
    assert steps == [(1, 3), (2, 3), (3, 3)]


def test_cancelling_stops_the_forward(llama: Model) -> None:
    calls: list[int] = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(CaptureCancelled):
        text_logits(llama, TEXT, cancelled=cancelled)


def _one_line(caught: pytest.ExceptionInfo) -> str:
    message = str(caught.value)
    assert message and "\n" not in message
    return message


def test_a_bert_and_a_model_without_a_head_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as caught:
        text_logits(open_model(bert_with_mlm(tmp_path)), TEXT)
    assert "masked language model (BERT): it has no next-token logits" in _one_line(caught)
    with pytest.raises(ModelError) as caught:
        text_logits(open_model(FIXTURES / "tiny-llama"), TEXT)
    assert "has no language-model head" in _one_line(caught)
    llama = open_model(tied_llama(tmp_path / "llama"))
    with pytest.raises(ModelError) as caught:
        text_logits(llama, TEXT, Intervention(layers=(9,)))
    assert "layer 9" in _one_line(caught)
    with pytest.raises(ModelError) as caught:
        text_logits(llama, "")
    assert "the text is empty" in _one_line(caught)


def test_the_memory_guard_counts_the_logits_returned(llama: Model) -> None:
    n = len(prepare_text(llama, TEXT, max_tokens=16).ids)
    logits = 4 * n * llama.lm_head().vocab
    budget = 1 << 30
    enough_to_score = llama.lm_bytes(n, 0, budget) + logits // 2
    # a budget this small maps the weights instead of keeping them: count under it
    need = llama.lm_bytes(n, 0, enough_to_score) + logits
    assert need > enough_to_score >= llama.lm_bytes(n, 0, enough_to_score)
    score_text(llama, TEXT, max_tokens=16, memory_budget=enough_to_score)
    with pytest.raises(MemoryBudgetError) as caught:
        text_logits(llama, TEXT, max_tokens=16, memory_budget=enough_to_score)
    assert f"needs about {format_bytes(need)}" in _one_line(caught)
    assert text_logits(llama, TEXT, max_tokens=16, memory_budget=need).logits.shape[0] == n
