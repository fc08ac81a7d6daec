"""Attention in row tiles: the one kernel the forward pass, the backward pass and statistics share.

A tile is a block of query rows of one or more (batch, head) entries, ``(b0, b1, r0, r1)``
over the flattened leading dimensions, sized so that its buffers stay in cache
(:data:`TILE_BYTES`). :func:`each_tile` writes a tile's masked logits, turns them into
unnormalised exponentials E and the reciprocal row sums ``inv`` (the softmax is ``E·inv``), and
hands them to a caller's function, which turns them into outputs, gradients or statistics.
Unless the caller asks for the full logits and weights, E lives in a per-thread scratch buffer
that is reused tile after tile (and kept for later calls): no n×n array is written, memory is
O(tile·n_k) per thread, and the buffer stays in cache.

Why the kernel is fast:

* ``exp`` is tried before the row maxima are found, and that pass is skipped whenever the row
  sums prove no shift was needed (almost always: :func:`engine.core.softmax.try_exp_unshifted`);
  unless the caller reads the logits, the exponentials overwrite them in one buffer, and the
  rare tile whose proof fails writes its logits again;
* without weights, 1/rowsum is applied to the (rows, d_v) output, not to the (rows, n_k) tile;
* under a causal mask a tile computes only the keys its rows may see (:func:`visible_keys`):
  the later columns are masked in every row of the tile, so a long causal sequence in row tiles
  does about half the products and exponentials;
* tiles are spread over threads (:func:`engine.core.parallel.run_tiles`), each with BLAS pinned
  to one thread, so the elementwise passes run on every core too.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from engine.core.parallel import MIN_TILES_PER_THREAD, get_num_threads, parallel_pays, run_tiles
from engine.core.plan import Plan
from engine.core.scaling import RuleOperands, rule_operands, write_logits
from engine.core.softmax import (
    exp_rows,
    exp_rows_by_maxima,
    exp_shifted_rows,
    try_exp_unshifted,
)

__all__ = [
    "TILE_BYTES",
    "Tile",
    "TiledProblem",
    "each_tile",
    "prepare",
    "scratch_bytes",
    "visible_keys",
]

#: Bytes of one tile of logits (and of its exponentials). Measured on one thread
#: (benchmarks/bench_engine.py sizes): 256 KiB to 2 MiB were equally fast, smaller tiles up to
#: 2× slower because the matrix products get too few rows to run at full speed. On two
#: threads larger tiles win, as each tile's numpy calls cost more there: in paired runs 1 MiB
#: took 0.83-0.91 of 512 KiB's time at (1, 2048, 64) and (1, 4096, 64), and 256 KiB 1.1-1.4.
#: The memory stays O(tile·n_k).
TILE_BYTES = 1 << 20

#: (b0, b1, r0, r1): rows r0:r1 of the flattened (batch, head) entries b0:b1.
Tile = tuple[int, int, int, int]

_S = TypeVar("_S")


@dataclass(slots=True)
class TiledProblem:
    """The operands of one attention call flattened to (B, n, d), and its tiles."""

    plan: Plan
    ops: RuleOperands  # the rule folded into q and k, with the plan's leading dimensions
    qs: np.ndarray  # (B, n_q, d_k) queries with the rule folded in
    ks: np.ndarray  # (B, n_k, d_k) keys (normalised for QK-norm)
    v: np.ndarray | None  # (B, n_k, d_v)
    mask_off: np.ndarray | None  # (1 or B, n_q or 1, n_k); None for no mask or causal
    tiles: tuple[Tile, ...]
    tile_elements: int  # entries of the largest tile
    batch_size: int  # B, the number of flattened (batch, head) entries
    # One tile spanning the whole problem: its blocks are the arrays themselves. Slicing them
    # anyway cost 8 % of a (1, 16, 16) call (paired runs).
    single: bool


def _flat(x: np.ndarray, batch: tuple[int, ...], size: int) -> np.ndarray:
    """(..., n, d) broadcast to the full batch and flattened to (B, n, d) (a view if it can)."""
    if x.ndim == 3 and x.shape[0] == size:
        return x
    if x.shape[:-2] != batch:
        x = np.broadcast_to(x, (*batch, *x.shape[-2:]))
    return x.reshape(size, *x.shape[-2:])


def _tiles(
    entries: int, n_q: int, n_k: int, itemsize: int, parallel: bool
) -> tuple[tuple[Tile, ...], int]:
    rows = max(1, TILE_BYTES // (itemsize * n_k))
    threads = get_num_threads()
    if parallel and entries < threads:
        # A tile for every thread: all of (1, 512, 64) fits one 1 MiB tile, which one thread
        # computed up to 10 % slower than two threads half of it each.
        rows = min(rows, max(1, n_q // math.ceil(threads / entries)))
    if rows >= n_q:
        # Whole (batch, head) entries per tile: one batched matmul, no accumulation over rows.
        per = max(1, rows // n_q)
        if parallel:
            # Leave a few tiles per thread, so the threads share the work evenly. A serial
            # problem keeps one tile: the trainer's 64 entries of 1 × 17 logits took a third
            # longer in 8 tiles than in one (each tile pays the kernel's Python cost).
            per = min(per, max(1, entries // (MIN_TILES_PER_THREAD * threads)))
        if per >= entries:
            return ((0, entries, 0, n_q),), entries * n_q * n_k
        tiles = tuple((b, min(b + per, entries), 0, n_q) for b in range(0, entries, per))
        return tiles, per * n_q * n_k
    tiles = tuple(
        (b, b + 1, r, min(r + rows, n_q)) for b in range(entries) for r in range(0, n_q, rows)
    )
    return tiles, rows * n_k


def prepare(plan: Plan) -> TiledProblem:
    """Fold the plan's rule into q and k, flatten the operands and cut the tiles."""
    ops = rule_operands(plan.rule, plan.q, plan.k, scale=plan.scale, gain=plan.gain, cap=plan.cap)
    size = math.prod(plan.batch)
    qs = _flat(ops.qs, plan.batch, size)
    ks = _flat(ops.ks, plan.batch, size)
    v = None if plan.v is None else _flat(plan.v, plan.batch, size)
    mask_off = plan.mask_off
    if mask_off is not None:
        if math.prod(mask_off.shape[:-2]) == 1:
            mask_off = mask_off.reshape(1, *mask_off.shape[-2:])
        else:
            mask_off = _flat(mask_off, plan.batch, size)
    # The backward's work (twice the forward's) decides, so that a problem the backward
    # splits over threads has tiles enough for them.
    d_v = plan.d_k if v is None else v.shape[-1]
    parallel = parallel_pays(2 * plan.n_scores * (plan.d_k + d_v))
    tiles, elements = _tiles(size, plan.n_q, plan.n_k, plan.dtype.itemsize, parallel)
    return TiledProblem(plan, ops, qs, ks, v, mask_off, tiles, elements, size, len(tiles) == 1)


def scratch_bytes(problem: TiledProblem, buffers: int) -> int:
    """Bytes of ``buffers`` tile-sized scratch arrays on every thread that may run."""
    threads = min(get_num_threads(), len(problem.tiles))
    return threads * buffers * problem.tile_elements * problem.plan.dtype.itemsize


# Tile buffers outlive the call that allocated them. A fresh tile buffer per call comes
# from mmap whenever glibc's threshold happens to lie below it (it moves with the process's
# history of frees), and then every one of its pages faults on first touch. In fresh
# processes, output-only calls at the benchmark's sizes took 352 to 1256 page faults each
# (up to twice their usual time); 21-53 % of them were in these buffers, which are now reused
# whatever the process allocated before.
# Below 64 KiB malloc's heap serves them anyway (its mmap threshold starts at 128 KiB); above
# 2 tiles (a single row of more keys than a tile holds) they are rare and not kept.
_POOLED_BYTES = (64 << 10, 2 * TILE_BYTES)
_spare: list[np.ndarray] = []  # 1-D buffers of any float dtype
_spare_lock = threading.Lock()


def _borrow(size: int, dtype: np.dtype) -> np.ndarray:
    """The smallest spare buffer of ``dtype`` with at least ``size`` entries, or a new one."""
    if _POOLED_BYTES[0] <= size * dtype.itemsize <= _POOLED_BYTES[1]:
        with _spare_lock:
            fits = [i for i, buffer in enumerate(_spare)
                    if buffer.dtype == dtype and buffer.size >= size]
            if fits:
                return _spare.pop(min(fits, key=lambda i: _spare[i].size))
    return np.empty(size, dtype=dtype)


def _give_back(buffers: list[np.ndarray]) -> None:
    """Keep ``buffers`` for later calls, two per thread at most (the most a call takes: the
    recomputing backward's E and dL); the oldest make room for them."""
    kept = [b for b in buffers if _POOLED_BYTES[0] <= b.nbytes <= _POOLED_BYTES[1]]
    if not kept:  # small calls: no lock
        return
    with _spare_lock:
        _spare.extend(kept)
        del _spare[: max(0, len(_spare) - 2 * get_num_threads())]


class Scratch:
    """Per-thread tile buffers, taken on first use, reused for every tile and kept after.

    :func:`each_tile` returns them to a pool when the call ends, for the next call.
    """

    def __init__(self, problem: TiledProblem) -> None:
        self._size = problem.tile_elements
        self._dtype = problem.plan.dtype
        self._buffers: list[np.ndarray] = []
        # Set once a tile of this thread needed the row maxima before exp (see
        # _tile_exponentials): the later tiles then find them first, not after a wasted exp.
        self.needs_maxima = False

    def take(self, index: int, shape: tuple[int, ...]) -> np.ndarray:
        """A C-contiguous view of buffer ``index`` with ``shape`` (at most one tile)."""
        while len(self._buffers) <= index:
            self._buffers.append(_borrow(self._size, self._dtype))
        return self._buffers[index][: math.prod(shape)].reshape(shape)

    def release(self) -> None:
        """Return the buffers to the pool; views taken before must no longer be used."""
        _give_back(self._buffers)
        self._buffers = []


def visible_keys(plan: Plan, stop: int) -> int:
    """w such that keys 0:w hold every key that query rows before ``stop`` may attend.

    n_k unless the mask is causal; then row i sees keys j <= i + offset, so a block of rows
    ending at ``stop`` sees none after ``stop - 1 + offset``. At least 1, so that a block of
    fully masked rows (n_q > n_k) still has a masked column to sum to zero.
    """
    if plan.causal_offset is None:
        return plan.n_k
    return max(1, min(plan.n_k, stop + plan.causal_offset))


def write_tile_logits(
    problem: TiledProblem, tile: Tile, out: np.ndarray, keep_tanh: bool = False
) -> np.ndarray | None:
    """Write the masked logits of ``tile`` into ``out``; soft-cap's tanh with ``keep_tanh``.

    ``out`` has the tile's rows and the first ``out.shape[-1]`` keys (all of them, or under a
    causal mask at least :func:`visible_keys`). Call inside
    ``numpy.errstate(over="ignore", invalid="ignore")`` (see
    :func:`~engine.core.scaling.write_logits`).
    """
    b0, b1, r0, r1 = tile
    rows = slice(r0, r1)
    keys = out.shape[-1]
    if problem.single:  # the tile sees every key (see visible_keys)
        qs, ks = problem.qs, problem.ks
    else:
        qs = problem.qs[b0:b1, rows]
        ks = problem.ks[b0:b1] if keys == problem.plan.n_k else problem.ks[b0:b1, :keys]
    tanh = write_logits(qs, ks, problem.ops.cap, out, keep_tanh)
    plan = problem.plan
    if plan.causal_offset is not None:
        # The keys before the first row's first forbidden key are visible to every row of the
        # tile: only the band after it needs the mask.
        first = min(keys, max(0, r0 + plan.causal_offset + 1))
        if first < keys:
            np.copyto(out[..., first:], -np.inf,
                      where=plan.mask_rows(rows, slice(first, keys)))
    elif problem.mask_off is not None:
        m = problem.mask_off if problem.mask_off.shape[0] == 1 else problem.mask_off[b0:b1]
        np.copyto(out, -np.inf, where=m if m.shape[1] == 1 else m[:, rows])
    return tanh


TileBody = Callable[[_S, Scratch, Tile, np.ndarray, np.ndarray, "np.ndarray | None"], None]


def each_tile(
    problem: TiledProblem,
    body: TileBody[_S],
    make_state: Callable[[], _S],
    *,
    work: int,
    logits: np.ndarray | None = None,
    exp_into: np.ndarray | None = None,
    keep_tanh: bool = False,
    known: np.ndarray | None = None,
    shift: bool = False,
) -> list[_S]:
    """Run ``body(state, scratch, tile, e, inv, tanh)`` on every tile's exponentials.

    Parameters
    ----------
    problem
        From :func:`prepare`.
    body
        Receives the thread's ``state`` (from ``make_state``) and :class:`Scratch` (with
        ``shift``, buffer 0 holds the logits, which may be overwritten, and buffer 1 holds E;
        otherwise buffer 0 holds E unless ``exp_into`` is given, and buffer 1 is free), the
        tile, its unnormalised
        exponentials ``e`` (entries, rows, w), ``inv`` = 1/rowsum (entries, rows, 1; 0 for
        fully masked rows) and, with ``keep_tanh`` under soft-cap, the tanh values. ``e``
        covers the first w = :func:`visible_keys` keys: n_k, or fewer under a causal mask,
        whose later keys have weight 0 in every row of the tile.
    make_state
        Returns a new per-thread state (e.g. partial sums); the states are returned.
    work
        Multiply-adds of the whole call, which decides whether threads pay off.
    logits, exp_into
        Optional (B, n_q, n_k) arrays that receive the masked logits and the exponentials (the
        weights path); by default both live in the scratch buffer.
    keep_tanh
        Soft-cap only: pass tanh of the scaled logits to ``body`` (the backward pass needs it).
    known
        The (B, n_q, n_k) softmax weights, when a caller already has them (the backward pass
        given the forward's weights): each tile passes its block, read-only, as ``e`` with
        ``inv`` = 1, and no logits or exponentials are computed. Not with ``keep_tanh``.
    shift
        Always subtract each row's maximum before ``exp`` (see
        :func:`~engine.core.softmax.exp_shifted_rows`): every row's largest exponential is then
        exactly 1, which statistics of the weights rely on. By default the shift is skipped
        when the row sums prove it unneeded. The logits' buffer keeps the unshifted logits.
    """

    if problem.single:
        # One tile (small problems): no thread pool, no closures; their cost shows in calls of
        # a few microseconds.
        scratch, user = Scratch(problem), make_state()
        tile = problem.tiles[0]
        try:
            body(user, scratch, tile, *_tile_exponentials(problem, scratch, tile, logits,
                                                          exp_into, keep_tanh, known, shift))
        finally:
            scratch.release()
        return [user]

    scratches: list[Scratch] = []  # every thread's, also those of a thread that failed

    def make() -> tuple[Scratch, _S]:
        scratch = Scratch(problem)
        scratches.append(scratch)
        return scratch, make_state()

    def run(state: tuple[Scratch, _S], tile: Tile) -> None:
        scratch, user = state
        body(user, scratch, tile, *_tile_exponentials(problem, scratch, tile, logits, exp_into,
                                                      keep_tanh, known, shift))

    try:
        # run_tiles returns (or raises) only after every thread has finished.
        return [user for _, user in run_tiles(run, problem.tiles, work, make)]
    finally:
        for scratch in scratches:
            scratch.release()


def _tile_exponentials(
    problem: TiledProblem, scratch: Scratch, tile: Tile, logits: np.ndarray | None,
    exp_into: np.ndarray | None, keep_tanh: bool, known: np.ndarray | None, shift: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A tile's exponentials E, 1/rowsum and soft-cap's tanh: see :func:`each_tile`."""
    b0, b1, r0, r1 = tile
    if problem.single:
        # The whole problem: every key is visible, and the blocks are the arrays themselves.
        if known is not None:
            return known, np.ones((b1, r1, 1), dtype=known.dtype), None
        shape = (b1, r1, problem.plan.n_k)
        lg = scratch.take(0, shape) if logits is None else logits
        e = _exp_buffer(scratch, shape, lg, logits, shift) if exp_into is None else exp_into
    else:
        keys = visible_keys(problem.plan, r1)
        if known is not None:
            # The later keys' weights are 0 already; the block is the caller's, so not written.
            block = known[b0:b1, r0:r1, :keys]
            return block, np.ones((b1 - b0, r1 - r0, 1), dtype=block.dtype), None
        shape = (b1 - b0, r1 - r0, keys)
        lg = (scratch.take(0, shape) if logits is None
              else _visible(logits[b0:b1, r0:r1], keys, -np.inf))
        e = (_exp_buffer(scratch, shape, lg, logits, shift) if exp_into is None
             else _visible(exp_into[b0:b1, r0:r1], keys, 0.0))
    # Overflow of q·k or of exp is not a warning: exp_rows raises it as a ValueError.
    with np.errstate(over="ignore", invalid="ignore"):
        tanh = write_tile_logits(problem, tile, lg, keep_tanh)
        if shift:
            inv = exp_shifted_rows(lg, e)
        elif e is not lg:
            inv = exp_rows(lg, e)
        else:
            # In place: exp is tried first, unless an earlier tile of this thread needed the
            # shift. When the proof fails the logits are gone: they are written again, and
            # the thread's later tiles find their maxima first.
            tried = None if scratch.needs_maxima else try_exp_unshifted(lg, lg)
            if tried is not None:
                inv = tried
            else:
                if not scratch.needs_maxima:
                    scratch.needs_maxima = True
                    tanh = write_tile_logits(problem, tile, lg, keep_tanh)
                inv = exp_rows_by_maxima(lg, lg)
    return e, inv, tanh


def _exp_buffer(
    scratch: Scratch, shape: tuple[int, ...], lg: np.ndarray, logits: np.ndarray | None,
    shift: bool,
) -> np.ndarray:
    """Where a tile's exponentials go: over its logits when nobody reads those afterwards.

    One buffer instead of two leaves more of a thread's cache to the operands' blocks (in
    paired runs an output-only (8, 256, 64) call took 4 % less time; other sizes were the same
    within the noise). The logits are kept when the caller asked for them or when ``shift`` is
    set (statistics read them after the exponentials).
    """
    if logits is None and not shift:
        return lg
    return scratch.take(1, shape)


def _visible(block: np.ndarray, keys: int, rest: float) -> np.ndarray:
    """``block[..., :keys]``, after filling the keys no row of it may see with ``rest``."""
    if keys == block.shape[-1]:
        return block
    block[..., keys:] = rest
    return block[..., :keys]


# Tiles of at most this many entries are normalised before the product, which cannot
# overflow: a copy of E that small costs less than the floating-point error state (1.5 µs).
_NORMALISE_FIRST = 4096


def _scaled_product(
    e: np.ndarray, inv: np.ndarray, values: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """``out`` = (E·V)·inv: the softmax's output with 1/rowsum applied to rows × d_v entries.

    E·V can overflow where the normalised product would not (values near the dtype's limit:
    before the scaling, E·V may be up to n_k·e^30 times larger); such a tile is redone with E
    normalised first, as the weights path computes it; so is every small tile. ``e`` is left
    unchanged: the backward pass goes on using E, and it may be the caller's weights.
    """
    if e.size <= _NORMALISE_FIRST:
        return np.matmul(e * inv, values, out=out)
    try:
        with np.errstate(over="raise"):
            np.matmul(e, values, out=out)
    except FloatingPointError:
        return np.matmul(e * inv, values, out=out)
    out *= inv
    return out


def forward(
    problem: TiledProblem,
    output: np.ndarray,
    *,
    logits: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> None:
    """Write ``softmax(logits) @ v`` into the (B, n_q, d_v) ``output``.

    With ``logits`` and ``weights`` ((B, n_q, n_k) arrays) both are filled, the weights
    normalised before the product; without them only tile-sized scratch is used and 1/rowsum
    scales the output rows instead.
    """
    v = problem.v
    assert v is not None
    with_weights = weights is not None

    n_k = problem.plan.n_k

    def body(_: Any, __: Scratch, tile: Tile, e: np.ndarray, inv: np.ndarray, ___: Any) -> None:
        if problem.single:
            out, values = output, v
        else:
            b0, b1, r0, r1 = tile
            out = output[b0:b1, r0:r1]
            keys = e.shape[-1]
            values = v[b0:b1] if keys == n_k else v[b0:b1, :keys]
        if with_weights:
            e *= inv
            np.matmul(e, values, out=out)
        else:
            _scaled_product(e, inv, values, out)

    plan = problem.plan
    each_tile(
        problem, body, lambda: None, work=plan.n_scores * (plan.d_k + v.shape[-1]),
        logits=logits, exp_into=weights,
    )


def backward(
    problem: TiledProblem,
    grad_output: np.ndarray,
    grad_qs: np.ndarray,
    output: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gradients with respect to the scaled operands; returns (grad_ks, grad_v).

    ``grad_output`` is the (B, n_q, d_v) output gradient G; ∂/∂qs is written into the
    (B, n_q, d_k) ``grad_qs``. For soft-cap the results lack the factor cap of the tanh
    derivative (applied by the caller to n×d matrices). ``output``, the forward's (B, n_q, d_v)
    output if known, saves recomputing E·V; ``weights``, its (B, n_q, n_k) weights if known
    (not for soft-cap, whose derivative needs the logits), save recomputing the logits and
    their exponentials: the tiles then use E = the weights and 1/rowsum = 1.
    """
    v = problem.v
    assert v is not None
    plan = problem.plan
    size, d_v = problem.batch_size, v.shape[-1]
    qs, ks, g = problem.qs, problem.ks, grad_output
    v_t = v.swapaxes(-1, -2)
    whole_rows = all(r0 == 0 and r1 == plan.n_q for _, _, r0, r1 in problem.tiles)
    free = 0 if weights is not None else 1

    def partial_sums() -> tuple[np.ndarray, np.ndarray]:
        return (np.zeros((size, plan.n_k, plan.d_k), plan.dtype),
                np.zeros((size, plan.n_k, d_v), plan.dtype))

    def body(
        acc: tuple[np.ndarray, np.ndarray], scratch: Scratch, tile: Tile, e: np.ndarray,
        inv: np.ndarray, tanh: np.ndarray | None,
    ) -> None:
        b0, b1, r0, r1 = tile
        # Under a causal mask the tile covers the keys 0:w its rows may see; the others get
        # no gradient from these rows.
        keys = slice(0, e.shape[-1])
        # With G' = G·inv (per row) every normalisation happens on n×d matrices:
        # O = (E V)·inv, dV = Eᵀ G', dL = E∘(G' Vᵀ − δ'), δ' = rowsum(G'∘O) = inv·rowsum(G∘O).
        g_s = g[b0:b1, r0:r1] * inv
        if output is None:
            out = _scaled_product(e, inv, v[b0:b1, keys], np.empty_like(g_s))
        else:
            out = output[b0:b1, r0:r1]
        delta = np.einsum("...i,...i->...", g_s, out)[..., None]
        # A free buffer: E is in buffer 0 unless the caller gave the weights.
        d = np.matmul(g_s, v_t[b0:b1, :, keys], out=scratch.take(free, e.shape))
        d -= delta
        d *= e
        if tanh is not None:
            # ∂ cap·tanh(z) / ∂z = cap·(1 − tanh²); the factor cap is applied to n×d results.
            np.square(tanh, out=tanh)
            np.subtract(plan.dtype.type(1.0), tanh, out=tanh)
            d *= tanh
        np.matmul(d, ks[b0:b1, keys], out=grad_qs[b0:b1, r0:r1])
        e_t, d_t = e.swapaxes(-1, -2), d.swapaxes(-1, -2)
        if whole_rows:
            # Each entry's keys get all their rows from this one tile (which then sees every
            # key): write, don't add.
            np.matmul(e_t, g_s, out=acc[1][b0:b1])
            np.matmul(d_t, qs[b0:b1, r0:r1], out=acc[0][b0:b1])
        else:
            acc[1][b0:b1, keys] += np.matmul(e_t, g_s)
            acc[0][b0:b1, keys] += np.matmul(d_t, qs[b0:b1, r0:r1])

    softcap = problem.ops.cap is not None
    assert weights is None or not softcap, "soft-cap's backward needs the logits"
    parts = each_tile(
        problem, body, partial_sums, work=2 * plan.n_scores * (plan.d_k + d_v),
        keep_tanh=softcap, known=weights,
    )
    grad_ks, grad_v = parts[0]
    for gk, gv in parts[1:]:
        grad_ks += gk
        grad_v += gv
    return grad_ks, grad_v
