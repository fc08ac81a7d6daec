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
                     SDPA (``is_causal=True``) and eager with a boolean mask; no goal, but
                     the length lab's long sequences are causal
``tiny call``        one call at (1, 16, 16): the per-call overhead (validation, plan, checks,
                     dispatch), in µs, against the bare matmuls and torch eager; its
                     ``/floor`` is against :func:`tiny_floor`, the numpy calls that any
                     attention with a finiteness check and weights makes at that size;
                     ``tiny, trusted`` is the default call with ``check_finite=False`` (for
                     callers whose inputs are finite by construction), against the floor
                     without its check

``/mm`` is engine time over the time of the matrix products the computation cannot avoid (QKᵀ
and P·V forward; the backward adds Pᵀ·G, G·Vᵀ, dS·K and dSᵀ·Q).

``floor`` is the least any numpy implementation pays: in cache-sized row tiles over the threads
(one BLAS thread each), the products Q·Kᵀ and E·V and one float32 ``numpy.exp`` per logit, and
nothing else (no row maxima, sums or normalisation, no checks); with the backward it adds the
products Pᵀ·G, G·Vᵀ, dS·K and dSᵀ·Q. ``/floor`` is the engine over it, and ``floor/torch`` that
floor over torch's best time: above 1, no numpy code reaches torch at that size, because numpy
cannot fuse the exponentials into the products as torch's kernels do.

Shapes are (batch·heads, n, d). Times depend on the machine and its load (print ``uptime``
alongside): only ratios from one run mean something, and nothing here asserts absolute times.

The machine's speed drifts (on the 2-core development VM, by up to 2× within seconds), so the
samples of every timed function of a case are interleaved: sample 1 of each, then sample 2 of
each, and so on; a drift then slows all of them alike and the ratios keep. Each sample lasts
at least 20 ms and follows 10 ms of untimed calls of the same function, so that the other
library's idle worker threads no longer spin when the timing starts: OpenBLAS's spin is
shortened as in ``main.py`` (``OPENBLAS_THREAD_TIMEOUT``, set before numpy loads), and torch's
OpenMP threads stopped spinning within 5 ms in measurements. (Pauses between samples instead
made the first call after each pause up to twice as slow.) numpy functions run with BLAS
limited to ``--threads``; torch functions run outside that limit (threadpoolctl also reaches
the BLAS inside torch, whose calls then ran up to 80× slower).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import inspect
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
_HAS_NEED_WEIGHTS = (
    "need_weights" in inspect.signature(attention.scaled_dot_product_attention).parameters
)
# Older engines (for before/after runs) recompute the forward in the backward.
_BACKWARD_TAKES_WEIGHTS = (
    "weights"
    in inspect.signature(attention.scaled_dot_product_attention_backward).parameters
)
_HAS_CHECK_FINITE = (
    "check_finite" in inspect.signature(attention.scaled_dot_product_attention).parameters
)


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


def numpy_calls(
    case: Case, threads: int, backward: bool, pool: concurrent.futures.Executor
) -> Timed:
    """The engine's calls and the bare numpy work they cannot avoid, for one case.

    ``mm_fwd`` / ``mm_bwd`` are the matrix products. ``floor`` is the least forward any numpy
    code computes: in the engine's tiles spread over the ``pool``'s threads (one BLAS thread
    each, as the engine runs), Q·Kᵀ, one exp per logit, and the product with V; no maximum,
    no row sums, no normalisation, no checks.
    """
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
    problem = tiled.prepare(make_plan(q, k, v, rule="sqrt", mask=None, temperature=None,
                                      gain=None, cap=None))
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
        if _BACKWARD_TAKES_WEIGHTS:
            res = sdpa(q, k, v, rule="sqrt")
            attention.scaled_dot_product_attention_backward(
                q, k, v, g, rule="sqrt", output=res.output, weights=res.weights
            )
        elif _HAS_NEED_WEIGHTS:
            out = sdpa(q, k, v, rule="sqrt", need_weights=False).output
            attention.scaled_dot_product_attention_backward(q, k, v, g, rule="sqrt", output=out)
        else:
            sdpa(q, k, v, rule="sqrt")
            attention.scaled_dot_product_attention_backward(q, k, v, g, rule="sqrt")

    fns: Timed = {"mm_fwd": (mm_fwd, True), "weights": (fwd_weights, True),
                  "floor": (floor_fwd, True)}
    if _HAS_NEED_WEIGHTS:
        fns["no_weights"] = (fwd_out, True)
    if backward:
        fns["mm_bwd"] = (mm_bwd_least, True)
        fns["fwd_bwd"] = (fwd_bwd, True)
    return fns


def torch_calls(case: Case, threads: int, backward: bool) -> Timed:
    """torch SDPA and eager for one case, without and with autograd; empty without torch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return {}
    torch.set_num_threads(threads)
    q, k, v, g = (torch.from_numpy(a) for a in (case.q, case.k, case.v, case.g))
    scale = 1.0 / case.shape[-1] ** 0.5

    def eager(qq: torch.Tensor, kk: torch.Tensor, vv: torch.Tensor) -> torch.Tensor:
        return torch.softmax(qq @ kk.transpose(-1, -2) * scale, dim=-1) @ vv

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
        "torch_sdpa": (no_grad(lambda: F.scaled_dot_product_attention(q, k, v)), False),
        "torch_eager": (no_grad(lambda: eager(q, k, v)), False),
    }
    if backward:
        fns["torch_sdpa_bwd"] = (autograd(F.scaled_dot_product_attention), False)
        fns["torch_eager_bwd"] = (autograd(eager), False)
    return fns


def causal_calls(case: Case) -> Timed:
    """The engine's causal output-only call, and torch SDPA and eager if present."""
    q, k, v = case.q, case.k, case.v
    fns: Timed = {"engine": (lambda: attention.scaled_dot_product_attention(
        q, k, v, rule="sqrt", mask="causal", need_weights=False), True)}
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return fns
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    n = case.shape[-2]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    scale = 1.0 / case.shape[-1] ** 0.5

    def sdpa() -> object:
        with torch.no_grad():
            return F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)

    def eager() -> object:
        with torch.no_grad():
            logits = (tq @ tk.transpose(-1, -2) * scale).masked_fill(~allowed, float("-inf"))
            return torch.softmax(logits, dim=-1) @ tv

    fns["torch_sdpa"] = (sdpa, False)
    fns["torch_eager"] = (eager, False)
    return fns


def tiny_floor(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, checked: bool = True
) -> np.ndarray:
    """The numpy calls any checked float32 attention with weights makes, and nothing else.

    One finiteness check of the inputs (unless not ``checked``), the scaled products, the
    exponentials with their row sums and a test that they did not overflow, the normalised
    weights and their product with v. At (1, 16, 16) each call costs about a microsecond, so
    this is the least a numpy implementation pays per call; the engine's excess over it is its
    own overhead (validation of shapes, rules and parameters, the plan, the tiles, the result
    object).
    """
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

    Counted for the whole process, so nothing else may run meanwhile. Fresh multi-megabyte
    results that the allocator returned to the system and faulted in again on every call cost
    the default path half its speed before its two n×n results shared one allocation.
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


def run(repeats: int, threads: int) -> None:
    rng = np.random.default_rng(0)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    stat = "minima" if STAT is min else "medians"
    print(f"float32, rule sqrt, no mask, {threads} threads, {stat} of {repeats} samples")
    header = (
        f"{'path':<16} {'shape':<15} {'engine ms':>9} {'/torch':>6} {'/SDPA':>6} "
        f"{'/eager':>6} {'/mm':>6} {'/floor':>6} {'floor/torch':>11}"
    )
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
            {**numpy_calls(case, threads, backward, pool), **torch_calls(case, threads, backward)},
            repeats, threads)
        e = {name: x for name, x in timed.items() if not name.startswith("torch_")}
        t = {name.removeprefix("torch_"): x for name, x in timed.items()
             if name.startswith("torch_")}
        if backward:
            e["mm_fwd_bwd"] = e["mm_fwd"] + e["mm_bwd"]
            e["floor_bwd"] = e["floor"] + e["mm_bwd"]
        have_torch = have_torch and bool(t)
        sdpa, eager = t.get("sdpa"), t.get("eager")
        best = None if not t else min(t["sdpa"], t["eager"])
        label = "x".join(map(str, shape))
        if shape in FORWARD_SIZES:
            if "no_weights" in e:
                nw = e["no_weights"]
                rows["fwd, no weights"].append(
                    f"{'fwd, no weights':<16} {label:<15} {nw * 1e3:9.3f} "
                    f"{_ratio(nw, best)} {_ratio(nw, sdpa)} {_ratio(nw, eager)} "
                    f"{_ratio(nw, e['mm_fwd'])} {_ratio(nw, e['floor'])} "
                    f"{_ratio(e['floor'], best):>11}"
                )
            else:
                rows["fwd, no weights"].append(
                    f"{'fwd, no weights':<16} {label:<15}  (need_weights=False not available)"
                )
            w = e["weights"]
            rows["fwd, weights"].append(
                f"{'fwd, weights':<16} {label:<15} {w * 1e3:9.3f} {_ratio(w, eager)} "
                f"{_ratio(w, sdpa)} {_ratio(w, eager)} {_ratio(w, e['mm_fwd'])} "
                f"{_ratio(w, e['floor'])} {_ratio(e['floor'], eager):>11}"
            )
        if backward:
            fb = e["fwd_bwd"]
            s_b, e_b = t.get("sdpa_bwd"), t.get("eager_bwd")
            best_b = None if not t else min(t["sdpa_bwd"], t["eager_bwd"])
            rows["fwd+bwd"].append(
                f"{'fwd+bwd':<16} {label:<15} {fb * 1e3:9.3f} {_ratio(fb, best_b)} "
                f"{_ratio(fb, s_b)} {_ratio(fb, e_b)} {_ratio(fb, e['mm_fwd_bwd'])} "
                f"{_ratio(fb, e['floor_bwd'])} {_ratio(e['floor_bwd'], best_b):>11}"
            )
    for lines in rows.values():
        print("\n".join(lines))
    for shape in CAUSAL_SIZES:
        c = interleaved_times(causal_calls(Case(shape, rng)), repeats, threads)
        best = min(c["torch_sdpa"], c["torch_eager"]) if "torch_sdpa" in c else None
        label = "x".join(map(str, shape))
        print(
            f"{'causal, no wts':<16} {label:<15} {c['engine'] * 1e3:9.3f} "
            f"{_ratio(c['engine'], best)} {_ratio(c['engine'], c.get('torch_sdpa'))} "
            f"{_ratio(c['engine'], c.get('torch_eager'))}"
        )
    for shape in FORWARD_SIZES:
        faults = faults_per_call(Case(shape, rng))
        if faults is not None:
            label = "x".join(map(str, shape))
            print(f"{'page faults':<16} {label:<15} {faults:9.1f} per default call")
    case = Case(TINY, rng)
    scale = TINY[-1] ** -0.5
    fns = numpy_calls(case, threads, False, pool)
    del fns["floor"]  # a tiny call's floor is tiny_floor, with the checks of any call
    fns["floor_checked"] = (lambda: tiny_floor(case.q, case.k, case.v, scale), True)
    if _HAS_CHECK_FINITE:
        fns["trusted"] = (lambda: attention.scaled_dot_product_attention(
            case.q, case.k, case.v, rule="sqrt", check_finite=False), True)
        fns["floor_unchecked"] = (
            lambda: tiny_floor(case.q, case.k, case.v, scale, checked=False), True)
    timed = interleaved_times({**fns, **torch_calls(case, threads, False)}, repeats, threads)
    pool.shutdown()
    e = {name: x for name, x in timed.items() if not name.startswith("torch_")}
    t = {name.removeprefix("torch_"): x for name, x in timed.items() if name.startswith("torch_")}
    floors = {which: e[f"floor_{which}"] for which in ("checked", "unchecked")
              if f"floor_{which}" in e}
    label = "x".join(map(str, TINY))
    for name, key, which in (("tiny, weights", "weights", "checked"),
                             ("tiny, no weights", "no_weights", "checked"),
                             ("tiny, trusted", "trusted", "unchecked")):
        if key in e:
            us, floor = e[key] * 1e6, floors[which]
            eager = t.get("eager")
            print(
                f"{name:<16} {label:<15} {us / 1e3:9.4f} {_ratio(e[key], eager)} "
                f"{_ratio(e[key], t.get('sdpa'))} {_ratio(e[key], eager)} "
                f"{_ratio(e[key], e['mm_fwd'])} {_ratio(e[key], floor)} "
                f"{_ratio(floor, eager):>11}   ({us:.1f} µs per call; matmuls alone "
                f"{e['mm_fwd'] * 1e6:.1f} µs, tiny floor {floor * 1e6:.1f} µs)"
            )
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
    parser.add_argument(
        "--stat",
        choices=("median", "min"),
        default="median",
        help="statistic of the samples; min resists other processes on a loaded machine",
    )
    args = parser.parse_args(argv)
    tune_allocator()  # malloc's thresholds as main.py sets them
    global STAT
    STAT = min if args.stat == "min" else statistics.median
    run(max(5, args.repeats), args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
