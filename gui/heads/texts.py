"""The Heads tab's texts made from the engine's objects: the file line, its tooltip, the
flagged heads and the replay's title (translated in the ``HeadsView`` context)."""

from __future__ import annotations

import json

from engine.analysis.head_scan import HeadRecord
from engine.io.tensors import TensorFile
from gui.heads.metrics import flag_text
from gui.heads.worker import ReplayReady
from gui.kit.i18n import translate

__all__ = ["file_text", "flagged_text", "meta_tooltip", "replay_title"]


def file_text(tf: TensorFile) -> str:
    """One line naming the file, its model, geometry, mask and where q, k were taken."""
    model = tf.meta.get("model")
    if isinstance(model, str) and len(model) > 80:
        model = model[:79] + "…"
    where = tf.meta.get("where")
    parts = [f"<b>{tf.path.name}</b>"]
    if model:
        parts.append(str(model))
    parts.append(translate("HeadsView", "{0} layers × {1} heads, n = {2}, d_k = {3}, "
                           "batch {4}, {5}").format(len(tf.layers), tf.heads, tf.n, tf.d_k,
                                                    tf.batch, tf.dtype))
    parts.append(translate("HeadsView", "causal") if tf.causal
                 else translate("HeadsView", "not causal"))
    if isinstance(where, str) and where:
        parts.append(where if len(where) <= 80 else where[:79] + "…")
    return " · ".join(parts)


def meta_tooltip(tf: TensorFile) -> str:
    """The file's path and its whole meta object, one key per line."""
    lines = [str(tf.path)]
    for key, value in tf.meta.items():
        text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
        lines.append(f"{key}: {text if len(text) <= 300 else text[:299] + '…'}")
    return "\n".join(lines)


def flagged_text(records: tuple[HeadRecord, ...], *, done: bool) -> str:
    """The flagged heads so far (``done``: the scan has ended), at most 12 named."""
    flagged = [r for r in records if r.diagnostics.flags]
    if not flagged:
        return (translate("HeadsView", "Flagged heads: none.") if done
                else translate("HeadsView", "Flagged heads: none so far."))
    shown = ", ".join(f"L{r.layer} H{r.head} ({flag_text(r.diagnostics.flags)})"
                      for r in flagged[:12])
    more = len(flagged) - 12
    text = translate("HeadsView", "Flagged heads ({0}): {1}").format(len(flagged), shown)
    if more > 0:
        text += " " + translate("HeadsView", "and {0} more (sort the flags column).").format(more)
    # On a line of its own: run on after the list, the legend read as one more flagged head.
    return text + "\n" + translate(
        "HeadsView", "Grid letters: S saturated, P sharp, K sink, U near-uniform.")


def replay_title(message: ReplayReady) -> str:
    """The title above the replayed rules of one head."""
    return translate("HeadsView", "Layer {0}, head {1}, batch entry {2}: every rule on the "
                     "same real q and k (colour: weight p from 0 to 1, as in the explorer)"
                     ).format(message.layer, message.head, message.batch_entry)

