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

``floor`` is the least any numpy implementation pays: the matrix products (forward: QKᵀ and
P·V; with the backward also Pᵀ·G, G·Vᵀ, dS·K and dSᵀ·Q, nothing recomputed) plus one float32
``numpy.exp`` per logit, split over the threads. ``/floor`` is the engine over it, and
``floor/torch`` that floor over torch's best time: above 1, no numpy code reaches torch at that
size, because numpy cannot fuse the exponentials into the products as torch's kernels do.
Shapes are (batch·heads, n, d). Times depend on the machine and its load (print ``uptime``
alongside): only ratios from one run mean something, and nothing here asserts absolute times.

OpenBLAS worker threads spin for ~0.1 s after each call, and alternating numpy and torch slows
both 2–3×, so each library is timed in its own block, warmed up, after a pause.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import inspect
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core import attention
from engine.core.threads import limit_blas_threads

FORWARD_SIZES = ((1, 1024, 128), (8, 256, 64), (64, 128, 64), (1, 2048, 64))
BACKWARD_SIZES = ((1, 512, 64), (8, 256, 64))
CAUSAL_SIZES = ((1, 1024, 64), (1, 2048, 64))
TINY = (1, 16, 16)
PAUSE = 0.3  # seconds: lets spinning BLAS / torch worker threads go idle
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


def median_time(fn: Callable[[], object], repeats: int, min_sample: float = 2e-3) -> float:
    """Median (or ``--stat min``) time of one call of ``fn``; samples last ``min_sample`` s.

    Calls for 0.1 s first: thread pools (OpenBLAS, torch's OpenMP) start up and settle.
    """
    start = time.perf_counter()
    calls = 0
    while calls < 2 or time.perf_counter() - start < 0.1:
        fn()
        calls += 1
    once = max((time.perf_counter() - start) / calls, 1e-7)
    loops = max(1, int(min_sample / once))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        times.append((time.perf_counter() - start) / loops)
    return STAT(times)


class Case:
    """float32 inputs of one (batch·heads, n, d) problem."""

    def __init__(self, shape: tuple[int, int, int], rng: np.random.Generator) -> None:
        self.shape = shape
        self.q, self.k, self.v, self.g = (
            rng.standard_normal(shape).astype(np.float32) for _ in range(4)
        )


def numpy_times(case: Case, repeats: int, threads: int, backward: bool) -> dict[str, float]:
    """Engine and bare-matmul medians (seconds) for one case, BLAS limited to ``threads``.

    The limit is held only here: threadpoolctl also reaches the BLAS inside torch, and torch
    calls made under it ran up to 80× slower.
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

    def mm_fwd_bwd() -> None:
        mm_fwd()
        mm_bwd_least()

    logits = np.matmul(q, k_t).reshape(-1, k.shape[-2])
    exps = np.empty_like(logits)
    parts = [slice(rows[0], rows[-1] + 1)
             for rows in np.array_split(np.arange(logits.shape[0]), threads) if rows.size]
    pool = concurrent.futures.ThreadPoolExecutor(len(parts))

    def exp_split() -> None:
        # numpy's exp runs on one core: each thread takes its share of the rows.
        list(pool.map(lambda rows: np.exp(logits[rows], out=exps[rows]), parts))

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

    time.sleep(PAUSE)
    with limit_blas_threads(threads), pool:
        out = {"mm_fwd": median_time(mm_fwd, repeats), "weights": median_time(fwd_weights, repeats)}
        out["exp"] = median_time(exp_split, repeats)
        out["floor"] = out["mm_fwd"] + out["exp"]
        if _HAS_NEED_WEIGHTS:
            out["no_weights"] = median_time(fwd_out, repeats)
        if backward:
            out["mm_fwd_bwd"] = median_time(mm_fwd_bwd, repeats)
            out["fwd_bwd"] = median_time(fwd_bwd, repeats)
            out["floor_bwd"] = out["floor"] + median_time(mm_bwd_least, repeats)
    return out


def torch_times(case: Case, repeats: int, threads: int, backward: bool) -> dict[str, float]:
    """torch SDPA and eager medians (seconds) for one case; empty without torch."""
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

    time.sleep(PAUSE)
    out = {
        "sdpa": median_time(no_grad(lambda: F.scaled_dot_product_attention(q, k, v)), repeats),
        "eager": median_time(no_grad(lambda: eager(q, k, v)), repeats),
    }
    if backward:
        out["sdpa_bwd"] = median_time(autograd(F.scaled_dot_product_attention), repeats)
        out["eager_bwd"] = median_time(autograd(eager), repeats)
    time.sleep(PAUSE)
    return out


def causal_times(case: Case, repeats: int, threads: int) -> dict[str, float]:
    """Causal output-only medians (seconds): the engine, then torch SDPA and eager if present."""
    q, k, v = case.q, case.k, case.v
    time.sleep(PAUSE)
    with limit_blas_threads(threads):
        out = {"engine": median_time(lambda: attention.scaled_dot_product_attention(
            q, k, v, rule="sqrt", mask="causal", need_weights=False), repeats)}
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return out
    torch.set_num_threads(threads)
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    n = case.shape[-2]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    scale = 1.0 / case.shape[-1] ** 0.5

    def eager() -> object:
        logits = (tq @ tk.transpose(-1, -2) * scale).masked_fill(~allowed, float("-inf"))
        return torch.softmax(logits, dim=-1) @ tv

    time.sleep(PAUSE)
    with torch.no_grad():
        out["sdpa"] = median_time(
            lambda: F.scaled_dot_product_attention(tq, tk, tv, is_causal=True), repeats)
        out["eager"] = median_time(eager, repeats)
    time.sleep(PAUSE)
    return out


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
    for shape in shapes:
        case = Case(shape, rng)
        backward = shape in BACKWARD_SIZES
        e = numpy_times(case, repeats, threads, backward)
        t = torch_times(case, repeats, threads, backward)
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
        c = causal_times(Case(shape, rng), repeats, threads)
        best = min(c["sdpa"], c["eager"]) if "sdpa" in c else None
        label = "x".join(map(str, shape))
        print(
            f"{'causal, no wts':<16} {label:<15} {c['engine'] * 1e3:9.3f} "
            f"{_ratio(c['engine'], best)} {_ratio(c['engine'], c.get('sdpa'))} "
            f"{_ratio(c['engine'], c.get('eager'))}"
        )
    for shape in FORWARD_SIZES:
        faults = faults_per_call(Case(shape, rng))
        if faults is not None:
            label = "x".join(map(str, shape))
            print(f"{'page faults':<16} {label:<15} {faults:9.1f} per default call")
    case = Case(TINY, rng)
    e = numpy_times(case, repeats, threads, backward=False)
    scale = TINY[-1] ** -0.5
    with limit_blas_threads(threads):
        floors = {"checked": median_time(
            lambda: tiny_floor(case.q, case.k, case.v, scale), repeats)}
        if _HAS_CHECK_FINITE:
            e["trusted"] = median_time(lambda: attention.scaled_dot_product_attention(
                case.q, case.k, case.v, rule="sqrt", check_finite=False), repeats)
            floors["unchecked"] = median_time(
                lambda: tiny_floor(case.q, case.k, case.v, scale, checked=False), repeats)
    t = torch_times(case, repeats, threads, backward=False)
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
    global STAT
    STAT = min if args.stat == "min" else statistics.median
    run(max(5, args.repeats), args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
