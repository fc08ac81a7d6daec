"""An ``argparse`` parser that names a mistyped option and suggests the one meant (no Qt).

Python 3.11's argparse reports ``sweep --valuse 1,2`` as "the following arguments are
required: --values" and ``sweep --rule sqrt`` as "unrecognized arguments" of the top-level
program, neither naming the near option (``suggest_on_error`` arrived in 3.14, and only for
choices). :class:`SuggestingParser` looks at the words each parser itself was given: an
option it does not know is reported first, with the closest of its own option strings.
Subparsers made by ``add_subparsers`` inherit the class, so every command gets the same.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["INTERVENE_SWEEPS", "SuggestingParser", "add_intervene_parser",
           "unknown_option_message"]


def unknown_option_message(word: str, known: Sequence[str]) -> str:
    """``unrecognized option --valuse (did you mean --values?)``, or without the hint when no
    option is close enough."""
    option = word.split("=", 1)[0]
    near = difflib.get_close_matches(option, known, n=1, cutoff=0.6)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"unrecognized option {option}{hint}"


class SuggestingParser(argparse.ArgumentParser):
    """:class:`argparse.ArgumentParser` whose errors name an unknown option and its near one."""

    _words: list[str]

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> Any:
        self._words = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        message = self._unknown_option()
        if message:
            self.error(message)
        return namespace, extras

    def error(self, message: str) -> NoReturn:
        # A mistyped option explains the other errors (a required option "missing", a value
        # taken as a stray argument): report it instead of them.
        super().error(self._unknown_option() or message)

    def _unknown_option(self) -> str:
        known = [s for action in self._actions for s in action.option_strings]
        commands = {name for action in self._actions
                    if isinstance(action, argparse._SubParsersAction)
                    for name in action.choices}
        for word in getattr(self, "_words", []):
            if word == "--" or word in commands:
                break  # the rest is positional, or the subcommand's own words
            if word.startswith("--") and word.split("=", 1)[0] not in known:
                return unknown_option_message(word, known)
        return ""


#: Sweeps of ``intervene --sweep`` (engine.models.iter_sweep's kinds).
INTERVENE_SWEEPS = ("alpha", "layer", "head")


def add_intervene_parser(sub: Any, formatter_class: type[argparse.HelpFormatter]) -> None:
    """Add the ``intervene`` command to ``sub`` (the program's subparsers).

    Declared here, not in :mod:`engine.cli.intervene`, so that building the program's parser
    loads no model code: the command's module is imported only when it runs.
    """
    from engine.cli.options import add_rule_options
    from engine.config import ScalingRule

    intervene = sub.add_parser(
        "intervene", allow_abbrev=False, formatter_class=formatter_class,
        help="change a real model's attention scale and write its loss per point (engine only, "
        "no Qt, no PyTorch)",
        description="Run MODEL (a Hugging Face folder or a .gguf file) to its next-token "
        "logits on a text with the attention logits changed: multiplied by α, scaled by "
        "another rule, or rounded to a low-precision format, in all layers, some layers or "
        "some heads. Writes one row per point of the sweep (loss, perplexity, mean attention "
        "entropy and saturated share per layer) to a CSV file, or a JSON file that also holds "
        "the tokens, the top-k next tokens at the last position and, with --continue, the "
        "greedy continuations. Prints the point of least loss; progress on a terminal.")
    intervene.add_argument("model", metavar="MODEL",
                           help="Hugging Face model folder or .gguf file")
    text = intervene.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", help="the text to score")
    text.add_argument("--text-file", metavar="FILE", help="read the text from this UTF-8 file")
    intervene.add_argument("--out", required=True, metavar="FILE",
                           help="file to write: .csv (one row per point) or .json (everything)")
    intervene.add_argument("--sweep", choices=INTERVENE_SWEEPS, default="alpha",
                           help="alpha: every α of --alphas on --layers; layer: one α on each "
                           "layer in turn; head: one α on each head of the one layer of "
                           "--layers in turn")
    intervene.add_argument("--alphas", metavar="A,…",
                           help="α multiplying the attention logits: 0.5,1,2 or a:b for the "
                           "powers of two 2^a..2^b (default for --sweep alpha: 13 points "
                           "2^(k/2) from 1/8 to 8; for layer and head: one α, default √d_k, "
                           "which undoes a 1/√d_k model's scaling)")
    intervene.add_argument("--layers", metavar="L,…",
                           help="layers to intervene on, e.g. 0,3,5-7 (default: all); with "
                           "--sweep head the one layer whose heads are swept (default 0)")
    intervene.add_argument("--heads", metavar="H,…",
                           help="query heads of those layers to intervene on (default: all)")
    intervene.add_argument("--rule", choices=[rule.value for rule in ScalingRule],
                           default=None,
                           help="replace the model's own scale by this rule before α "
                           "(default: keep the model's scale and soft-cap)")
    add_rule_options(intervene)  # --temperature, --gain, --cap, … as declared with the rules
    intervene.add_argument("--dtype", default="float32", metavar="FORMAT",
                           help="round the attention to this format: float32 (no rounding), "
                           "float16, bfloat16, float8_e4m3fn or float8_e5m2")
    intervene.add_argument("--softmax", choices=("stable", "naive"), default="stable",
                           help="softmax of the rounded attention: stable subtracts the row "
                           "maximum, naive does not")
    intervene.add_argument("--top-k", type=int, default=5, metavar="K",
                           help="next tokens listed per point in the JSON file")
    intervene.add_argument("--continue", type=int, default=0, metavar="N",
                           dest="continue_tokens",
                           help="also continue the text greedily by N tokens under the model's "
                           "own scale and under each point's intervention (JSON only; 0: no "
                           "continuation)")
    intervene.add_argument("--max-tokens", type=int, default=None, metavar="N",
                           help="score only the first N tokens (default: the whole text, up to "
                           "the model's positions)")
    intervene.add_argument("--memory-budget", metavar="SIZE", default=None,
                           help="largest memory one forward may allocate, e.g. 4G or 512M "
                           "(default 1G)")
    intervene.add_argument("--quiet", action="store_true", help="no progress on stderr")
