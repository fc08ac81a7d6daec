"""The forward and backward passes of attention over the tiles of :mod:`engine.core.tiled`.

Without weights, 1/rowsum is applied to the (rows, d_v) output, not to the (rows, n_k) tile;
the backward pass normalises on n×d matrices too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.core.tiled import Scratch, Tile, TiledProblem, each_tile

__all__ = ["backward", "forward"]

# Tiles of at most this many entries are normalised before the product, which cannot
# overflow: a copy of E that small costs less than setting the floating-point error state.
_NORMALISE_FIRST = 4096


def _scaled_product(
    e: np.ndarray, inv: np.ndarray, values: np.ndarray, out: np.ndarray
) -> np.ndarray:
    """``out`` = (E·V)·inv: the softmax's output with 1/rowsum applied to rows × d_v entries.

    E·V can overflow where the normalised product would not (values near the dtype's limit):
    such a tile is redone with E normalised first, as the weights path computes it; so is
    every small tile. ``e`` is left unchanged (the backward pass goes on using it).
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
