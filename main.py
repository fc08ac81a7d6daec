"""Attention Scale Explorer: start the window, or run a headless command.

``python main.py`` opens the explorer window; ``python main.py --help`` lists the headless
subcommands. Headless engine commands (``sweep``, ``train``, ``lr-sweep``) never import Qt.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

RULE_HELP = "comma-separated scaling rules: none, sqrt, linear, temperature, qk_norm, softcap"


def build_parser() -> argparse.ArgumentParser:
    """Return the command-line parser of every entry point."""
    parser = argparse.ArgumentParser(
        prog="attention-explorer",
        description="See and test why scaled dot-product attention divides logits by √d_k.",
    )
    parser.add_argument(
        "--self-test",
        metavar="DIR",
        help="open the real window (offscreen when there is no display), drive every control, "
        "export every view to DIR, check the images, and exit 0 or 1 with the reason",
    )
    parser.add_argument("--session", metavar="FILE", help="open this session JSON at start")
    parser.add_argument(
        "--headless",
        action="store_true",
        help="use Qt's offscreen platform (no display needed)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sweep = sub.add_parser(
        "sweep",
        help="Monte Carlo sweep of attention statistics to CSV (engine only, no Qt)",
        description="Sweep one parameter and write one CSV row per (value, rule).",
    )
    sweep.add_argument("--param", choices=["d_k", "s", "rho", "n"], default="d_k",
                       help="quantity to sweep (s = std of the unscaled logits)")
    sweep.add_argument("--values", required=True,
                       help="comma-separated values, e.g. 1,2,4,8 (or a:b for powers of two "
                       "2^a..2^b)")
    sweep.add_argument("--rules", default="none,sqrt,linear", help=RULE_HELP)
    sweep.add_argument("--n", type=int, default=64, help="tokens per row when n is not swept")
    sweep.add_argument("--d-k", "--dk", dest="d_k", type=int, default=64,
                       help="head dimension when d_k is not swept")
    sweep.add_argument("--rho", type=float, default=0.0, help="q-k correlation when not swept")
    sweep.add_argument("--samples", type=int, default=20_000, help="query rows per point")
    sweep.add_argument("--seed", type=int, default=0)
    sweep.add_argument("--temperature", type=float, default=None,
                       help="temperature for the temperature rule (default √d_k)")
    sweep.add_argument("--gain", type=float, default=None, help="QK-norm gain (default √d_k)")
    sweep.add_argument("--cap", type=float, default=50.0, help="soft-cap value")
    sweep.add_argument("--out", default="-", help="CSV file to write ('-' for stdout)")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar on stderr")

    train_common = argparse.ArgumentParser(add_help=False)
    train_common.add_argument("--task", default="retrieval", help="synthetic task")
    train_common.add_argument("--rules", default="none,sqrt,linear", help=RULE_HELP)
    train_common.add_argument("--d-k", dest="d_k", type=int, default=64)
    train_common.add_argument("--d-model", dest="d_model", type=int, default=None,
                              help="model width (default d_k × heads)")
    train_common.add_argument("--heads", type=int, default=1)
    train_common.add_argument("--n", type=int, default=16, help="sequence length")
    train_common.add_argument("--batch", type=int, default=64)
    train_common.add_argument("--steps", type=int, default=500)
    train_common.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    train_common.add_argument("--vocab", type=int, default=32, help="number of distinct symbols")
    train_common.add_argument("--offset", type=int, default=2,
                              help="copy_back distance (target is the token this far back)")
    train_common.add_argument("--init-std", dest="init_std", type=float, default=None,
                              help="weight init std (default 1/√d_model: unscaled logit "
                              "variance d_k at init)")
    train_common.add_argument("--clip-norm", dest="clip_norm", type=float, default=None,
                              help="clip the global gradient norm (default: off)")
    train_common.add_argument("--eval-size", dest="eval_size", type=int, default=256,
                              help="held-out examples")
    train_common.add_argument("--quiet", action="store_true", help="no progress on stderr")

    train = sub.add_parser("train", parents=[train_common],
                           help="train tiny attention models side by side (engine only)")
    train.add_argument("--lr", type=float, default=0.01)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--json", action="store_true", help="print the summary as one JSON object")

    lr_sweep = sub.add_parser("lr-sweep", parents=[train_common],
                              help="final held-out loss per rule over learning rates and seeds")
    lr_sweep.add_argument("--lrs", default="0.001,0.003,0.01,0.03,0.1")
    lr_sweep.add_argument("--seeds", type=int, default=3, help="number of seeds (0..N-1)")
    lr_sweep.add_argument("--out", default="-", help="CSV file to write ('-' for stdout)")

    export = sub.add_parser("export", help="render every view headless to a folder")
    export.add_argument("--out", required=True, metavar="DIR")
    export.add_argument("--session", metavar="FILE", help="session JSON to render")
    export.add_argument("--width", type=int, default=1200, help="image width in pixels")
    export.add_argument("--height", type=int, default=800, help="image height in pixels")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the program; return the process exit code."""
    args = build_parser().parse_args(argv)
    if args.command == "sweep":
        from engine.cli_sweep import sweep_command

        return sweep_command(args)
    if args.command == "train":
        from engine.cli_train import train_command

        return train_command(args)
    if args.command == "lr-sweep":
        from engine.cli_train import lr_sweep_command

        return lr_sweep_command(args)
    if args.command == "export":
        from gui.headless import export_command

        return export_command(args)
    if args.self_test:
        from gui.headless import self_test_command

        return self_test_command(args)
    from gui.app import run_app

    return run_app(args)


def cli_entry() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    sys.exit(main())
