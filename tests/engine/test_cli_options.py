"""The sweep/train/lr-sweep options are generated from the config field declarations."""

from __future__ import annotations

import argparse
import dataclasses
from enum import StrEnum
from typing import ClassVar

import pytest

from engine.cli.options import add_field_options, field_values, option_fields
from engine.cli.sweep import sweep_command
from engine.cli.train import train_command
from engine.config import SweepConfig, TrainConfig
from engine.config.base import Cli, FieldSpec, JsonConfig, validate_fields
from main import build_parser


def _subparser(name: str) -> argparse.ArgumentParser:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise AssertionError(name)


@pytest.mark.parametrize(("command", "cls"), [("sweep", SweepConfig), ("train", TrainConfig),
                                              ("lr-sweep", TrainConfig)])
def test_each_declared_option_is_in_the_parser_as_declared(command, cls) -> None:
    parser = _subparser(command)
    actions = {action.dest: action for action in parser._actions}
    fields = option_fields(cls) + (option_fields(cls, command) if command == "train" else [])
    assert fields, command
    for field in fields:
        cli = field.spec.cli
        action = actions.pop(field.name)
        assert tuple(action.option_strings) == cli.flags
        assert action.help.startswith(cli.help), field.name
        low, high = field.spec.low, field.spec.high
        if field.kind in (int, float) and low is not None and high is not None:
            assert action.help.endswith(f"..{high:.0f})" if float(high).is_integer()
                                        else f"..{high:g})"), field.name
        if not cli.required:
            default = field.default
            if isinstance(default, tuple):
                default = ",".join(v.value for v in default)
            assert action.default == default, field.name
    # lr and seed are train-only (lr-sweep sweeps them); nothing else sets a field.
    assert ("lr" in actions) is False and ("seed" in actions) is False
    assert set(actions) <= {"help", "out", "quiet", "json", "lrs", "seeds", "tensors_out"}


def _all_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = {parser.prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.update(_all_parsers(sub))
    return found


def test_every_command_and_option_explains_itself() -> None:
    # A description per subcommand; a help, the default and the choices per option.
    parsers = _all_parsers(build_parser())
    assert len(parsers) == 7
    for prog, parser in parsers.items():
        assert parser.description, prog
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            assert action.help and action.help.strip(), (prog, action.option_strings)
            if action.default not in (None, False, argparse.SUPPRESS) and not isinstance(
                    action, argparse._VersionAction):
                assert "default" in " ".join(action.help.split()) or (
                    f"(default: {action.default})" in text), (prog, action.option_strings)
            if action.choices:
                assert "{" + ",".join(map(str, action.choices)) + "}" in text, action.dest
    train = " ".join(parsers["attention-explorer train"].format_help().split())
    assert "--task {retrieval,copy_back}" in train
    for option, default in (("--d-k", "64"), ("--steps", "500"), ("--lr", "0.01")):
        assert f"(default: {default})" in train.split(option + " ")[2], option
    lr_sweep = " ".join(parsers["attention-explorer lr-sweep"].format_help().split())
    assert "(default: 0.001,0.003,0.01,0.03,0.1)" in lr_sweep and "(default: 3)" in lr_sweep


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
    [(train_command, ["train", "--n", "1"], "error: n must be in [2, 1024], got 1"),
     (train_command, ["train", "--lr", "1000"], "error: lr must be in [1e-08, 100], got 1000"),
     (sweep_command, ["sweep", "--values", "2", "--n", "9000"],
      "error: n_tokens must be in [1, 8192], got 9000")],
)
def test_a_range_error_names_the_field_and_its_declared_range(command, argv, message,
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
