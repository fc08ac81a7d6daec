"""Benchmark the length lab's sweeps against their goals (10 s and 60 s).

Run from the repository root::

    python benchmarks/bench_length.py [--repeats 1]

Times the two ``main.py sweep`` commands of the length lab as subprocesses (start-up
included, as a user sees it):

* ``--param n --values 4:20 --rules sqrt,log_n,ssmax`` at the default sample count (goal 10 s);
* ``--param n --values 1048576 --samples 64`` (default rules; goal 60 s).

Each line reads ``<name>_s=<median seconds> goal_ratio=<median / goal>``. Times depend on the
machine and its load: nothing here asserts absolute numbers.
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

CASES: tuple[tuple[str, tuple[str, ...], float], ...] = (
    ("sweep_n_4_20", ("--param", "n", "--values", "4:20", "--rules", "sqrt,log_n,ssmax"), 10.0),
    ("sweep_n_2e20_64", ("--param", "n", "--values", "1048576", "--samples", "64"), 60.0),
)


def _run(args: tuple[str, ...]) -> float:
    cmd = [sys.executable, str(ROOT / "main.py"), "sweep", *args, "--quiet", "--out", os.devnull]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    opts = parser.parse_args()
    for name, args, goal in CASES:
        times = [_run(args) for _ in range(opts.repeats)]
        median = statistics.median(times)
        print(f"{name}_s={median:.2f} goal_ratio={median / goal:.2f}", flush=True)


if __name__ == "__main__":
    main()
