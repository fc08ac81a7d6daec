"""Test helper: the shipped tour's steps and the engine's results for their claims, each step
evaluated once per test run (the engine, lab-step and tour-panel tests compare with the same
results instead of each evaluating the claims again)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from engine.tour.claims import ClaimResult
from engine.tour.evaluate import evaluate_claims
from engine.tour.steps import step_config

TOUR_FILE = Path(__file__).resolve().parents[2] / "resources" / "tour" / "tour.json"


def tour_step(step_id: str) -> dict:
    """The step ``step_id`` of the shipped tour.json."""
    steps = json.loads(TOUR_FILE.read_text(encoding="utf-8"))["steps"]
    return next(step for step in steps if step["id"] == step_id)


@functools.cache
def step_results(step_id: str) -> tuple[ClaimResult, ...]:
    """The engine's results for the claims of step ``step_id``, at the step's settings."""
    step = tour_step(step_id)
    return tuple(evaluate_claims(step["claims"], step_config(step["settings"])))
