"""``python main.py inspect``: diagnose every head of a tensor file; a table, or CSV on ``--out``.

No Qt. The file is read with :func:`engine.io.tensors.load_tensors`; each (layer, head) is
diagnosed by :func:`engine.analysis.head_scan.iter_file_diagnostics` with each layer's own scale
(and cap) and the file's causal flag, or with the scaling rule given by ``--rule``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import sys
from collections.abc import Iterator
from typing import IO, Any

from engine.analysis.head_scan import HeadRecord, check_weights_rule, iter_file_diagnostics
from engine.analysis.heads import HeadDiagnostics
from engine.cli.head_table import write_head_table
from engine.cli.options import rule_from_options
from engine.cli.output import open_output, output_error, refused
from engine.cli.progress import Progress
from engine.core.scaling import Rule
from engine.io.files import check_output_not_input
from engine.io.tensors import TensorFileError, load_tensors

__all__ = ["COLUMNS", "inspect_command", "report_row"]

#: The CSV columns, in order.
COLUMNS = (
    "layer", "head", "n", "d_k", "rule", "scale", "causal", "logit_std", "logit_std_theory",
    "max_abs_logit", "entropy_mean", "entropy_uniform", "entropy_floor_at_norm", "p_max_mean",
    "saturated_share", "sink_mass", "rho", "flags", "source",
)


def _number(value: float) -> str:
    # Exactly, by repr; empty where there is no number (what a file of weights cannot give,
    # the law where c differs by row): spreadsheets and pandas read an empty cell as missing.
    return repr(value) if math.isfinite(value) else ""


def report_row(layer: int, head: int, diag: HeadDiagnostics) -> list[Any]:
    """One CSV row of the report (values as in :data:`COLUMNS`; floats exactly, by repr, and
    empty where the file does not give them; ``d_k`` empty when unknown)."""
    return [
        layer, head, diag.n, diag.d_k or "", diag.rule or "file", _number(diag.scale),
        int(diag.causal), *(_number(getattr(diag, key)) for key in COLUMNS[7:17]),
        ";".join(diag.flags), diag.source,
    ]


def _records(tf: Any, rule: Rule | None, progress: IO[str] | None) -> Iterator[HeadRecord]:
    """Every head's diagnostics in turn, with the progress line on ``progress``."""
    total = len(tf.layers) * tf.heads
    shown = None if progress is None else Progress(progress)
    for i, record in enumerate(iter_file_diagnostics(tf, rule=rule), 1):
        yield record
        if shown is not None:
            shown.update(i / total, f"inspect: {i}/{total} heads (layer {record.layer}, head "
                         f"{record.head})", done=i == total)
    if shown is not None:
        shown.end()


def _write_csv(records: Iterator[HeadRecord], out: IO[str]) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for record in records:
        writer.writerow(report_row(record.layer, record.head, record.diagnostics))


def _layer_labels(tf: Any) -> dict[int, str]:
    """``"2"``, or ``"2 qk_norm"`` where the file names the layer."""
    labels = {}
    for layer in tf.layers:
        name = tf.layer_name(layer)
        labels[layer] = str(layer) if name == f"layer {layer}" else f"{layer} {name}"
    return labels


def inspect_command(args: argparse.Namespace) -> int:
    """Run the ``inspect`` subcommand; return the exit code (0 ok, 2 bad input, 130 interrupted).

    ``args`` carries the attributes defined by ``main.build_parser``'s ``inspect`` parser:
    ``file``, ``rule`` (None = the file's own scale), one per rule parameter (``cap``, …),
    ``out`` (None = a table on stdout, ``-`` = the CSV on stdout) and ``quiet``. A file that
    cannot be read or diagnosed, an ``--out`` that is the input (or inside an input folder), or
    an ``--out`` that cannot be written gives a one-line message on stderr and exit code 2;
    ``--out`` then stays as it was.
    """
    progress = None if args.quiet else sys.stderr
    try:
        if args.out not in (None, "-"):
            check_output_not_input(args.out, [args.file])
        tf = load_tensors(args.file)
        rule = None if args.rule is None else rule_from_options(args)
        check_weights_rule(tf, rule)
    except (TensorFileError, ValueError) as exc:
        return refused(str(exc))
    try:
        if args.out is None:  # every head first: a bad one leaves no half table behind
            write_head_table(list(_records(tf, rule, progress)), _layer_labels(tf), sys.stdout)
            return 0
        with contextlib.ExitStack() as stack:
            out = open_output(stack, args.out)
            if out is None:
                return 2
            _write_csv(_records(tf, rule, progress), out)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # the disk filled up: the old --out file is left as it was
        if args.out in (None, "-"):
            raise  # stdout closed by its reader (BrokenPipeError): main.run ends quietly
        message = output_error(args.out, exc)
    except (TensorFileError, ValueError) as exc:  # a head that is bad
        message = str(exc)
    else:
        return 0
    if progress is not None:
        progress.write("\n")
    return refused(message)
