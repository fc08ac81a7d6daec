"""The terminal table of ``python main.py inspect`` (without ``--out``): one line per head.

The CSV keeps every number exactly (``repr``); this table is for reading: the shares and the
entropy ratio in [0, 1] with three decimals, logits with three significant figures and no
exponent, the flags in full, and a line on what was flagged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import IO

from engine.analysis.head_scan import HeadRecord
from engine.cli.output import readable_number

__all__ = ["HEADER", "write_head_table"]

#: Column titles; the layer's name (``meta.layers``) follows its index when the file has one.
HEADER = ("layer", "head", "n", "entropy/uniform", "p_max", "saturated", "sink", "logit std",
          "max|logit|", "flags")
#: Right-aligned columns (numbers); the layer and the flags are left-aligned text.
_NUMERIC = set(range(1, 9))
#: What a cell shows where the file cannot give the number (a file of weights has no logits).
MISSING = "-"


def _share(value: float) -> str:
    return f"{value:.3f}" if math.isfinite(value) else MISSING


def _cells(record: HeadRecord, layer_label: str) -> list[str]:
    d = record.diagnostics
    ratio = d.entropy_mean / d.entropy_uniform if d.entropy_uniform > 0 else math.nan
    return [layer_label, str(record.head), str(d.n), _share(ratio), _share(d.p_max_mean),
            _share(d.saturated_share), _share(d.sink_mass), readable_number(d.logit_std),
            readable_number(d.max_abs_logit), ", ".join(d.flags) or MISSING]


def write_head_table(records: Iterable[HeadRecord], layer_labels: dict[int, str],
                     out: IO[str]) -> None:
    """Write the table of ``records`` to ``out``, then how many heads were flagged.

    ``layer_labels`` maps a layer index to its first column (``"2"``, or ``"2 qk_norm"`` for a
    named layer).
    """
    rows = [_cells(record, layer_labels[record.layer]) for record in records]
    widths = [max(len(title), *(len(row[i]) for row in rows)) if rows else len(title)
              for i, title in enumerate(HEADER)]

    def line(cells: list[str] | tuple[str, ...]) -> str:
        padded = [cell.rjust(width) if i in _NUMERIC else cell.ljust(width)
                  for i, (cell, width) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(padded).rstrip() + "\n"

    out.write(line(HEADER))
    for row in rows:
        out.write(line(row))
    flagged = sum(row[-1] != MISSING for row in rows)
    out.write(f"{flagged} of {len(rows)} heads flagged; --out FILE writes every number as "
              "CSV\n")
