"""Benchmark the head diagnostics on a 12-layer × 12-head model, n = 512, d_k = 64.

Run from the repository root::

    python benchmarks/bench_inspect.py [--repeats 3] [--threads 2]

The q and k of all 144 heads are built in memory as float16 (as a model would dump them),
then each repeat converts every head to float64 and runs
:func:`engine.analysis.heads.diagnose_head` on it with the causal mask (the usual case of a
decoder's file). Every statistic is computed in float64. The goal is 3 s for the whole file on
two cores; the last line is ``inspect_s=<median seconds> goal_ratio=<median / 3>``.
Times depend on the machine and its load: nothing here asserts absolute numbers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.analysis.heads import diagnose_head
from engine.core.threads import limit_blas_threads

LAYERS, HEADS, N, D_K = 12, 12, 512, 64
GOAL_S = 3.0


def _model(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = (LAYERS, HEADS, 1, N, D_K)
    q = rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    k = rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    return q, k


def _inspect_all(q: np.ndarray, k: np.ndarray, causal: bool) -> int:
    flagged = 0
    for layer in range(q.shape[0]):
        for head in range(q.shape[1]):
            diag = diagnose_head(
                q[layer, head].astype(np.float64), k[layer, head].astype(np.float64),
                causal=causal,
            )
            flagged += bool(diag.flags)
    return flagged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="BLAS threads (default 2)")
    args = parser.parse_args()
    q, k = _model()
    print(f"{LAYERS} layers x {HEADS} heads, n={N}, d_k={D_K}, float16 data, "
          f"float64 statistics, BLAS threads={args.threads}")
    with limit_blas_threads(args.threads):
        _inspect_all(q[:1, :2], k[:1, :2], True)  # warm-up (imports, BLAS threads)
        for causal in (False, True):
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                _inspect_all(q, k, causal)
                times.append(time.perf_counter() - start)
            label = "causal" if causal else "full"
            print(f"{label:6s}: median {statistics.median(times):.3f} s, "
                  f"min {min(times):.3f} s over {args.repeats} repeats")
    seconds = statistics.median(times)  # the causal case, the one a decoder file gives
    print(f"inspect_s={seconds:.3f} goal_ratio={seconds / GOAL_S:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
