"""The files ``main.py intervene`` writes: one CSV row per point, or one JSON object (no Qt).

Numbers are written as the engine computed them (``repr`` of the float: exact); the CSV leaves
``layer`` and ``head`` empty where a point has none, and JSON writes a non-finite number (the
loss of an overflowing fp16 softmax) as ``null`` beside ``"nonfinite": true`` so that the file
stays strict JSON.
"""

from __future__ import annotations

import csv
import json
import math
from typing import TYPE_CHECKING, Any, TextIO

from engine.io.meta import json_number

if TYPE_CHECKING:
    from engine.models import Continuation, SweepPoint, TokenPrediction

__all__ = ["POINT_COLUMNS", "CsvPoints", "JsonPoints", "PointSink", "csv_columns",
           "summary_line"]

#: The CSV's first columns; the mean attention entropy and the saturated share of each layer
#: follow (``entropy_L0`` …, ``saturated_L0`` …).
POINT_COLUMNS = ("kind", "alpha", "layer", "head", "loss", "perplexity")


def csv_columns(layers: int) -> list[str]:
    """The CSV header of a model of ``layers`` layers."""
    return [*POINT_COLUMNS, *(f"entropy_L{i}" for i in range(layers)),
            *(f"saturated_L{i}" for i in range(layers))]


def _cell(value: int | float | None) -> str:
    return "" if value is None else repr(value)


def csv_row(point: SweepPoint) -> list[str]:
    """One point's CSV row, in the order of :func:`csv_columns`."""
    score = point.score
    return [point.kind, repr(float(point.alpha)), _cell(point.layer), _cell(point.head),
            repr(float(score.loss)), repr(float(score.perplexity)),
            *(repr(float(value)) for value in score.layer_entropy),
            *(repr(float(value)) for value in score.layer_saturated)]


def _predictions(predictions: tuple[TokenPrediction, ...]) -> list[dict[str, Any]]:
    return [{"token_id": p.token_id, "text": p.text, "probability": json_number(p.probability)}
            for p in predictions]


def point_record(point: SweepPoint) -> dict[str, Any]:
    """One point as the JSON file holds it."""
    score = point.score
    return {
        "kind": point.kind, "index": point.index, "alpha": float(point.alpha),
        "layer": point.layer, "head": point.head, "label": score.intervention.label(),
        "loss": json_number(score.loss), "perplexity": json_number(score.perplexity),
        "nonfinite": bool(score.nonfinite),
        "entropy": [json_number(value) for value in score.layer_entropy],
        "saturated": [json_number(value) for value in score.layer_saturated],
        "token_losses": [json_number(value) for value in score.token_losses],
        "top_k": _predictions(score.predictions[-1]) if score.predictions else [],
    }


def continuation_record(continuation: Continuation) -> dict[str, Any]:
    """One greedy continuation as the JSON file holds it."""
    return {"label": continuation.intervention.label(),
            "alpha": float(continuation.intervention.alpha), "text": continuation.text,
            "new_tokens": list(continuation.new_tokens), "new_ids": list(continuation.new_ids)}


class PointSink:
    """Where the points go as they arrive; :meth:`finish` completes the file.

    ``layers``: the model's layer count; ``header``: what the JSON file says first (the
    model, the text, the sweep's settings; ``"continue"`` > 0 adds the continuations).
    """

    def __init__(self, out: TextIO, layers: int, header: dict[str, Any]) -> None:
        self.out, self.layers, self.header = out, layers, header
        self.points: list[SweepPoint] = []
        self.continuations: list[Continuation] = []

    def add(self, point: SweepPoint) -> None:
        self.points.append(point)

    def add_continuation(self, continuation: Continuation) -> None:
        self.continuations.append(continuation)

    def finish(self, complete: bool) -> None:
        """Write what is still pending (``complete``: every point is done)."""


class CsvPoints(PointSink):
    """The CSV file: the header at once, then each point's row as soon as it arrives."""

    def __init__(self, out: TextIO, layers: int, header: dict[str, Any]) -> None:
        super().__init__(out, layers, header)
        self._writer = csv.writer(out, lineterminator="\n")
        self._writer.writerow(csv_columns(layers))
        out.flush()

    def add(self, point: SweepPoint) -> None:
        super().add(point)
        self._writer.writerow(csv_row(point))
        self.out.flush()


class JsonPoints(PointSink):
    """The JSON file, written whole at the end (with the points done when interrupted)."""

    def finish(self, complete: bool) -> None:
        first = self.points[0].score if self.points else None
        record = {
            **self.header, "complete": complete,
            "token_ids": list(first.token_ids) if first else [],
            "tokens": list(first.tokens) if first else [],
            "points": [point_record(point) for point in self.points],
        }
        if self.header.get("continue"):
            record["continuations"] = [continuation_record(c) for c in self.continuations]
        json.dump(record, self.out, ensure_ascii=False, indent=1, allow_nan=False)
        self.out.write("\n")


def summary_line(points: list[SweepPoint], where: str) -> str:
    """``least loss 3.21 nats (perplexity 24.8) at α = 0.707 · all layers; the model's own
    (α = 1): 3.35; 13 points in out.csv``."""
    finite = [p for p in points if math.isfinite(p.score.loss)]
    count = f"{len(points)} point{'' if len(points) == 1 else 's'} in {where}"
    if not finite:
        return f"no finite loss; {count}"
    best = min(finite, key=lambda p: p.score.loss)
    line = (f"least loss {best.score.loss:.4g} nats (perplexity {best.score.perplexity:.4g}) "
            f"at {best.score.intervention.label()}")
    own = [p for p in points if p.score.intervention.is_identity]
    if own and own[0] is not best:
        line += f"; the model's own (α = 1): {own[0].score.loss:.4g}"
    return f"{line}; {count}"
