"""The head diagnostics find the faults planted in a file, and leave healthy heads alone.

A file of 4 layers × 8 heads (n 128, d_k 64) carries planted faults: q grown ×8 and ×6, k
grown ×6, a sink on token 0, a near-uniform head and an exactly uniform one; every other head
is healthy (independent N(0, 1) components at the model's 1/√d_k). The file is read back by
``inspect`` as a user runs it, bidirectional and causal.
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from engine.analysis.heads import FLAGS, diagnose_head
from engine.io.tensors import write_tensors

N, D_K, LAYERS, HEADS = 128, 64, 4, 8
#: Healthy heads in the false-flag test.
HEALTHY = 400


def _sink(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Token 0's key shares a direction that every query holds: ≈ 0.6 of each row's weight."""
    q = rng.standard_normal((N, D_K))
    k = rng.standard_normal((N, D_K))
    q[:, 0] = 6.0
    k[:, 0] = 0.0
    k[0, 0] = 8.0
    return q, k


#: (layer, head) -> (what is planted, the flag it must carry, how to build q and k).
PLANTED = {
    (0, 3): ("q ×8", "sharp", lambda q, k, rng: (8 * q, k)),
    (1, 5): ("q ×8", "sharp", lambda q, k, rng: (8 * q, k)),
    (1, 1): ("q ×6", "sharp", lambda q, k, rng: (6 * q, k)),
    (2, 6): ("k ×6", "sharp", lambda q, k, rng: (q, 6 * k)),
    (2, 2): ("sink", "sink", lambda q, k, rng: _sink(rng)),
    (3, 0): ("near-uniform", "near-uniform", lambda q, k, rng: (0.05 * q, k)),
    (3, 7): ("exactly uniform", "near-uniform", lambda q, k, rng: (0 * q, k)),
    (0, 0): ("one-hot", "saturated", lambda q, k, rng: (40 * q, k)),
}


def planted_file(path, causal: bool):
    rng = np.random.default_rng(2026)
    arrays = {}
    for layer in range(LAYERS):
        qs, ks = [], []
        for head in range(HEADS):
            q, k = rng.standard_normal((N, D_K)), rng.standard_normal((N, D_K))
            if (layer, head) in PLANTED:
                q, k = PLANTED[layer, head][2](q, k, rng)
            qs.append(q)
            ks.append(k)
        arrays[f"layer{layer}.q"] = np.stack(qs).astype(np.float32)
        arrays[f"layer{layer}.k"] = np.stack(ks).astype(np.float32)
    return write_tensors(path, arrays, meta={"causal": causal})


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_every_planted_fault_is_flagged_and_no_healthy_head(tmp_path, causal) -> None:
    from main import main

    source = planted_file(tmp_path / "planted.npz", causal)
    out = tmp_path / "report.csv"
    assert main(["inspect", str(source), "--out", str(out), "--quiet"]) == 0
    rows = {(int(r["layer"]), int(r["head"])): r for r in csv.DictReader(out.open())}
    assert len(rows) == LAYERS * HEADS
    for where, row in rows.items():
        flags = row["flags"].split(";") if row["flags"] else []
        assert set(flags) <= set(FLAGS)
        if where in PLANTED:
            what, flag, _ = PLANTED[where]
            assert flag in flags, (what, row)
        else:
            assert flags == [], row
        assert int(row["causal"]) == causal
    uniform = rows[3, 7]
    # An exactly uniform head sits at its mask-aware reference: mean ln(i + 1) when causal.
    expected = (np.mean(np.log(np.arange(1, N + 1))) if causal else math.log(N))
    assert float(uniform["entropy_mean"]) == pytest.approx(expected, rel=1e-12)
    assert float(uniform["entropy_uniform"]) == pytest.approx(expected, rel=1e-12)
    sink = rows[2, 2]
    assert 0.5 < float(sink["sink_mass"]) < 0.8


def test_false_flag_rate_on_400_healthy_heads() -> None:
    """Healthy Gaussian heads (n 32-512, d_k 16-128, at 1/√d_k, half of them causal) carry
    no flag: the rate must stay ≤ 1 % (measured: 0 of 1,000; 400 keep the test short)."""
    rng = np.random.default_rng(7)
    flagged = []
    for index in range(HEALTHY):
        n = round(2 ** rng.uniform(5, 9))
        d_k = int(rng.choice([16, 32, 64, 128]))
        q = rng.standard_normal((1, n, d_k))
        k = rng.standard_normal((1, n, d_k))
        diag = diagnose_head(q, k, causal=bool(index % 2))
        if diag.flags:
            flagged.append((n, d_k, bool(index % 2), diag.flags))
    rate = len(flagged) / HEALTHY
    print(f"false-flag rate on {HEALTHY} healthy heads: {rate:.3%} {flagged[:5]}")
    assert rate <= 0.01, flagged[:10]


def test_rho_ignores_a_shared_mean_and_recovers_a_matched_correlation() -> None:
    rng = np.random.default_rng(11)
    shape = (2, 256, 64)
    mean = rng.standard_normal(shape[-1]) * 3.0
    shared = diagnose_head(mean + rng.standard_normal(shape), mean + rng.standard_normal(shape))
    assert abs(shared.rho) < 0.05
    q = rng.standard_normal(shape)
    k = 0.6 * q + 0.8 * rng.standard_normal(shape)
    assert diagnose_head(q + mean, k - mean).rho == pytest.approx(0.6, abs=0.05)


@pytest.mark.parametrize("rule", ["log_n", "ssmax"])
def test_no_law_is_claimed_where_the_scale_differs_by_row(rule: str) -> None:
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 1, 64, 32))
    assert math.isnan(diagnose_head(q, k, rule=rule, causal=True).logit_std_theory)
    assert math.isfinite(diagnose_head(q, k, rule=rule, causal=False).logit_std_theory)
