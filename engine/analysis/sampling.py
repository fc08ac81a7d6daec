"""The random queries and keys of an attention experiment, drawn once per seed and shape.

Without projections q and ξ are iid N(0, σ²); with projections they are x W_Q and x W_K; then
``k = ρq + √(1−ρ²)ξ``. The unit normals behind them depend only on the seed and the shapes, so
they are memoised and re-scaled when σ, s or ρ change.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from engine.config import AttentionConfig
from engine.core.checks import readonly

__all__ = ["draw_qk", "draw_scores"]


#: Unit-normal draws at most this large are memoised (two entries), so that moving a slider
#: that does not change the random numbers (σ, s, ρ, the rule, T, g, cap, mask, query row)
#: does not redraw them: drawing is the largest single cost of a snapshot at d_k = 1024.
_NORMALS_CACHE_MAX_BYTES = 32 << 20


@functools.lru_cache(maxsize=2)
def _cached_unit_normals(seed: int, shapes: tuple[tuple[int, ...], ...]) -> tuple[np.ndarray, ...]:
    return _unit_normals(seed, shapes)


def _unit_normals(seed: int, shapes: tuple[tuple[int, ...], ...]) -> tuple[np.ndarray, ...]:
    """Read-only float64 standard normals of ``shapes``, drawn in order from one seeded stream.

    Normals are drawn in float32 (twice as fast; they are samples, not results) and promoted
    to float64, so every later product is computed in float64.
    """
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        out.append(readonly(rng.standard_normal(shape, dtype=np.float32).astype(np.float64)))
    return tuple(out)


def _normals(seed: int, shapes: tuple[tuple[int, ...], ...]) -> tuple[np.ndarray, ...]:
    nbytes = 8 * sum(math.prod(shape) for shape in shapes)
    if nbytes <= _NORMALS_CACHE_MAX_BYTES:
        return _cached_unit_normals(seed, shapes)
    return _unit_normals(seed, shapes)


def _gram(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return readonly(np.matmul(a, np.swapaxes(b, -1, -2)))


@functools.lru_cache(maxsize=2)
def _cached_unit_products(seed: int, shape: tuple[int, int, int], with_self: bool
                          ) -> tuple[np.ndarray, np.ndarray | None]:
    z_q, z_xi = _normals(seed, (shape, shape))
    return _gram(z_q, z_xi), _gram(z_q, z_q) if with_self else None


def draw_qk(config: AttentionConfig) -> tuple[np.ndarray, np.ndarray]:
    """Draw the ``(heads, n, d_k)`` queries and keys of ``config`` (float64, deterministic).

    As the module docstring says, with σ = ``config.init_std``; with projections x ~
    N(0, I_{d_model}) per token is shared by all heads, each head has its own W ~ N(0, s²) of
    shape (d_model, d_k), and key i is correlated with query i only.
    """
    h, n, d = config.heads, config.n_tokens, config.d_k
    if config.use_projection:
        dm, s = config.d_model, config.projection_std
        x, w_q, w_k = _normals(config.seed, ((n, dm), (h, dm, d), (h, dm, d)))
        q = x @ (w_q * s)
        xi = x @ (w_k * s)
    else:
        sigma = config.init_std
        z_q, z_xi = _normals(config.seed, ((h, n, d), (h, n, d)))
        q = z_q * sigma
        xi = z_xi * sigma
    rho = config.rho
    if rho == 0.0:
        return q, xi
    return q, rho * q + math.sqrt(1.0 - rho * rho) * xi


def draw_scores(config: AttentionConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The q, k of :func:`draw_qk` and their ``(heads, n, n)`` raw scores q·kᵀ (float64).

    Without projections q·kᵀ = σ²·(z_q·z_ξᵀ) for ρ = 0 and σ²·(ρ·z_q·z_qᵀ + √(1−ρ²)·z_q·z_ξᵀ)
    otherwise: the products of the unit normals are memoised with them, so that moving σ, ρ or
    a rule's control costs no matrix product (the scores equal q·kᵀ up to rounding).
    """
    q, k = draw_qk(config)
    h, n, d = config.heads, config.n_tokens, config.d_k
    if config.use_projection or 8 * h * n * n * 2 > _NORMALS_CACHE_MAX_BYTES:
        return q, k, _gram(q, k)
    rho, variance = config.rho, config.init_std * config.init_std
    cross, own = _cached_unit_products(config.seed, (h, n, d), rho != 0.0)
    if own is None:
        return q, k, variance * cross
    return q, k, variance * (rho * own + math.sqrt(1.0 - rho * rho) * cross)
