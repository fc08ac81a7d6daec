"""Diagnostics and rule replays of a head known only by its attention weights (no Qt).

From weights p the row statistics and flags follow exactly, and so does every rule that
multiplies a row's logits by a constant, since softmax(a·z) ∝ p^a; what needs the logits' size
or q and k does not (docs/numerics.md, "From attention weights"). Everything is computed in
float64, a block of rows at a time.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from engine.analysis.heads import HeadDiagnostics, summarise_rows
from engine.config import RULES, rules_where
from engine.core.moments import RunningMoments, block_moments
from engine.core.scaling import Rule
from engine.core.softmax import softmax_rows
from engine.core.theory import zhai_min_entropy_rows

__all__ = ["MULTIPLICATIVE_RULES", "NeedsQK", "diagnose_weights", "logit_factors",
           "replay_weights_map"]

#: The rules that multiply a row's logits by a constant: replayed exactly from weights.
MULTIPLICATIVE_RULES = rules_where("multiplicative")
#: Rows per block: a cancel waits for one block; memory stays at a few blocks of rows.
_BLOCK_ENTRIES = 1 << 18


class NeedsQK(ValueError):
    """A rule that the weights of a file cannot replay; ``needs`` says what it needs:
    ``"q_and_k"``, ``"d_k"`` or ``"scale"`` (a positive model scale)."""

    def __init__(self, message: str, needs: str) -> None:
        super().__init__(message)
        self.needs = needs


def logit_factors(
    rule: Rule | None, *, file_scale: float, d_k: int, visible: np.ndarray
) -> tuple[np.ndarray, float]:
    """The factor a = c'/c by which ``rule`` multiplies each row's logits, relative to the
    model's own c, and the rule's c of the last row (``file_scale`` without a rule).

    ``file_scale`` is NaN when the file does not say (c is then taken to be 1/√d_k), ``d_k``
    is 0 when unknown, ``visible`` holds the keys each row sees (for ``log_n`` / ``ssmax``).
    Raises :class:`NeedsQK` for QK-norm and soft-cap (not a multiple of the logits) and for a
    rule whose factor needs a d_k the file does not give.
    """
    if rule is None:
        return np.ones(len(visible)), file_scale
    kind = rule.kind
    if kind not in MULTIPLICATIVE_RULES:
        raise NeedsQK(f"rule {kind.value!r} needs q and k: it is not a multiple of the logits, "
                      "and this file holds attention weights only", "q_and_k")
    if d_k > 0:
        own = file_scale if math.isfinite(file_scale) else 1.0 / math.sqrt(d_k)
        dim = d_k
    elif not math.isfinite(file_scale) and not RULES[kind].needs_d_k:
        own, dim = 1.0, 1  # c'/c with c = 1/√d_k: d_k cancels
    else:
        raise NeedsQK(f"rule {kind.value!r} needs d_k, which the file does not give (add "
                      '"d_k" to its meta)', "d_k")
    if own <= 0:
        raise NeedsQK(f"the file's scale is {own:g}: a replay needs a scale > 0", "scale")
    if kind.length_dependent:
        scales = rule.row_scales(dim, visible)
    else:
        scales = np.full(len(visible), rule.scale(dim))
    factors = scales / own
    last = float(scales[-1]) if d_k > 0 else math.nan
    return factors, last


def _visible(n: int, causal: bool, window: int | None = None) -> np.ndarray:
    """The keys each row sees: n, i + 1 under the causal mask, min(i + 1, window) in a
    sliding window."""
    if not causal:
        return np.full(n, float(n))
    seen = np.arange(1.0, n + 1.0)
    return seen if window is None else np.minimum(seen, float(window))


def _hidden(rows: slice, n: int, window: int | None) -> np.ndarray:
    """(rows, n) True where a causal (sliding-window) row may not look: j > i or j ≤ i − w."""
    i = np.arange(rows.start, rows.stop)[:, None]
    j = np.arange(n)[None, :]
    return (j > i) if window is None else (j > i) | (j <= i - window)


def _scaled_rows(values: np.ndarray, is_logits: bool, factors: np.ndarray) -> np.ndarray:
    """a·z for a block of rows, z = ln p (−inf where p = 0) or the logits (masked: −inf); a
    factor of 0 gives logits 0, as a·q·k = 0 does (0·(−inf) is 0, not NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.array(values, dtype=np.float64) if is_logits else np.log(values)
        z *= factors[:, None]
    return np.nan_to_num(z, nan=0.0, posinf=np.inf, neginf=-np.inf)


def diagnose_weights(
    rows: np.ndarray,
    *,
    causal: bool,
    is_logits: bool = False,
    rule: Rule | None = None,
    file_scale: float = math.nan,
    d_k: int = 0,
    cancel: threading.Event | None = None,
    window: int | None = None,
) -> HeadDiagnostics | None:
    """Diagnose one head from its (batch, n, n) weights (or logits with ``is_logits``, masked
    entries −inf), as the model had them or under ``rule`` (see :func:`logit_factors`);
    ``window`` is the layer's sliding window under the causal mask.

    The statistics are those of :func:`engine.analysis.heads.diagnose_head`, with
    :data:`~engine.analysis.heads.NEEDS_LOGITS` NaN where they cannot be computed. ``cancel``
    is checked between blocks of rows: None is returned once it is set. Raises
    :class:`NeedsQK` for a rule the weights cannot replay.
    """
    rows = np.asarray(rows)
    if rows.ndim != 3 or rows.shape[-1] != rows.shape[-2] or min(rows.shape) < 1:
        raise ValueError(f"weights must have shape (batch, n, n); got {rows.shape}")
    batch, n, _ = rows.shape
    visible = _visible(n, causal, window)
    factors, scale = logit_factors(rule, file_scale=file_scale, d_k=d_k, visible=visible)
    stats = {name: np.empty((batch, n)) for name in ("entropy", "p_max", "sink", "floor")}
    moments = RunningMoments()
    max_abs = 0.0
    block = max(1, _BLOCK_ENTRIES // n)
    for b in range(batch):
        for r0 in range(0, n, block):
            if cancel is not None and cancel.is_set():
                return None
            r1 = min(n, r0 + block)
            z = _scaled_rows(rows[b, r0:r1], is_logits, factors[r0:r1])
            if causal:
                z[_hidden(slice(r0, r1), n, window)] = -np.inf
            finite = np.isfinite(z)
            top = np.max(z, axis=-1, keepdims=True)
            shifted = z - top
            e = np.exp(shifted)
            total = e.sum(axis=-1)
            weighted = np.einsum("ij,ij->i", e, np.where(finite, shifted, 0.0))
            stats["entropy"][b, r0:r1] = np.log(total) - weighted / total
            stats["p_max"][b, r0:r1] = 1.0 / total
            stats["sink"][b, r0:r1] = e[:, 0] / total
            if is_logits:
                values = z[finite]
                moments.merge(*block_moments(values))
                max_abs = max(max_abs, float(np.max(np.abs(values))))
                kept = np.where(finite, z, 0.0)
                count = finite.sum(axis=-1)
                centred_sq = (kept * kept).sum(axis=-1) - kept.sum(axis=-1) ** 2 / count
                stats["floor"][b, r0:r1] = zhai_min_entropy_rows(
                    count.astype(np.float64), np.sqrt(np.maximum(centred_sq, 0.0)))
    summary = summarise_rows(stats["entropy"], stats["p_max"], stats["sink"], visible,
                             masked=causal)
    nan = math.nan
    return HeadDiagnostics(
        n=n, d_k=d_k, batch=batch, rule=None if rule is None else rule.kind.value,
        scale=scale, causal=causal,
        logit_std=moments.std if is_logits else nan, logit_std_theory=nan,
        max_abs_logit=max_abs if is_logits else nan,
        entropy_floor_at_norm=block_moments(stats["floor"])[1] if is_logits else nan,
        rho=nan, source="scores" if is_logits else "weights", **summary,
    )


def replay_weights_map(
    rows: np.ndarray,
    *,
    causal: bool,
    is_logits: bool = False,
    rule: Rule,
    file_scale: float = math.nan,
    d_k: int = 0,
    window: int | None = None,
) -> np.ndarray:
    """The (n, n) weights of one batch entry ``rows`` (n, n) under ``rule``: p^a / Σ p^a row by
    row, from weights, or softmax(a·z) from logits. Raises :class:`NeedsQK` as
    :func:`logit_factors`."""
    n = rows.shape[-1]
    factors, _ = logit_factors(rule, file_scale=file_scale, d_k=d_k,
                               visible=_visible(n, causal, window))
    z = _scaled_rows(rows, is_logits, factors)
    if causal:
        z[_hidden(slice(0, n), n, window)] = -np.inf
    return softmax_rows(z)
