"""The precision lab's engine: low-precision attention weights against independent computations.

The references below redo each rounding step with plain numpy / ml_dtypes casts, and the
figures are the low-precision facts the lab must show (q, k iid N(0, 1), d_k = n = 64).
"""

from __future__ import annotations

import csv
import io

import ml_dtypes
import numpy as np
import pytest

from engine.analysis.sweep import SWEEP_CSV_COLUMNS, run_sweep
from engine.config import Precision, Rounding, SweepConfig, SweepParam
from engine.core.precision import (
    largest_value,
    precision_attention,
    precision_from_logits,
    reference_weights,
)

F32 = np.float32


def _qk(rows: int, n: int = 64, d: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, 1, d)), rng.standard_normal((rows, n, d))


def _cast(x: np.ndarray, dt: object) -> np.ndarray:
    return np.asarray(x).astype(dt).astype(F32)


def test_largest_values_are_the_formats_own() -> None:
    assert largest_value("float16") == 65504.0
    assert largest_value(Precision.FLOAT8_E4M3) == 448.0
    assert largest_value("bfloat16") == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)


@pytest.mark.parametrize("dt, name", [(np.float16, "float16"), (ml_dtypes.bfloat16, "bfloat16")])
@pytest.mark.parametrize("order", ["fold_q", "after"])
def test_stable_softmax_matches_a_step_by_step_cast(dt: object, name: str, order: str) -> None:
    q, k = _qk(50, n=16, d=32, seed=1)
    c = 1 / np.sqrt(32)
    qd, kd = _cast(q, dt), _cast(k, dt)
    if order == "fold_q":
        z = _cast(np.matmul(_cast(qd * F32(c), dt), kd.transpose(0, 2, 1)), dt)
    else:
        z = _cast(_cast(np.matmul(qd, kd.transpose(0, 2, 1)), dt) * F32(c), dt)
    t = _cast(z - z.max(-1, keepdims=True), dt)
    e = _cast(np.exp(t), dt)
    s = _cast(e.sum(-1, keepdims=True), dt)
    p = _cast(e / s, dt).astype(np.float64)
    res = precision_attention(q, k, c, name, order=order)
    np.testing.assert_array_equal(res.weights, p)
    ref = reference_weights(c * (q @ k.transpose(0, 2, 1)))
    np.testing.assert_array_equal(res.error, np.abs(p - ref).max(-1))
    assert not res.overflow.any()


def test_float64_stable_is_the_reference_and_float32_is_close() -> None:
    q, k = _qk(20)
    assert precision_attention(q, k, 0.125, "float64").weight_err_mean < 1e-15
    assert precision_attention(q, k, 0.125, "float32").weight_err_mean < 1e-6


def test_unscaled_fp16_naive_overflows_almost_every_row_scaled_none() -> None:
    q, k = _qk(4000)
    unscaled = precision_attention(q, k, 1.0, "float16", softmax="naive")
    scaled = precision_attention(q, k, 0.125, "float16", softmax="naive")
    assert 0.98 <= unscaled.overflow_share <= 1.0
    assert scaled.overflow_share == 0.0
    # Overflowing rows have no error, the others do; the weights are kept, not raised on.
    assert np.isnan(unscaled.error[unscaled.overflow]).all()
    with np.errstate(invalid="ignore"):
        sums = unscaled.weights[unscaled.overflow].sum(-1)
    assert not (np.abs(sums - 1) < 0.1).any()  # inf / NaN, or 0 where only the sum overflowed
    # An independent count: a row overflows iff some fp16 exp(z) or its fp16 sum is inf.
    z = precision_attention(q, k, 1.0, "float16").logits
    with np.errstate(over="ignore"):
        e = np.exp(z.astype(np.float16))
        s = e.astype(F32).sum(-1).astype(np.float16)
    expected = ~(np.isfinite(e).all(-1) & np.isfinite(s))
    np.testing.assert_array_equal(unscaled.overflow, expected)


def test_max_subtraction_removes_overflow_but_not_rounding_error() -> None:
    q, k = _qk(4000)
    stable = precision_attention(q, k, 1.0, "float16", softmax="stable")
    assert stable.overflow_share == 0.0
    assert stable.weight_err_mean > 1e-4  # fp16 rounding of logits ~20 is still there
    naive_bf16 = precision_attention(q, k, 1.0, "bfloat16", softmax="naive")
    stable_bf16 = precision_attention(q, k, 1.0, "bfloat16", softmax="stable")
    assert naive_bf16.overflow_share == stable_bf16.overflow_share == 0.0  # fp32's range
    assert stable_bf16.weight_err_mean == pytest.approx(naive_bf16.weight_err_mean, rel=0.2)


def test_bf16_logit_rounding_moves_weights_by_the_known_amounts() -> None:
    # Mean per-row max|Δp| with the logits rounded to bf16 (softmax in float64):
    # ≈ 3.8e-3 unscaled, ≈ 4.0e-4 scaled by 1/√d_k (d_k = n = 64; the sweep's 20 000 rows: 3.81e-3,
    # 3.96e-4).
    q, k = _qk(5000, seed=3)
    s = q @ k.transpose(0, 2, 1)
    unscaled = precision_from_logits(s, "bfloat16", rounding=Rounding.LOGITS)
    scaled = precision_from_logits(s / 8, "bfloat16", rounding=Rounding.LOGITS)
    assert unscaled.weight_err_mean == pytest.approx(3.8e-3, rel=0.08)
    assert scaled.weight_err_mean == pytest.approx(4.0e-4, rel=0.08)
    # Independent: round with ml_dtypes, softmax in float64.
    z = s.astype(ml_dtypes.bfloat16).astype(np.float64)
    err = np.abs(reference_weights(z) - reference_weights(s)).max(-1).mean()
    assert unscaled.weight_err_mean == pytest.approx(err, rel=1e-12)


def test_fp8_logits_beyond_448_are_not_numbers() -> None:
    q = np.full((1, 1, 4), 12.0)
    k = np.stack([np.full(4, 10.0), np.full(4, 0.5)])[None]  # q·k = 480 and 24
    res = precision_attention(q, k, 1.0, "float8_e4m3", order="after")
    assert res.logit_overflow.all() and res.overflow.all()
    folded = precision_attention(q, k, 0.125, "float8_e4m3", order="fold_q")
    assert not folded.overflow.any()  # 60 and 3: the scale folded into q keeps them in range


def test_sweep_columns_follow_the_dtype_and_softmax() -> None:
    assert SWEEP_CSV_COLUMNS[-2:] == ("overflow_share", "weight_err_mean")
    base = SweepConfig(param=SweepParam.D_K, values=(64,), samples=3000,
                       rules=("none", "sqrt"))
    default = run_sweep(base)
    assert [(p.overflow_share, p.weight_err_mean) for p in default] == [(0.0, 0.0)] * 2
    naive = run_sweep(base.replace(dtype="float16", softmax="naive"))
    assert naive[0].overflow_share > 0.98 and naive[1].overflow_share == 0.0
    # Same rows, same statistics: only the precision columns differ.
    assert naive[0].entropy_mean == default[0].entropy_mean
    logits = run_sweep(base.replace(dtype="bfloat16", rounding="logits"))
    assert logits[0].weight_err_mean == pytest.approx(3.8e-3, rel=0.1)
    assert logits[1].weight_err_mean == pytest.approx(4.0e-4, rel=0.1)
    grid = run_sweep(base.replace(precision_grid=True, rules=("none", "sqrt", "linear"),
                                  samples=512, dtype="float16", softmax="naive"))
    assert len(grid[0].precision) == 9 and grid[2].precision == ()
    by = {(s.precision, s.softmax, s.rounding): s for s in grid[0].precision}
    # With 512 rows (n = 64) the grid sees the same rows as the main columns.
    same = by[("float16", "naive", "all")]
    assert (same.overflow_share, same.weight_err_mean) == (
        grid[0].overflow_share, grid[0].weight_err_mean)


def test_sweep_command_dtype_and_softmax_options(tmp_path) -> None:
    from engine.cli.sweep import sweep_command
    from main import build_parser

    out = tmp_path / "p.csv"
    args = build_parser().parse_args([
        "sweep", "--param", "d_k", "--values", "64", "--rules", "none,sqrt", "--samples", "2000",
        "--dtype", "float16", "--softmax", "naive", "--out", str(out), "--quiet"])
    assert sweep_command(args) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["rule"] for r in rows] == ["none", "sqrt"]
    assert float(rows[0]["overflow_share"]) > 0.98 and float(rows[1]["overflow_share"]) == 0.0
    assert float(rows[1]["weight_err_mean"]) > 0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sweep", "--values", "2", "--dtype", "float128"])
