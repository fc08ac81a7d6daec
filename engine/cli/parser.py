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

__all__ = ["SuggestingParser", "unknown_option_message"]


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
