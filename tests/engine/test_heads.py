"""engine.analysis.heads: the diagnostics of one head (`inspect`: test_cli_inspect.py).

Every expected value is computed independently here (plain numpy, no engine code), except
where the test is that a replayed rule gives the engine's own logits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.analysis.heads import diagnose_head
from engine.core import parallel
from engine.core.attention import attention_logits
from engine.core.stats import SATURATION_THRESHOLD

RNG_SEED = 20231201


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Constructed heads
# ---------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 40), d_k=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_keys_all_equal_one_vector_give_uniform_weights(n: int, d_k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Small integers: every q·k is exact, so every row of logits is exactly constant.
    q = rng.integers(-4, 5, size=(2, n, d_k)).astype(np.float64)
    key = rng.integers(-4, 5, size=d_k).astype(np.float64)
    k = np.broadcast_to(key, (2, n, d_k)).copy()
    diag = diagnose_head(q, k, scale=0.5)
    assert diag.entropy_mean == math.log(n) == diag.entropy_uniform
    assert diag.p_max_mean == 1.0 / n
    assert diag.sink_mass == pytest.approx(1.0 / n, rel=1e-14)
    assert "near-uniform" in diag.flags
    assert "saturated" not in diag.flags and "sink" not in diag.flags


def test_planted_sink_gives_the_planted_mass() -> None:
    rng = np.random.default_rng(RNG_SEED)
    batch, n, d_k = 3, 64, 16
    q = rng.standard_normal((batch, n, d_k))
    k = 0.1 * rng.standard_normal((batch, n, d_k))
    direction = np.ones(d_k) / math.sqrt(d_k)
    q += 3.0 * direction  # every query has a large component along `direction` ...
    k[:, 0] = 7.0 * direction  # ... and key 0 lies on it: a sink column
    c = 1.0 / math.sqrt(d_k)
    # Independent computation of the mass on key 0, one batch entry at a time.
    expected = np.mean([_softmax_rows(c * q[b] @ k[b].T)[:, 0] for b in range(batch)])
    assert expected > 0.5  # the planted sink is a real one
    diag = diagnose_head(q, k)
    assert diag.sink_mass == pytest.approx(expected, rel=1e-12)
    assert "sink" in diag.flags
    assert diag.scale == c


def test_saturated_head_is_flagged() -> None:
    rng = np.random.default_rng(RNG_SEED)
    q = rng.standard_normal((1, 32, 8))
    k = q.copy()  # each query's own key dominates once the logits are large
    diag = diagnose_head(q, k, scale=50.0)
    p = _softmax_rows(50.0 * q[0] @ k[0].T)
    assert diag.saturated_share == pytest.approx(np.mean(p.max(axis=1) > SATURATION_THRESHOLD))
    assert diag.saturated_share > 0.5 and "saturated" in diag.flags
    assert diag.rho == pytest.approx(1.0)


def test_gaussian_head_follows_the_sqrt_dk_law() -> None:
    rng = np.random.default_rng(RNG_SEED)
    batch, n, d_k = 4, 256, 64
    q = rng.standard_normal((batch, n, d_k))
    k = rng.standard_normal((batch, n, d_k))
    # The n² logits of one batch entry are not independent (they share rows and columns);
    # the std of their sample std is about 1/√(2n) relative (std of q·k over ~n independent
    # rows and ~n independent columns), so 5/√(2·batch·n) is a safe tolerance.
    tol = 5.0 / math.sqrt(2 * batch * n)
    scaled = diagnose_head(q, k, rule="sqrt")
    raw = diagnose_head(q, k, rule="none")
    assert scaled.logit_std == pytest.approx(1.0, rel=tol)
    assert raw.logit_std == pytest.approx(8.0, rel=tol)
    assert raw.logit_std == pytest.approx(8.0 * scaled.logit_std, rel=1e-12)
    assert scaled.logit_std_theory == pytest.approx(1.0, rel=0.01)
    assert raw.logit_std_theory == pytest.approx(
        math.sqrt(d_k) * np.std(q) * np.std(k), rel=1e-12)
    # rho of independent q, k: sample correlation of batch·n·d_k pairs, std 1/√N.
    assert abs(scaled.rho) < 5.0 / math.sqrt(q.size)
    # The file's default scale (None) is 1/√d_k: the same as replaying sqrt.
    assert diagnose_head(q, k).logit_std == scaled.logit_std


@pytest.mark.parametrize("rho", [-0.6, 0.3, 0.9])
def test_rho_recovers_a_planted_correlation(rho: float) -> None:
    rng = np.random.default_rng(RNG_SEED)
    q = rng.standard_normal((2, 128, 32))
    k = rho * q + math.sqrt(1 - rho**2) * rng.standard_normal(q.shape)
    diag = diagnose_head(q, k)
    assert diag.rho == pytest.approx(rho, abs=5.0 * (1 - rho**2) / math.sqrt(q.size) + 1e-9)
    centred_q, centred_k = (a - a.mean(axis=1, keepdims=True) for a in (q, k))
    assert diag.rho == pytest.approx(
        np.corrcoef(centred_q.ravel(), centred_k.ravel())[0, 1], rel=1e-12)


# n = 600: float64 tiles of 109 rows, each computing only the keys its rows may see.
@pytest.mark.parametrize("n", [20, 600])
def test_causal_mask_counts_only_visible_logits(n: int) -> None:
    rng = np.random.default_rng(RNG_SEED)
    batch, d_k = 3, 8
    q = 2.0 * rng.standard_normal((batch, n, d_k))
    k = rng.standard_normal((batch, n, d_k))
    c = 0.7
    tri = np.tri(n, dtype=bool)
    logits = c * q @ k.swapaxes(1, 2)
    visible = logits[:, tri]
    masked = np.where(tri, logits, -np.inf)
    p = _softmax_rows(masked)
    logp = np.log(np.where(tri, p, 1.0))  # 0·ln 0 = 0
    diag = diagnose_head(q, k, scale=c, causal=True)
    assert diag.logit_std == pytest.approx(np.std(visible), rel=1e-12)
    assert diag.max_abs_logit == pytest.approx(np.max(np.abs(visible)), rel=1e-15)
    assert diag.entropy_mean == pytest.approx(np.mean(-np.sum(p * logp, axis=-1)), rel=1e-12)
    assert diag.p_max_mean == pytest.approx(np.mean(p.max(axis=-1)), rel=1e-12)
    assert diag.sink_mass == pytest.approx(np.mean(p[..., 0]), rel=1e-12)
    # Zhai et al.'s least entropy for row i's m = i + 1 visible logits of centred norm σ.
    m = np.tile(np.arange(1, n + 1), batch).astype(float)
    sigma = np.array([np.linalg.norm(logits[b, i, :i + 1] - logits[b, i, :i + 1].mean())
                      for b in range(batch) for i in range(n)])
    beta = np.exp(-sigma * np.sqrt(m / np.maximum(m - 1.0, 1.0)))
    bounds = np.where(m > 1, np.log1p((m - 1.0) * beta)
                      + sigma * np.sqrt(m * (m - 1.0)) * beta / (1.0 + (m - 1.0) * beta), 0.0)
    assert diag.entropy_floor_at_norm == pytest.approx(np.mean(bounds), rel=1e-10)
    # The mask changes what is counted: the full-matrix std differs.
    full = diagnose_head(q, k, scale=c)
    assert full.logit_std == pytest.approx(np.std(logits), rel=1e-12)
    assert full.logit_std != pytest.approx(diag.logit_std, rel=1e-6)
    # Row 0 sees only key 0: weight 1 there, counted in the means.
    assert diag.sink_mass >= 1.0 / n


@pytest.mark.parametrize(
    ("rule", "params"),
    [("none", {}), ("sqrt", {}), ("linear", {}), ("temperature", {"temperature": 3.0}),
     ("qk_norm", {"gain": 5.0}), ("qk_norm", {}), ("softcap", {"cap": 2.0}),
     # Under the causal mask each row of these has its own c, from the keys it sees.
     ("log_n", {}), ("ssmax", {})],
)
@pytest.mark.parametrize("causal", [False, True])
def test_replayed_rule_uses_the_engine_logits(rule: str, params: dict, causal: bool) -> None:
    rng = np.random.default_rng(RNG_SEED)
    q = 3.0 * rng.standard_normal((2, 24, 16))
    k = rng.standard_normal((2, 24, 16))
    logits = attention_logits(q, k, rule=rule, mask="causal" if causal else None, **params)
    visible = logits[np.isfinite(logits)]
    p = _softmax_rows(logits)
    diag = diagnose_head(q, k, rule=rule, causal=causal, scale=123.0, **params)  # scale ignored
    assert diag.rule == rule
    assert diag.logit_std == pytest.approx(np.std(visible), rel=1e-12)
    assert diag.max_abs_logit == pytest.approx(np.max(np.abs(visible)), rel=1e-14)
    assert diag.p_max_mean == pytest.approx(np.mean(p.max(axis=-1)), rel=1e-12)
    logp = np.log(np.where(p > 0.0, p, 1.0))  # 0·ln 0 = 0
    assert diag.entropy_mean == pytest.approx(np.mean(-np.sum(p * logp, axis=-1)), rel=1e-12)
    if rule == "softcap":
        assert diag.max_abs_logit <= params["cap"]


@pytest.mark.parametrize("causal", [False, True])
def test_diagnostics_do_not_depend_on_the_number_of_threads(causal: bool) -> None:
    """Tiles run on whichever thread is free; their sums are merged in tile order, so one
    thread and two give the same numbers, to the last bit."""
    rng = np.random.default_rng(RNG_SEED)
    q = rng.standard_normal((3, 1024, 16))
    k = rng.standard_normal((3, 1024, 16))
    old = parallel.get_num_threads()
    try:
        parallel.set_num_threads(1)
        serial = diagnose_head(q, k, causal=causal)
        parallel.set_num_threads(2)
        threaded = diagnose_head(q, k, causal=causal)
    finally:
        parallel.set_num_threads(old)
    assert parallel.parallel_pays(q.shape[0] * 1024 * 1024 * 16)  # the two runs differ
    assert threaded == serial


def test_bad_inputs_are_refused() -> None:
    q = np.zeros((1, 4, 3))
    with pytest.raises(ValueError, match="shape"):
        diagnose_head(q[0], q[0])
    with pytest.raises(ValueError, match="same shape"):
        diagnose_head(q, np.zeros((1, 5, 3)))
    with pytest.raises(ValueError, match="temperature"):
        diagnose_head(q, q, rule="temperature")
    with pytest.raises(ValueError, match="rule must be one of"):
        diagnose_head(q, q, rule="cubic")
    bad = q.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        diagnose_head(bad, q)


def test_the_files_own_cap_equals_the_softcap_replay() -> None:
    """Without a rule, ``cap`` is the model's own soft-cap on c·q·kᵀ: at c = 1/√d_k it is
    exactly the soft-cap rule replayed with the same cap."""
    rng = np.random.default_rng(RNG_SEED)
    q, k = 3.0 * rng.standard_normal((2, 10, 16)), 3.0 * rng.standard_normal((2, 10, 16))
    own = diagnose_head(q, k, scale=0.25, cap=2.0, causal=True)
    replay = diagnose_head(q, k, rule="softcap", cap=2.0, causal=True)
    assert own.max_abs_logit <= 2.0 and own.rule is None
    for name in ("logit_std", "max_abs_logit", "entropy_mean", "p_max_mean", "sink_mass"):
        assert getattr(own, name) == pytest.approx(getattr(replay, name), rel=1e-12)
    uncapped = diagnose_head(q, k, scale=0.25, causal=True)
    assert uncapped.max_abs_logit > 2.0


@pytest.mark.parametrize("causal", [False, True])
def test_a_head_of_one_token(causal: bool) -> None:
    """n = 1: one query, one key (no mask to apply): weight 1, entropy 0, the one logit."""
    q = np.array([[[1.0, 2.0]], [[0.5, -1.0]]])
    k = np.array([[[3.0, 1.0]], [[2.0, 2.0]]])
    diag = diagnose_head(q, k, scale=1.0, causal=causal, rule=None)
    assert (diag.n, diag.batch) == (1, 2)
    assert diag.p_max_mean == 1.0 and diag.entropy_mean == 0.0 == diag.entropy_floor_at_norm
    assert diag.sink_mass == 1.0 and diag.max_abs_logit == 5.0
    assert diag.logit_std == pytest.approx(np.std([5.0, -1.0]), rel=1e-15)
    replayed = diagnose_head(q, k, rule="ssmax", causal=causal)
    assert replayed.p_max_mean == 1.0
