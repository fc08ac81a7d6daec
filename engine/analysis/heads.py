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

Every reference is that of the keys a row sees: under the causal mask row i sees i + 1 keys,
so its uniform entropy is ln(i + 1) and its uniform weight on key 0 is 1/(i + 1). Entropy has
two references: the uniform one, and the floor at the row's logit norm, the least entropy a
softmax row can have for the norm of its centred logits (the extremal bound of Zhai et al.
2023, :func:`engine.core.theory.zhai_min_entropy`, taken at the row's own logits; their
theorem bounds entropy through ‖W_Kᵀ W_Q‖₂, which q and k alone do not give). A row near the
floor is as peaked as its logit spread allows.

The flags and their thresholds are :data:`FLAG_THRESHOLDS`, documented there with the reason
for each value.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace

import numpy as np

from engine.config import ScalingRule
from engine.core.moments import RunningMoments, block_moments
from engine.core.plan import make_plan
from engine.core.scaling import Rule
from engine.core.stats import SATURATION_THRESHOLD
from engine.core.theory import zhai_min_entropy_rows
from engine.core.tiled import Scratch, Tile, each_tile, prepare

__all__ = [
    "FLAGS",
    "FLAG_THRESHOLDS",
    "NEAR_UNIFORM_ENTROPY_FRACTION",
    "NEEDS_LOGITS",
    "SATURATED_SHARE_FLAG",
    "SHARP_ENTROPY_FRACTION",
    "SINK_MASS_FLAG",
    "SINK_UNIFORM_MARGIN",
    "HeadDiagnostics",
    "diagnose_head",
    "head_flags",
]

# The flags' thresholds, in one place. "Healthy" below means q and k with independent N(0, 1)
# components at the model's c = 1/√d_k: logits of variance 1, whose mean row entropy is about
# ln m − 1/2 for m visible keys, i.e. 0.85-0.92 of the uniform entropy for n = 32..512
# (tests/engine/test_head_faults.py measures the false-flag rate on 1,000 such heads).

#: "saturated": more than this share of the rows that see two or more keys has p_max > 0.99
#: (``SATURATION_THRESHOLD``): the head is one-hot for most queries, its gradient vanishes.
SATURATED_SHARE_FLAG = 0.5
#: "sharp": mean entropy below this fraction of the uniform entropy, without being saturated.
#: A healthy head sits at 0.85-0.92; q or k grown ×6 (logit std 6) sits at 0.19-0.24.
SHARP_ENTROPY_FRACTION = 0.5
#: "sink": mean weight on key 0 above this ...
SINK_MASS_FLAG = 0.5
#: ... and more than this above its uniform value (the mean of 1/m over the rows). A margin,
#: not a factor: five times the uniform value, the rule before, exceeds 1 for a causal text
#: of fewer than ~40 tokens (at n = 11 the uniform value is 0.27), so SmolLM2's sinks (0.5-0.9
#: of the attention on token 0 in most layers) went unflagged on the sentences users type.
SINK_UNIFORM_MARGIN = 0.25
#: "near-uniform": mean entropy above this fraction of the uniform entropy. Healthy heads stay
#: below 0.93 up to n = 512; q or k shrunk ×10 reach 0.999.
NEAR_UNIFORM_ENTROPY_FRACTION = 0.95

#: The flags, in the order a head lists them.
FLAGS = ("saturated", "sharp", "sink", "near-uniform")
#: Every flag's threshold by name (for documentation and the window's tooltips).
FLAG_THRESHOLDS = {
    "saturated_share": SATURATED_SHARE_FLAG,
    "sharp_entropy_fraction": SHARP_ENTROPY_FRACTION,
    "sink_mass": SINK_MASS_FLAG,
    "sink_uniform_margin": SINK_UNIFORM_MARGIN,
    "near_uniform_entropy_fraction": NEAR_UNIFORM_ENTROPY_FRACTION,
}


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
        The √d_k law's prediction of ``logit_std`` from the spread of q and k (NaN when the
        scale differs by row, as for ``log_n`` / ``ssmax`` under the causal mask).
    entropy_mean
        Mean row entropy of the softmax weights, in nats.
    entropy_uniform
        The mean over rows of ln m (m: the keys the row sees): the entropy of uniform weights;
        ln n without a mask.
    entropy_floor_at_norm
        Mean over query rows of the least entropy a row with the same centred-logit norm can
        have (the extremal bound of Zhai et al. 2023 at the row's own logits);
        ``entropy_mean`` is never below it.
    p_max_mean, saturated_share, sink_mass
        Mean largest weight, share of the rows that see two or more keys whose largest weight
        exceeds ``SATURATION_THRESHOLD``, mean weight on key 0.
    sink_uniform
        The mean over rows of 1/m: ``sink_mass`` of uniform weights (1/n without a mask).
    rho
        Correlation of matching q and k components, each centred over the tokens first (NaN
        when q or k does not vary over the tokens).
    flags
        Subset of :data:`FLAGS` ("saturated", "sharp", "sink", "near-uniform"), in that order.
    source
        What they were computed from: ``"qk"`` (queries and keys), ``"scores"`` (logits only:
        ``rho`` and ``logit_std_theory`` are NaN) or ``"weights"`` (attention weights only:
        every statistic of the logits' size is NaN as well, see
        :data:`NEEDS_LOGITS`).
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
    entropy_floor_at_norm: float
    p_max_mean: float
    saturated_share: float
    sink_mass: float
    sink_uniform: float
    rho: float
    flags: tuple[str, ...]
    source: str = "qk"

    @property
    def logit_std_ratio(self) -> float:
        """``logit_std / logit_std_theory``: 1 when the head follows the √d_k law (NaN when
        the law predicts 0)."""
        theory = self.logit_std_theory
        return self.logit_std / theory if theory > 0 else math.nan

    @property
    def entropy_above_floor(self) -> float:
        """``entropy_mean − entropy_floor_at_norm`` (nats, ≥ 0): 0 when every row is as peaked
        as the norm of its logits allows."""
        return self.entropy_mean - self.entropy_floor_at_norm

    @property
    def entropy_fraction(self) -> float:
        """``entropy_mean / entropy_uniform``: 0 for one-hot rows, 1 for uniform ones over the
        keys each row sees (NaN at n = 1)."""
        return self.entropy_mean / self.entropy_uniform if self.entropy_uniform > 0 else math.nan


def head_flags(*, saturated_share: float, entropy_mean: float, entropy_uniform: float,
               sink_mass: float, sink_uniform: float) -> tuple[str, ...]:
    """The flags of a head from its statistics (see :func:`diagnose_head`), in
    :data:`FLAGS` order."""
    flags = []
    if saturated_share > SATURATED_SHARE_FLAG:
        flags.append("saturated")
    elif entropy_mean < SHARP_ENTROPY_FRACTION * entropy_uniform:
        flags.append("sharp")
    if sink_mass > SINK_MASS_FLAG and sink_mass > sink_uniform + SINK_UNIFORM_MARGIN:
        flags.append("sink")
    if entropy_mean > NEAR_UNIFORM_ENTROPY_FRACTION * entropy_uniform:
        flags.append("near-uniform")
    return tuple(flags)


#: The diagnostics that need the logits' size, which attention weights alone do not give
#: (a softmax row is the same for logits z and z + any constant): NaN from weights. From
#: logits without q and k, ``rho`` and ``logit_std_theory`` are NaN.
NEEDS_LOGITS = ("logit_std", "max_abs_logit", "logit_std_theory", "entropy_floor_at_norm",
                "rho")


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


def _component_correlation(q: np.ndarray, k: np.ndarray) -> float:
    """Correlation of matching components of (batch, n, d) q and k, each component centred
    over the tokens of its batch entry first; NaN when q or k does not vary over the tokens.

    This is the explorer's ρ (k = ρq + √(1−ρ²)ξ per component): a mean direction shared by
    every q and k (q_i = μ + e_i, k_i = μ + f_i) is not a correlation of q and k and is
    removed by the centring, where a pooled Pearson correlation would count it.
    """
    qc = q - q.mean(axis=1, keepdims=True)
    kc = k - k.mean(axis=1, keepdims=True)
    cross = float(np.einsum("bnd,bnd->", qc, kc))
    denom = math.sqrt(float(np.einsum("bnd,bnd->", qc, qc)) * float(np.einsum("bnd,bnd->", kc, kc)))
    return cross / denom if denom > 0 else math.nan


def diagnose_head(
    q: np.ndarray,
    k: np.ndarray,
    *,
    scale: float | None = None,
    rule: Rule | ScalingRule | str | None = None,
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
        A scaling rule to replay instead (a :class:`~engine.core.scaling.Rule`, or a kind:
        ``none``, ``sqrt``, ``linear``, ``temperature``, ``qk_norm``, ``softcap``, ...); its
        logits are those of :func:`engine.core.attention.attention_logits` with the same rule.
    temperature, gain, cap
        The parameters of a kind (validated by its Rule; gain defaults to √d_k, cap to 50).
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
          their correlation, which is why it is a reference, not an identity. It uses the
          head's own spread of q and k, so a q or k grown by a factor grows the law too: the
          ratio tests the law's form, not the size of the logits. NaN when c differs by row.
        * ``entropy_mean``: mean of −Σ_j p_ij ln p_ij (nats); ``entropy_uniform``: mean of
          ln m_i, with m_i the keys row i sees; ``entropy_floor_at_norm``: mean of the rows'
          floors H_min(m_i, ‖z_i − z̄_i‖₂), z_i the row's logits over its visible keys.
        * ``p_max_mean``: mean of max_j p_ij; ``saturated_share``: share of the rows with
          m_i ≥ 2 whose max_j p_ij > ``SATURATION_THRESHOLD``; ``sink_mass``: mean of p_i0,
          ``sink_uniform`` the mean of 1/m_i.
        * ``rho``: the correlation of component m of query i with component m of key i over
          batch, rows and components, each component centred over the tokens first.
        * ``flags`` (thresholds: :data:`FLAG_THRESHOLDS`): "saturated" if saturated_share >
          ``SATURATED_SHARE_FLAG``; "sharp" if not saturated and entropy_mean <
          ``SHARP_ENTROPY_FRACTION``·entropy_uniform; "sink" if sink_mass >
          ``SINK_MASS_FLAG`` and > sink_uniform + ``SINK_UNIFORM_MARGIN``; "near-uniform" if
          entropy_mean > ``NEAR_UNIFORM_ENTROPY_FRACTION``·entropy_uniform.

    Raises
    ------
    ValueError
        For bad shapes, non-finite data, an unknown rule or invalid parameters, or logits that
        overflow.
    """
    replay = None if rule is None else Rule.from_keywords(rule, temperature=temperature,
                                                          gain=gain, cap=cap)
    return _diagnose(q, k, scale=scale, cap=cap, rule=replay, causal=causal, cancel=None)


class _Cancelled(Exception):
    """Raised inside a tile once the caller's cancel event is set."""


def _diagnose(
    q: np.ndarray, k: np.ndarray, *, rule: Rule | None, causal: bool,
    cancel: threading.Event | None, scale: float | None = None, cap: float | None = None,
) -> HeadDiagnostics | None:
    """:func:`diagnose_head`, tile by tile on the attention kernel; None once ``cancel`` is set.

    ``scale`` and ``cap`` are the model's own, used when ``rule`` is None.
    """
    q, k = _check_qk(q, k)
    batch, n, d_k = q.shape
    replay = rule is not None
    plan = make_plan(q, k, None, rule=rule if replay else ScalingRule.NONE,
                     mask="causal" if causal else None, temperature=None, gain=None,
                     cap=None if replay else cap)
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
    # The keys each row sees: every reference below is that of uniform weights over them.
    visible = np.full(n, float(n))
    if plan.causal_offset is not None:  # (a single query sees every key: no mask)
        visible = np.minimum(np.arange(n) + 1.0 + plan.causal_offset, n)
    # Norm of each row's centred visible logits (masked entries of z are 0).
    centred_sq = z_sq - z_sum * z_sum / visible
    floor = zhai_min_entropy_rows(visible, np.sqrt(np.maximum(centred_sq, 0.0)))
    p_max = 1.0 / rowsum
    entropy_mean = block_moments(entropy_rows)[1]
    masked = plan.causal_offset is not None
    entropy_uniform = block_moments(np.log(visible))[1] if masked else math.log(n)
    sink_mass = block_moments(first / rowsum)[1]
    sink_uniform = block_moments(1.0 / visible)[1] if masked else 1.0 / n
    # A row that sees one key is one-hot whatever the head does: it says nothing of saturation.
    choosing = visible >= 2
    rows = int(np.count_nonzero(choosing)) * batch
    saturated = (p_max[:, choosing] if rows else p_max) > SATURATION_THRESHOLD
    saturated_share = int(np.count_nonzero(saturated)) / (rows or batch * n)
    flags = head_flags(saturated_share=saturated_share, entropy_mean=entropy_mean,
                       entropy_uniform=entropy_uniform, sink_mass=sink_mass,
                       sink_uniform=sink_uniform)
    scales = np.ravel(plan.scale)
    return HeadDiagnostics(
        n=n, d_k=d_k, batch=batch, rule=plan.rule.value if replay else None,
        # A per-row c (log_n / ssmax, causal) is reported as that of the last row (all n keys).
        scale=float(scales[-1]),
        causal=bool(causal), logit_std=moments.std,
        # With c varying by row the logits mix spreads: no single law predicts their std.
        logit_std_theory=theory if np.all(scales == scales[0]) else math.nan,
        max_abs_logit=max_abs, entropy_mean=entropy_mean, entropy_uniform=entropy_uniform,
        entropy_floor_at_norm=block_moments(floor)[1],
        p_max_mean=block_moments(p_max)[1], saturated_share=saturated_share, sink_mass=sink_mass,
        sink_uniform=sink_uniform, rho=_component_correlation(q, k), flags=flags,
    )
