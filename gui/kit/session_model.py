"""The Model tab's inputs as a session file and the settings keep them (no Qt).

The session's ``model`` object (optional: sessions written before the tab open without it)::

    "model": {"path": "…/SmolLM2-135M-Instruct.Q4_1.gguf", "text": "The cat sat on the mat.",
              "max_tokens": 128, "memory_gib": 1.0, "alpha_low": 0.125, "alpha_high": 8.0,
              "alpha_points": 13, "scope": "all", "layers": "", "layer": 0, "heads": "",
              "rule": null, "parameter": 8.0, "precision": "float32", "softmax": "stable",
              "layer_alpha": 0.0}

``rule`` null keeps the model's own scale; ``parameter`` is the rule's (T, gain, cap, SSMax s
or YaRN f); ``layer_alpha`` 0 is √d_k ("no scaling"); ``layers`` and ``heads`` are the text
typed (read when Run is pressed, as in the tab). The ranges below are the controls' own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from engine.config.ranges import Interval, check_int, check_number
from engine.config.rules import RULE_FIELDS, parse_rule

__all__ = ["ALPHA_POINTS", "ALPHA_RANGE", "LAYER_ALPHA_RANGE", "LAYER_RANGE", "MAX_TEXT_CHARS",
           "MAX_TOKENS", "MEMORY_GIB", "MODEL_SCOPES", "PARAMETER_RANGE", "ModelChoice", "quoted"]

#: Where the intervention applies: every layer, the layers typed, or heads of one layer.
MODEL_SCOPES = ("all", "layers", "heads")
#: The controls' ranges (their spin boxes are built from these).
MAX_TOKENS = Interval(2, 8192)
MEMORY_GIB = Interval(0.25, float(1 << 20))  # the box stops at the machine's memory
ALPHA_RANGE = Interval(1e-3, 1e3)
ALPHA_POINTS = Interval(2, 41)
LAYER_RANGE = Interval(0, 1023)
PARAMETER_RANGE = Interval(1e-6, 1e6)
LAYER_ALPHA_RANGE = Interval(0.0, 1e3)  # 0: √d_k
#: The most characters a model text box holds (gui.kit.model_input's, declared here without
#: Qt so that a session is checked against it): far more than any Max tokens of a text, while
#: the 8 MB a careless paste brings froze the window for seconds in the box's layout. The
#: one-line fields hold at most ``_MAX_LINE_CHARS``.
MAX_TEXT_CHARS = 1 << 18
_MAX_LINE_CHARS = 4096

_INTS = {"max_tokens": MAX_TOKENS, "alpha_points": ALPHA_POINTS, "layer": LAYER_RANGE}
_NUMBERS = {"memory_gib": MEMORY_GIB, "alpha_low": ALPHA_RANGE, "alpha_high": ALPHA_RANGE,
            "parameter": PARAMETER_RANGE, "layer_alpha": LAYER_ALPHA_RANGE}
_TEXTS = {"path": _MAX_LINE_CHARS, "text": MAX_TEXT_CHARS, "layers": _MAX_LINE_CHARS,
          "heads": _MAX_LINE_CHARS}


@dataclasses.dataclass(frozen=True)
class ModelChoice:
    """Every input of the Model tab, as its controls show it."""

    path: str
    text: str
    max_tokens: int
    memory_gib: float
    alpha_low: float
    alpha_high: float
    alpha_points: int
    scope: str
    layers: str
    layer: int
    heads: str
    rule: str | None
    parameter: float
    precision: str
    softmax: str
    layer_alpha: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ModelChoice:
        """Validate a session's (or the settings') ``model`` object.

        Raises
        ------
        ValueError
            One line naming the key (``model.max_tokens must be in [2, 8192], got 9000``).
        """
        # Imported here: engine.models loads the model code, which reading a session without
        # a Model section (main.py's checks, the explorer's start) does not need.
        from engine.models.intervention import PRECISIONS, SOFTMAX_FORMS

        if not isinstance(data, dict):
            raise ValueError("'model' must be an object")
        missing = [field.name for field in dataclasses.fields(cls) if field.name not in data]
        if missing:
            raise ValueError(f"model.{missing[0]} is missing")
        values: dict[str, Any] = {}
        for key, limit in _TEXTS.items():
            value = data[key]
            if not isinstance(value, str) or len(value) > limit:
                raise ValueError(f"model.{key} must be a text of at most {limit:,} "
                                 f"characters, got {quoted(value)}")
            values[key] = value
        for key, interval in _INTS.items():
            values[key] = check_int(f"model.{key}", data[key], interval)
        for key, interval in _NUMBERS.items():
            values[key] = check_number(f"model.{key}", data[key], interval)
        for key, allowed in (("scope", MODEL_SCOPES), ("precision", PRECISIONS),
                             ("softmax", SOFTMAX_FORMS)):
            if data[key] not in allowed:
                raise ValueError(f"model.{key} must be one of {', '.join(allowed)}, got "
                                 f"{quoted(data[key])}")
            values[key] = data[key]
        rule = data["rule"]
        values["rule"] = None if rule is None else parse_rule(rule, "model.rule").value
        parameters = () if rule is None else parse_rule(rule).spec.parameters
        if len(parameters) == 1:  # the tab's parameter box: the rule's own range (YaRN f ≥ 1)
            check_number("model.parameter", values["parameter"],
                         RULE_FIELDS[parameters[0][0]].interval)
        return cls(**values)


def quoted(value: object) -> str:
    """``repr(value)`` cut to 40 characters (a hostile file may hold a huge text or number)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond CPython's 4300-digit conversion limit
        return "(an integer with too many digits)"
    return text if len(text) <= 40 else text[:39] + "…"
