"""Attention in row tiles: the one kernel the forward and backward passes
(:mod:`engine.core.passes`) and statistics share.

A tile is a block of query rows of one or more (batch, head) entries, ``(b0, b1, r0, r1)``
over the flattened leading dimensions, sized to stay in cache (:data:`TILE_BYTES`).
:func:`each_tile` writes a tile's masked logits, turns them into unnormalised exponentials E
and the reciprocal row sums ``inv`` (the softmax is ``E·inv``), and hands them to a caller's
function. Unless the caller asks for the full logits and weights, E lives in a per-thread
scratch buffer reused tile after tile: no n×n array is written, memory is O(tile·n_k) per
thread. Why it is fast:

* ``exp`` is tried before the row maxima are found, and that pass is skipped whenever the row
  sums prove no shift was needed (:func:`engine.core.softmax.try_exp_unshifted`); the
  exponentials overwrite the logits unless the caller reads them;
* under a causal mask a tile computes only the keys its rows may see (:func:`visible_keys`),
  about half the products and exponentials of a long sequence;
* tiles are spread over threads (:func:`engine.core.parallel.run_tiles`), each with BLAS pinned
  to one thread, so the elementwise passes run on every core too.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

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

__all__ = ["TILE_BYTES", "Scratch", "Tile", "TiledProblem", "each_tile", "prepare",
           "scratch_bytes", "visible_keys", "write_tile_logits"]

#: Bytes of one tile of logits (and of its exponentials): smaller tiles give the matrix
#: products too few rows to run at full speed, larger ones fall out of cache.
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
    single: bool  # one tile spanning the whole problem: its blocks are the arrays themselves


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
        # A tile for every thread, even when the whole problem fits one tile.
        rows = min(rows, max(1, n_q // math.ceil(threads / entries)))
    if rows >= n_q:
        # Whole (batch, head) entries per tile: one batched matmul, no accumulation over rows.
        per = max(1, rows // n_q)
        if parallel:
            # Leave a few tiles per thread, so the threads share the work evenly; a serial
            # problem keeps one tile (each tile pays the kernel's Python cost).
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


# Tile buffers outlive the call that allocated them: a fresh one may come from mmap (glibc's
# threshold moves with the process's history of frees), and then every page faults on first
# touch. Below 64 KiB malloc's heap serves them anyway; above 2 tiles (a single row of more
# keys than a tile holds) they are rare and not kept.
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
    """Per-thread tile buffers, taken on first use, reused for every tile and returned to the
    pool by :func:`each_tile` when the call ends."""

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
    """Run ``body(state, scratch, tile, e, inv, tanh)`` on every tile of ``problem`` (from
    :func:`prepare`); return every thread's ``state`` (from ``make_state``).

    ``body`` gets the tile's exponentials ``e`` (entries, rows, w) over the first
    w = :func:`visible_keys` keys (the later ones have weight 0 in every row of the tile),
    ``inv`` = 1/rowsum (entries, rows, 1; 0 for fully masked rows) and, with ``keep_tanh``
    under soft-cap, the tanh values. Its :class:`Scratch` holds, with ``shift``, the logits
    (may be overwritten) in buffer 0 and E in buffer 1; otherwise E in buffer 0 unless
    ``exp_into`` is given, and buffer 1 is free. ``work`` (multiply-adds of the call) decides
    whether threads pay off. ``logits`` and ``exp_into`` are optional (B, n_q, n_k) arrays that
    receive the masked logits and the exponentials. ``known``: the (B, n_q, n_k) weights when
    the caller has them: each tile passes its block, read-only, as ``e`` with ``inv`` = 1 (not
    with ``keep_tanh``). ``shift``: always subtract each row's maximum before ``exp``, so every
    row's largest exponential is exactly 1 (statistics rely on it); the logits stay unshifted.
    """
    if problem.single:
        # One tile (small problems): no thread pool, no closures.
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
    """Where a tile's exponentials go: over its logits (one buffer leaves more cache to the
    operands), unless the caller reads the logits or ``shift`` is set (statistics read them)."""
    if logits is None and not shift:
        return lg
    return scratch.take(1, shape)


def _visible(block: np.ndarray, keys: int, rest: float) -> np.ndarray:
    """``block[..., :keys]``, after filling the keys no row of it may see with ``rest``."""
    if keys == block.shape[-1]:
        return block
    block[..., keys:] = rest
    return block[..., :keys]
