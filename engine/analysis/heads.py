"""Diagnostics of one real attention head from its q and k (no Qt).

The logits are ``c · q kᵀ`` with the model's own c (and soft-cap), or those a rule of
:mod:`engine.core.scaling` gives from the same q and k. They come from the attention kernel
(:func:`engine.core.tiled.each_tile`) tile by tile, so memory stays at a few tiles whatever n,
the tiles may run on several threads and a cancel takes effect within one tile. The definitions,
their references and the flags' thresholds are explained in docs/numerics.md.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from engine.config import ScalingRule
from engine.core.moments import RunningMoments, block_moments
from engine.core.plan import layer_mask, make_plan
from engine.core.scaling import Rule
from engine.core.stats import SATURATION_THRESHOLD
from engine.core.theory import zhai_min_entropy_rows
from engine.core.tiled import Scratch, Tile, each_tile, prepare

__all__ = [
    "FLAGS",
    "NEAR_UNIFORM_ENTROPY_FRACTION",
    "NEEDS_LOGITS",
    "SATURATED_SHARE_FLAG",
    "SHARP_ENTROPY_FRACTION",
    "SINK_MASS_FLAG",
    "SINK_UNIFORM_MARGIN",
    "HeadDiagnostics",
    "diagnose_head",
    "summarise_rows",
]

# The flags' thresholds, in one place (docs/numerics.md says how they were set against healthy
# heads, whose mean entropy is 0.85-0.92 of the uniform entropy).

#: "saturated": more than this share of the rows that see two or more keys has p_max > 0.99
#: (``SATURATION_THRESHOLD``): the head is one-hot for most queries, its gradient vanishes.
SATURATED_SHARE_FLAG = 0.5
#: "sharp": mean entropy below this fraction of the uniform entropy, without being saturated.
SHARP_ENTROPY_FRACTION = 0.5
#: "sink": mean weight on key 0 above this ...
SINK_MASS_FLAG = 0.5
#: ... and more than this above its uniform value (the mean of 1/m over the rows): a margin,
#: not a factor, since a factor of the uniform value exceeds 1 on a short causal text.
SINK_UNIFORM_MARGIN = 0.25
#: "near-uniform": mean entropy above this fraction of the uniform entropy.
NEAR_UNIFORM_ENTROPY_FRACTION = 0.95

#: The flags, in the order a head lists them.
FLAGS = ("saturated", "sharp", "sink", "near-uniform")


@dataclass(frozen=True, slots=True)
class HeadDiagnostics:
    """The diagnostics of one head (definitions: docs/numerics.md, "Head diagnostics").

    Attributes
    ----------
    n, d_k, batch
        Sequence length, key dimension and number of batch entries.
    rule
        The replayed rule's name, or None when the model's own scale was used.
    scale
        The factor c multiplying q·k (1 for ``qk_norm``; for ``log_n`` / ``ssmax`` under the
        causal mask, the c of the last row, which sees n keys).
    causal
        Whether the causal mask was applied.
    logit_std, max_abs_logit, logit_std_theory
        Spread and largest magnitude of the unmasked logits, and the √d_k law's prediction of
        the spread from that of q and k (NaN when c differs by row).
    entropy_mean, entropy_uniform, entropy_floor_at_norm
        Mean row entropy (nats), that of uniform weights over the keys each row sees, and the
        least a row of the same centred-logit norm can have (never above ``entropy_mean``).
    p_max_mean, saturated_share, sink_mass, sink_uniform
        Mean largest weight, share of the rows seeing two or more keys whose largest weight
        exceeds ``SATURATION_THRESHOLD``, mean weight on key 0 and its uniform value.
    rho
        Correlation of matching q and k components, centred over the tokens (NaN when q or k
        does not vary over the tokens).
    flags
        Subset of :data:`FLAGS`, in that order.
    source
        ``"qk"``, ``"scores"`` (logits only: ``rho`` and ``logit_std_theory`` are NaN) or
        ``"weights"`` (every statistic of :data:`NEEDS_LOGITS` is NaN).
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


def summarise_rows(entropy: np.ndarray, p_max: np.ndarray, sink: np.ndarray,
                   visible: np.ndarray, masked: bool) -> dict[str, Any]:
    """The row statistics and flags of a head from its (batch, n) row entropies, largest
    weights and weights on key 0; ``visible`` (n,) holds the keys each row sees.

    Shared by the diagnostics from q and k and those from attention weights, so both define
    the statistics and the flags alike.
    """
    n = len(visible)
    entropy_mean = block_moments(entropy)[1]
    entropy_uniform = block_moments(np.log(visible))[1] if masked else math.log(n)
    sink_mass = block_moments(sink)[1]
    sink_uniform = block_moments(1.0 / visible)[1] if masked else 1.0 / n
    # A row that sees one key is one-hot whatever the head does: it says nothing of saturation.
    choosing = visible >= 2
    chosen = p_max[:, choosing] if choosing.any() else p_max
    saturated_share = int(np.count_nonzero(chosen > SATURATION_THRESHOLD)) / chosen.size
    flags = []
    if saturated_share > SATURATED_SHARE_FLAG:
        flags.append("saturated")
    elif entropy_mean < SHARP_ENTROPY_FRACTION * entropy_uniform:
        flags.append("sharp")
    if sink_mass > SINK_MASS_FLAG and sink_mass > sink_uniform + SINK_UNIFORM_MARGIN:
        flags.append("sink")
    if entropy_mean > NEAR_UNIFORM_ENTROPY_FRACTION * entropy_uniform:
        flags.append("near-uniform")
    return {"entropy_mean": entropy_mean, "entropy_uniform": entropy_uniform,
            "p_max_mean": block_moments(p_max)[1], "saturated_share": saturated_share,
            "sink_mass": sink_mass, "sink_uniform": sink_uniform, "flags": tuple(flags)}


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
    """Correlation of matching components of (batch, n, d) q and k, each centred over the
    tokens of its batch entry first (the explorer's ρ); NaN when q or k does not vary."""
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
    window: int | None = None,
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
    window
        With ``causal``, a sliding window: mask key j for query i also when j ≤ i − window
        (each row's uniform references then count the keys it sees).

    Returns
    -------
    HeadDiagnostics
        Defined in docs/numerics.md ("Head diagnostics").

    Raises
    ------
    ValueError
        For bad shapes, non-finite data, an unknown rule or invalid parameters, or logits that
        overflow.
    """
    replay = None if rule is None else Rule.from_keywords(rule, temperature=temperature,
                                                          gain=gain, cap=cap)
    return _diagnose(q, k, scale=scale, cap=cap, rule=replay, causal=causal, cancel=None,
                     window=window)


class _Cancelled(Exception):
    """Raised inside a tile once the caller's cancel event is set."""


def _diagnose(
    q: np.ndarray, k: np.ndarray, *, rule: Rule | None, causal: bool,
    cancel: threading.Event | None, scale: float | None = None, cap: float | None = None,
    window: int | None = None,
) -> HeadDiagnostics | None:
    """:func:`diagnose_head`, tile by tile on the attention kernel; None once ``cancel`` is set.

    ``scale`` and ``cap`` are the model's own, used when ``rule`` is None; ``window`` is the
    layer's sliding window under the causal mask (:func:`engine.core.plan.layer_mask`).
    """
    q, k = _check_qk(q, k)
    batch, n, d_k = q.shape
    replay = rule is not None
    own = Rule.from_keywords(ScalingRule.NONE, cap=cap)  # checks the file's cap
    plan = make_plan(q, k, None, rule=rule if replay else own,
                     mask=layer_mask(n, causal, window))
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

    # Per query row (docs/numerics.md): S = Σ e, Σ e·z, Σ z, Σ z² and e_0, with z the shifted
    # logits; the statistics are taken once at the end, whatever the tiling or the threads.
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
    elif plan.mask_off is not None:  # a sliding window: row i sees min(i + 1, w) keys
        visible = np.count_nonzero(~plan.mask_off, axis=-1).astype(np.float64).reshape(-1)
    # Norm of each row's centred visible logits (masked entries of z are 0).
    centred_sq = z_sq - z_sum * z_sum / visible
    floor = zhai_min_entropy_rows(visible, np.sqrt(np.maximum(centred_sq, 0.0)))
    summary = summarise_rows(entropy_rows, 1.0 / rowsum, first / rowsum, visible,
                             masked=plan.masked)
    scales = np.ravel(plan.scale)
    return HeadDiagnostics(
        n=n, d_k=d_k, batch=batch, rule=plan.rule.value if replay else None,
        # A per-row c (log_n / ssmax, causal) is reported as that of the last row (all n keys).
        scale=float(scales[-1]),
        causal=bool(causal), logit_std=moments.std,
        # With c varying by row the logits mix spreads: no single law predicts their std.
        logit_std_theory=theory if np.all(scales == scales[0]) else math.nan,
        max_abs_logit=max_abs, entropy_floor_at_norm=block_moments(floor)[1],
        rho=_component_correlation(q, k), **summary,
    )
