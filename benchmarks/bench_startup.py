"""Start-up benchmark: process launch to first painted window, from source vs. the bundle.

Launches ``python main.py`` and the PyInstaller bundle alternately, offscreen
(``QT_QPA_PLATFORM=offscreen``), with ``ATTENTION_EXPLORER_EXIT_AFTER_SHOW=1``:
``gui.app.run_app`` then prints the wall-clock time of the window's first paint and closes
it. Start-up is that time minus the launch time
taken here just before the process is spawned, so it includes the interpreter start and, for a
onefile bundle, its unpacking. One discarded warm-up run per program fills the file cache.
Settings go to a temporary folder, so both programs start from the same (default) state.
Goal: median(bundle) ≤ 1.3 × median(source). Run (after building the bundle)::

    python benchmarks/bench_startup.py [--bundle dist/attention-explorer/attention-explorer]
        [--runs 7] [--max-ratio 1.3]

The last line is exactly ``source_ms=<x> bundle_ms=<y> ratio=<y/x>``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BUNDLE = ROOT / "dist" / "attention-explorer" / "attention-explorer"
#: Both names are defined in gui/ (app.EXIT_AFTER_SHOW_ENV, settings.SETTINGS_DIR_ENV); they
#: are repeated here so that this script never imports Qt itself.
EXIT_AFTER_SHOW_ENV = "ATTENTION_EXPLORER_EXIT_AFTER_SHOW"
SETTINGS_DIR_ENV = "ATTENTION_EXPLORER_SETTINGS_DIR"
_SHOWN = re.compile(EXIT_AFTER_SHOW_ENV + r": first paint at unix time ([0-9.]+)")
TIMEOUT_S = 60


def time_to_first_paint(command: list[str], env: dict[str, str]) -> float:
    """Return seconds from spawning ``command`` to its first painted window."""
    launched = time.time()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)
    match = _SHOWN.search(done.stdout)
    if done.returncode != 0 or match is None:
        raise RuntimeError(f"{command[0]} exited {done.returncode} without the start-up line:\n"
                           f"{done.stdout}\n{done.stderr}")
    return float(match.group(1)) - launched


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, default=DEFAULT_BUNDLE,
                        help="the frozen executable (onedir or onefile)")
    parser.add_argument("--runs", type=int, default=7, help="measured runs per program (≥ 5)")
    parser.add_argument("--max-ratio", type=float, default=None,
                        help="exit 1 when median(bundle) / median(source) exceeds this")
    args = parser.parse_args(argv)
    if args.runs < 5:
        parser.error(f"--runs must be at least 5, got {args.runs}")
    if not args.bundle.is_file():
        parser.error(f"no bundle at {args.bundle}: build it with "
                     "'python -m PyInstaller attention_explorer.spec' first")

    programs = {
        # Not --headless: that checks the window and closes it itself, without the event loop
        # that the first-paint report needs.
        "source": [sys.executable, str(ROOT / "main.py")],
        "bundle": [str(args.bundle.resolve())],
    }
    times: dict[str, list[float]] = {name: [] for name in programs}
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as settings_dir:
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        env[EXIT_AFTER_SHOW_ENV] = "1"
        env[SETTINGS_DIR_ENV] = settings_dir
        for command in programs.values():  # warm-up: file cache, .pyc files
            time_to_first_paint(command, env)
        for run in range(args.runs):
            # Alternate the order so that drifting machine load hits both programs alike.
            order = list(programs) if run % 2 == 0 else list(reversed(programs))
            for name in order:
                times[name].append(time_to_first_paint(programs[name], env))

    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, values in times.items():
        runs = " ".join(f"{1000 * v:.0f}" for v in values)
        print(f"{name:<7} median {1000 * medians[name]:6.0f} ms  (runs: {runs})")
    ratio = medians["bundle"] / medians["source"]
    print(f"source_ms={1000 * medians['source']:.0f} bundle_ms={1000 * medians['bundle']:.0f} "
          f"ratio={ratio:.2f}")
    if args.max_ratio is not None and ratio > args.max_ratio:
        print(f"error: the bundle starts {ratio:.2f}× as slow as the source "
              f"(limit {args.max_ratio})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
