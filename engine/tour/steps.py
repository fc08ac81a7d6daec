"""The guided tour's steps: their configuration, their structure, and UI names in their texts.

A step (``resources/tour/tour.json``) names a view, sets :class:`~engine.config.AttentionConfig`
fields and states claims (:mod:`engine.tour.claims`); its optional ``formulas`` and ``given``
account for the numbers of its texts that no claim computes
(checked by ``tests/engine/tour_prose.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.config import AttentionConfig
from engine.tour.claims import validate_claim

__all__ = ["UI_REF", "expand_ui_refs", "step_config", "validate_tour"]


#: ``{ui:Context|English text}`` in a tour text names a UI element (tab, control, button) by
#: its translatable source string, so the GUI can show it exactly as the UI currently labels it.
UI_REF = re.compile(r"\{ui:([^|{}]+)\|([^{}]+)\}")


def expand_ui_refs(text: str, translate: Callable[[str, str], str] | None = None) -> str:
    """Replace every ``{ui:Context|Text}`` in ``text`` by ``translate(Context, Text)``.

    Without ``translate`` the English ``Text`` is used (tests and the headless checks).
    """
    if translate is None:
        return UI_REF.sub(lambda m: m.group(2), text)
    return UI_REF.sub(lambda m: translate(m.group(1), m.group(2)), text)


def step_config(settings: Mapping[str, Any]) -> AttentionConfig:
    """Build the step's configuration: ``settings`` applied to the default AttentionConfig.

    Every step starts from the defaults (not from whatever the user set before), so a step
    always shows the same experiment and its claims can be checked once and for all.
    """
    if not isinstance(settings, Mapping):
        raise ValueError(f"step settings must be an object, got {type(settings).__name__}")
    return AttentionConfig.from_dict(dict(settings))


def validate_tour(tour: Mapping[str, Any], views: Sequence[str] | None = None) -> None:
    """Check the structure of a parsed ``tour.json`` (steps, settings, claims).

    Parameters
    ----------
    tour
        The parsed JSON object ``{"version": 1, "steps": [...]}``.
    views
        Allowed view keys (``None``: not checked).
    """
    steps = tour.get("steps") if isinstance(tour, Mapping) else None
    if not isinstance(steps, list) or not steps:
        raise ValueError("tour must have a non-empty 'steps' list")
    seen: set[str] = set()
    for index, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise ValueError(f"step {index} must be an object")
        step_id = step.get("id")
        if not isinstance(step_id, str) or not step_id:
            raise ValueError(f"step {index} needs a non-empty string 'id'")
        if step_id in seen:
            raise ValueError(f"duplicate step id {step_id!r}")
        seen.add(step_id)
        # "view" may name a tab that only some builds have (e.g. the Train tab); then
        # "fallback_view" must be one of the always-present views.
        view = step.get("fallback_view", step.get("view"))
        if not isinstance(step.get("view"), str) or not isinstance(view, str) or (
            views is not None and view not in views
        ):
            raise ValueError(f"step {step_id!r}: view (or fallback_view) must be one of "
                             f"{views}, got {view!r}")
        step_config(step.get("settings", {}))
        temperature = step.get("view_temperature")
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, int | float)
            or not temperature > 0
        ):
            raise ValueError(f"step {step_id!r}: view_temperature must be a positive number")
        if "run_training" in step and (not isinstance(step["run_training"], bool)
                                       or "train_settings" not in step):
            raise ValueError(f"step {step_id!r}: run_training must be true or false, and goes "
                             "with train_settings (the run it starts)")
        claims = step.get("claims")
        if not isinstance(claims, list) or not claims:
            raise ValueError(f"step {step_id!r} needs a non-empty 'claims' list")
        for claim in claims:
            validate_claim(claim)
        _validate_prose_numbers(step, step_id)


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float)


def _validate_prose_numbers(step: Mapping[str, Any], step_id: str) -> None:
    """Check the form of a step's ``formulas`` and ``given``."""
    formulas = step.get("formulas", [])
    if not isinstance(formulas, list) or not all(
            isinstance(f, Mapping) and set(f) == {"value", "expr"} and _is_number(f["value"])
            and isinstance(f["expr"], str) for f in formulas):
        raise ValueError(f"step {step_id!r}: 'formulas' must be a list of "
                         "{\"value\": number, \"expr\": text}")
    given = step.get("given", [])
    if not isinstance(given, list) or not all(_is_number(x) for x in given):
        raise ValueError(f"step {step_id!r}: 'given' must be a list of numbers")

