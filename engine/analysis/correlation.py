"""Correlated queries and keys: how the RMS of the scaled logit c·q·k grows with d_k.

With q, ξ iid N(0, I_d) and ``k = ρq + √(1−ρ²)ξ`` the unscaled logit q·k has mean ``ρd`` and
RMS ``√(ρ²d² + d(1+ρ²))``: for ρ ≠ 0 it grows like d, so c = 1/√d_k no longer keeps the scaled
logit of order one while c = 1/d_k does. :func:`correlation_rms` samples it exactly at any d_k
and compares it with the closed form (the correlation view).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from engine.config import AttentionConfig
from engine.config.base import Interval, check_int, check_number
from engine.core import theory

__all__ = ["correlation_rms"]


def correlation_rms(
    d_k_values: Iterable[int], rho: float, samples: int, seed: int = 0
) -> dict[str, Any]:
    """Empirical and closed-form RMS of the scaled logit ``c·q·k`` for correlated q, k.

    q ~ N(0, I_d) and ``k = ρq + √(1−ρ²)ξ``, sampled exactly through ``‖q‖² ~ χ²_d`` so that a
    large d costs nothing extra (docs/numerics.md, "How a sweep draws its rows").

    Parameters
    ----------
    d_k_values, rho
        Head dimensions (integers >= 1); the correlation, in [-1, 1].
    samples, seed
        (q, k) pairs per d_k; the seed, from which every d_k spawns its own stream.

    Returns
    -------
    dict
        ``d_k``; ``rms_none``, ``rms_sqrt``, ``rms_linear`` (empirical) and ``theory_*``
        (``c√(ρ²d² + d(1+ρ²))``); ``rel_sem`` (relative standard error of the empirical RMS);
        ``mean`` (empirical ``E[q·k]``, theory ``ρd``).
    """
    dims = [int(d) for d in d_k_values]
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"d_k_values must be integers >= 1, got {dims!r}")
    rho = check_number("rho", rho, AttentionConfig.FIELDS["rho"].interval)
    samples = check_int("samples", samples, Interval(2, None), integral_floats=False)
    streams = np.random.SeedSequence(seed).spawn(len(dims))
    out: dict[str, list[float]] = {
        key: []
        for key in ("rms_none", "rms_sqrt", "rms_linear", "theory_none", "theory_sqrt",
                    "theory_linear", "rel_sem", "mean")
    }
    chunk = 1 << 20
    for d, ss in zip(dims, streams, strict=True):
        rng = np.random.default_rng(ss)
        total = 0.0
        total_sq = 0.0
        total_4 = 0.0
        done = 0
        while done < samples:
            m = min(chunk, samples - done)
            r2 = rng.chisquare(d, m)
            z = rng.standard_normal(m)
            x = rho * r2 + math.sqrt(1.0 - rho * rho) * np.sqrt(r2) * z
            x2 = x * x
            total += float(x.sum())
            total_sq += float(x2.sum())
            total_4 += float((x2 * x2).sum())
            done += m
        mean_sq = total_sq / samples
        var_sq = max(total_4 / samples - mean_sq**2, 0.0) * samples / (samples - 1)
        rms = math.sqrt(mean_sq)
        out["rel_sem"].append(math.sqrt(var_sq / samples) / (2.0 * mean_sq))
        out["mean"].append(total / samples)
        for name, c in (("none", 1.0), ("sqrt", 1.0 / math.sqrt(d)), ("linear", 1.0 / d)):
            out[f"rms_{name}"].append(c * rms)
            out[f"theory_{name}"].append(theory.correlated_rms(d, rho, c))
    result: dict[str, Any] = {key: np.asarray(v) for key, v in out.items()}
    result["d_k"] = np.asarray(dims)
    return result
