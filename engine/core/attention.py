"""Exact, fast scaled dot-product attention (forward and analytic backward) in pure numpy.

The forward pass computes, for queries ``q`` (..., n_q, d_k), keys ``k`` (..., n_k, d_k) and
values ``v`` (..., n_k, d_v)::

    logits  = mask(scaling_rule(q, k))      # (..., n_q, n_k), masked entries = -inf
    weights = softmax(logits, axis=-1)      # rows sum to 1, fully masked rows are all 0
    output  = weights @ v                   # (..., n_q, d_v)

Leading (batch, head) dimensions broadcast like :func:`numpy.matmul`. ``float32`` inputs stay
``float32``; every other real input is computed in ``float64``.

Scaling rules (see :class:`engine.config.ScalingRule`):

``none``         c = 1
``sqrt``         c = 1/√d_k
``linear``       c = 1/d_k
``temperature``  c = 1/T (``temperature`` required, > 0)
``qk_norm``      q and k are ℓ₂-normalised over d_k, then multiplied by ``gain`` (default √d_k)
``softcap``      c = 1/√d_k, then ``cap·tanh(s/cap)`` (``cap`` default 50)

Implementation notes (why the code looks the way it does):

* The scale is folded into Q (an n×d multiply) instead of the n×n logits.
* The n×n matrices are written with ``out=`` buffers and updated in place; matrix products go
  through :func:`numpy.matmul` (BLAS). ``einsum`` is avoided in hot paths (no BLAS, 5–7× slower).
* The softmax subtracts the row maximum. Fully masked rows have maximum −∞; their shift is
  replaced by 0 so that no ``-inf - -inf`` is ever evaluated, and their weights come out 0.
* The backward pass never normalises the n×n exponentials: 1/rowsum is applied to n×d matrices
  instead, and rowsum(dP∘P) is computed as rowsum(G∘O) (G the output gradient, O the output).
* A memory guard estimates the bytes of the n×n matrices before allocating them and raises
  :class:`MemoryBudgetError` when they would exceed the budget.
"""

from __future__ import annotations

import itertools
import math
import numbers
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from engine.config import DEFAULT_MEMORY_BUDGET_BYTES, MaskKind, ScalingRule

__all__ = [
    "AttentionResult",
    "MemoryBudgetError",
    "attention_logits",
    "causal_mask",
    "check_memory",
    "get_memory_budget",
    "get_num_threads",
    "scale_factor",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
    "set_memory_budget",
    "set_num_threads",
    "softmax",
]

#: Soft-cap used when the ``softcap`` rule is given no ``cap`` (Gemma 2's attention value).
DEFAULT_CAP = 50.0

# Norms below this are clamped in the QK-norm rule (as torch.nn.functional.normalize does), so
# that an all-zero q or k row maps to zero instead of 0/0.
_NORM_EPS = 1e-12

_T = TypeVar("_T")

_ALLOWED_RULES = ", ".join(rule.value for rule in ScalingRule)


# --------------------------------------------------------------------------------------------
# Memory guard
# --------------------------------------------------------------------------------------------


class MemoryBudgetError(ValueError):
    """Raised when a computation would allocate more than the memory budget."""


_memory_budget = DEFAULT_MEMORY_BUDGET_BYTES


def _check_budget_value(name: str, nbytes: Any) -> int:
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral) or nbytes < 1:
        raise ValueError(f"{name} must be a positive integer number of bytes, got {nbytes!r}")
    return int(nbytes)


def get_memory_budget() -> int:
    """Return the module-wide default memory budget in bytes (initially 1 GiB)."""
    return _memory_budget


def set_memory_budget(nbytes: int) -> None:
    """Set the module-wide default memory budget in bytes.

    Parameters
    ----------
    nbytes
        Positive integer; used whenever a function is not given ``memory_budget_bytes``.
    """
    global _memory_budget
    _memory_budget = _check_budget_value("nbytes", nbytes)


def _format_bytes(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{int(n)} B"


def check_memory(n_bytes: int, what: str, budget: int | None = None) -> None:
    """Raise :class:`MemoryBudgetError` if ``n_bytes`` exceeds the budget.

    Parameters
    ----------
    n_bytes
        Estimated size of the allocation.
    what
        Human-readable description of what would be allocated (used in the message).
    budget
        Budget in bytes; ``None`` means the module default (:func:`get_memory_budget`).
    """
    limit = _memory_budget if budget is None else _check_budget_value("memory_budget_bytes", budget)
    if n_bytes > limit:
        raise MemoryBudgetError(
            f"{what} would need {_format_bytes(n_bytes)} ({int(n_bytes):,} bytes), more than the "
            f"memory budget of {_format_bytes(limit)} ({limit:,} bytes); use fewer tokens, heads "
            "or batch entries, or raise the budget (memory_budget_bytes / set_memory_budget)"
        )


# --------------------------------------------------------------------------------------------
# Small public helpers
# --------------------------------------------------------------------------------------------


def _parse_rule(rule: Any) -> ScalingRule:
    try:
        return ScalingRule(rule)
    except ValueError:
        raise ValueError(f"rule must be one of {_ALLOWED_RULES}; got {rule!r}") from None


def _check_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    value = float(value)
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"{name} must be a positive finite number (> 0), got {value!r}")
    return value


def _check_dim(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {value!r}")
    return int(value)


def scale_factor(rule: ScalingRule | str, d_k: int, *, temperature: float | None = None) -> float:
    """Return the scalar c multiplying q·k under ``rule``.

    ``none`` → 1, ``sqrt`` → 1/√d_k, ``linear`` → 1/d_k, ``temperature`` → 1/T (``temperature``
    required), ``qk_norm`` → 1 (its gain multiplies the normalised vectors instead), ``softcap``
    → 1/√d_k (applied before the cap).
    """
    rule = _parse_rule(rule)
    d_k = _check_dim("d_k", d_k)
    if rule is ScalingRule.NONE or rule is ScalingRule.QK_NORM:
        return 1.0
    if rule is ScalingRule.SQRT or rule is ScalingRule.SOFTCAP:
        return 1.0 / math.sqrt(d_k)
    if rule is ScalingRule.LINEAR:
        return 1.0 / d_k
    if temperature is None:
        raise ValueError("temperature is required for rule 'temperature' (a number > 0)")
    return 1.0 / _check_positive("temperature", temperature)


def causal_mask(n_q: int, n_k: int) -> np.ndarray:
    """Boolean (n_q, n_k) causal mask, True = attend.

    Query i may attend to key j when ``j <= i + (n_k - n_q)``: queries are aligned with the
    *last* n_q keys (the usual convention when a prefix of cached keys precedes the queries).
    With ``n_q == n_k`` this is the lower triangle including the diagonal. When ``n_q > n_k``
    the first ``n_q - n_k`` queries see no key; their weights and outputs are zero.
    """
    n_q = _check_dim("n_q", n_q)
    n_k = _check_dim("n_k", n_k)
    return np.tri(n_q, n_k, k=n_k - n_q, dtype=bool)


def _float_dtype(*arrays: np.ndarray) -> np.dtype:
    dtype = np.result_type(*arrays)
    if dtype.kind == "f" and dtype.itemsize <= 4:
        return np.dtype(np.float32)
    return np.dtype(np.float64)


def _as_real_array(name: str, x: Any) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    return arr


def _safe_reciprocal(s: np.ndarray) -> np.ndarray:
    """1/s, and 0 where s == 0 (fully masked rows: every other row holds exp(m) > 0)."""
    inv = np.zeros_like(s)
    np.divide(1.0, s, out=inv, where=s > 0)
    return inv


# Row maxima inside these windows need no shift before exp: exp(logits) cannot overflow, the
# row sum stays far from the dtype's limits, and the entries that underflow to 0 are the same
# (or weigh less than exp(-60) relative to the row maximum) as with the shift. Skipping the
# shift saves one of the five elementwise passes over the n×n matrix.
_NO_SHIFT_WINDOW = {np.dtype(np.float32): (-20.0, 30.0), np.dtype(np.float64): (-300.0, 300.0)}


def _exp_rows(logits: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Write exp(logits − shift) into ``out`` (may be ``logits``); return 1/rowsum (keepdims).

    The shift is the row maximum, or 0 when every row maximum lies in the no-shift window; the
    softmax is ``out * inv`` either way. Fully masked rows (all −∞) give zeros and inv = 0.
    """
    m = np.max(logits, axis=-1, keepdims=True)
    lo, hi = _NO_SHIFT_WINDOW[logits.dtype]
    if ((m >= lo) & (m <= hi) | np.isneginf(m)).all():
        np.exp(logits, out=out)
    else:
        if np.isnan(m).any() or np.isposinf(m).any():
            raise ValueError(
                f"logits contain NaN or +inf (q·k overflowed {logits.dtype}, or the data is "
                "not finite); scale q and k down or use float64"
            )
        # Fully masked rows: shift by 0 so that -inf - (-inf) is never evaluated.
        m[np.isneginf(m)] = 0.0
        np.subtract(logits, m, out=out)
        np.exp(out, out=out)
    return _safe_reciprocal(np.sum(out, axis=-1, keepdims=True))


def softmax(x: Any, axis: int = -1, mask: Any = None) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Parameters
    ----------
    x
        Real array; ``float32`` is preserved, everything else is computed in ``float64``.
        Entries equal to −∞ get weight 0.
    axis
        Axis along which the weights sum to 1.
    mask
        Optional boolean array broadcastable to ``x.shape``; True = keep, False = weight 0.

    Returns
    -------
    numpy.ndarray
        Weights with the shape of ``x``. Rows whose entries are all masked (or all −∞) are all
        zero, never NaN.

    Raises
    ------
    ValueError
        If ``x`` contains NaN or +∞, or ``mask`` is not a boolean array of compatible shape.
    """
    arr = _as_real_array("x", x)
    w = np.array(arr, dtype=_float_dtype(arr), copy=True)
    if w.ndim == 0:
        raise ValueError("x must have at least 1 dimension, got a scalar")
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
        raise ValueError(f"axis must be an integer, got {axis!r}")
    if not -w.ndim <= axis < w.ndim:
        raise ValueError(f"axis must be in [{-w.ndim}, {w.ndim - 1}], got {axis}")
    if mask is not None:
        mask_arr = np.asarray(mask)
        if mask_arr.dtype != np.bool_:
            raise ValueError(
                f"mask must be a boolean array (True = keep), got dtype {mask_arr.dtype}"
            )
        try:
            ok = np.broadcast_shapes(mask_arr.shape, w.shape) == w.shape
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"mask shape {mask_arr.shape} does not broadcast to x's shape {w.shape}"
            )
        np.copyto(w, -np.inf, where=~mask_arr)
    if w.size == 0:
        return w
    moved = np.moveaxis(w, axis, -1)
    moved *= _exp_rows(moved, moved)
    return w


# --------------------------------------------------------------------------------------------
# Input validation and the shared plan
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttentionResult:
    """Result of :func:`scaled_dot_product_attention` (arrays are read-only).

    Attributes
    ----------
    output
        (..., n_q, d_v) attention output ``weights @ v``.
    weights
        (..., n_q, n_k) softmax weights; rows sum to 1, fully masked rows are 0.
    logits
        (..., n_q, n_k) logits after scaling/capping and masking (masked = −∞), before softmax.
    """

    output: np.ndarray
    weights: np.ndarray
    logits: np.ndarray

    def __post_init__(self) -> None:
        for arr in (self.output, self.weights, self.logits):
            arr.flags.writeable = False


@dataclass(frozen=True, slots=True)
class _Plan:
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray | None
    dtype: np.dtype
    batch: tuple[int, ...]
    n_q: int
    n_k: int
    d_k: int
    rule: ScalingRule
    scale: float  # c for scalar rules (for softcap: 1/√d_k before the cap)
    gain: float  # QK-norm gain
    cap: float  # soft-cap value
    mask_off: np.ndarray | None  # True where attention is NOT allowed (broadcastable)

    @property
    def score_shape(self) -> tuple[int, ...]:
        return (*self.batch, self.n_q, self.n_k)

    @property
    def n_scores(self) -> int:
        return math.prod(self.score_shape)


def _check_array(name: str, x: Any, shape_doc: str) -> np.ndarray:
    arr = _as_real_array(name, x)
    if arr.ndim < 2:
        raise ValueError(
            f"{name} must have at least 2 dimensions {shape_doc}, got shape {arr.shape}"
        )
    return arr


def _check_finite(name: str, arr: np.ndarray) -> None:
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values; all entries must be finite")


def _make_plan(
    q: Any,
    k: Any,
    v: Any,
    *,
    rule: Any,
    mask: Any,
    temperature: Any,
    gain: Any,
    cap: Any,
    extra: tuple[np.ndarray, ...] = (),
) -> _Plan:
    q = _check_array("q", q, "(..., n_q, d_k)")
    k = _check_array("k", k, "(..., n_k, d_k)")
    arrays = [q, k]
    if v is not None:
        v = _check_array("v", v, "(..., n_k, d_v)")
        arrays.append(v)
    rule = _parse_rule(rule)
    n_q, d_k = q.shape[-2:]
    n_k = k.shape[-2]
    if k.shape[-1] != d_k:
        raise ValueError(
            f"d_k mismatch: q has d_k = {d_k} (last axis) but k has d_k = {k.shape[-1]}; "
            "they must be equal"
        )
    if v is not None and v.shape[-2] != n_k:
        raise ValueError(
            f"n_k mismatch: k has n_k = {n_k} keys (axis -2) but v has {v.shape[-2]}; "
            "they must be equal"
        )
    for name, size in (("n_q (q.shape[-2])", n_q), ("n_k (k.shape[-2])", n_k), ("d_k", d_k)):
        if size < 1:
            raise ValueError(f"{name} must be >= 1, got {size}")
    try:
        batch = np.broadcast_shapes(*(a.shape[:-2] for a in arrays))
    except ValueError:
        shapes = ", ".join(f"{n}{a.shape}" for n, a in zip("qkv", arrays, strict=False))
        raise ValueError(
            f"leading (batch, head) dimensions of q, k, v do not broadcast: {shapes}"
        ) from None

    # Parameters are validated whenever they are given, even for rules that ignore them:
    # a non-positive temperature is a bug wherever it comes from.
    temperature = None if temperature is None else _check_positive("temperature", temperature)
    gain = math.sqrt(d_k) if gain is None else _check_positive("gain", gain)
    cap = DEFAULT_CAP if cap is None else _check_positive("cap", cap)
    scale = scale_factor(rule, d_k, temperature=temperature)

    dtype = _float_dtype(*arrays, *extra)
    mask_off = _mask_off(mask, (*batch, n_q, n_k))

    cast = [np.asarray(a, dtype=dtype) for a in arrays]
    for name, arr in zip("qkv", cast, strict=False):
        _check_finite(name, arr)
    return _Plan(
        q=cast[0],
        k=cast[1],
        v=cast[2] if v is not None else None,
        dtype=dtype,
        batch=batch,
        n_q=n_q,
        n_k=n_k,
        d_k=d_k,
        rule=rule,
        scale=scale,
        gain=gain,
        cap=cap,
        mask_off=mask_off,
    )


def _mask_off(mask: Any, score_shape: tuple[int, ...]) -> np.ndarray | None:
    """Return a boolean array that is True where attention is forbidden (None = no mask)."""
    if mask is None:
        return None
    n_q, n_k = score_shape[-2:]
    if isinstance(mask, str):
        try:
            kind = MaskKind(mask)
        except ValueError:
            raise ValueError(
                f"mask must be None, 'none', 'causal' or a boolean array; got {mask!r}"
            ) from None
        if kind is MaskKind.NONE:
            return None
        # j > i + (n_k - n_q) is forbidden; see causal_mask.
        return ~np.tri(n_q, n_k, k=n_k - n_q, dtype=bool)
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise ValueError(
            f"mask must be a boolean array (True = attend) or 'causal'; got dtype {arr.dtype}"
        )
    try:
        ok = np.broadcast_shapes(arr.shape, score_shape) == score_shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"mask shape {arr.shape} must broadcast to the logits shape {score_shape} "
            "(..., n_q, n_k) without enlarging it"
        )
    if arr.all():
        return None
    # A (n_k,) key-padding mask becomes (1, n_k) so that axis -2 always exists.
    return ~np.atleast_2d(arr)


# --------------------------------------------------------------------------------------------
# Threading: split query rows over worker threads with BLAS limited to one thread each
# --------------------------------------------------------------------------------------------

# Measured on a 2-core machine (benchmarks/bench_engine.py): for large problems, running row
# blocks on two Python threads with single-threaded BLAS beats two BLAS threads on one Python
# thread, because the softmax's elementwise passes are parallelised as well. Below this many
# multiply-adds (n_scores · (d_k + d_v)) the thread hand-off costs more than it saves.
_PARALLEL_MIN_WORK = 1 << 25


def _default_threads() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


_num_threads = _default_threads()
_executor: ThreadPoolExecutor | None = None
_executor_workers = 0
_executor_lock = threading.Lock()
# The BLAS thread limit is process-wide, so only one parallel region may change it at a time;
# a second concurrent caller simply runs serially.
_parallel_lock = threading.Lock()
_blas_controller: Any = None
_blas_controller_failed = False


def get_num_threads() -> int:
    """Return how many threads large attention problems are split over (1 = serial)."""
    return _num_threads


def set_num_threads(n: int | None) -> None:
    """Set how many threads large attention problems are split over.

    Parameters
    ----------
    n
        Positive integer, or ``None`` for the default (available CPUs, at most 8). Splitting is
        used only when threadpoolctl is installed (to pin BLAS to one thread per worker and
        avoid oversubscription) and the problem is large enough to profit.
    """
    global _num_threads
    _num_threads = _default_threads() if n is None else _check_dim("n", n)


def _blas_limiter() -> Any:
    """A threadpoolctl controller, or None when threadpoolctl is unavailable."""
    global _blas_controller, _blas_controller_failed
    if _blas_controller is None and not _blas_controller_failed:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            _blas_controller_failed = True
        else:
            # Scanning the loaded libraries costs milliseconds: do it once.
            _blas_controller = ThreadpoolController()
    return _blas_controller


def _get_executor(workers: int) -> ThreadPoolExecutor:
    global _executor, _executor_workers
    with _executor_lock:
        if _executor is None or _executor_workers < workers:
            if _executor is not None:
                _executor.shutdown(wait=False)
            _executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="attention")
            _executor_workers = workers
        return _executor


def _row_slices(n_rows: int, parts: int) -> list[slice]:
    bounds = [round(i * n_rows / parts) for i in range(parts + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds) if b > a]


# Blocks per thread: more than one, so that a thread slowed by other processes on its core
# does not leave the others idle at the end.
_BLOCKS_PER_THREAD = 4


def _run_row_blocks(
    fn: Callable[[slice], _T],
    n_rows: int,
    work: int,
    combine: Callable[[_T, _T], _T] | None = None,
) -> list[_T]:
    """Run ``fn`` over query-row blocks, on several threads when that pays off.

    Each thread folds its blocks' results with ``combine`` (default: keep the last); the
    per-thread results are returned.
    """
    threads = min(_num_threads, n_rows)
    if threads < 2 or work < _PARALLEL_MIN_WORK:
        return [fn(slice(0, n_rows))]
    limiter = _blas_limiter()
    if limiter is None or not _parallel_lock.acquire(blocking=False):
        return [fn(slice(0, n_rows))]
    try:
        blocks = iter(_row_slices(n_rows, threads * _BLOCKS_PER_THREAD))
        take = threading.Lock()
        failed = threading.Event()

        def worker() -> _T | None:
            local: _T | None = None
            while not failed.is_set():
                with take:
                    sl = next(blocks, None)
                if sl is None:
                    break
                try:
                    result = fn(sl)
                except BaseException:
                    failed.set()
                    raise
                local = result if local is None or combine is None else combine(local, result)
            return local

        executor = _get_executor(threads - 1)
        with limiter.limit(limits=1, user_api="blas"):
            futures = [executor.submit(worker) for _ in range(threads - 1)]
            try:
                first = worker()
            finally:
                # Never leave the BLAS limit while workers still run.
                wait(futures)
            results = [first, *(f.result() for f in futures)]
        return [r for r in results if r is not None]
    finally:
        _parallel_lock.release()


# --------------------------------------------------------------------------------------------
# Forward
# --------------------------------------------------------------------------------------------


def _l2_normalise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (x / max(‖x‖, eps), max(‖x‖, eps)) over the last axis, overflow-safe."""
    with np.errstate(over="ignore"):
        sq = np.sum(x * x, axis=-1, keepdims=True)
    if not np.isfinite(sq).all():
        # Squares overflowed: rescale by the row's largest magnitude first.
        a = np.max(np.abs(x), axis=-1, keepdims=True)
        a[a == 0] = 1.0
        norm = a * np.sqrt(np.sum((x / a) ** 2, axis=-1, keepdims=True))
    else:
        norm = np.sqrt(sq)
    norm = np.maximum(norm, _NORM_EPS)
    return x / norm, norm


@dataclass(frozen=True, slots=True)
class _Operands:
    """Inputs of the n×n stage: raw logits = qs @ ks.T (softcap: tanh of it, times cap)."""

    qs: np.ndarray
    ks: np.ndarray
    q_hat: np.ndarray | None = None  # QK-norm only: normalised q, k and their norms
    q_norm: np.ndarray | None = None
    k_norm: np.ndarray | None = None


def _operands(plan: _Plan) -> _Operands:
    dt = plan.dtype.type
    if plan.rule is ScalingRule.QK_NORM:
        q_hat, q_norm = _l2_normalise(plan.q)
        k_hat, k_norm = _l2_normalise(plan.k)
        return _Operands(q_hat * dt(plan.gain), k_hat, q_hat, q_norm, k_norm)
    # Fold the scale (and softcap's 1/cap) into Q: an n×d multiply instead of n×n.
    c = plan.scale / plan.cap if plan.rule is ScalingRule.SOFTCAP else plan.scale
    return _Operands(plan.q * dt(c), plan.k)


def _rows(arr: np.ndarray, sl: slice) -> np.ndarray:
    """Query rows ``sl`` of an array whose axis -2 is n_q or a broadcast 1."""
    return arr if arr.shape[-2] == 1 else arr[..., sl, :]


def _logits_rows(
    plan: _Plan, ops: _Operands, sl: slice, out: np.ndarray, keep_tanh: bool = False
) -> np.ndarray | None:
    """Write the masked logits of rows ``sl`` into ``out``.

    With ``keep_tanh`` (softcap only) the unmasked tanh values are returned in a new buffer,
    for the backward pass.
    """
    # Overflow (finite inputs whose products exceed the dtype) is reported as a ValueError by
    # _exp_rows, so the matmul's own RuntimeWarning is silenced.
    with np.errstate(over="ignore", invalid="ignore"):
        np.matmul(ops.qs[..., sl, :], ops.ks.swapaxes(-1, -2), out=out)
    tanh = None
    if plan.rule is ScalingRule.SOFTCAP:
        tanh = np.tanh(out, out=np.empty_like(out) if keep_tanh else out)
        np.multiply(tanh, plan.dtype.type(plan.cap), out=out)
        if not keep_tanh:
            tanh = None
    if plan.mask_off is not None:
        np.copyto(out, -np.inf, where=_rows(plan.mask_off, sl))
    return tanh


def _forward_bytes(plan: _Plan) -> int:
    # logits + weights, plus the inverted mask.
    mask_bytes = 0 if plan.mask_off is None else plan.mask_off.size
    return 2 * plan.n_scores * plan.dtype.itemsize + mask_bytes


def _work(plan: _Plan) -> int:
    d_v = 0 if plan.v is None else plan.v.shape[-1]
    return plan.n_scores * (plan.d_k + d_v)


def attention_logits(
    q: Any,
    k: Any,
    *,
    rule: ScalingRule | str = "sqrt",
    temperature: float | None = None,
    gain: float | None = None,
    cap: float | None = None,
    mask: Any = None,
    memory_budget_bytes: int | None = None,
) -> np.ndarray:
    """Return the (..., n_q, n_k) logits after scaling/capping and masking (masked = −∞).

    Same conventions and validation as :func:`scaled_dot_product_attention`.
    """
    plan = _make_plan(
        q, k, None, rule=rule, mask=mask, temperature=temperature, gain=gain, cap=cap
    )
    mask_bytes = 0 if plan.mask_off is None else plan.mask_off.size
    check_memory(
        plan.n_scores * plan.dtype.itemsize + mask_bytes,
        f"attention logits of shape {plan.score_shape} ({plan.dtype})",
        memory_budget_bytes,
    )
    ops = _operands(plan)
    logits = np.empty(plan.score_shape, dtype=plan.dtype)
    _logits_rows(plan, ops, slice(None), logits)
    return logits


def scaled_dot_product_attention(
    q: Any,
    k: Any,
    v: Any,
    *,
    rule: ScalingRule | str = "sqrt",
    mask: Any = None,
    temperature: float | None = None,
    gain: float | None = None,
    cap: float | None = None,
    memory_budget_bytes: int | None = None,
) -> AttentionResult:
    """Scaled dot-product attention ``softmax(mask(scale(q, k))) @ v``.

    Parameters
    ----------
    q, k, v
        Arrays of shape (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v); leading dimensions
        broadcast. All entries must be finite. ``float32`` is preserved, other real dtypes are
        computed in ``float64``.
    rule
        A :class:`~engine.config.ScalingRule` or its string: ``none``, ``sqrt``, ``linear``,
        ``temperature``, ``qk_norm``, ``softcap``.
    mask
        ``None``/``"none"``, ``"causal"`` (query i attends key j iff ``j <= i + n_k - n_q``, see
        :func:`causal_mask`) or a boolean array broadcastable to (..., n_q, n_k) without
        enlarging it, True = attend (an (n_k,) array is a key-padding mask). Rows with no
        allowed key get zero weights and zero output.
    temperature
        T > 0 for the ``temperature`` rule (required there).
    gain
        QK-norm gain g > 0; ``None`` means √d_k.
    cap
        Soft-cap value > 0; ``None`` means 50.
    memory_budget_bytes
        Budget for the n×n matrices; ``None`` means :func:`get_memory_budget`.

    Returns
    -------
    AttentionResult
        ``output`` (..., n_q, d_v), ``weights`` and ``logits`` (..., n_q, n_k), read-only.

    Raises
    ------
    ValueError
        For invalid shapes, dtypes, non-finite inputs, rules or parameters, or if q·k
        overflows the dtype.
    MemoryBudgetError
        If the n×n matrices would exceed the memory budget.
    """
    plan = _make_plan(
        q, k, v, rule=rule, mask=mask, temperature=temperature, gain=gain, cap=cap
    )
    assert plan.v is not None
    check_memory(
        _forward_bytes(plan),
        f"attention logits and weights of shape {plan.score_shape} ({plan.dtype}, 2 matrices)",
        memory_budget_bytes,
    )
    ops = _operands(plan)
    logits = np.empty(plan.score_shape, dtype=plan.dtype)
    weights = np.empty_like(logits)
    output = np.empty((*plan.batch, plan.n_q, plan.v.shape[-1]), dtype=plan.dtype)

    def block(sl: slice) -> None:
        lg = logits[..., sl, :]
        w = weights[..., sl, :]
        _logits_rows(plan, ops, sl, lg)
        w *= _exp_rows(lg, w)
        np.matmul(w, plan.v, out=output[..., sl, :])

    _run_row_blocks(block, plan.n_q, _work(plan))
    return AttentionResult(output=output, weights=weights, logits=logits)


# --------------------------------------------------------------------------------------------
# Backward
# --------------------------------------------------------------------------------------------


def _sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum ``grad`` over the axes that broadcasting added or expanded, giving ``shape``."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    pairs = enumerate(zip(grad.shape, shape, strict=True))
    axes = tuple(i for i, (g, s) in pairs if s == 1 and g != 1)
    if axes:
        grad = grad.sum(axis=axes, keepdims=True)
    return grad


def _normalise_backward(x_hat: np.ndarray, norm: np.ndarray, g_hat: np.ndarray) -> np.ndarray:
    """Backpropagate through x̂ = x / max(‖x‖, eps): (g − x̂(x̂·g)) / ‖x‖ (or g/eps if clamped)."""
    radial = np.sum(x_hat * g_hat, axis=-1, keepdims=True)
    clamped = norm <= _NORM_EPS
    if clamped.any():
        radial[clamped] = 0.0
    return (g_hat - x_hat * radial) / norm


def scaled_dot_product_attention_backward(
    q: Any,
    k: Any,
    v: Any,
    grad_output: Any,
    *,
    rule: ScalingRule | str = "sqrt",
    mask: Any = None,
    temperature: float | None = None,
    gain: float | None = None,
    cap: float | None = None,
    memory_budget_bytes: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Analytic gradients of ``sum(output * grad_output)`` with respect to q, k and v.

    Parameters are those of :func:`scaled_dot_product_attention`, plus ``grad_output`` with
    exactly the output's shape (..., n_q, d_v). The forward pass is recomputed internally.
    Gradients are summed over broadcast leading dimensions, so each has the shape of its input.
    Masked entries receive zero gradient; the QK-norm rule includes the Jacobian of the
    normalisation and the soft-cap rule the tanh derivative.

    Returns
    -------
    tuple of numpy.ndarray
        ``(grad_q, grad_k, grad_v)`` in the computation dtype.
    """
    g_arr = _as_real_array("grad_output", grad_output)
    plan = _make_plan(
        q,
        k,
        v,
        rule=rule,
        mask=mask,
        temperature=temperature,
        gain=gain,
        cap=cap,
        extra=(g_arr,),
    )
    assert plan.v is not None
    d_v = plan.v.shape[-1]
    out_shape = (*plan.batch, plan.n_q, d_v)
    if g_arr.shape != out_shape:
        raise ValueError(
            f"grad_output must have the output's shape {out_shape} (..., n_q, d_v), "
            f"got {g_arr.shape}"
        )
    g = np.asarray(g_arr, dtype=plan.dtype)
    _check_finite("grad_output", g)
    softcap = plan.rule is ScalingRule.SOFTCAP
    n_mats = 3 if softcap else 2
    mask_bytes = 0 if plan.mask_off is None else plan.mask_off.size
    check_memory(
        n_mats * plan.n_scores * plan.dtype.itemsize + mask_bytes,
        f"attention backward buffers of shape {plan.score_shape} ({plan.dtype}, "
        f"{n_mats} matrices)",
        memory_budget_bytes,
    )
    ops = _operands(plan)
    v_t = plan.v.swapaxes(-1, -2)
    grad_qs = np.empty((*plan.batch, plan.n_q, plan.d_k), dtype=plan.dtype)

    def block(sl: slice) -> tuple[np.ndarray, np.ndarray]:
        # E: unnormalised exponentials of these rows; inv: 1/rowsum (0 for fully masked rows).
        rows = sl.stop - sl.start
        e = np.empty((*plan.batch, rows, plan.n_k), dtype=plan.dtype)
        tanh = _logits_rows(plan, ops, sl, e, keep_tanh=True)
        inv = _exp_rows(e, e)
        # With G' = G·inv (per row) every normalisation happens on n×d matrices:
        # O = (E V)·inv, dV = Eᵀ G', dL = E∘(G' Vᵀ − δ'), δ' = rowsum(G'∘O) = inv·rowsum(G∘O).
        g_s = g[..., sl, :] * inv
        out = np.matmul(e, plan.v)
        out *= inv
        grad_v = np.matmul(e.swapaxes(-1, -2), g_s)
        delta = np.sum(g_s * out, axis=-1, keepdims=True)
        d = np.matmul(g_s, v_t)
        d -= delta
        d *= e
        del e
        if tanh is not None:
            # ∂ cap·tanh(z) / ∂z = cap·(1 − tanh²); the factor cap is applied to n×d results.
            np.square(tanh, out=tanh)
            np.subtract(plan.dtype.type(1.0), tanh, out=tanh)
            d *= tanh
        np.matmul(d, ops.ks, out=grad_qs[..., sl, :])
        grad_ks = np.matmul(d.swapaxes(-1, -2), ops.qs[..., sl, :])
        return grad_ks, grad_v

    def add(
        a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        np.add(a[0], b[0], out=a[0])
        np.add(a[1], b[1], out=a[1])
        return a

    parts = _run_row_blocks(block, plan.n_q, 2 * _work(plan), combine=add)
    grad_ks = parts[0][0]
    grad_v = parts[0][1]
    for gk, gv in parts[1:]:
        grad_ks += gk
        grad_v += gv

    dt = plan.dtype.type
    if plan.rule is ScalingRule.QK_NORM:
        assert ops.q_hat is not None and ops.q_norm is not None and ops.k_norm is not None
        # logits = g·q̂·k̂ᵀ: ∂/∂q̂ = g·(∂/∂qs), ∂/∂k̂ = ∂/∂ks; sum over broadcast dims first,
        # because the normalisation acts on each input row.
        grad_qs *= dt(plan.gain)
        grad_q = _normalise_backward(
            ops.q_hat, ops.q_norm, _sum_to_shape(grad_qs, plan.q.shape)
        )
        grad_k = _normalise_backward(ops.ks, ops.k_norm, _sum_to_shape(grad_ks, plan.k.shape))
    else:
        # qs = c'·q with c' = c (or c/cap for softcap, whose block gradient lacks the factor cap).
        grad_qs *= dt(plan.scale)
        grad_q = _sum_to_shape(grad_qs, plan.q.shape)
        if plan.rule is ScalingRule.SOFTCAP:
            grad_ks *= dt(plan.cap)
        grad_k = _sum_to_shape(grad_ks, plan.k.shape)
    grad_v = _sum_to_shape(grad_v, plan.v.shape)
    return (
        np.ascontiguousarray(grad_q, dtype=plan.dtype),
        np.ascontiguousarray(grad_k, dtype=plan.dtype),
        np.ascontiguousarray(grad_v, dtype=plan.dtype),
    )
