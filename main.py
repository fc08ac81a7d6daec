"""Attention Scale Explorer: start the window, or run a headless command.

``python main.py`` opens the explorer window; ``python main.py --help`` lists the headless
subcommands. Headless engine commands (``sweep``, ``train``, ``lr-sweep``, ``inspect``,
``capture``, ``intervene``) never import Qt.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

# The window's export formats, image sizes and UI languages, from the one Qt-free module.
from gui.kit.choices import FORMATS, LANGUAGES, MAX_SIZE, MIN_SIZE, check_formats

#: OpenBLAS keeps its idle threads spinning for 2^28 cycles after each multi-threaded product,
#: on the cores the engine's tile threads need; 2^16 costs back-to-back products nothing
#: (benchmarks/bench_blas_spin.py). Read once when numpy loads, so set before any numpy
#: import; a value the user set wins.
OPENBLAS_SPIN = ("OPENBLAS_THREAD_TIMEOUT", "16")
os.environ.setdefault(*OPENBLAS_SPIN)

DISTRIBUTION = "attention-scale-explorer"
#: The headless engine commands: their module in ``engine.cli`` and the function running them.
ENGINE_COMMANDS = {"sweep": ("sweep", "sweep_command"), "train": ("train", "train_command"),
                   "lr-sweep": ("train", "lr_sweep_command"),
                   "inspect": ("inspect", "inspect_command"),
                   "capture": ("capture", "capture_command"),
                   "intervene": ("intervene", "intervene_command")}
#: Exit code after the reader of stdout went away (128 + SIGPIPE, as the shell reports it).
EXIT_BROKEN_PIPE = 141


def version() -> str:
    """Return the program version: the installed package's, else pyproject.toml's."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pass  # running from a source checkout that was never pip-installed
    import tomllib

    try:
        with open(Path(__file__).with_name("pyproject.toml"), "rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _size(text: str) -> int:
    """argparse type of ``--width``/``--height``: an integer in the exportable range."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not MIN_SIZE <= value <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"{value} is outside {MIN_SIZE}..{MAX_SIZE} pixels")
    return value


def _formats(text: str) -> tuple[str, ...]:
    """argparse type of ``--formats``: comma-separated names out of the export formats."""
    try:
        return check_formats(text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with every option's default: "(default: X)" is appended to its help
    unless the help names the default itself or there is none to show (a flag, no value)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (not action.option_strings or "default" in text or action.default is None
                or action.default is False or action.default == argparse.SUPPRESS):
            return text
        return f"{text} (default: %(default)s)"


def build_parser(prog: str = "attention-explorer") -> argparse.ArgumentParser:
    """Return the command-line parser of every entry point.

    ``prog`` is the program's name in the usage lines: ``attention-explorer`` (the window's
    entry point and ``python main.py``) or ``attention-scale`` (the console script).

    Every parser has ``allow_abbrev=False`` (``--seed`` must not mean ``--seeds``). Options
    that set config fields come from their declarations (``engine.config``); only the
    command-specific ones are listed here.
    """
    from engine.cli.options import add_field_options, add_rule_options
    from engine.cli.parser import SuggestingParser, add_intervene_parser
    from engine.config import ScalingRule, SweepConfig, TrainConfig

    # Its subparsers inherit the class: every command names a mistyped option and the near one.
    parser = SuggestingParser(
        prog=prog,
        description="See and test why scaled dot-product attention divides logits by √d_k. "
        "Only the plain program (optionally with --session, --tensors, --model and --lang) opens "
        "the explorer window and runs until you close it; --headless builds it offscreen, checks "
        "it and exits. None of the COMMANDs opens a window: sweep, train, lr-sweep, inspect, "
        "capture and intervene print or write results, export renders offscreen to files.",
        allow_abbrev=False,
        formatter_class=_HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    parser.add_argument(
        "--self-test",
        metavar="DIR",
        help="open the real window (offscreen when there is no display), drive every control, "
        "export every view to DIR, check the images, and exit 0 or 1 with the reason",
    )
    parser.add_argument("--session", metavar="FILE", help="open this session JSON at start")
    parser.add_argument("--tensors", metavar="FILE",
                        help="open this tensor file (.npz, .safetensors or a folder of .npy) "
                        "in the Heads tab at start")
    parser.add_argument("--model", metavar="PATH",
                        help="a Hugging Face model folder or a .gguf file: open File › Open "
                        "model… for it at start (with --self-test: capture from it and "
                        "diagnose its heads as part of the test)")
    parser.add_argument(
        "--headless",
        action="store_true",
        help="check that the window starts, without a display: build it on Qt's offscreen "
        "platform, open --session and --tensors, wait for the explorer's results and the "
        "Heads tab's diagnosis, print what arrived and exit (0, or 1 with the reason)",
    )
    lang_help = ("UI language of the window (also with --headless and --self-test) and of "
                 "export's images, for this run (en: English, zh_CN: Simplified Chinese; "
                 "default: the one chosen in View › Language, else the system's); the saved "
                 "choice stays as it is")
    parser.add_argument("--lang", choices=tuple(LANGUAGES), default=None, help=lang_help)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sweep = sub.add_parser(
        "sweep",
        allow_abbrev=False,
        formatter_class=_HelpFormatter,
        help="Monte Carlo sweep of attention statistics to CSV (engine only, no Qt)",
        description="Sweep one parameter and write one CSV row per (value, rule): logit "
        "mean and variance, mean entropy and p_max, quantiles of ‖∂p/∂s‖_F, the saturated "
        "share and, with --dtype, the overflow share and weight error (engine only, no Qt; "
        "progress on stderr).",
    )
    add_field_options(sweep, SweepConfig)
    sweep.add_argument("--out", default="-", help="CSV file to write ('-' for stdout)")
    sweep.add_argument("--quiet", action="store_true", help="no progress bar on stderr")

    train_common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_field_options(train_common, TrainConfig)
    train_common.add_argument("--quiet", action="store_true", help="no progress on stderr")

    train = sub.add_parser(
        "train", parents=[train_common], allow_abbrev=False, formatter_class=_HelpFormatter,
        help="train tiny attention models side by side (engine only)",
        description="Train a one-layer attention model once per scaling rule (same initial "
        "weights, same batches, only the rule differs) and print the final training and "
        "held-out loss, accuracy, attention entropy and largest |logit| per rule (engine "
        "only, no Qt; progress on stderr).")
    add_field_options(train, TrainConfig, "train")
    train.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    train.add_argument("--tensors-out", metavar="FILE", default=None,
                       help="after training, write every rule's trained q and k on the held-out "
                       "set as a tensor file (.npz or .safetensors; layer i = rule i), for "
                       "'inspect'")

    lr_sweep = sub.add_parser(
        "lr-sweep", parents=[train_common], allow_abbrev=False, formatter_class=_HelpFormatter,
        help="final held-out loss per rule over learning rates and seeds",
        description="Train every rule at every learning rate of --lrs with seeds 0..N-1, write "
        "the final held-out loss per (rule, learning rate) as CSV and print the largest stable "
        "learning rate of each rule (engine only, no Qt; progress on stderr).")
    lr_sweep.add_argument("--lrs", default="0.001,0.003,0.01,0.03,0.1",
                          help="comma-separated learning rates")
    lr_sweep.add_argument("--seeds", type=int, default=3, help="number of seeds (0..N-1)")
    lr_sweep.add_argument("--out", default="-", help="CSV file to write ('-' for stdout)")

    export = sub.add_parser(
        "export", allow_abbrev=False, formatter_class=_HelpFormatter,
        help="render every view offscreen to a folder (no window opens)",
        description="Render every view (PNG, SVG, PDF, CSV) and session.json offscreen into DIR. "
        "The Train views show a short demo run and learning-rate sweep (their captions say "
        "which d_k, seeds and steps).")
    export.add_argument("--out", required=True, metavar="DIR",
                        help="folder to write into (created if missing); a folder that already "
                        "holds files is refused unless --force")
    export.add_argument("--force", action="store_true",
                        help="write into a non-empty --out folder, replacing files of the same "
                        "name")
    export.add_argument("--session", metavar="FILE", help="session JSON to render")
    export.add_argument("--tensors", metavar="FILE",
                        help="show a real head of this q/k tensor file (.npz, .safetensors or a "
                        "folder of .npy files) in the explorer views instead of random q, k; "
                        "needs --head")
    export.add_argument("--head", metavar="L,H",
                        help="layer and head of --tensors to show (as `inspect` lists them)")
    export.add_argument("--batch", type=int, metavar="B",
                        help="batch entry of --tensors (default 0)")
    # SUPPRESS: without it here, a --lang given before "export" would be reset to None.
    export.add_argument("--lang", choices=tuple(LANGUAGES), default=argparse.SUPPRESS,
                        help=lang_help)
    inspect = sub.add_parser(
        "inspect", allow_abbrev=False, formatter_class=_HelpFormatter,
        help="diagnose every head of a q/k tensor file: a table, or CSV with --out (engine "
        "only, no Qt)",
        description="Read the q and k of every (layer, head) from FILE and print a table of "
        "every head (entropy against uniform, p_max, saturated share, sink mass, logit spread, "
        "flags), or with --out write one CSV row per head with every number: logit spread "
        "against the √d_k law, entropy, p_max, saturation, sink mass, q-k correlation and "
        "flags. The logits use the file's own scale (or the scaling rule that --rule replays) "
        "and the file's causal mask.")
    inspect.add_argument("file", metavar="FILE", help="tensor file (.npz, .safetensors or a "
                         "folder of .npy files)")
    inspect.add_argument("--rule", choices=[rule.value for rule in ScalingRule], default=None,
                         help="replay this scaling rule instead of the file's own scale "
                         "(default: the file's meta.scale, else 1/√d_k)")
    add_rule_options(inspect)  # --temperature, --gain, --cap, … as declared with the rules
    inspect.add_argument("--out", default=None,
                         help="write the CSV to this file ('-' for stdout) instead of printing "
                         "the table")
    inspect.add_argument("--quiet", action="store_true", help="no progress on stderr")

    capture = sub.add_parser(
        "capture", allow_abbrev=False, formatter_class=_HelpFormatter,
        help="run a Hugging Face model folder or a GGUF file on a text and write its q and k "
        "(engine only, no Qt, no PyTorch)",
        description="Run MODEL (a Hugging Face folder with config.json, model.safetensors and "
        "tokenizer.json, or a .gguf file) on a text with numpy and write, per layer, the q and "
        "k that enter its attention logits (after rotary embedding and QK-norm, grouped keys "
        "repeated per query head) with the tokens and the model's own scale, soft-cap and mask "
        "to a tensor file that inspect, export --tensors and the Heads tab read.")
    capture.add_argument("model", metavar="MODEL", help="Hugging Face model folder or .gguf "
                         "file")
    text = capture.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", help="the text to run the model on")
    text.add_argument("--text-file", metavar="FILE", help="read the text from this UTF-8 file")
    capture.add_argument("--out", required=True, metavar="FILE",
                         help="tensor file to write (.npz or .safetensors)")
    capture.add_argument("--max-tokens", type=int, default=None, metavar="N",
                         help="keep only the first N tokens (default: the whole text, up to "
                         "the model's positions)")
    capture.add_argument("--layers", metavar="L,…",
                         help="layers to keep, e.g. 0,3,5-7 (default: all)")
    capture.add_argument("--with-v", action="store_true", help="also write each layer's v")
    capture.add_argument("--memory-budget", metavar="SIZE", default=None,
                         help="largest memory the capture may allocate, e.g. 4G or 512M "
                         "(default 1G); the estimate counts the chosen layers and tokens, "
                         "with the weights converted one at a time")
    capture.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_intervene_parser(sub, _HelpFormatter)

    size_range = f"{MIN_SIZE}..{MAX_SIZE}"
    export.add_argument("--width", type=_size, default=1200,
                        help=f"image width in pixels ({size_range}, default 1200)")
    export.add_argument("--height", type=_size, default=800,
                        help=f"image height in pixels ({size_range}, default 800)")
    export.add_argument("--formats", type=_formats, default=FORMATS, metavar="F,…",
                        help=f"files to write per view, any of {','.join(FORMATS)} "
                        f"(default all)")
    return parser


#: An argument that starts like an option but is a ``--values`` or ``--alphas`` range or list
#: with a negative first value (``-3:1``, ``-2,1``: the command names what is wrong with it).
_RANGE_OPTIONS = ("--values", "--alphas")
_NEGATIVE_RANGE = re.compile(r"^-\.?\d")


def _join_option_values(argv: list[str]) -> list[str]:
    """Rewrite ``--values -3:1`` as ``--values=-3:1`` (and ``--alphas`` alike).

    argparse takes any word starting with "-" that is not a plain negative number for an
    option, so the power-of-two range ``-3:1`` (2^-3..2^1) would be refused as "expected one
    argument". The joined form is what argparse itself accepts.
    """
    out: list[str] = []
    for word in argv:
        if out and out[-1] in _RANGE_OPTIONS and _NEGATIVE_RANGE.match(word):
            out[-1] = f"{out[-1]}={word}"
        else:
            out.append(word)
    return out


def _input_problem(args: argparse.Namespace) -> str:
    """Why the window could not open ``--session`` or ``--tensors`` ("" when it can), for the
    command line before a window opens (the Heads tab checks a tensor file's values)."""
    if args.session:
        from gui.kit.session import SessionError, load_session

        try:
            load_session(args.session)
        except SessionError as exc:
            return f"--session: {exc}"
    if args.tensors:
        from engine.io.tensors import TensorFileError, load_tensors

        try:
            load_tensors(args.tensors, check_finite=False)
        except TensorFileError as exc:
            return f"--tensors: {exc}"
    return ""


def main(argv: Sequence[str] | None = None, prog: str = "attention-explorer") -> int:
    """Run the program (``prog`` names it in the usage lines); return the exit code."""
    from engine.core.memory import tune_allocator

    tune_allocator()  # before the first large arrays
    words = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(prog).parse_args(_join_option_values(words))
    if args.command == "export":
        from gui.headless.commands import export_command

        return export_command(args)
    if args.command:
        import importlib

        module, function = ENGINE_COMMANDS[args.command]  # only the command's own module loads
        return getattr(importlib.import_module(f"engine.cli.{module}"), function)(args)
    if args.model and not os.path.exists(args.model):
        print(f"error: --model: {args.model}: no such file or folder", file=sys.stderr)
        return 2
    if args.self_test:
        from gui.headless.self_test import self_test_command

        return self_test_command(args)
    problem = _input_problem(args)
    if problem:  # a one-line reason on the command line instead of a window
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.headless:
        from gui.headless.startup_check import headless_command

        return headless_command(args)
    from gui.app import run_app

    return run_app(args)


def run(argv: Sequence[str] | None = None, prog: str = "attention-explorer") -> int:
    """Run :func:`main`, ending quietly when the reader of stdout goes away (``| head``).

    Python's recipe (docs: "Note on SIGPIPE"): point stdout at devnull so that the flush at
    interpreter exit does not raise a second BrokenPipeError, and exit with 141 as a process
    killed by SIGPIPE would.
    """
    try:
        code = main(argv, prog)
        sys.stdout.flush()  # a pending write fails here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def cli_entry() -> None:
    """Console-script entry point (``attention-scale``)."""
    sys.exit(run(prog="attention-scale"))


if __name__ == "__main__":
    # The training process is started with "spawn": in the frozen bundle it runs this program
    # again, which must then serve as that process instead of parsing its own arguments.
    import multiprocessing

    multiprocessing.freeze_support()
    sys.exit(run())
