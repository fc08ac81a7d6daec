"""Monte Carlo sweeps (engine.analysis.sweep):
exactness of the sampling tricks, determinism, cancel, CSV."""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import threading

import numpy as np
import pytest

from engine.analysis.sweep import (
    SWEEP_CSV_COLUMNS,
    SweepPoint,
    iter_sweep,
    run_sweep,
    write_sweep_csv,
)
from engine.config import SweepConfig
from engine.core.memory import MemoryBudgetError
from engine.core.softmax import softmax
from engine.core.stats import row_entropy

CONTRACT_COLUMNS = (
    "param,value,rule,logit_mean,logit_var,logit_var_theory,entropy_mean,p_max_mean,"
    "jac_fro_median,jac_fro_q10,jac_fro_q90,saturated_share"
).split(",")


def _same(a: SweepPoint, b: SweepPoint) -> bool:
    return all(
        (x == y) or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
        for x, y in zip(dataclasses.astuple(a), dataclasses.astuple(b), strict=True)
    )


def test_deterministic_per_seed_and_seed_matters() -> None:
    cfg = SweepConfig(values=(4, 64), rules=("none", "qk_norm", "softcap"), samples=3000)
    a, b = run_sweep(cfg), run_sweep(cfg)
    assert all(_same(x, y) for x, y in zip(a, b, strict=True))
    c = run_sweep(cfg.replace(seed=1))
    assert a[0].entropy_mean != c[0].entropy_mean
    assert [p.index for p in a] == list(range(6)) and {p.total for p in a} == {6}


def test_rules_share_rows_at_one_value() -> None:
    # Common random numbers: at d_k = 1 every linear rule has c = 1, so the points coincide.
    pts = run_sweep(SweepConfig(values=(1,), rules=("none", "sqrt", "linear"), samples=2000))
    assert pts[0].entropy_mean == pts[1].entropy_mean == pts[2].entropy_mean


def test_chi_trick_matches_full_vectors() -> None:
    # q·k_j | q = ‖q‖ z_j is exact for iid Gaussian q, k: compare with explicit vectors.
    d, n, rows = 16, 32, 6000
    (pt,) = run_sweep(SweepConfig(values=(d,), rules=("none",), n_tokens=n, samples=rows))
    rng = np.random.default_rng(123)
    q = rng.standard_normal((rows, 1, d))
    k = rng.standard_normal((rows, n, d))
    h = row_entropy(softmax((k @ q.swapaxes(-1, -2))[..., 0]))
    sem = math.hypot(pt.entropy_sem, h.std(ddof=1) / math.sqrt(rows))
    assert abs(pt.entropy_mean - h.mean()) < 5 * sem


def test_qk_norm_cosine_sampling_matches_full_vectors() -> None:
    d, n, rows, rho = 8, 16, 6000, 0.4
    cfg = SweepConfig(param="rho", values=(0.0, rho), rules=("qk_norm",), d_k=d, n_tokens=n,
                      samples=rows)
    pts = run_sweep(cfg)
    assert pts[0].logit_var == pytest.approx(1.0, rel=0.03)  # g²/d with g = √d
    assert pts[0].logit_var_theory == pytest.approx(1.0)
    assert math.isnan(pts[1].logit_var_theory)
    assert math.isnan(pts[0].jac_raw_median)
    rng = np.random.default_rng(5)
    q = rng.standard_normal((rows, 1, d))
    k = rho * q + math.sqrt(1 - rho**2) * rng.standard_normal((rows, n, d))
    cos = (k @ q.swapaxes(-1, -2))[..., 0] / (
        np.linalg.norm(k, axis=-1) * np.linalg.norm(q, axis=-1)
    )
    h = row_entropy(softmax(math.sqrt(d) * cos))
    sem = math.hypot(pts[1].entropy_sem, h.std(ddof=1) / math.sqrt(rows))
    assert abs(pts[1].entropy_mean - h.mean()) < 5 * sem


def test_rho_sweep_moments_follow_closed_forms() -> None:
    d = 64
    pts = run_sweep(SweepConfig(param="rho", values=(0.0, 0.5, 0.9), rules=("sqrt", "linear"),
                                d_k=d, samples=4000))
    for pt in pts:
        c = 1 / math.sqrt(d) if pt.rule.value == "sqrt" else 1 / d
        rho = pt.value
        assert pt.logit_var_theory == pytest.approx(c * c * d * (1 + rho**2))
        # Row-level ‖q‖² variation dominates: per-row Monte Carlo error ~ c ρ √(2d)/√samples.
        sem_mean = c * math.sqrt(d * (1 + rho**2) / (4000 * 64) + rho**2 * 2 * d / 4000)
        assert abs(pt.logit_mean - c * rho * d) < 5 * sem_mean
        assert pt.logit_var == pytest.approx(pt.logit_var_theory, rel=0.06)


def test_linear_and_softcap_raw_gradients() -> None:
    pts = run_sweep(SweepConfig(values=(256,), rules=("linear", "softcap"), samples=2000,
                                cap=1.0))
    lin, cap = pts
    assert lin.jac_raw_median == pytest.approx(lin.jac_fro_median / 256, rel=1e-12)
    assert math.isnan(cap.logit_var_theory)
    assert cap.logit_var < 1.0  # the cap squeezes unit-variance logits
    assert 0 < cap.jac_raw_median < cap.jac_fro_median / 16  # sech² < 1 on top of 1/√d


def test_s_sweep_theory_and_qk_norm_independent_of_s() -> None:
    pts = run_sweep(SweepConfig(param="s", values=(1.0, 10.0), rules=("none", "qk_norm"),
                                d_k=16, samples=2000))
    none1, qk1, none10, qk10 = pts
    assert none1.logit_var_theory == 1.0 and none10.logit_var_theory == 100.0
    # Normalisation removes the scale: same distribution (different streams per value).
    sem = math.hypot(qk1.entropy_sem, qk10.entropy_sem)
    assert abs(qk1.entropy_mean - qk10.entropy_mean) < 5 * sem
    assert none10.entropy_mean < none1.entropy_mean - 1.0


def test_n_sweep_and_small_memory_budget() -> None:
    cfg = SweepConfig(param="n", values=(2, 128), rules=("sqrt",), samples=700)
    pts = run_sweep(cfg)
    assert pts[0].entropy_mean < math.log(2) and pts[1].entropy_mean < math.log(128)
    tiny = run_sweep(cfg.replace(memory_budget_bytes=50_000))  # forces 1–2 rows per chunk
    assert all(p.samples == 700 and math.isfinite(p.entropy_mean) for p in tiny)
    with pytest.raises(MemoryBudgetError):
        next(iter_sweep(cfg.replace(samples=1_000_000, memory_budget_bytes=1_000_000)))


def test_cancel_before_start_and_between_points() -> None:
    cfg = SweepConfig(values=(4, 8, 16), samples=5000)
    cancel = threading.Event()
    cancel.set()
    assert list(iter_sweep(cfg, cancel)) == []
    cancel.clear()
    gen = iter_sweep(cfg, cancel)
    next(gen)
    cancel.set()
    assert list(gen) == []  # stops without another yield and without raising


def test_cancel_inside_a_point_stops_at_the_next_chunk() -> None:
    cfg = SweepConfig(values=(64,), rules=("none",), samples=20_000)
    cancel = threading.Event()
    calls: list[int] = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 2:
            cancel.set()

    assert list(iter_sweep(cfg, cancel, on_progress=progress)) == []
    assert len(calls) == 2  # no further chunk was computed after the event was set
    assert calls[-1] < 20_000


def test_cancel_from_another_thread_yields_at_most_one_more_point() -> None:
    cfg = SweepConfig(values=tuple(2.0**i for i in range(10)), samples=5000)
    cancel = threading.Event()
    gen = iter_sweep(cfg, cancel)
    first = next(gen)
    timer = threading.Timer(0.0, cancel.set)
    timer.start()
    timer.join()
    rest = list(gen)
    assert first.index == 0 and len(rest) <= 1


def test_progress_callback_counts_every_row() -> None:
    cfg = SweepConfig(values=(4, 8), rules=("none", "sqrt"), samples=3000)
    seen: list[tuple[int, int]] = []
    list(iter_sweep(cfg, on_progress=lambda d, t: seen.append((d, t))))
    assert seen[-1] == (12_000, 12_000)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_csv_columns_and_round_trip() -> None:
    assert list(SWEEP_CSV_COLUMNS[:12]) == CONTRACT_COLUMNS
    pts = run_sweep(SweepConfig(values=(2, 8), rules=("none", "qk_norm"), samples=500))
    buf = io.StringIO()
    write_sweep_csv(iter(pts), buf)
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    assert rows[0] == list(SWEEP_CSV_COLUMNS)
    assert len(rows) == 5
    assert rows[1][:3] == ["d_k", "2", "none"] and rows[4][:3] == ["d_k", "8", "qk_norm"]
    assert float(rows[1][6]) == pts[0].entropy_mean  # shortest round-trip floats
    assert rows[2][SWEEP_CSV_COLUMNS.index("jac_raw_median")] == "nan"


def test_default_d_k_sweep_runs_all_thirteen_values() -> None:
    # The real default (20,000 samples) takes ~1.5 s; the test uses fewer samples.
    pts = run_sweep(SweepConfig(samples=1000))
    assert len(pts) == 39 and [p.value for p in pts[::3]] == [2.0**i for i in range(13)]
    none = [p for p in pts if p.rule.value == "none"]
    sqrt = [p for p in pts if p.rule.value == "sqrt"]
    assert none[-1].saturated_share > 0.7 and none[-1].entropy_mean < 0.1
    assert all(abs(p.entropy_mean - 3.69) < 0.1 for p in sqrt[4:])
