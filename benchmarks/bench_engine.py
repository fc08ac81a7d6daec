"""Benchmark the attention engine against the matrix products it cannot avoid.

Run from the repository root::

    python benchmarks/bench_engine.py [--repeats 7] [--sizes 128x64,512x64,...]

For each (n, d_k), batched over 8 heads in float32, it reports the median time of

* the forward pass and of forward + backward,
* the same matrix products alone (forward: QKᵀ and P·V; backward adds its six: the recomputed
  QKᵀ and E·V, Eᵀ·G', G'·Vᵀ, dS·K and dSᵀ·Q), and their ratio,

for three threading modes on the same two-thread budget:

``blas1``   serial engine, BLAS limited to 1 thread (ratio against 1-thread matmuls)
``blas2``   serial engine, BLAS with 2 threads (ratio against 2-thread matmuls)
``split2``  query rows split over 2 Python threads, BLAS 1 thread each (against 2-thread matmuls)

and which of them the engine's automatic choice (``auto``) matches. Where torch is importable
it also times ``torch.nn.functional.scaled_dot_product_attention`` with the same thread count.
Times depend on the machine: nothing here asserts absolute numbers.

OpenBLAS worker threads spin for ~0.1 s after each call, so every measurement is warmed up and
the script pauses when switching thread settings.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.core import attention, parallel
from engine.core.threads import limit_blas_threads

HEADS = 8
DEFAULT_SIZES = ((128, 64), (512, 64), (1024, 128), (2048, 64))


def median_time(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs, after two warm-up calls."""
    fn()
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@contextmanager
def blas_threads(n: int) -> Iterator[None]:
    time.sleep(0.2)  # let spinning BLAS workers of the previous setting go idle
    with limit_blas_threads(n):
        yield


@contextmanager
def engine_mode(mode: str) -> Iterator[None]:
    """``serial``: no row split; ``split``: always split; ``auto``: the engine's own choice."""
    old_threads = parallel.get_num_threads()
    old_min = parallel._PARALLEL_MIN_WORK
    try:
        if mode == "serial":
            parallel.set_num_threads(1)
        elif mode == "split":
            parallel.set_num_threads(2)
            parallel._PARALLEL_MIN_WORK = 0
        yield
    finally:
        parallel.set_num_threads(old_threads)
        parallel._PARALLEL_MIN_WORK = old_min


class Case:
    """Inputs and the bare matrix products of one (n, d_k) problem."""

    def __init__(self, n: int, d: int, rng: np.random.Generator) -> None:
        self.n, self.d = n, d
        shape = (HEADS, n, d)
        self.q, self.k, self.v, self.g = (
            rng.standard_normal(shape).astype(np.float32) for _ in range(4)
        )

    def forward(self) -> None:
        attention.scaled_dot_product_attention(self.q, self.k, self.v, rule="sqrt")

    def forward_backward(self) -> None:
        attention.scaled_dot_product_attention(self.q, self.k, self.v, rule="sqrt")
        attention.scaled_dot_product_attention_backward(
            self.q, self.k, self.v, self.g, rule="sqrt"
        )

    # The baselines allocate their results like plain ``q @ k.T`` code does: on this kind of
    # VM, first-touching fresh pages costs about as much as a softmax pass, and the engine
    # cannot avoid allocating the arrays it returns.
    def matmuls_forward(self) -> None:
        s = np.matmul(self.q, self.k.swapaxes(-1, -2))
        np.matmul(s, self.v)

    def matmuls_forward_backward(self) -> None:
        self.matmuls_forward()
        s = np.matmul(self.q, self.k.swapaxes(-1, -2))
        np.matmul(s, self.v)
        np.matmul(s.swapaxes(-1, -2), self.g)
        s2 = np.matmul(self.g, self.v.swapaxes(-1, -2))
        np.matmul(s2, self.k)
        np.matmul(s2.swapaxes(-1, -2), self.q)


def torch_times(case: Case, threads: int, repeats: int) -> tuple[float, float] | None:
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    torch.set_num_threads(threads)
    q, k, v, g = (torch.from_numpy(a) for a in (case.q, case.k, case.v, case.g))
    time.sleep(0.2)

    def fwd() -> None:
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v)

    def fwd_bwd() -> None:
        qq, kk, vv = (t.clone().requires_grad_(True) for t in (q, k, v))
        F.scaled_dot_product_attention(qq, kk, vv).backward(g)

    return median_time(fwd, repeats), median_time(fwd_bwd, repeats)


MODES = (("blas1", 1, "serial"), ("blas2", 2, "serial"), ("split2", 2, "split"))


def run(sizes: list[tuple[int, int]], repeats: int) -> None:
    rng = np.random.default_rng(0)
    header = (
        f"{'n':>5} {'d_k':>4} {'mode':>7} | {'fwd ms':>8} {'mm ms':>8} {'ratio':>6} | "
        f"{'fwd+bwd ms':>10} {'mm ms':>8} {'ratio':>6}"
    )
    print(f"float32, {HEADS} heads, rule sqrt, no mask; medians of {repeats} runs")
    print(header)
    print("-" * len(header))
    summary = []
    torch_rows = []
    for n, d in sizes:
        case = Case(n, d, rng)
        results: dict[str, tuple[float, float]] = {}
        for name, blas, mode in MODES:
            with blas_threads(blas), engine_mode(mode):
                mm_f = median_time(case.matmuls_forward, repeats)
                mm_fb = median_time(case.matmuls_forward_backward, repeats)
                t_f = median_time(case.forward, repeats)
                t_fb = median_time(case.forward_backward, repeats)
            results[name] = (t_f, t_fb)
            print(
                f"{n:>5} {d:>4} {name:>7} | {t_f * 1e3:8.2f} {mm_f * 1e3:8.2f} "
                f"{t_f / mm_f:6.2f} | {t_fb * 1e3:10.2f} {mm_fb * 1e3:8.2f} {t_fb / mm_fb:6.2f}"
            )
        with blas_threads(2), engine_mode("auto"):
            t_auto = median_time(case.forward, repeats)
            mm_auto = median_time(case.matmuls_forward, repeats)
        print(
            f"{n:>5} {d:>4} {'auto':>7} | {t_auto * 1e3:8.2f} {mm_auto * 1e3:8.2f} "
            f"{t_auto / mm_auto:6.2f} |"
        )
        best_f = min(results, key=lambda m: results[m][0])
        best_fb = min(results, key=lambda m: results[m][1])
        b1, b2 = results["blas1"][0], results["blas2"][0]
        summary.append(
            f"n={n:<5} d_k={d:<4} BLAS {'1' if b1 < b2 else '2'} thread(s) faster for the serial "
            f"forward ({b1 * 1e3:.2f} vs {b2 * 1e3:.2f} ms); fastest forward: {best_f}, "
            f"fastest forward+backward: {best_fb}"
        )
        tt = torch_times(case, 2, repeats)
        if tt is not None:
            best = min(results.values())
            torch_rows.append(
                f"n={n:<5} d_k={d:<4} torch fwd {tt[0] * 1e3:8.2f} ms (engine/torch "
                f"{best[0] / tt[0]:.2f}), fwd+bwd {tt[1] * 1e3:8.2f} ms (engine/torch "
                f"{best[1] / tt[1]:.2f})"
            )
    print()
    print("\n".join(summary))
    print()
    if torch_rows:
        print("torch.nn.functional.scaled_dot_product_attention on CPU, 2 threads:")
        print("\n".join(torch_rows))
    else:
        print("torch is not installed: no comparison with torch's fused attention.")


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        n, d = item.lower().split("x")
        sizes.append((int(n), int(d)))
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per median (>= 7)")
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        default=list(DEFAULT_SIZES),
        help="comma-separated NxD list, default 128x64,512x64,1024x128,2048x64",
    )
    args = parser.parse_args(argv)
    run(args.sizes, max(7, args.repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
