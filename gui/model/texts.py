"""The Model tab's texts: the status line, the figure's header, the predictions table's rows and
the CSV rows of everything shown (numbers as the engine computed them)."""

from __future__ import annotations

from itertools import zip_longest

from engine.models import TextScore
from gui.kit import style
from gui.kit.i18n import translate
from gui.model.controller import ModelResults
from gui.model.figure import format_alpha
from gui.model.task import ContinuationReady, ModelTask

__all__ = ["CSV_HEADER", "csv_rows", "header_text", "prediction_rows", "scope_text",
           "shown_token", "status_text"]

CSV_HEADER = ["table", "model", "intervention", "alpha", "layer", "head", "loss", "perplexity",
              "mean_entropy", "saturated", "nonfinite", "position", "rank", "token",
              "probability", "text"]


def intervention_text(results: ModelResults, alpha: float) -> str:
    """The intervention of the last run at ``alpha``: "α = 8 · all layers"."""
    task = results.task
    if task is None:
        return ""
    return translate("ModelView", "α = {0} · {1}").format(format_alpha(alpha),
                                                          scope_text(task))


def scope_text(task: ModelTask) -> str:
    """Where the run's α applies, with its scale and precision when they are not the model's."""
    if task.scope == "layers" and task.layers:
        text = translate("ModelView", "layers {0}").format(", ".join(map(str, task.layers)))
    elif task.scope == "heads":
        heads = (", ".join(map(str, task.heads)) if task.heads
                 else translate("ModelView", "all"))
        text = translate("ModelView", "layer {0}, heads {1}").format(task.layer, heads)
    else:
        text = translate("ModelView", "all layers")
    if task.rule is not None:
        text += " · " + style.rule_name(task.rule.kind)
    if task.precision != "float32":
        text += f" · {task.precision} ({task.softmax})"
    return text


def status_text(results: ModelResults) -> str:
    """What the tab is doing, for the status bar."""
    name = results.model.name if results.model is not None else ""
    done = len(results.alpha_points) + len(results.second_points)
    if results.state == "running":
        if results.model is None:
            return translate("ModelView", "Opening the model…")
        return translate("ModelView", "{0}: {1} points computed…").format(name, done)
    if results.state == "cancelled":
        return translate("ModelView", "Cancelled: the {0} points computed stay.").format(done)
    if results.state == "failed":
        return translate("ModelView", "Error: {0}").format(results.error)
    if results.state == "done":
        return translate("ModelView", "{0}: {1} points").format(name, done)
    return translate("ModelView", "Choose a model and a text, then Run.")


def header_text(results: ModelResults) -> str:
    """The figure's header: model, tokens, the scope and where the loss is lowest."""
    if results.model is None or results.task is None:
        return translate("ModelView", "No model run yet.")
    reference = results.alpha_points[0].score if results.alpha_points else None
    parts = [results.model.name]
    if reference is not None:
        parts.append(translate("ModelView", "{0} tokens").format(len(reference.token_ids)))
    parts.append(scope_text(results.task))
    finite = [p for p in results.alpha_points if p.score.loss == p.score.loss
              and abs(p.score.loss) != float("inf")]
    if finite:
        best = min(finite, key=lambda p: p.score.loss)
        parts.append(translate("ModelView", "lowest loss {0:.3f} at α = {1}").format(
            best.score.loss, format_alpha(best.alpha)))
    return " · ".join(parts)


def shown_token(text: str) -> str:
    """A token as the table shows it: spaces and line breaks made visible (" cat" and "cat"
    are two tokens)."""
    return (text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")) or "∅"


def prediction_rows(own: TextScore | None, chosen: TextScore | None,
                    position: int) -> list[tuple[str, str, str, str]]:
    """The table's rows at ``position``: token and probability at α = 1, then at the chosen
    α ("" where a score is missing)."""
    columns = []
    for score in (own, chosen):
        predictions = (score.predictions[position]
                       if score is not None and 0 <= position < len(score.predictions) else ())
        columns.append([(shown_token(p.text), f"{p.probability:.3f}") for p in predictions])
    return [(*at_one, *at_chosen)
            for at_one, at_chosen in zip_longest(*columns, fillvalue=("", ""))]


def _score_row(name: str, label: str, kind: str, alpha: float, layer: object, head: object,
               score: TextScore) -> list[float | str]:
    entropy = float(score.layer_entropy.mean()) if score.layer_entropy.size else float("nan")
    saturated = (float(score.layer_saturated.mean()) if score.layer_saturated.size
                 else float("nan"))
    return [kind, name, label, alpha, "" if layer is None else int(layer),
            "" if head is None else int(head), score.loss, score.perplexity, entropy, saturated,
            int(score.nonfinite), "", "", "", "", ""]


def csv_rows(results: ModelResults, chosen_alpha: float | None,
             position: int) -> list[list[float | str]]:
    """Every point (table ``alpha``, ``layer`` or ``head``), the predictions shown (table
    ``prediction``) and the continuations (table ``continuation``)."""
    name = results.model.name if results.model is not None else ""
    rows = []
    for point in (*results.alpha_points, *results.second_points):
        label = point.score.intervention.label()
        rows.append(_score_row(name, label, point.kind, point.alpha, point.layer, point.head,
                               point.score))
    for alpha in (1.0, chosen_alpha):
        score = results.score_at(alpha) if alpha is not None else None
        if score is None or not 0 <= position < len(score.predictions):
            continue
        for rank, prediction in enumerate(score.predictions[position], start=1):
            rows.append(["prediction", name, score.intervention.label(), alpha, "", "", "", "",
                         "", "", "", position, rank, prediction.text, prediction.probability,
                         ""])
    for ready in (results.own, results.intervened):
        if isinstance(ready, ContinuationReady) and ready.continuation is not None:
            continuation = ready.continuation
            rows.append(["continuation", name, continuation.intervention.label(), ready.alpha,
                         "", "", "", "", "", "", "", "", "", "", "", continuation.text])
    return rows
