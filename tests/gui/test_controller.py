"""The controller + worker: threaded results equal the engine's, coalescing, cancel, shutdown."""

from __future__ import annotations

import dataclasses
import threading
from typing import ClassVar

import numpy as np
import pytest
from PySide6.QtCore import QObject, Slot

from engine.analysis.correlation import correlation_rms
from engine.analysis.experiment import run_experiment, temperature_comparison
from engine.analysis.explorer import ALL_RULES, CORRELATION_D_K, sweep_config_for
from engine.analysis.sweep import run_sweep
from engine.config import AttentionConfig, ScalingRule
from gui.explorer import controller as controller_module
from gui.explorer.controller import ExplorerController
from gui.explorer.worker import Worker
from gui.kit.qt_lifetime import wait_until

CONFIG = AttentionConfig(n_tokens=20, d_k=8, d_model=8, samples=250, rule="linear", rho=0.3)
SWEEP_VALUES = (1, 4, 16)


class Recorder(QObject):
    """Stands in for the views: records what the controller pushes (GUI thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.pushed: list[object] = []

    def show_results(self, results: object) -> None:
        self.pushed.append(results)


def wait_for(controller: ExplorerController, predicate, timeout_ms: int = 20_000) -> bool:
    """Run a local event loop until ``predicate(controller)`` holds (checked on GUI signals)."""
    return wait_until(lambda: predicate(controller),
                      (controller.resultsShown, controller.resultsPainted,
                       controller.busyChanged, controller.errorOccurred), timeout_ms)


def settled(controller: ExplorerController) -> bool:
    results = controller.results()
    return controller.is_settled() and results is not None and (
        results.sweep_done or bool(controller.last_error()))


@pytest.fixture
def make_controller(qapp):
    """Factory of controllers that are always shut down and deleted, whatever the test did."""
    made = []

    def factory(config=CONFIG, **options):
        options.setdefault("length_values", (16, 256))  # a short length sweep: fast tests
        recorder = Recorder()
        ctrl = ExplorerController(config, views=[recorder], **options)
        ctrl.recorder = recorder
        made.append(ctrl)
        return ctrl

    yield factory
    for ctrl in made:
        ctrl.shutdown()
        assert not ctrl.is_running()
        ctrl.recorder.deleteLater()
        ctrl.deleteLater()


@pytest.fixture
def controller(make_controller):
    return make_controller(sweep_values=SWEEP_VALUES, sweep_samples_cap=150)


def _assert_points_equal(got, expected) -> None:
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        for field in dataclasses.fields(a):
            np.testing.assert_equal(getattr(a, field.name), getattr(b, field.name), field.name)


def test_threaded_results_equal_synchronous_engine(controller):
    controller.start()
    assert wait_for(controller, settled)
    results = controller.results()
    assert results.config == CONFIG and results.config.rule is ScalingRule.LINEAR
    assert controller.recorder.pushed[-1] is results

    expected = run_experiment(CONFIG, rules=ALL_RULES)
    assert set(results.snapshot.rules) == set(ScalingRule)
    np.testing.assert_array_equal(results.snapshot.q, expected.q)
    for rule in ScalingRule:
        np.testing.assert_array_equal(results.snapshot.rules[rule].weights,
                                      expected.rules[rule].weights)
        np.testing.assert_array_equal(results.snapshot.rules[rule].jac_fro,
                                      expected.rules[rule].jac_fro)
    p_t, p_s, diff = temperature_comparison(CONFIG, controller.temperature())
    np.testing.assert_array_equal(results.temperature_comparison[0], p_t)
    np.testing.assert_array_equal(results.temperature_comparison[1], p_s)
    assert results.temperature_comparison[2] == diff
    corr = correlation_rms(CORRELATION_D_K, CONFIG.rho, CONFIG.samples, CONFIG.seed)
    for key in ("rms_none", "rms_sqrt", "rms_linear"):
        np.testing.assert_array_equal(results.correlation[key], corr[key])
    sweep = sweep_config_for(CONFIG, SWEEP_VALUES, 150)
    assert ScalingRule.LINEAR in sweep.rules and sweep.samples == 150
    _assert_points_equal(results.sweep_points, run_sweep(sweep))


class CountingWorker(Worker):
    """The real worker, counting the jobs it runs and how many ever ran at the same time."""

    lock = threading.Lock()
    runs: ClassVar[list[object]] = []
    running = 0
    most_at_once = 0

    @Slot(object)
    def run(self, job) -> None:
        cls = CountingWorker
        with cls.lock:
            cls.runs.append(job.task.config)
            cls.running += 1
            cls.most_at_once = max(cls.most_at_once, cls.running)
        try:
            super().run(job)
        finally:
            with cls.lock:
                cls.running -= 1


def test_rapid_changes_coalesce_and_end_on_the_last_state(make_controller, qapp, monkeypatch):
    monkeypatch.setattr(controller_module, "Worker", CountingWorker)
    monkeypatch.setattr(CountingWorker, "runs", [])
    monkeypatch.setattr(CountingWorker, "most_at_once", 0)
    controller = make_controller(sweep_values=SWEEP_VALUES, sweep_samples_cap=150)
    controller.start()
    assert wait_for(controller, settled)
    started_before = len(CountingWorker.runs)
    final = None
    for i in range(1000):
        final = CONFIG.replace(seed=i + 1, query_row=i % CONFIG.n_tokens)
        controller.set_config(final)
        if i % 20 == 0:
            qapp.processEvents()  # let some throttle windows expire, as real drags do
    assert wait_for(controller, settled)
    results = controller.results()
    assert results.config == final
    assert results.sweep_points and results.sweep_points[0].samples == 150
    # The throttle lets at most a handful of requests through; never one per change.
    started = len(CountingWorker.runs) - started_before
    assert 1 <= started < 200, started
    assert CountingWorker.most_at_once == 1
    assert CountingWorker.runs[-1] == final  # the worker's last job computed the last state


def test_temperature_change_recomputes_only_the_comparison(controller):
    controller.start()
    assert wait_for(controller, settled)
    before = controller.results()
    controller.set_temperature(1.5)
    assert wait_for(controller, lambda c: c.results().temperature == 1.5 and c.is_settled())
    after = controller.results()
    assert after.snapshot is before.snapshot and after.sweep_points is before.sweep_points
    np.testing.assert_array_equal(after.temperature_comparison[0],
                                  temperature_comparison(CONFIG, 1.5)[0])


def test_unchanged_sweep_is_reused_for_d_k_changes(controller):
    controller.start()
    assert wait_for(controller, settled)
    points = controller.results().sweep_points
    controller.set_config(CONFIG.replace(d_k=32, d_model=32, init_std=0.5))
    assert wait_for(controller, lambda c: settled(c) and c.results().config.d_k == 32)
    assert controller.results().sweep_points is points


def test_cancel_stops_the_sweep_and_keeps_partial_points(make_controller):
    big = AttentionConfig(n_tokens=64, samples=20_000)
    ctrl = make_controller(big, sweep_values=tuple(2**i for i in range(11)),
                           sweep_samples_cap=20_000)
    ctrl.start()
    assert wait_for(ctrl, lambda c: c.results() is not None and c.results().sweep_points)
    ctrl.cancel()
    assert wait_for(ctrl, lambda c: c.is_settled(), 5_000)
    results = ctrl.results()
    assert not results.sweep_done
    assert 0 < len(results.sweep_points) < results.sweep_points[0].total
    assert ctrl.shutdown()
    assert not ctrl.is_running()


def test_shutdown_mid_sweep_stops_the_thread(make_controller):
    ctrl = make_controller(AttentionConfig(n_tokens=128, samples=20_000),
                           sweep_values=tuple(2**i for i in range(11)),
                           sweep_samples_cap=20_000)
    ctrl.start()
    assert wait_for(ctrl, lambda c: c.results() is not None and c.results().sweep_points)
    assert ctrl.is_busy()
    assert ctrl.shutdown(timeout_ms=1000), "the worker did not stop within the bounded wait"
    assert not ctrl.is_running()
    ctrl.set_config(CONFIG)  # ignored after shutdown, must not raise or start work
    assert not ctrl.is_running()


def test_memory_budget_error_is_reported_not_raised(controller):
    controller.start()
    assert wait_for(controller, settled)
    before = controller.results()
    controller.set_config(AttentionConfig(n_tokens=8192, heads=64, d_k=1, d_model=64))
    assert wait_for(controller, lambda c: bool(c.last_error()) and c.is_settled())
    message = controller.last_error()
    assert "64 heads × 8192×8192 would need" in message, message
    assert "more than the memory budget of 1.00 GiB" in message, message
    assert controller.results() is before
    controller.set_config(CONFIG.replace(seed=5))
    assert wait_for(controller, lambda c: settled(c) and c.results().config.seed == 5)
    assert controller.last_error() == ""
