"""The explorer's plan: which parts a change recomputes or reuses; results equal direct calls."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

from engine.analysis.correlation import correlation_rms
from engine.analysis.experiment import run_experiment, temperature_comparison
from engine.analysis.explorer import (
    ALL_RULES,
    CORRELATION_D_K,
    Computed,
    Part,
    Reuse,
    iter_plan,
    plan_full,
    plan_temperature,
    sweep_config_for,
)
from engine.analysis.sweep import run_sweep
from engine.config import AttentionConfig, ScalingRule

CONFIG = AttentionConfig(n_tokens=16, d_k=8, d_model=8, samples=120, rule="linear", rho=0.3)
VALUES = (1, 4, 16)
FULL = {Part.SNAPSHOT, Part.CORRELATION, Part.TEMPERATURE, Part.SWEEP_POINT}


def _run(plan):
    parts = list(iter_plan(plan))
    return {p.part: p.value for p in parts if p.part is not Part.SWEEP_POINT}, [
        p.value for p in parts if p.part is Part.SWEEP_POINT]


def _done(config=CONFIG):
    """What the explorer holds after a finished request for ``config``."""
    plan = plan_full(config, 2.0, sweep_values=VALUES, sweep_samples_cap=100)
    values, _ = _run(plan)
    return Computed(config, values[Part.SNAPSHOT], values[Part.CORRELATION], plan.sweep())


def _parts(plan, *, reused: bool) -> set[Part]:
    """The parts ``plan`` re-uses (or computes)."""
    return {step.part for step in plan.steps if isinstance(step, Reuse) == reused}


def test_first_request_computes_every_part_and_equals_the_direct_calls():
    plan = plan_full(CONFIG, 2.0, None, sweep_values=VALUES, sweep_samples_cap=100)
    assert _parts(plan, reused=False) == FULL and not _parts(plan, reused=True)
    values, points = _run(plan)
    expected = run_experiment(CONFIG, rules=ALL_RULES)
    assert set(values[Part.SNAPSHOT].rules) == set(ScalingRule)
    for rule in ScalingRule:
        np.testing.assert_array_equal(values[Part.SNAPSHOT].rules[rule].weights,
                                      expected.rules[rule].weights)
    p_t, p_s, diff = temperature_comparison(CONFIG, 2.0)
    np.testing.assert_array_equal(values[Part.TEMPERATURE][0], p_t)
    np.testing.assert_array_equal(values[Part.TEMPERATURE][1], p_s)
    assert values[Part.TEMPERATURE][2] == diff
    corr = correlation_rms(CORRELATION_D_K, CONFIG.rho, CONFIG.samples, CONFIG.seed)
    np.testing.assert_array_equal(values[Part.CORRELATION]["rms_sqrt"], corr["rms_sqrt"])
    sweep = sweep_config_for(CONFIG, VALUES, 100)
    assert sweep.samples == 100 and ScalingRule.LINEAR in sweep.rules
    expected_points = run_sweep(sweep)
    assert len(points) == len(expected_points)
    for got, want in zip(points, expected_points, strict=True):
        for field in dataclasses.fields(got):
            np.testing.assert_equal(getattr(got, field.name), getattr(want, field.name))


@pytest.mark.parametrize(
    ("change", "reused"),
    [
        # d_k, heads, σ (init_std) and the query row do not enter the sweep or the correlation.
        ({"d_k": 32, "d_model": 32, "init_std": 0.5}, {Part.CORRELATION, Part.SWEEP_POINT}),
        ({"query_row": 3}, {Part.CORRELATION, Part.SWEEP_POINT}),
        # n enters the sweep only; ρ and the seed enter both.
        ({"n_tokens": 24}, {Part.CORRELATION}),
        ({"rho": 0.5}, set()),
        ({"seed": 9}, set()),
        # The compared rule adds its curve to the sweep.
        ({"rule": "temperature"}, {Part.CORRELATION}),
    ],
)
def test_a_change_reuses_exactly_the_parts_it_does_not_enter(change, reused):
    plan = plan_full(CONFIG.replace(**change), 2.0, _done(), sweep_values=VALUES,
                     sweep_samples_cap=100)
    assert _parts(plan, reused=True) == reused
    assert _parts(plan, reused=False) == FULL - reused
    assert {Part.SNAPSHOT, Part.TEMPERATURE} <= _parts(plan, reused=False)


def test_reused_parts_are_the_same_objects_and_a_reused_sweep_streams_nothing():
    computed = _done()
    plan = plan_full(CONFIG.replace(d_k=16, d_model=16), 3.0, computed, sweep_values=VALUES,
                     sweep_samples_cap=100)
    values, points = _run(plan)
    assert values[Part.CORRELATION] is computed.correlation
    assert points == []
    new = CONFIG.replace(d_k=16, d_model=16)
    np.testing.assert_array_equal(values[Part.TEMPERATURE][0],
                                  temperature_comparison(new, 3.0)[0])


def test_an_unfinished_sweep_is_streamed_again():
    computed = dataclasses.replace(_done(), sweep=None)  # e.g. it was cancelled
    plan = plan_full(CONFIG, 2.0, computed, sweep_values=VALUES, sweep_samples_cap=100)
    assert Part.SWEEP_POINT in _parts(plan, reused=False)
    assert _parts(plan, reused=True) == {Part.CORRELATION}


def test_temperature_plan_reuses_the_snapshot_of_the_same_config_only():
    snapshot = run_experiment(CONFIG, rules=ALL_RULES)
    plan = plan_temperature(CONFIG, 1.5, snapshot)
    assert _parts(plan, reused=False) == {Part.TEMPERATURE} and plan.snapshot is snapshot
    (ready,) = list(iter_plan(plan))
    np.testing.assert_array_equal(ready.value[0], temperature_comparison(CONFIG, 1.5)[0])
    other = CONFIG.replace(seed=4)
    assert plan_temperature(other, 1.5, snapshot).snapshot is None
    (ready,) = list(iter_plan(plan_temperature(other, 1.5, snapshot)))
    np.testing.assert_array_equal(ready.value[0], temperature_comparison(other, 1.5)[0])


def test_a_set_cancel_event_stops_the_plan_before_the_next_part():
    cancel = threading.Event()
    plan = plan_full(CONFIG, 2.0, sweep_values=VALUES, sweep_samples_cap=100)
    parts = []
    for ready in iter_plan(plan, cancel):
        parts.append(ready.part)
        cancel.set()
    assert parts == [Part.SNAPSHOT]


def test_plan_steps_are_immutable():
    plan = plan_full(CONFIG, 2.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.steps[0].config = CONFIG  # type: ignore[misc]
    assert isinstance(plan_full(CONFIG, 2.0, _done()).steps[1], Reuse)
