"""Greedy continuation with a KV cache equals recomputing the whole text at each step; BERT's
pseudo-log-likelihood masks each token in turn."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file

from engine.models import Intervention, Model, continue_text, iter_sweep, open_model, score_text
from engine.models.forward import Pass, erf
from tests.engine.lm_models import FIXTURES, TEXT, bert_with_mlm, tied_llama


def _recomputed(model: Model, ids: list[int], intervention: Intervention, steps: int) -> list[int]:
    """Greedy tokens, each from a full forward pass over the whole text so far."""
    run = Pass(model.spec, model.lm_store(), model._names)
    head = model.lm_head()
    out: list[int] = []
    for _ in range(steps):
        x = run.embed(np.array(ids + out))
        for i in range(model.spec.layers):
            x = run.layer(i, x, change=intervention.change_at(i))
        out.append(int(np.argmax(head.logits(head.hidden(x[-1:]))[0])))
    return out


@pytest.mark.parametrize("fixture", ["tiny-gemma2-sw", "tiny-gpt2", "llama"])
@pytest.mark.parametrize("intervention", [Intervention(), Intervention(alpha=8.0),
                                          Intervention(alpha=0.25, layers=(1,), heads=(0, 3)),
                                          Intervention(precision="bfloat16")])
def test_the_kv_cache_gives_the_tokens_a_full_pass_gives(
        tmp_path: Path, fixture: str, intervention: Intervention) -> None:
    """Across a sliding window of 4 keys (Gemma 2), learned positions (GPT-2) and Llama 3's
    rotary scaling, with and without an intervention."""
    model = open_model(tied_llama(tmp_path) if fixture == "llama" else FIXTURES / fixture)
    model.end_ids = ()  # all 12 steps, whatever the tokens
    result = continue_text(model, TEXT, intervention, max_new_tokens=12, max_tokens=10)
    assert len(result.prompt_ids) == 10 and len(result.new_ids) == 12
    assert list(result.new_ids) == _recomputed(model, list(result.prompt_ids), intervention, 12)
    assert result.new_tokens == tuple(model.tokenizer.token_texts(result.new_ids))
    assert result.intervention == intervention and result.prompt == TEXT


def test_the_continuation_stops_at_the_end_of_text_token(tmp_path: Path) -> None:
    model = open_model(tied_llama(tmp_path))
    model.end_ids = ()
    first = continue_text(model, TEXT, max_new_tokens=4).new_ids[0]
    model.end_ids = (first,)
    steps: list[tuple[int, int]] = []
    short = continue_text(model, TEXT, max_new_tokens=4, progress=lambda *a: steps.append(a))
    assert short.new_ids == (first,) and steps == [(1, 4)]


def test_the_continuation_stops_at_the_models_last_position(tmp_path: Path) -> None:
    model = open_model(tied_llama(tmp_path))  # 64 positions
    model.end_ids = ()
    text = " ".join(["fox"] * 200)
    result = continue_text(model, text, max_tokens=60, max_new_tokens=32)
    assert len(result.prompt_ids) + len(result.new_ids) == model.spec.max_positions


def _pll(model: Model, folder: Path, ids: np.ndarray, mask: int) -> np.ndarray:
    """−ln p(token) at each masked position: the body by the forward pass, the MLM head
    (dense, exact GELU, LayerNorm, tied decoder and bias) written out here."""
    w = {}
    for path in folder.glob("*.safetensors"):
        w.update({k: v.astype(np.float64) for k, v in load_file(path).items()})
    eps = model.spec.eps
    run = Pass(model.spec, model.lm_store(), model._names)
    losses = []
    for i in range(1, len(ids) - 1):
        masked = ids.copy()
        masked[i] = mask
        x = run.embed(masked)
        for layer in range(model.spec.layers):
            x = run.layer(layer, x)
        h = x[i].astype(np.float64) @ w["cls.predictions.transform.dense.weight"].T
        h = h + w["cls.predictions.transform.dense.bias"]
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        h = (h - h.mean()) / np.sqrt(h.var() + eps)
        h = h * w["cls.predictions.transform.LayerNorm.weight"]
        h = h + w["cls.predictions.transform.LayerNorm.bias"]
        z = h @ w["embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
        z -= z.max()
        losses.append(np.log(np.exp(z).sum()) - z[ids[i]])
    return np.array(losses)


def test_bert_scores_by_pseudo_log_likelihood(tmp_path: Path) -> None:
    folder = bert_with_mlm(tmp_path)
    model = open_model(folder)
    assert model.has_lm_head and model.head.kind == "mlm"
    text = "The fox jumps over the dog."
    score = score_text(model, text, top_k=4)
    ids = np.array(score.token_ids)
    assert score.tokens[0] == "[CLS]" and score.tokens[-1] == "[SEP]"
    assert len(score.token_losses) == len(ids) - 2 == len(score.predictions)
    want = _pll(model, folder, ids, model.tokenizer.token_id("[MASK]"))
    np.testing.assert_allclose(score.token_losses, want, rtol=1e-4)
    assert score.loss == pytest.approx(want.mean(), rel=1e-4)
    assert all(len(p) == 4 for p in score.predictions)
    changed = score_text(model, text, Intervention(alpha=8.0))
    assert changed.loss != score.loss and len(changed.layer_entropy) == model.spec.layers
    points = list(iter_sweep(model, text, alphas=(0.5, 8.0)))
    assert points[1].score.loss == changed.loss


def test_a_bert_decoder_stored_beside_tied_embeddings_is_refused(tmp_path: Path) -> None:
    from engine.models import ModelError
    from tests.engine.lm_models import with_weights

    folder = bert_with_mlm(tmp_path)
    extra = load_file(folder / "model.safetensors")
    copy = with_weights(tmp_path, "tiny-bert", "copy", {
        **{k: v for k, v in extra.items() if k.startswith("cls.")},
        "cls.predictions.decoder.weight": extra["embeddings.word_embeddings.weight"]})
    with pytest.raises(ModelError, match=r"decoder\.weight', which would be unused"):
        open_model(copy)
