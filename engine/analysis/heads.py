"""Diagnostics of one real attention head from its q and k (no Qt).

A head is given by queries ``q`` and keys ``k`` of shape (batch, n, d_k). Its logits are
``c · q kᵀ`` with ``c`` the model's own scale (default 1/√d_k), or, when a scaling rule is
replayed, exactly the logits that rule of :mod:`engine.core.scaling` produces from the same q
and k (``none``, ``sqrt``, ``linear``, ``temperature``, ``qk_norm`` with its gain, ``softcap``
with its cap). With ``causal=True`` query i sees keys 0..i only.

The logits and their exponentials come from the attention kernel
(:func:`engine.core.tiled.each_tile`), tile by tile: memory stays at a few cache-sized tiles
whatever n and the batch size, the tiles may run on several threads, and a cancel takes effect
within one tile. Every statistic is computed in float64.

Entropy has two references: ln n (uniform weights) and the entropy-collapse bound of Zhai et
al. (2023), the least entropy a softmax row can have for the norm of its centred logits
(:func:`engine.core.theory.zhai_min_entropy`). The bound is computed per query row from that
row's own logits over its visible keys; a row near it is as peaked as its logit spread allows.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace

import numpy as np

from engine.config import ScalingRule
from engine.core.moments import RunningMoments, block_moments
from engine.core.plan import make_plan
from engine.core.stats import SATURATION_THRESHOLD
from engine.core.theory import zhai_min_entropy_rows
from engine.core.tiled import Scratch, Tile, each_tile, prepare

__all__ = [
    "NEAR_UNIFORM_ENTROPY_FRACTION",
    "SATURATED_SHARE_FLAG",
    "SINK_MASS_FLAG",
    "SINK_UNIFORM_FACTOR",
    "HeadDiagnostics",
    "diagnose_head",
]

#: Flag "saturated" when more than this share of the rows (over batch entries) is saturated.
SATURATED_SHARE_FLAG = 0.5
#: Flag "sink" when the mean weight on key 0 exceeds this ...
SINK_MASS_FLAG = 0.5
#: ... and also exceeds this many times the uniform weight 1/n.
SINK_UNIFORM_FACTOR = 5.0
#: Flag "near-uniform" when the mean row entropy exceeds this fraction of ln n.
NEAR_UNIFORM_ENTROPY_FRACTION = 0.95


@dataclass(frozen=True, slots=True)
class HeadDiagnostics:
    """The diagnostics of one head (see :func:`diagnose_head` for the definitions).

    Attributes
    ----------
    n, d_k, batch
        Sequence length, key dimension and number of batch entries.
    rule
        The replayed rule's name, or None when the given scale was used.
    scale
        The factor c multiplying q·k (the rule's c when a rule is replayed; 1 for ``qk_norm``;
        for ``log_n`` / ``ssmax`` under the causal mask, the c of the last row, which sees n keys).
    causal
        Whether the causal mask was applied.
    logit_std, max_abs_logit
        Population standard deviation and largest magnitude of the unmasked logits.
    logit_std_theory
        The √d_k law's prediction of ``logit_std`` from the spread of q and k.
    entropy_mean
        Mean row entropy of the softmax weights, in nats.
    entropy_uniform
        ln n, the entropy of uniform weights over n keys.
    entropy_zhai_bound
        Mean over query rows of the least entropy a row with the same centred-logit norm can
        have (Zhai et al. 2023); ``entropy_mean`` is never below it.
    p_max_mean, saturated_share, sink_mass
        Mean largest weight, share of rows with largest weight > ``SATURATION_THRESHOLD``, mean
        weight on key 0.
    rho
        Pearson correlation of q and k flattened (NaN when either is constant).
    flags
        Subset of ("saturated", "sink", "near-uniform"), in that order.
    """

    n: int
    d_k: int
    batch: int
    rule: str | None
    scale: float
    causal: bool
    logit_std: float
    logit_std_theory: float
    max_abs_logit: float
    entropy_mean: float
    entropy_uniform: float
    entropy_zhai_bound: float
    p_max_mean: float
    saturated_share: float
    sink_mass: float
    rho: float
    flags: tuple[str, ...]

    @property
    def logit_std_ratio(self) -> float:
        """``logit_std / logit_std_theory``: 1 when the head follows the √d_k law (NaN when
        the law predicts 0)."""
        theory = self.logit_std_theory
        return self.logit_std / theory if theory > 0 else math.nan

    @property
    def entropy_above_zhai(self) -> float:
        """``entropy_mean − entropy_zhai_bound`` (nats, ≥ 0): 0 when every row is as peaked as
        the norm of its logits allows."""
        return self.entropy_mean - self.entropy_zhai_bound

    @property
    def entropy_fraction(self) -> float:
        """``entropy_mean / ln n``: 0 for one-hot rows, 1 for uniform ones (NaN at n = 1)."""
        return self.entropy_mean / self.entropy_uniform if self.entropy_uniform > 0 else math.nan


def _check_qk(q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = np.asarray(q, dtype=np.float64)
    k = np.asarray(k, dtype=np.float64)
    if q.ndim != 3 or k.ndim != 3:
        raise ValueError(
            f"q and k must have shape (batch, n, d_k); got q{q.shape} and k{k.shape}"
        )
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape; got q{q.shape} and k{k.shape}")
    if min(q.shape) < 1:
        raise ValueError(f"q and k must not be empty; got shape {q.shape}")
    return q, k


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson correlation of two flattened arrays; NaN when either has zero variance."""
    xc = x.ravel() - x.mean()
    yc = y.ravel() - y.mean()
    denom = math.sqrt(float(xc @ xc) * float(yc @ yc))
    return float(xc @ yc) / denom if denom > 0 else math.nan


def diagnose_head(
    q: np.ndarray,
    k: np.ndarray,
    *,
    scale: float | None = None,
    rule: ScalingRule | str | None = None,
    temperature: float | None = None,
    gain: float | None = None,
    cap: float | None = None,
    causal: bool = False,
) -> HeadDiagnostics:
    """Diagnose one attention head.

    Parameters
    ----------
    q, k
        Real arrays of shape (batch, n, d_k), finite; computed in float64.
    scale
        The model's own factor c (logits = c·q·kᵀ); None means 1/√d_k. Ignored when ``rule``
        is given.
    rule
        A scaling rule to replay instead (``none``, ``sqrt``, ``linear``, ``temperature``,
        ``qk_norm``, ``softcap``); its logits are those of
        :func:`engine.core.attention.attention_logits` with the same parameters.
    temperature, gain, cap
        The rule's parameters (validated as the engine does; gain defaults to √d_k, cap to 50).
        Without ``rule``, a ``cap`` is the model's own soft-cap: logits cap·tanh(c·q·kᵀ/cap).
    causal
        Mask key j for query i when j > i.

    Returns
    -------
    HeadDiagnostics
        With these definitions (means are over query rows and batch entries, every row
        counting once; under the causal mask row 0 sees key 0 only, so it has p_max = 1,
        entropy 0 and weight 1 on key 0, and it is counted like every other row):

        * ``logit_std``: population std (ddof 0) of all unmasked logits of all batch entries;
          ``max_abs_logit`` their largest magnitude.
        * ``logit_std_theory`` = √d_k · σ(q') · σ(k') · a, where q', k' are the operands the
          rule multiplies (q' = c·q, k' = k for scalar rules, so this is c·√d_k·σ_q·σ_k;
          q' = g·q/‖q‖, k' = k/‖k‖ for ``qk_norm``), σ is the population std of all their
          entries, and a = 1 except for ``softcap``, where a = cap and the law predicts the
          spread *before* the cap (the cap only shrinks it). It is the std of a sum of d_k
          products of independent zero-mean components; it ignores the mean of q and k and
          their correlation, which is why it is a reference, not an identity.
        * ``entropy_mean``: mean of −Σ_j p_ij ln p_ij (nats); ``entropy_uniform`` = ln n;
          ``entropy_zhai_bound``: mean of the rows' Zhai bounds H_min(m_i, ‖z_i − z̄_i‖₂),
          with m_i the row's visible keys and z_i its logits over them.
        * ``p_max_mean``: mean of max_j p_ij; ``saturated_share``: share of rows with
          max_j p_ij > ``SATURATION_THRESHOLD``; ``sink_mass``: mean of p_i0.
        * ``rho``: Pearson correlation between q and k flattened over batch, rows and
          components (component m of query i paired with component m of key i), i.e. the
          correlation of matching components. NaN if q or k is constant.
        * ``flags``: "saturated" if saturated_share > ``SATURATED_SHARE_FLAG``; "sink" if
          sink_mass > ``SINK_MASS_FLAG`` and > ``SINK_UNIFORM_FACTOR``/n; "near-uniform" if
          entropy_mean > ``NEAR_UNIFORM_ENTROPY_FRACTION``·ln n. The references 1/n and ln n
          are those of uniform weights over all n keys, also under the causal mask.

    Raises
    ------
    ValueError
        For bad shapes, non-finite data, an unknown rule or invalid parameters, or logits that
        overflow.
    """
    return _diagnose(q, k, scale=scale, rule=rule, temperature=temperature, gain=gain,
                     cap=cap, causal=causal, cancel=None)


class _Cancelled(Exception):
    """Raised inside a tile once the caller's cancel event is set."""


def _diagnose(
    q: np.ndarray, k: np.ndarray, *, scale: float | None, rule: ScalingRule | str | None,
    temperature: float | None, gain: float | None, cap: float | None, causal: bool,
    cancel: threading.Event | None,
) -> HeadDiagnostics | None:
    """:func:`diagnose_head`, tile by tile on the attention kernel; None once ``cancel`` is set."""
    q, k = _check_qk(q, k)
    batch, n, d_k = q.shape
    replay = rule is not None
    plan = make_plan(
        q, k, None, rule=rule if replay else ScalingRule.NONE,
        mask="causal" if causal else None, temperature=temperature, gain=gain, cap=cap,
    )
    if not replay:
        c = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
        if not math.isfinite(c):
            raise ValueError(f"scale must be a finite number, got {scale!r}")
        # The file's own scale, and its own cap (validated by make_plan above).
        plan = replace(plan, rule=ScalingRule.NONE if cap is None else ScalingRule.SOFTCAP,
                       scale=c)
    problem = prepare(plan)
    amplitude = plan.cap if problem.ops.cap is not None else 1.0
    theory = (math.sqrt(d_k) * float(np.std(problem.ops.qs)) * float(np.std(problem.ops.ks))
              * amplitude)

    # Per query row, with z = logits − row max (0 where masked) and e = exp(z): S = Σ e, Σ e·z,
    # Σ z, Σ z² and e_0. The tiles fill their rows; the statistics are taken once at the end,
    # so they do not depend on the tiling or on which thread ran which tile.
    rowsum, weighted, z_sum, z_sq, first = (np.empty((batch, n)) for _ in range(5))
    logit_parts: dict[Tile, tuple[tuple[int, float, float], float]] = {}

    def body(_: None, scratch: Scratch, tile: Tile, e: np.ndarray, __: np.ndarray,
             ___: np.ndarray | None) -> None:
        if cancel is not None and cancel.is_set():
            raise _Cancelled
        b0, b1, r0, r1 = tile
        logits = scratch.take(0, e.shape)  # the tile's masked logits, not shifted
        masked = plan.mask_rows(slice(r0, r1), slice(0, e.shape[-1]))
        values = logits.ravel() if masked is None else logits[:, ~masked]
        if not np.isfinite(values).all():  # a product that overflowed to −∞
            raise ValueError("logits are not finite (q·k overflowed float64); scale q and k down")
        top = np.max(logits, axis=-1, keepdims=True)
        # The largest |logit| from the row maxima and the least value: no |x| copy.
        logit_parts[tile] = (block_moments(values), max(float(np.max(top)),
                                                        -float(np.min(values))))
        # z <= 0 with max 0; e = exp(z) (shift=True below), so the largest weight of a row is
        # exp(0)/S = 1/S exactly.
        z = np.subtract(logits, top, out=logits)
        if masked is not None:
            np.copyto(z, 0.0, where=masked)  # weight 0 there: 0·(−∞) must not be NaN
        rows = (slice(b0, b1), slice(r0, r1))
        # S itself, not 1/inv from the kernel: ln S and 1/S must be exact for a constant row
        # (ln n and 1/n), and 1/(1/S) is not S in floating point.
        np.add.reduce(e, axis=-1, out=rowsum[rows])
        np.einsum("...j,...j->...", e, z, out=weighted[rows])
        np.add.reduce(z, axis=-1, out=z_sum[rows])
        np.einsum("...j,...j->...", z, z, out=z_sq[rows])
        first[rows] = e[..., 0]

    if cancel is not None and cancel.is_set():
        return None
    try:
        # Overflow of q·k is a ValueError: the kernel's for NaN and +∞, the check above for −∞.
        each_tile(problem, body, lambda: None, work=plan.n_scores * d_k, shift=True)
    except _Cancelled:
        return None
    moments = RunningMoments()
    max_abs = 0.0
    for tile in problem.tiles:  # in order: the same sums whatever ran where
        part, tile_max_abs = logit_parts[tile]
        moments.merge(*part)
        max_abs = max(max_abs, tile_max_abs)
    # H = −Σ p (z − ln S) = ln S − Σ e·z / S.
    entropy_rows = np.log(rowsum) - weighted / rowsum
    # Norm of each row's centred visible logits (masked entries of z are 0).
    visible = np.full(n, float(n))
    if plan.causal_offset is not None:  # (a single query sees every key: no mask)
        visible = np.minimum(np.arange(n) + 1.0 + plan.causal_offset, n)
    centred_sq = z_sq - z_sum * z_sum / visible
    zhai = zhai_min_entropy_rows(visible, np.sqrt(np.maximum(centred_sq, 0.0)))
    p_max = 1.0 / rowsum
    entropy_mean = block_moments(entropy_rows)[1]
    sink_mass = block_moments(first / rowsum)[1]
    saturated_share = int(np.count_nonzero(p_max > SATURATION_THRESHOLD)) / (batch * n)
    ln_n = math.log(n)
    flags = []
    if saturated_share > SATURATED_SHARE_FLAG:
        flags.append("saturated")
    if sink_mass > SINK_MASS_FLAG and sink_mass > SINK_UNIFORM_FACTOR / n:
        flags.append("sink")
    if entropy_mean > NEAR_UNIFORM_ENTROPY_FRACTION * ln_n:
        flags.append("near-uniform")
    return HeadDiagnostics(
        n=n, d_k=d_k, batch=batch, rule=plan.rule.value if replay else None,
        # A per-row c (log_n / ssmax, causal) is reported as that of the last row (all n keys).
        scale=float(np.ravel(plan.scale)[-1]),
        causal=bool(causal), logit_std=moments.std, logit_std_theory=theory,
        max_abs_logit=max_abs, entropy_mean=entropy_mean, entropy_uniform=ln_n,
        entropy_zhai_bound=block_moments(zhai)[1],
        p_max_mean=block_moments(p_max)[1], saturated_share=saturated_share, sink_mass=sink_mass,
        rho=_pearson(q, k), flags=tuple(flags),
    )
