"""One head's values read from a tensor file and checked: q and k finite; weights a softmax
(rows ≥ 0 summing to 1) and, in a causal file, zero above the diagonal; logits with a finite
entry in every row."""

from __future__ import annotations

import numpy as np

from engine.core.memory import MemoryBudgetError, check_memory
from engine.io.layouts import Geometry
from engine.io.source import Source, TensorFileError

__all__ = ["MASKED_SCORE", "check_finite", "check_head_memory", "check_scores", "check_weights",
           "infers_causal", "read_head", "read_square", "read_whole"]

#: Scores at or below this count as masked when a mask is inferred (TransformerLens writes −inf;
#: older releases −1e5).
MASKED_SCORE = -1e4


def check_head_memory(batch: int, n: int, d_k: int) -> None:
    try:
        check_memory(2 * batch * n * d_k * 8, f"one head's float64 q and k ({batch}×{n}×{d_k})")
        check_memory(batch * n * n * 8, f"one head's float64 logits ({batch}×{n}×{n})")
    except MemoryBudgetError as exc:
        raise TensorFileError(str(exc)) from exc


def _count_bad(raw: np.ndarray) -> int:
    # In the stored dtype: casting a signalling NaN (any bit pattern may be stored) to float64
    # raises the "invalid value" floating-point warning.
    return int(np.count_nonzero(~np.isfinite(raw)))


def _check_head_finite(raw: np.ndarray, label: str, head: int) -> None:
    bad = _count_bad(raw)
    if bad:
        raise TensorFileError(f"{label}: head {head} holds {bad} NaN/inf values")


def read_whole(source: Source, name: str) -> np.ndarray:
    """A whole array, in its stored dtype, refused if it holds NaN or inf."""
    whole = source.read_all(name)
    bad = _count_bad(whole)
    if bad:
        raise TensorFileError(f"array '{name}': {bad} NaN/inf values")
    return whole


def read_head(source: Source, name: str, head: int, batch: int) -> np.ndarray:
    """Head ``head`` of a q or k array as float64 (batch, n, d), refused if not finite."""
    raw = source.read_head(name, head)
    _check_head_finite(raw, f"array '{name}'", head)
    return np.asarray(raw, dtype=np.float64).reshape((batch, *raw.shape[-2:]))


def check_finite(source: Source, name: str, heads: int) -> None:
    """Refuse NaN or inf in any head, read head by head so memory stays at one head."""
    bad = {h: _count_bad(source.read_head(name, h)) for h in range(heads)}
    bad = {h: count for h, count in bad.items() if count}
    if bad:
        raise TensorFileError(
            f"array '{name}': {sum(bad.values())} NaN/inf values "
            f"(in head{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))})")


def read_square(source: Source, name: str, index: tuple[int, ...], head: int,
                batch: int) -> np.ndarray:
    """One head's (batch, n, n) block of a weights array, in its stored dtype."""
    if not index:
        raw = source.read_head(name, head)
        return raw.reshape((batch, *raw.shape[-2:]))
    return np.stack([source.read_part(name, (*index, b, head)) for b in range(batch)])


def _tolerance(raw: np.ndarray) -> float:
    # Rounding each weight to the stored format moves a row's sum by at most its unit
    # roundoff (bfloat16: 0.004); a float32 sum over many keys drifts by ~1e-5.
    return max(1e-3, 2.0 * float(np.finfo(raw.dtype).eps))


def _row_position(shape: tuple[int, ...], flat: int) -> str:
    b, i = np.unravel_index(flat, shape[:2])
    return f"batch {b}, row {i}" if shape[0] > 1 else f"row {i}"


def _above_diagonal(n: int) -> np.ndarray:
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def check_weights(raw: np.ndarray, label: str, head: int, causal: bool) -> np.ndarray:
    """The head's weights as float64, refused unless they are a (causal) softmax."""
    _check_head_finite(raw, label, head)
    weights = np.asarray(raw, dtype=np.float64)
    negative = int(np.count_nonzero(weights < 0))
    if negative:
        raise TensorFileError(f"{label}: head {head} holds {negative} negative weights; "
                              "attention weights are ≥ 0")
    sums = weights.sum(axis=-1)
    off = np.abs(sums - 1.0)
    worst = int(np.argmax(off))
    if off.flat[worst] > _tolerance(raw):
        raise TensorFileError(
            f"{label}: head {head}, {_row_position(sums.shape, worst)} sums to "
            f"{sums.flat[worst]:.6g}, not 1: attention weights (after the softmax) sum to 1 "
            "over the keys")
    if causal:
        above = int(np.count_nonzero(weights[:, _above_diagonal(weights.shape[-1])]))
        if above:
            raise TensorFileError(
                f"{label}: head {head} has {above} weights above the diagonal, but the file is "
                "causal (meta \"causal\": true)")
    return weights


def check_scores(raw: np.ndarray, label: str, head: int, causal: bool) -> np.ndarray:
    """The head's logits as float64 (masked −inf), refused with NaN, +inf or an empty row."""
    scores = np.asarray(raw, dtype=np.float64)
    bad = int(np.count_nonzero(np.isnan(scores) | (scores == np.inf)))
    if bad:
        raise TensorFileError(f"{label}: head {head} holds {bad} NaN/+inf logits")
    if causal:
        scores[:, _above_diagonal(scores.shape[-1])] = -np.inf
    empty = ~np.isfinite(scores).any(axis=-1)
    if empty.any():
        where = _row_position(empty.shape, int(np.argmax(empty)))
        raise TensorFileError(f"{label}: head {head}, {where} has no finite logit")
    return scores


def infers_causal(source: Source, geometry: Geometry, every_head: bool) -> bool:
    """Whether every weight above the diagonal is 0 (scores: masked), in every head read."""
    n = geometry.n
    if n < 2:
        return False
    above = _above_diagonal(n)
    for _, entry in sorted(geometry.arrays.items()):
        name = entry.scores or entry.weights
        assert name is not None
        for head in range(geometry.heads if every_head else 1):
            raw = read_square(source, name, entry.index, head, geometry.batch)
            values = np.asarray(raw[:, above], dtype=np.float64)
            masked = values <= MASKED_SCORE if entry.scores else values == 0
            if not masked.all():
                return False
        if not every_head:
            break
    return True
