"""The sweep/train/lr-sweep options are generated from the config field declarations."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import re
from enum import StrEnum
from typing import ClassVar

import pytest

from engine.cli.options import add_field_options, field_values, option_fields, with_option_name
from engine.cli.sweep import sweep_command
from engine.cli.train import train_command
from engine.config import SweepConfig, TrainConfig
from engine.config.base import Cli, FieldSpec, JsonConfig, validate_fields
from main import build_parser

COMMANDS = ("sweep", "train", "lr-sweep", "export", "inspect", "capture", "intervene")
#: What each command needs to parse at all.
REQUIRED = {"sweep": ["--values", "2"], "inspect": ["f.npz", "--out", "-"],
            "capture": ["model", "--text", "t", "--out", "q.npz"], "export": ["--out", "dir"],
            "intervene": ["model", "--text", "t", "--out", "x.csv"]}


def _help(*command: str) -> str:
    """The help text of ``command`` (the program's own without one), on one line."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    return out.getvalue()


def _options(help_text: str) -> dict[str, str]:
    """Each option's entry in a help text: its first flag -> the entry on one line."""
    section = help_text.split("\noptions:\n", 1)[1]
    entries = re.split(r"\n(?=  -)", section)
    return {entry.split()[0].rstrip(","): " ".join(entry.split()) for entry in entries}


def _defaults(command: str) -> dict[str, object]:
    """What each option of ``command`` is when not given (the program's own options left out)."""
    own = vars(build_parser().parse_args([]))
    parsed = vars(build_parser().parse_args([command, *REQUIRED.get(command, [])]))
    return {dest: value for dest, value in parsed.items() if dest not in own}


@pytest.mark.parametrize(("command", "cls"), [("sweep", SweepConfig), ("train", TrainConfig),
                                              ("lr-sweep", TrainConfig)])
def test_each_declared_option_is_in_the_parser_as_declared(command, cls) -> None:
    options, defaults = _options(_help(command)), _defaults(command)
    fields = option_fields(cls) + (option_fields(cls, command) if command == "train" else [])
    assert fields, command
    for field in fields:
        cli = field.spec.cli
        entry = options[cli.flags[0]]
        assert all(flag in entry for flag in cli.flags)
        assert "".join(cli.help.split()) in "".join(entry.split())  # wrapped at any hyphen
        low, high = field.spec.low, field.spec.high
        if field.kind in (int, float) and low is not None and high is not None:
            assert (f"..{high:.0f})" if float(high).is_integer() else f"..{high:g})") in entry
        if not cli.required:
            default = field.default
            if isinstance(default, tuple):
                default = ",".join(v.value for v in default)
            assert defaults.pop(field.name) == default, field.name
    # lr and seed are train-only (lr-sweep sweeps them); nothing else sets a field.
    assert ("lr" in defaults) is False and ("seed" in defaults) is False
    assert set(defaults) <= {"values", "out", "quiet", "json", "lrs", "seeds", "tensors_out"}


def test_every_command_and_option_explains_itself() -> None:
    # A description per command; a help and the default per option.
    assert re.findall(r"^    (\S+) ", _help(), re.MULTILINE) == list(COMMANDS)
    for command in COMMANDS:
        text = _help(command)
        assert text.split("\n\n")[1].strip(), command  # the description after the usage
        options = _options(text)
        for entry in options.values():
            assert len(entry.split()) >= 3, entry  # the flag, and a help of its own
        for dest, default in _defaults(command).items():
            flag = "--" + dest.replace("_", "-")
            if default not in (None, False) and flag in options and flag not in REQUIRED.get(
                    command, []):
                assert "default" in options[flag], (command, flag)
    train = _options(_help("train"))
    assert train["--task"].startswith("--task {retrieval,copy_back}")
    for option, default in (("--d-k", "64"), ("--steps", "500"), ("--lr", "0.01")):
        assert f"(default: {default})" in train[option], option
    lr_sweep = _options(_help("lr-sweep"))
    assert "(default: 0.001,0.003,0.01,0.03,0.1)" in lr_sweep["--lrs"]
    assert "(default: 3)" in lr_sweep["--seeds"]
def test_the_console_script_names_itself() -> None:
    assert build_parser("attention-scale").format_usage().startswith("usage: attention-scale ")
    assert build_parser().format_usage().startswith("usage: attention-explorer ")


def test_train_options_keep_their_established_order() -> None:
    names = [field.name for field in option_fields(TrainConfig)]
    assert names == ["task", "rules", "d_k", "d_model", "heads", "n", "batch", "steps",
                     "optimizer", "vocab", "offset", "init_std", "clip_norm", "eval_size"]
    assert [field.name for field in option_fields(TrainConfig, "train")] == ["lr", "seed"]


@pytest.mark.parametrize(
    ("command", "argv", "message"),
    # The option's flag, as typed (the field behind --n is n_tokens in a sweep).
    [(train_command, ["train", "--n", "1"], "error: --n must be in [2, 1024], got 1"),
     (train_command, ["train", "--lr", "1000"], "error: --lr must be in [1e-08, 100], got 1000"),
     (train_command, ["train", "--d-k", "0"], "error: --d-k must be in [1, 8192], got 0"),
     (sweep_command, ["sweep", "--values", "2", "--n", "9000"],
      "error: --n must be in [1, 8192], got 9000"),
     (sweep_command, ["sweep", "--values", "2", "--n", "0"],
      "error: --n must be in [1, 8192], got 0")],
)
def test_a_range_error_names_the_option_and_its_declared_range(command, argv, message,
                                                              capsys) -> None:
    assert command(build_parser().parse_args(argv)) == 2
    assert capsys.readouterr().err.strip() == message


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass(frozen=True, slots=True)
class _Demo(JsonConfig):
    """A config declared only by its table: what adding a field takes."""

    kind: ClassVar[str] = "demo"
    FIELDS: ClassVar[dict[str, FieldSpec]] = {
        "width": FieldSpec(1, 10, cli=Cli(("--width",), "how wide")),
        "colour": FieldSpec(cli=Cli(("--colour",), choices=True)),
        "scale": FieldSpec(0.5, 2.0, cli=Cli(("--scale",), "scale", after="width")),
        "hidden": FieldSpec(0, 5),
    }

    width: int = 3
    colour: Colour = Colour.RED
    hidden: int = 0
    scale: float | None = None

    def __post_init__(self) -> None:
        validate_fields(self)


def test_a_new_declared_field_becomes_an_option_without_cli_code() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    add_field_options(parser, _Demo)
    args = parser.parse_args(["--colour", "blue", "--scale", "1.5"])
    assert _Demo(**field_values(args, _Demo)) == _Demo(width=3, colour="blue", scale=1.5)
    help_text = parser.format_help()
    assert help_text.index("--width") < help_text.index("--scale") < help_text.index("--colour")
    assert "{red,blue}" in help_text and "how wide" in help_text and "--hidden" not in help_text
    with pytest.raises(ValueError, match=r"width must be in \[1, 10\], got 11"):
        _Demo(**field_values(parser.parse_args(["--width", "11"]), _Demo))


def test_with_option_name_puts_the_option_only_where_the_message_starts_with_its_name():
    flags = {"n_tokens": "--n", "cap": "--cap"}
    assert (with_option_name("n_tokens must be in [1, 8192], got 0", flags)
            == "--n must be in [1, 8192], got 0")
    # A name not at the start, or not followed by "must", or not in flags stays as written.
    for message in ("values must hold at least one value", "the cap must be positive",
                    "n_tokens is wrong", "capx must be positive"):
        assert with_option_name(message, flags) == message
