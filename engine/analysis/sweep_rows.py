"""How a sweep draws its query rows: exact constructions, seeded chunk by chunk.

q·k is sampled through ``‖q‖² ~ χ²_d`` and one normal per key (exact for iid Gaussian q and
keys ``k_j = ρq + √(1−ρ²)ξ_j``), QK-norm's cosines with one extra Gamma draw per key, and the
``s`` sweep's logits directly as N(0, s²). Every (value, chunk) has its own seeded stream, so
the rules at one value see the same rows and a sweep is deterministic for its config. The
derivations: docs/numerics.md, "How a sweep draws its rows".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.config import SweepConfig, SweepParam

__all__ = ["BYTES_PER_LOGIT", "Setting", "chunk_rows", "draw_rows", "point_rows", "setting_for"]

#: Logits per chunk: a few ms of work on a quiet machine, so cancel is checked often.
_CHUNK_LOGITS = 1 << 16

#: Bytes of working memory per logit in one chunk (float32 draws, float64 logits, weights and
#: the temporaries of the row statistics), used to shrink chunks under a small memory budget.
BYTES_PER_LOGIT = 160


@dataclass(frozen=True, slots=True)
class Setting:
    """Everything fixed at one swept value."""

    d_k: int
    n: int
    rho: float
    s: float | None  # std of directly drawn unscaled logits; None = q·k construction


def setting_for(config: SweepConfig, value: float) -> Setting:
    """The d_k, n, ρ and logit std of the sweep at swept ``value``."""
    p = config.param
    if p is SweepParam.D_K:
        return Setting(d_k=int(value), n=config.n_tokens, rho=config.rho, s=None)
    if p is SweepParam.RHO:
        return Setting(d_k=config.d_k, n=config.n_tokens, rho=float(value), s=None)
    if p is SweepParam.S:
        return Setting(d_k=config.d_k, n=config.n_tokens, rho=config.rho, s=float(value))
    return Setting(d_k=config.d_k, n=int(value), rho=config.rho, s=config.logit_std)


def point_rows(config: SweepConfig, n: int) -> int:
    """Query rows of a point at n keys: ``samples``, capped at ``max_logits // n`` but never
    below ``min(samples, min_rows)``.

    A row's entropy and p_max concentrate as n grows (their spread over rows shrinks like
    1/√n for iid logits), so a bounded number of logits per point keeps the standard errors
    comparable while a long-context point stays affordable; the floor keeps an explicit small
    ``samples`` (say 64 rows at n = 2^20) exact.
    """
    return min(config.samples, max(config.min_rows, config.max_logits // n))


def chunk_rows(config: SweepConfig, n: int) -> int:
    """Rows per chunk at n keys: a few milliseconds of work, and within the memory budget."""
    by_time = max(1, _CHUNK_LOGITS // n)
    by_memory = max(1, config.memory_budget_bytes // (BYTES_PER_LOGIT * n))
    return min(by_time, by_memory, config.samples)


#: Spawn key of the streams of the query norms (distinct from the chunks' (value, chunk) keys).
_NORM_STREAM = 0x6E6F726D
#: Query rows per norm stream: rows are drawn block by block, so any range costs O(its rows).
_NORM_BLOCK = 1024


def _norms_squared(config: SweepConfig, d: int, first: int, rows: int) -> np.ndarray:
    """‖q‖² ~ χ²_d of a point's rows ``first … first + rows − 1``.

    Row i gets the same draw at every swept value with the same d (one stream per block of
    :data:`_NORM_BLOCK` rows and seed): the points of an n or ρ sweep then differ only by their
    keys, so the curves are smooth instead of jumping with each value's own query norms.
    """
    parts = []
    for block in range(first // _NORM_BLOCK, -(-(first + rows) // _NORM_BLOCK)):
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
            config.seed, spawn_key=(_NORM_STREAM, block))))
        parts.append(rng.chisquare(d, _NORM_BLOCK))
    start = first - (first // _NORM_BLOCK) * _NORM_BLOCK
    return np.concatenate(parts)[start:start + rows]


def draw_rows(
    config: SweepConfig, st: Setting, v_index: int, c_index: int, rows: int, need_cos: bool
) -> tuple[np.ndarray, np.ndarray | None]:
    """Return the unscaled logits (rows, n) float64 and, if needed, the cosines for QK-norm."""
    ss = np.random.SeedSequence(config.seed, spawn_key=(v_index, c_index))
    rng = np.random.Generator(np.random.PCG64(ss))
    d, n, rho = st.d_k, st.n, st.rho
    z = rng.standard_normal((rows, n), dtype=np.float32)
    # Drawn logits (a given s) need no query norms, except for QK-norm's cosines at ρ ≠ 0.
    r2 = None
    if st.s is None or (need_cos and rho != 0.0):
        first = c_index * min(chunk_rows(config, n), point_rows(config, n))
        r2 = _norms_squared(config, d, first, rows)
    if st.s is not None:
        raw = z.astype(np.float64)
        raw *= st.s
    else:
        assert r2 is not None
        r = np.sqrt(r2)[:, None]
        raw = z.astype(np.float64)
        raw *= math.sqrt(1.0 - rho * rho) * r
        if rho != 0.0:
            raw += rho * r2[:, None]
    if not need_cos:
        return raw, None
    rng_cos = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        config.seed, spawn_key=(v_index, c_index, 1))))
    a = z.astype(np.float64)
    a *= math.sqrt(1.0 - rho * rho)
    if rho != 0.0:
        assert r2 is not None
        a += rho * np.sqrt(r2)[:, None]
    if d > 1:
        w = rng_cos.standard_gamma((d - 1) / 2.0, size=(rows, n), dtype=np.float32)
        perp = 2.0 * (1.0 - rho * rho) * w.astype(np.float64)
    else:
        perp = np.zeros_like(a)
    denom = np.sqrt(a * a + perp)
    # a = 0 and perp = 0 together has probability 0 except for ρ = ±1 with a = ρ‖q‖ ≠ 0.
    cos = np.divide(a, denom, out=np.zeros_like(a), where=denom > 0)
    return raw, cos
