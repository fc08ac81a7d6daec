"""``python main.py sweep``: run a Monte Carlo sweep headless and stream it to CSV (no Qt)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterator
from typing import IO

from engine.analysis.sweep import iter_sweep, write_sweep_csv
from engine.cli.options import build_config, field_values
from engine.cli.output import refused, write_streamed
from engine.cli.progress import Progress
from engine.config import SweepConfig
from engine.config.sweep import swept_value_range
from engine.core.parallel import get_num_threads

__all__ = ["check_swept_values", "parse_values", "sweep_command"]

_BAR_WIDTH = 30


def parse_values(text: str, option: str = "--values") -> tuple[float, ...]:
    """Parse ``--values`` (or ``option``): ``"1,2,4"`` (a list) or ``"a:b"`` (powers of two
    2^a..2^b).

    Raises
    ------
    ValueError
        With a message naming ``option`` and the accepted forms.
    """
    text = text.strip()
    if ":" in text:
        parts = text.split(":")
        try:
            if len(parts) != 2:
                raise ValueError
            low, high = (int(part) for part in parts)
        except ValueError:
            raise ValueError(
                f"{option} {text!r}: a range must be 'a:b' with integers a <= b "
                "(powers of two 2^a..2^b)"
            ) from None
        if low > high:
            raise ValueError(f"{option} {text!r}: need a <= b in 'a:b'")
        if high - low > 64:
            raise ValueError(f"{option} {text!r}: at most 65 powers of two")
        if max(-low, high) > 1000:  # 2.0**1100 raises OverflowError
            raise ValueError(f"{option} {text!r}: a power beyond 2^±1000 is not a float")
        return tuple(2.0**i for i in range(low, high + 1))
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"{option} {text!r}: empty entry; use e.g. 1,2,4 or 0:10")
        try:
            value = float(part)
        except ValueError:
            raise ValueError(f"{option} {text!r}: {part!r} is not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"{option} {text!r}: {part!r} is not finite")
        values.append(value)
    return tuple(values)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _power(value: float) -> int | None:
    """k where ``value`` is 2^k exactly, else None."""
    exponent = math.log2(value) if value > 0 else math.nan
    return int(exponent) if math.isfinite(exponent) and exponent.is_integer() else None


def check_swept_values(text: str, param: str, values: tuple[float, ...]) -> None:
    """Refuse a value of ``--values`` that ``--param`` cannot take, in the words typed.

    Raises
    ------
    ValueError
        Naming ``--values`` as given, what an ``a:b`` range meant, the range ``--param``
        takes and the first value outside it (``--values 4:30 means 2^4..2^30 ...``).
    """
    kind, low, high = swept_value_range(param)
    for value in values:
        if kind is int and not value.is_integer():
            problem = f"{_number(value)} is not an integer"
        elif not low <= value <= high:
            problem = f"{_number(value)} is outside"
            if ":" in text:
                problem = f"2^{_power(value)} = {problem}"
        else:
            continue
        given = f"--values {text.strip()}"
        if ":" in text:
            first, last = _power(values[0]), _power(values[-1])
            given += (f" means 2^{first}..2^{last} "
                      f"({_number(values[0])}..{_number(values[-1])})")
        bounds = f"[{_number(low)}, {_number(high)}]"
        if kind is int and _power(low) is not None and _power(high) is not None:
            bounds += f" (2^{_power(low)}..2^{_power(high)})"
        what = "integers" if kind is int else "numbers"
        joint = ";" if ":" in text else ":"
        raise ValueError(f"{given}{joint} --param {param} takes {what} in {bounds}: {problem}")


def _build_config(args: argparse.Namespace) -> SweepConfig:
    # Scalar options map onto fields one to one; the two lists are parsed here.
    values = field_values(args, SweepConfig)
    values["values"] = parse_values(str(args.values))
    check_swept_values(str(args.values), str(args.param), values["values"])
    values["rules"] = tuple(rule.strip() for rule in str(args.rules).split(",") if rule.strip())
    return build_config(SweepConfig, values)


class _ProgressBar:
    """A text bar of the rows done and the points written (:class:`engine.cli.progress.Progress`:
    redrawn on a terminal, one line per tenth elsewhere; 100 % once every point is written)."""

    def __init__(self, stream: IO[str], total_points: int) -> None:
        self.progress = Progress(stream)
        self.total_points = total_points
        self.points = 0
        self._fraction = 0.0

    def rows(self, done: int, total: int) -> None:
        self._fraction = done / total if total else 1.0
        self.draw()

    def point(self) -> None:
        self.points += 1
        self.draw()

    def draw(self) -> None:
        done = self.points == self.total_points
        filled = round(Progress.percent(self._fraction, done) / 100 * _BAR_WIDTH)
        bar = "#" * filled + "." * (_BAR_WIDTH - filled)
        self.progress.update(self._fraction, f"[{bar}]  {self.points}/{self.total_points} points",
                             done=done)

    def finish(self) -> None:
        self.progress.end()


def sweep_command(args: argparse.Namespace) -> int:
    """Run the ``sweep`` subcommand; return the exit code (0 ok, 2 bad input, 130 interrupted).

    ``args`` carries the attributes defined by ``main.build_parser``'s ``sweep`` parser.
    Rows are written to ``--out`` (``-`` = stdout) as soon as each point is finished; a
    progress bar goes to stderr unless ``--quiet``.
    """
    try:
        config = _build_config(args)
    except ValueError as exc:
        return refused(str(exc))
    total = len(config.values) * len(config.rules)
    bar = None if args.quiet else _ProgressBar(sys.stderr, total)
    written = 0
    out_name = "stdout" if args.out == "-" else args.out

    def points() -> Iterator:
        nonlocal written
        stream = iter_sweep(config, on_progress=None if bar is None else bar.rows,
                            threads=get_num_threads())
        for point in stream:
            yield point
            written += 1
            if bar is not None:
                bar.point()

    return write_streamed(
        args.out, lambda out: write_sweep_csv(points(), out),
        end=(lambda: None) if bar is None else bar.finish,
        stopped=lambda kept: f"interrupted: wrote {written if kept else 0} of {total} points "
        f"to {out_name}")
