"""A BERT folder's masked-LM pseudo-log-likelihood (Salazar et al. 2020): each token but [CLS]
and [SEP] is replaced by [MASK] in turn, the whole text runs, and the token's loss is
−ln p(token) at its position under the MLM head, as BertForMaskedLM computes it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.models.attend import LayerStats
from engine.models.capture import Model
from engine.models.forward import Pass
from engine.models.intervention import Intervention
from engine.models.scores import PreparedText, TextScore, head_scores, make_score
from engine.models.weights import ModelError

__all__ = ["score_masked"]


def score_masked(model: Model, prepared: PreparedText, intervention: Intervention, *,
                 top_k: int = 5, progress: Callable[[int, int], None] | None = None,
                 cancelled: Callable[[], bool] | None = None) -> TextScore:
    """The pseudo-log-likelihood of ``prepared`` under ``intervention``: one loss and one
    top-k per scored token; the layer statistics are the means over the masked runs.
    ``prepared`` was checked against the run's memory budget (the masked runs take one at a
    time): :func:`~engine.models.score_text`'s ``memory_budget=`` is this scoring's too.

    Raises
    ------
    ModelError
        A vocabulary without [MASK], or a text with no token besides [CLS] and [SEP].
    """
    mask = model.tokenizer.token_id("[MASK]")
    if mask is None:
        raise ModelError(f"{model.name}: the vocabulary has no [MASK] token")
    ends = {model.tokenizer.token_id("[CLS]"), model.tokenizer.token_id("[SEP]")} - {None}
    ids = prepared.ids
    scored = [i for i, token in enumerate(ids.tolist()) if token not in ends]
    if not scored:
        raise ModelError("the text has no token besides [CLS] and [SEP]: scoring needs one")
    run = Pass(model.spec, model.lm_store(), model._names, cancelled)
    lm = model.lm_head()
    losses, top_ids, top_p = [], [], []
    layer_stats: list[list[LayerStats]] = []
    for done, i in enumerate(scored):
        masked = ids.copy()
        masked[i] = mask
        x = run.embed(masked)
        stats: list[LayerStats] = []
        for layer in range(model.spec.layers):
            x = run.layer(layer, x, change=intervention.change_at(layer), stats=stats)
        layer_stats.append(stats)
        loss, top, p = head_scores(lm, lm.hidden(x[i:i + 1]), ids[i:i + 1], top_k)
        losses.append(loss[0])
        top_ids.append(top[0])
        top_p.append(p[0])
        if progress is not None:
            progress(done + 1, len(scored))
    mean = [LayerStats(float(np.mean([s[layer].entropy for s in layer_stats])),
                       float(np.mean([s[layer].saturated for s in layer_stats])))
            for layer in range(model.spec.layers)]
    return make_score(model, prepared, intervention, np.array(losses), mean,
                      np.array(top_ids), np.array(top_p), True)
