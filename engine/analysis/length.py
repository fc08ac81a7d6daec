"""The length lab: how attention rows disperse as the number of keys n grows, per rule.

* :func:`length_sweep_config` builds the n sweep (n = 16 … 2^20 by default) that the length
  view streams: entropy, p_max and entropy/ln n of ``samples`` iid rows per point for the
  current d_k and rule parameters (:func:`engine.analysis.sweep.iter_sweep` draws the rows in
  chunks, and a point holds at most ``max_logits`` logits, so memory stays bounded at any n).
* :func:`ssmax_toy` is Scalable-Softmax's own example (Nakanishi 2025, Fig. 1), computed
  exactly: n logits, all −2 except one +3. Softmax gives the large one
  e³/(e³ + (n−1)e⁻²) → 0 as n grows; SSMax multiplies the logits by s·ln n, so the weight is
  1/(1 + (n−1)·n^(−5s)), which tends to 1 for s > 1/5 (s = 0.43 in the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.config import AttentionConfig, ScalingRule, SweepConfig, SweepParam, rules_where

__all__ = [
    "LENGTH_MAX_LOGITS",
    "LENGTH_MIN_ROWS",
    "LENGTH_RULES",
    "LENGTH_SAMPLES_CAP",
    "LENGTH_VALUES",
    "SsmaxToy",
    "length_sweep_config",
    "ssmax_toy",
]

#: n of the length view: powers of two 2^4 … 2^20.
LENGTH_VALUES: tuple[int, ...] = tuple(2**i for i in range(4, 21))
#: Rules the length view always shows (plus the configuration's own rule): their declaration
#: says so.
LENGTH_RULES: tuple[ScalingRule, ...] = rules_where("in_length_view")
#: Largest number of query rows per point of the length view.
LENGTH_SAMPLES_CAP = 256
#: Largest rows × n per point of the length view (:data:`LENGTH_MIN_ROWS` at n = 2^20; rows
#: share their queries across n, so the curves stay smooth with few rows).
LENGTH_MAX_LOGITS = 1 << 20
#: Fewest query rows per point of the length view.
LENGTH_MIN_ROWS = 8


def length_sweep_config(
    config: AttentionConfig,
    values: Sequence[int] = LENGTH_VALUES,
    samples_cap: int = LENGTH_SAMPLES_CAP,
    max_logits: int = LENGTH_MAX_LOGITS,
) -> SweepConfig:
    """The n sweep shown by the length view for ``config`` (its d_k, ρ, seed, rule parameters).

    Rules: :data:`LENGTH_RULES` and ``config.rule`` when it is another one. Rows are unmasked
    iid rows of n keys, so ``log_n`` and ``ssmax`` use c = (s·)ln n/√d_k with that n.
    """
    return SweepConfig.following(config, param=SweepParam.N, values=values, rules=LENGTH_RULES,
                                 samples_cap=samples_cap, d_k=config.d_k,
                                 max_logits=max_logits, min_rows=LENGTH_MIN_ROWS)


@dataclass(frozen=True, slots=True)
class SsmaxToy:
    """Scalable-Softmax's toy at each n (arrays read-only).

    Attributes
    ----------
    n
        The numbers of logits (float64).
    s
        SSMax's s.
    p_max_softmax, p_max_ssmax
        Weight of the one large logit under softmax and under SSMax.
    """

    n: np.ndarray
    s: float
    p_max_softmax: np.ndarray
    p_max_ssmax: np.ndarray

    def __post_init__(self) -> None:
        for name in ("n", "p_max_softmax", "p_max_ssmax"):
            getattr(self, name).flags.writeable = False


def ssmax_toy(
    n: Sequence[int] | np.ndarray = LENGTH_VALUES, s: float = 0.43, *,
    high: float = 3.0, low: float = -2.0,
) -> SsmaxToy:
    """The weight of the single ``high`` logit among n − 1 ``low`` ones, exactly.

    Softmax: 1/(1 + (n−1)·e^(low−high)). SSMax (logits times s·ln n): 1/(1 + (n−1)·n^(s·(low −
    high))). With the paper's values (3, −2, s = 0.43) the first tends to 0 and the second to 1.
    """
    nn = np.asarray(n, dtype=np.float64)
    if nn.ndim != 1 or nn.size == 0 or not np.all(nn >= 1) or not np.all(nn == np.floor(nn)):
        raise ValueError(f"n must be a non-empty sequence of integers >= 1, got {n!r}")
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"s must be a finite number > 0, got {s!r}")
    gap = low - high
    p_soft = 1.0 / (1.0 + (nn - 1.0) * math.exp(gap))
    p_ssmax = 1.0 / (1.0 + (nn - 1.0) * np.exp(s * gap * np.log(nn)))
    return SsmaxToy(n=nn, s=float(s), p_max_softmax=p_soft, p_max_ssmax=p_ssmax)
