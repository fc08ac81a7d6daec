"""Benchmark the attention engine against torch's best CPU path and the unavoidable matmuls.

Run from the repository root (torch is optional; without it the torch columns say so)::

    python benchmarks/bench_engine.py [--repeats 9] [--threads 2]

One run prints a table of ratios, each measured in the same run (medians, float32, rule sqrt,
no mask, the same thread count for numpy and torch):

``fwd, no weights``  ``scaled_dot_product_attention(..., need_weights=False)`` (output only)
                     against the faster of torch ``scaled_dot_product_attention`` (SDPA) and
                     torch eager ``softmax(q @ kᵀ / √d) @ v``
``fwd, weights``     the default call (returns weights and logits) against torch eager, which
                     also materialises the weights
``fwd+bwd``          the default forward plus :func:`scaled_dot_product_attention_backward`
                     given its output and weights (nothing recomputed), against the faster of
                     torch SDPA and eager autograd (forward + ``backward``)
``causal, no wts``   the output-only call with ``mask="causal"`` against the faster of torch
                     SDPA (``is_causal=True``) and eager with a boolean mask
``tiny call``        one call at (1, 16, 16): the per-call overhead, in µs; its ``/floor`` is
                     against :func:`tiny_floor`; ``tiny, trusted`` is the default call with
                     ``check_finite=False``, against the floor without its check

``/mm`` is engine time over the time of the matrix products the computation cannot avoid (QKᵀ
and P·V forward; the backward adds Pᵀ·G, G·Vᵀ, dS·K and dSᵀ·Q).

``floor`` is the least any numpy implementation pays: in cache-sized row tiles over the threads
(one BLAS thread each), the products Q·Kᵀ and E·V and one float32 ``numpy.exp`` per logit, and
nothing else (no row maxima, sums or normalisation, no checks); with the backward it adds the
products Pᵀ·G, G·Vᵀ, dS·K and dSᵀ·Q. ``/floor`` is the engine over it, and ``floor/torch`` that
floor over torch's best time: above 1, no numpy code reaches torch at that size, because numpy
cannot fuse the exponentials into the products as torch's kernels do.

Shapes are (batch·heads, n, d). Times depend on the machine and its load (the load average is
printed alongside): only ratios from one run mean something.

A machine's speed drifts, so the samples of every timed function of a case are interleaved
(sample 1 of each, then sample 2 of each, ...): a drift slows all of them alike and the ratios
keep. Each sample lasts at least 20 ms and follows 10 ms of untimed calls of the same function,
so that the other library's idle worker threads have stopped spinning when the timing starts
(OpenBLAS's spin is shortened as in ``main.py``). numpy functions run with BLAS limited to
``--threads``; torch functions run outside that limit, since threadpoolctl would also reach the
BLAS inside torch.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import math
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# The app's OpenBLAS spin, set before numpy loads OpenBLAS (which reads it only then): the
# engine as the app runs it. Importing main sets it too; saying so here keeps it visible.
from main import OPENBLAS_SPIN

os.environ.setdefault(*OPENBLAS_SPIN)

import numpy as np

from engine.core import attention, tiled
from engine.core.memory import tune_allocator
from engine.core.plan import make_plan
from engine.core.scaling import Rule
from engine.core.threads import limit_blas_threads

FORWARD_SIZES = ((1, 1024, 128), (8, 256, 64), (64, 128, 64), (1, 2048, 64))
BACKWARD_SIZES = ((1, 512, 64), (8, 256, 64))
CAUSAL_SIZES = ((1, 1024, 64), (1, 2048, 64))
TINY = (1, 16, 16)
#: Each sample times calls for at least this long (seconds).
MIN_SAMPLE = 20e-3
#: Untimed calls before each sample, for at least this long (seconds): the other library's
#: idle threads stop spinning meanwhile, and the CPU is busy, not waking from a pause.
SAMPLE_WARMUP = 10e-3


STAT: Callable[[list[float]], float] = statistics.median

#: A timed function and whether it is numpy's (run with BLAS limited) or torch's.
Timed = dict[str, tuple[Callable[[], object], bool]]


def interleaved_times(fns: Timed, repeats: int, threads: int) -> dict[str, float]:
    """Median (or ``--stat min``) seconds per call of every function, samples interleaved.

    Each function is first called for 0.1 s (thread pools start, caches fill), which sets its
    calls per sample so that a sample lasts at least :data:`MIN_SAMPLE`. Then ``repeats``
    times, one sample of each function in turn, each after :data:`SAMPLE_WARMUP` of untimed
    calls of the same function.
    """

    def limit(numpy_side: bool) -> contextlib.AbstractContextManager[object]:
        return limit_blas_threads(threads) if numpy_side else contextlib.nullcontext()

    def call_for(fn: Callable[[], object], seconds: float) -> float:
        """Call ``fn`` at least twice and for ``seconds``; return the time per call."""
        start, calls = time.perf_counter(), 0
        while calls < 2 or time.perf_counter() - start < seconds:
            fn()
            calls += 1
        return (time.perf_counter() - start) / calls

    loops: dict[str, int] = {}
    for name, (fn, numpy_side) in fns.items():
        with limit(numpy_side):
            loops[name] = max(1, math.ceil(MIN_SAMPLE / max(call_for(fn, 0.1), 1e-7)))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, (fn, numpy_side) in fns.items():
            with limit(numpy_side):
                call_for(fn, SAMPLE_WARMUP)
                start = time.perf_counter()
                for _ in range(loops[name]):
                    fn()
                samples[name].append((time.perf_counter() - start) / loops[name])
    return {name: STAT(times) for name, times in samples.items()}


class Case:
    """float32 inputs of one (batch·heads, n, d) problem."""

    def __init__(self, shape: tuple[int, int, int], rng: np.random.Generator) -> None:
        self.shape = shape
        self.q, self.k, self.v, self.g = (
            rng.standard_normal(shape).astype(np.float32) for _ in range(4)
        )


def numpy_calls(case: Case, backward: bool, pool: concurrent.futures.Executor) -> Timed:
    """The engine's calls and the bare numpy work they cannot avoid (``mm_fwd``, ``mm_bwd``
    and ``floor``, the latter in the engine's tiles on the ``pool``), for one case."""
    q, k, v, g = case.q, case.k, case.v, case.g
    k_t, v_t = k.swapaxes(-1, -2), v.swapaxes(-1, -2)
    sdpa = attention.scaled_dot_product_attention

    def mm_fwd() -> None:
        np.matmul(np.matmul(q, k_t), v)

    def fwd_weights() -> None:
        sdpa(q, k, v, rule="sqrt")

    def fwd_out() -> None:
        sdpa(q, k, v, rule="sqrt", need_weights=False)

    p_known = np.matmul(q, k_t)  # stands in for the forward's P, which the backward reuses

    def mm_bwd_least() -> None:
        np.matmul(p_known.swapaxes(-1, -2), g)
        dp = np.matmul(g, v_t)
        np.matmul(dp, k)
        np.matmul(dp.swapaxes(-1, -2), q)

    # The engine's own tiles for this call (its thread count decides them, as in the engine).
    problem = tiled.prepare(make_plan(q, k, v, rule=Rule("sqrt"), mask=None))
    tiles, tile_elements, n_k = problem.tiles, problem.tile_elements, k.shape[-2]
    floor_out = np.empty_like(q)
    scratch = threading.local()  # one logits buffer per pool thread, reused tile after tile

    def floor_tile(tile: tuple[int, int, int, int]) -> None:
        b0, b1, r0, r1 = tile
        if not hasattr(scratch, "buffer"):
            scratch.buffer = np.empty(tile_elements, np.float32)
        logits = scratch.buffer[: (b1 - b0) * (r1 - r0) * n_k].reshape(b1 - b0, r1 - r0, n_k)
        np.matmul(q[b0:b1, r0:r1], k_t[b0:b1], out=logits)
        np.exp(logits, out=logits)
        np.matmul(logits, v[b0:b1], out=floor_out[b0:b1, r0:r1])

    def floor_fwd() -> None:
        with limit_blas_threads(1):
            list(pool.map(floor_tile, tiles))

    def fwd_bwd() -> None:
        res = sdpa(q, k, v, rule="sqrt")
        attention.scaled_dot_product_attention_backward(q, k, v, g, rule="sqrt",
                                                        output=res.output, weights=res.weights)

    fns: Timed = {"mm_fwd": (mm_fwd, True), "weights": (fwd_weights, True),
                  "floor": (floor_fwd, True), "no_weights": (fwd_out, True)}
    if backward:
        fns["mm_bwd"] = (mm_bwd_least, True)
        fns["fwd_bwd"] = (fwd_bwd, True)
    return fns


def torch_calls(case: Case, threads: int, backward: bool, causal: bool = False) -> Timed:
    """torch SDPA and eager for one case, without and with autograd; empty without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return {}
    torch.set_num_threads(threads)
    q, k, v, g = (torch.from_numpy(a) for a in (case.q, case.k, case.v, case.g))
    scale = 1.0 / case.shape[-1] ** 0.5
    n = case.shape[-2]
    hidden = ~torch.ones(n, n, dtype=torch.bool).tril() if causal else None

    def eager(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor) -> torch.Tensor:
        logits = qq @ kk.transpose(-1, -2) * scale
        if hidden is not None:
            logits = logits.masked_fill(hidden, float("-inf"))
        return torch.softmax(logits, dim=-1) @ vv

    def no_grad(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> object:
            with torch.no_grad():
                return fn()

        return run

    def autograd(f: Callable[..., torch.Tensor]) -> Callable[[], None]:
        def run() -> None:
            qq, kk, vv = (t.clone().requires_grad_(True) for t in (q, k, v))
            f(qq, kk, vv).backward(g)

        return run

    fns: Timed = {
        "torch_sdpa": (no_grad(lambda: F.scaled_dot_product_attention(q, k, v,
                                                                      is_causal=causal)), False),
        "torch_eager": (no_grad(lambda: eager(q, k, v)), False),
    }
    if backward:
        fns["torch_sdpa_bwd"] = (autograd(F.scaled_dot_product_attention), False)
        fns["torch_eager_bwd"] = (autograd(eager), False)
    return fns


def causal_calls(case: Case, threads: int) -> Timed:
    """The engine's causal output-only call, and torch SDPA and eager if present."""
    return {"engine": (lambda: attention.scaled_dot_product_attention(
        case.q, case.k, case.v, rule="sqrt", mask="causal", need_weights=False), True),
        **torch_calls(case, threads, False, causal=True)}


def tiny_floor(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, checked: bool = True
) -> np.ndarray:
    """The numpy calls any checked float32 attention with weights makes, and nothing else:
    the least a numpy implementation pays per tiny call, so that the engine's excess over it
    is its own overhead (validation, plan, tiles, result)."""
    if checked:
        joint = np.concatenate((q, k, v), axis=None)
        if np.count_nonzero(np.isfinite(joint)) != joint.size:
            raise ValueError("inputs are not finite")
    with np.errstate(over="ignore", invalid="ignore"):
        weights = np.matmul(q * np.float32(scale), k.swapaxes(-1, -2))
        np.exp(weights, out=weights)
        sums = np.add.reduce(weights, axis=-1, keepdims=True)
    if not np.isfinite(sums.max()):
        raise ValueError("exp overflowed")
    weights *= np.reciprocal(sums, out=sums)
    return np.matmul(weights, v)


def faults_per_call(case: Case, calls: int = 20) -> float | None:
    """Minor page faults per default call (weights returned), after warm-up; None off Unix.

    Counted for the whole process, so nothing else may run meanwhile: fresh multi-megabyte
    results that the allocator returns to the system fault in again on every call.
    """
    try:
        import resource
    except ImportError:
        return None
    for _ in range(3):
        attention.scaled_dot_product_attention(case.q, case.k, case.v)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(calls):
        attention.scaled_dot_product_attention(case.q, case.k, case.v)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / calls


def _ratio(a: float | None, b: float | None) -> str:
    return "   n/a" if a is None or b is None else f"{a / b:6.2f}"


def _row(path: str, shape: tuple[int, ...], engine: float, best: float | None,
         sdpa: float | None, eager: float | None, mm: float, floor: float,
         floor_ref: float | None, digits: int = 3) -> str:
    """One line of the table: the engine's ms and its ratios (see the module docstring)."""
    return (f"{path:<16} {'x'.join(map(str, shape)):<15} {engine * 1e3:9.{digits}f} "
            f"{_ratio(engine, best)} {_ratio(engine, sdpa)} {_ratio(engine, eager)} "
            f"{_ratio(engine, mm)} {_ratio(engine, floor)} {_ratio(floor, floor_ref):>11}")


def _split(timed: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
    """The engine's times and torch's (named without their ``torch_`` prefix)."""
    torch = {name.removeprefix("torch_"): x for name, x in timed.items()
             if name.startswith("torch_")}
    return {name: x for name, x in timed.items() if not name.startswith("torch_")}, torch


def run(repeats: int, threads: int) -> None:
    rng = np.random.default_rng(0)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    stat = "minima" if STAT is min else "medians"
    print(f"float32, rule sqrt, no mask, {threads} threads, {stat} of {repeats} samples")
    header = (f"{'path':<16} {'shape':<15} {'engine ms':>9} {'/torch':>6} {'/SDPA':>6} "
              f"{'/eager':>6} {'/mm':>6} {'/floor':>6} {'floor/torch':>11}")
    print(header)
    print("-" * len(header))
    have_torch = True
    shapes = list(dict.fromkeys((*FORWARD_SIZES, *BACKWARD_SIZES)))
    rows: dict[str, list[str]] = {"fwd, no weights": [], "fwd, weights": [], "fwd+bwd": []}
    pool = concurrent.futures.ThreadPoolExecutor(threads)
    for shape in shapes:
        case = Case(shape, rng)
        backward = shape in BACKWARD_SIZES
        timed = interleaved_times(
            {**numpy_calls(case, backward, pool), **torch_calls(case, threads, backward)},
            repeats, threads)
        e, t = _split(timed)
        if backward:
            e["mm_fwd_bwd"] = e["mm_fwd"] + e["mm_bwd"]
            e["floor_bwd"] = e["floor"] + e["mm_bwd"]
        have_torch = have_torch and bool(t)
        sdpa, eager = t.get("sdpa"), t.get("eager")
        best = None if not t else min(t["sdpa"], t["eager"])
        if shape in FORWARD_SIZES:
            rows["fwd, no weights"].append(_row("fwd, no weights", shape, e["no_weights"], best,
                                                sdpa, eager, e["mm_fwd"], e["floor"], best))
            rows["fwd, weights"].append(_row("fwd, weights", shape, e["weights"], eager, sdpa,
                                             eager, e["mm_fwd"], e["floor"], eager))
        if backward:
            best_b = None if not t else min(t["sdpa_bwd"], t["eager_bwd"])
            rows["fwd+bwd"].append(_row("fwd+bwd", shape, e["fwd_bwd"], best_b, t.get("sdpa_bwd"),
                                        t.get("eager_bwd"), e["mm_fwd_bwd"], e["floor_bwd"],
                                        best_b))
    for lines in rows.values():
        print("\n".join(lines))
    for shape in CAUSAL_SIZES:
        c = interleaved_times(causal_calls(Case(shape, rng), threads), repeats, threads)
        best = min(c["torch_sdpa"], c["torch_eager"]) if "torch_sdpa" in c else None
        label = "x".join(map(str, shape))
        print(f"{'causal, no wts':<16} {label:<15} {c['engine'] * 1e3:9.3f} "
              f"{_ratio(c['engine'], best)} {_ratio(c['engine'], c.get('torch_sdpa'))} "
              f"{_ratio(c['engine'], c.get('torch_eager'))}")
    for shape in FORWARD_SIZES:
        faults = faults_per_call(Case(shape, rng))
        if faults is not None:
            label = "x".join(map(str, shape))
            print(f"{'page faults':<16} {label:<15} {faults:9.1f} per default call")
    case = Case(TINY, rng)
    scale = TINY[-1] ** -0.5
    fns = numpy_calls(case, False, pool)
    del fns["floor"]  # a tiny call's floor is tiny_floor, with the checks of any call
    fns["floor_checked"] = (lambda: tiny_floor(case.q, case.k, case.v, scale), True)
    fns["trusted"] = (lambda: attention.scaled_dot_product_attention(
        case.q, case.k, case.v, rule="sqrt", check_finite=False), True)
    fns["floor_unchecked"] = (
        lambda: tiny_floor(case.q, case.k, case.v, scale, checked=False), True)
    timed = interleaved_times({**fns, **torch_calls(case, threads, False)}, repeats, threads)
    pool.shutdown()
    e, t = _split(timed)
    for name, key, which in (("tiny, weights", "weights", "checked"),
                             ("tiny, no weights", "no_weights", "checked"),
                             ("tiny, trusted", "trusted", "unchecked")):
        floor, eager = e[f"floor_{which}"], t.get("eager")
        print(_row(name, TINY, e[key], eager, t.get("sdpa"), eager, e["mm_fwd"], floor, eager,
                   digits=4)
              + f"   ({e[key] * 1e6:.1f} µs per call; matmuls alone "
                f"{e['mm_fwd'] * 1e6:.1f} µs, tiny floor {floor * 1e6:.1f} µs)")
    print()
    if have_torch:
        print("/torch: fwd, no weights and fwd+bwd against min(SDPA, eager); fwd, weights and")
        print("tiny calls against eager (which also materialises the weights). floor/torch")
        print("above 1: even the least numpy work (products + one exp per logit) is slower.")
    else:
        print("torch is not installed: the torch columns are n/a.")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="samples per median (>= 5)")
    parser.add_argument("--threads", type=int, default=2, help="threads for numpy and torch")
    parser.add_argument("--stat", choices=("median", "min"), default="median",
                        help="statistic of the samples; min resists other processes on a "
                        "loaded machine")
    args = parser.parse_args(argv)
    tune_allocator()  # malloc's thresholds as main.py sets them
    global STAT
    STAT = min if args.stat == "min" else statistics.median
    run(max(5, args.repeats), args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
