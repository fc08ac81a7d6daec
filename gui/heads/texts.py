"""The Heads tab's texts made from the engine's objects: the file line, its tooltip, the
layer names, the flagged heads, the replay's title, the exported figure's header and the status
line (translated in the ``HeadsView`` context)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from engine.analysis.head_scan import HeadRecord
from engine.config.train import TRAIN_FIELDS
from engine.io.tensors import TensorFile
from gui.heads.metrics import flag_text
from gui.heads.worker import Logits, ReplayReady
from gui.kit import style
from gui.kit.forms import translated
from gui.kit.i18n import translate
from gui.kit.style import layer_name

__all__ = ["export_header", "file_text", "flagged_text", "layer_names", "logits_text",
           "meta_tooltip", "model_text", "replay_title", "status_line"]


def missing_text(needs: str) -> str:
    """Why a rule or a number is missing for a file (``needs`` as in
    :class:`engine.analysis.head_weights.NeedsQK`), translated."""
    if needs == "d_k":
        return translate("HeadsView", "needs d_k (meta \"d_k\")")
    if needs == "scale":
        return translate("HeadsView", "needs a scale > 0")
    return translate("HeadsView", "needs q and k")


# The English model line the mini-trainer writes (engine.training.export_qk._MODEL).
_TRAINER_MODEL = re.compile(
    r"Attention Scale Explorer mini-trainer: one attention layer \(no residual, no MLP\), "
    r"(\d+) head\(s\) of d_k (\d+), d_model (\d+), task (\w+)")


def model_text(tf: TensorFile) -> str | None:
    """The file's model as its meta states it; the app's own trainer's files (the shipped
    sample among them) in the UI's language, since that wording is the app's, not a user's."""
    model = tf.meta.get("model")
    match = _TRAINER_MODEL.fullmatch(model) if isinstance(model, str) else None
    if match is None:
        return None if model is None else str(model)
    heads, d_k, d_model, task = match.groups()
    field = TRAIN_FIELDS["task"].gui
    choices = field.choices if field is not None and field.choices else {}
    task_text = next((translated(label) for kind, label in choices.items()
                      if str(kind) == task), task)
    return translate("HeadsView", "the app's mini-trainer: one attention layer (no residual, "
                     "no MLP), heads: {0}, d_k {1}, d_model {2}, task: {3}").format(
        heads, d_k, d_model, task_text)


def file_text(tf: TensorFile) -> str:
    """One line naming the file, its model, geometry, mask and where q, k were taken."""
    model = model_text(tf)
    if isinstance(model, str) and len(model) > 80:
        model = model[:79] + "…"
    where = tf.meta.get("where")
    parts = [f"<b>{tf.path.name}</b>"]
    if model:
        parts.append(str(model))
    if tf.kind == "weights":
        parts.append(translate("HeadsView", "{0} layers × {1} heads, n = {2}, batch {3}, {4}"
                               ).format(len(tf.layers), tf.heads, tf.n, tf.batch, tf.dtype))
        parts.append(translate("HeadsView", "logits only (no q and k)") if tf.has_logits
                     else translate("HeadsView", "attention weights only (no q and k)"))
    else:
        parts.append(translate("HeadsView", "{0} layers × {1} heads, n = {2}, d_k = {3}, "
                               "batch {4}, {5}").format(len(tf.layers), tf.heads, tf.n, tf.d_k,
                                                        tf.batch, tf.dtype))
    if tf.kv_heads != tf.heads:
        parts.append(translate("HeadsView", "grouped-query: {0} key heads").format(tf.kv_heads))
    if tf.layout == "transformer_lens":
        parts.append(translate("HeadsView", "TransformerLens cache"))
    parts.append(translate("HeadsView", "causal") if tf.causal
                 else translate("HeadsView", "not causal"))
    parts.extend(_window_texts(tf))
    if isinstance(where, str) and where:
        parts.append(where if len(where) <= 80 else where[:79] + "…")
    if tf.format == "memory":
        parts.append(translate("HeadsView", "captured, not saved (File › Save captured "
                               "tensors…)"))
    return " · ".join(parts)


# Layers named in a window's text; a longer list is cut (a 62-layer Gemma slides on 52).
_NAMED_LAYERS = 6


def _window_texts(tf: TensorFile) -> list[str]:
    """One text per sliding window of the file's layers, naming the layers it masks: those
    heads' uniform references and maps differ from a causal layer's."""
    by_window: dict[int, list[int]] = {}
    for layer in tf.layers:
        window = tf.layer_window(layer)
        if window is not None:
            by_window.setdefault(window, []).append(layer)
    texts = []
    for window, layers in sorted(by_window.items()):
        named = ", ".join(map(str, layers[:_NAMED_LAYERS]))
        if len(layers) > _NAMED_LAYERS:
            named = translate("HeadsView", "{0}, … ({1} in all)").format(named, len(layers))
        texts.append(translate("HeadsView", "sliding window of {0} keys on layers {1}"
                               ).format(window, named))
    return texts


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
    return text


def layer_names(tf: TensorFile) -> dict[int, str]:
    """Each layer's label for the table: its index, and its readable name when it has one."""
    names = {}
    for layer in tf.layers:
        name = layer_name(tf, layer)
        names[layer] = str(layer) if name == layer_name(None, layer) else f"{layer} · {name}"
    return names


def logits_text(logits: Logits) -> str:
    """What the diagnostics are of: the file's own scale, or the rule re-applied."""
    if logits.own_scale:
        return translate("HeadsView", "logits: the file's own scale")
    return translate("HeadsView", "logits: {0} re-applied").format(
        style.rule_name(logits.rule.kind))


def export_header(tf: TensorFile | None, logits: Logits, replay: ReplayReady | None) -> str:
    """The exported figure's first line: file, logits and the replayed head's batch entry."""
    if tf is None:
        return translate("HeadsView", "No tensor file open.")
    parts = [f"<b>{tf.path.name}</b>", logits_text(logits)]
    if replay is not None:
        parts.append(translate("HeadsView", "replay: layer {0}, head {1}, batch entry {2}")
                     .format(replay.layer, replay.head, replay.batch_entry))
    return " · ".join(parts)


def status_line(tf: TensorFile | None, pending: str, diagnosed: int, busy: bool, error: str,
                replay: ReplayReady | None) -> str:
    """The window's status line while the Heads tab is in front."""
    if pending:
        return translate("HeadsView", "Opening {0}…").format(Path(pending).name)
    if error:
        return error
    if tf is None:
        return translate("HeadsView", "No tensor file open")
    total = len(tf.layers) * tf.heads
    if busy and diagnosed < total:
        return translate("HeadsView", "{0}: diagnosing, {1}/{2} heads").format(
            tf.path.name, diagnosed, total)
    if busy:
        return translate("HeadsView", "{0}: replaying the selected head").format(tf.path.name)
    if diagnosed < total:
        return translate("HeadsView", "{0}: stopped after {1}/{2} heads").format(
            tf.path.name, diagnosed, total)
    text = translate("HeadsView", "{0}: {1} heads diagnosed").format(tf.path.name, total)
    if replay is not None:
        text += " · " + translate("HeadsView", "replayed layer {0}, head {1}").format(
            replay.layer, replay.head)
    return text


def replay_title(message: ReplayReady) -> str:
    """The title above the replayed rules of one head."""
    if message.tensor_file.kind == "weights":
        return translate("HeadsView", "Layer {0}, head {1}, batch entry {2}: the rules that "
                         "multiply the logits, replayed exactly from the file's weights (colour: "
                         "weight p from 0 to 1)").format(message.layer, message.head,
                                                         message.batch_entry)
    return translate("HeadsView", "Layer {0}, head {1}, batch entry {2}: every rule on the "
                     "same real q and k (colour: weight p from 0 to 1, as in the explorer)"
                     ).format(message.layer, message.head, message.batch_entry)

