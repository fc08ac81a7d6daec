"""Engine calls right after a multi-threaded matrix product: OpenBLAS's spinning idle threads.

After every multi-threaded product OpenBLAS keeps its worker threads spinning (busy-waiting for
the next product) for about 2^28 cycles, 0.1 s at 2.4 GHz. An engine call that splits its
tiles over threads inside that window shares a core with the spinner. ``main.py`` therefore
sets ``OPENBLAS_THREAD_TIMEOUT=16`` (2^16 cycles) before numpy loads OpenBLAS; a notebook must
set it before ``import numpy``.

Run from the repository root::

    python benchmarks/bench_blas_spin.py [--rounds 3] [--timeout 16]

Each round runs two child processes, one with OpenBLAS's default spin and one with
``OPENBLAS_THREAD_TIMEOUT=<--timeout>`` (the variable is read only when OpenBLAS loads, so one
process cannot measure both). Each child prints, measured in that one process:

* ``after_alone``: a (8, 256, 64) float32 forward (``need_weights=False``, two tile threads)
  right after a two-thread (8, 256, 64) @ (8, 64, 256) product, over the same call alone;
* ``loop_ms``: 50 two-thread products of a (2176, 128) by a (128, 128) matrix (a projection of
  128 sequences of 17 tokens at d_model 128), each followed by an elementwise update of its
  result: a loop of products whose threads a shorter spin might let fall asleep in between.

The last line gives the medians over the rounds: ``spin_after_alone_default=<x>
spin_after_alone_<timeout>=<y> loop_<timeout>_over_default=<z>``. Times are printed, never
asserted; the load average is printed with every round.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = "OPENBLAS_THREAD_TIMEOUT"
SHAPE = (8, 256, 64)
CALLS = 31


def child() -> None:
    """Measure in this process and print ``after_alone=<x> loop_ms=<y>``."""
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from engine.core import attention
    from engine.core.parallel import get_num_threads
    from engine.core.threads import limit_blas_threads

    if get_num_threads() < 2:
        print("after_alone=nan loop_ms=nan  (one CPU: the engine never splits its tiles)")
        return
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(3))
    k_t = k.swapaxes(-1, -2)
    a = rng.standard_normal((2176, 128)).astype(np.float32)
    w = rng.standard_normal((128, 128)).astype(np.float32)

    def call() -> None:
        attention.scaled_dot_product_attention(q, k, v, need_weights=False)

    def timed(before: object) -> float:
        times = []
        for _ in range(CALLS):
            if before is not None:
                np.matmul(q, k_t)
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def loop() -> None:
        for _ in range(50):
            y = a @ w
            y *= 0.5

    with limit_blas_threads(2):
        for _ in range(3):
            call()
        alone = timed(None)
        after = timed(True)
        time.sleep(0.3)
        loop()
        loops = []
        for _ in range(9):
            start = time.perf_counter()
            loop()
            loops.append(time.perf_counter() - start)
    print(f"after_alone={after / alone:.3f} loop_ms={statistics.median(loops) * 1e3:.3f} "
          f"(alone {alone * 1e3:.2f} ms, after a product {after * 1e3:.2f} ms)")


def run_child(timeout: str | None) -> tuple[float, float, str]:
    env = dict(os.environ)
    env.pop(VARIABLE, None)
    if timeout is not None:
        env[VARIABLE] = timeout
    line = subprocess.run(
        [sys.executable, __file__, "--child"], env=env, check=True, capture_output=True,
        text=True,
    ).stdout.strip().splitlines()[-1]
    fields = dict(word.split("=") for word in line.split()[:2])
    return float(fields["after_alone"]), float(fields["loop_ms"]), line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", default="16", help="the value to compare with the default")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child()
        return 0
    results: dict[str, list[tuple[float, float]]] = {"default": [], args.timeout: []}
    for index in range(args.rounds):
        print(f"round {index + 1}, load average: "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for label, timeout in (("default", None), (args.timeout, args.timeout)):
            after_alone, loop_ms, line = run_child(timeout)
            results[label].append((after_alone, loop_ms))
            print(f"  {VARIABLE}={label:<8} {line}")
    medians = {
        label: [statistics.median(r[i] for r in rows) for i in (0, 1)]
        for label, rows in results.items()
    }
    mine = medians[args.timeout]
    print(f"spin_after_alone_default={medians['default'][0]:.2f} "
          f"spin_after_alone_{args.timeout}={mine[0]:.2f} "
          f"loop_{args.timeout}_over_default={mine[1] / medians['default'][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
