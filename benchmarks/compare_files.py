"""File-by-file comparison of two output trees, for benchmarks/compare_outputs.py.

Numbers compare exactly; what differs between two runs of the same code is named here and
passed over: :data:`TIMING_FIELDS` and :data:`TIMING_TEXT` (wall-clock measurements),
:data:`VOLATILE_PATTERNS` (a PDF's or SVG's dates, creator and ids), and the runs' own roots
(:class:`Normaliser`). Each ``compare_*`` returns the first difference as a line, or None.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np

#: Fields whose value is a measured duration or rate, never equal from one run to the next.
#: A CSV column or JSON key of this name is not compared (its presence still is).
TIMING_FIELDS = {
    "steps_per_s": "training speed of this run (train --json), a wall-clock rate",
    "elapsed_s": "wall-clock seconds of this run (train --json)",
}

#: Byte patterns of SVG and PDF files that hold when or by what a file was written, not
#: what it shows; each is replaced by its name before the bytes compare.
VOLATILE_PATTERNS = {
    "pdf-date": re.compile(rb"/(?:CreationDate|ModDate) \([^)]*\)"),
    "xmp-date": re.compile(rb"xmp:(?:CreateDate|ModifyDate|MetadataDate)(?:=\"[^\"]*\"|>[^<]*<)"),
    "creator": re.compile(rb"/(?:Creator|Producer) \((?:[^()\\]|\\.)*\)"),
    "xmp-creator": re.compile(rb"(?:xmp:CreatorTool|pdf:Producer)(?:=\"[^\"]*\"|>[^<]*<)"),
    "document-id": re.compile(rb"xmpMM:(?:DocumentID|InstanceID)(?:=\"[^\"]*\"|>[^<]*<)"),
    "trailer-id": re.compile(rb"/ID \[ ?<[0-9A-Fa-f]*> ?<[0-9A-Fa-f]*> ?\]"),
}

#: Text of standard output that reports a measured rate or duration: replaced by its name
#: before lines compare (train's table prints its steps per second).
TIMING_TEXT = {
    "<rate> steps/s": re.compile(r"\b[0-9.]+ steps/s\b"),
}


class Normaliser:
    """Replaces one run's absolute roots (its worktree and output folder) by placeholders."""

    def __init__(self, tree: Path, out: Path) -> None:
        self.roots = sorted(((str(out), "<OUT>"), (str(tree), "<TREE>")),
                            key=lambda pair: -len(pair[0]))

    def text(self, value: str) -> str:
        for root, placeholder in self.roots:
            value = value.replace(root, placeholder)
        return value


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _same_number(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def compare_json(a: object, b: object, where: str = "") -> str | None:
    """First difference of two JSON values (numbers exact), or None; skips timing keys."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where or '/'}: keys differ: {sorted(set(a) ^ set(b))}"
        for key in a:
            if key in TIMING_FIELDS:
                continue
            found = compare_json(a[key], b[key], f"{where}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where or '/'}: {len(a)} items against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = compare_json(x, y, f"{where}[{i}]")
            if found:
                return found
        return None
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return None if _same_number(float(a), float(b)) else f"{where}: {a!r} against {b!r}"
    return None if a == b else f"{where or '/'}: {a!r} against {b!r}"


def compare_csv(text_a: str, text_b: str) -> str | None:
    """First differing cell of two CSV texts (numbers exact), or None; skips timing columns."""
    rows_a = list(csv.reader(io.StringIO(text_a)))
    rows_b = list(csv.reader(io.StringIO(text_b)))
    if len(rows_a) != len(rows_b):
        return f"{len(rows_a)} rows against {len(rows_b)}"
    header = rows_a[0] if rows_a else []
    for line, (row_a, row_b) in enumerate(zip(rows_a, rows_b, strict=True), start=1):
        if len(row_a) != len(row_b):
            return f"line {line}: {len(row_a)} cells against {len(row_b)}"
        for column, (x, y) in enumerate(zip(row_a, row_b, strict=True)):
            name = header[column] if column < len(header) else str(column)
            if line > 1 and name in TIMING_FIELDS:
                continue
            number_x, number_y = _number(x), _number(y)
            if number_x is not None and number_y is not None:
                same = _same_number(number_x, number_y)
            else:
                same = x == y
            if not same:
                return f"line {line}, column {name}: {x!r} against {y!r}"
    return None


def compare_text(text_a: str, text_b: str) -> str | None:
    """First differing line of two texts once :data:`TIMING_TEXT` is blanked, or None."""
    for name, pattern in TIMING_TEXT.items():
        text_a, text_b = pattern.sub(name, text_a), pattern.sub(name, text_b)
    lines_a, lines_b = text_a.splitlines(), text_b.splitlines()
    for line, (x, y) in enumerate(zip(lines_a, lines_b, strict=False), start=1):
        if x != y:
            return f"line {line}: {x!r} against {y!r}"
    if len(lines_a) != len(lines_b):
        return f"{len(lines_a)} lines against {len(lines_b)}"
    return None


def _arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The arrays of an npz or safetensors file, and its string metadata."""
    if path.suffix == ".npz":
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
        meta = {key: str(arrays.pop(key)) for key in list(arrays)
                if arrays[key].dtype.kind == "U" and arrays[key].ndim == 0}
        return arrays, meta
    from safetensors.numpy import load_file

    header_length = int.from_bytes(path.read_bytes()[:8], "little")
    header = json.loads(path.read_bytes()[8:8 + header_length])
    return load_file(str(path)), header.get("__metadata__") or {}


def compare_arrays(path_a: Path, path_b: Path, norm_a: Normaliser,
                   norm_b: Normaliser) -> str | None:
    """First difference of two tensor files: names, dtypes, shapes, bits, then metadata."""
    arrays_a, meta_a = _arrays(path_a)
    arrays_b, meta_b = _arrays(path_b)
    if arrays_a.keys() != arrays_b.keys():
        return f"arrays differ: {sorted(set(arrays_a) ^ set(arrays_b))}"
    for name in sorted(arrays_a):
        x, y = arrays_a[name], arrays_b[name]
        if x.dtype != y.dtype or x.shape != y.shape:
            return f"{name}: {x.dtype}{x.shape} against {y.dtype}{y.shape}"
        if x.dtype.kind in "fc":
            unequal = ~((x == y) | (np.isnan(x) & np.isnan(y)))
        else:
            unequal = x != y
        if unequal.any():
            index = tuple(int(i) for i in np.argwhere(unequal)[0])
            return f"{name}{list(index)}: {x[index]!r} against {y[index]!r}"
    if meta_a.keys() != meta_b.keys():
        return f"metadata keys differ: {sorted(set(meta_a) ^ set(meta_b))}"
    for key in sorted(meta_a):
        text_a, text_b = norm_a.text(meta_a[key]), norm_b.text(meta_b[key])
        try:
            found = compare_json(json.loads(text_a), json.loads(text_b), key)
        except ValueError:
            found = compare_text(text_a, text_b)
        if found:
            return f"metadata {found}"
    return None


def compare_png(path_a: Path, path_b: Path) -> str | None:
    """First differing pixel of two PNG files (Qt decodes them), or None."""
    if path_a.read_bytes() == path_b.read_bytes():
        return None
    from PySide6.QtGui import QImage

    images = [QImage(str(path)).convertToFormat(QImage.Format.Format_ARGB32)
              for path in (path_a, path_b)]
    if images[0].size() != images[1].size():
        sizes = [f"{image.width()}×{image.height()}" for image in images]
        return f"size {sizes[0]} against {sizes[1]}"
    pixels = [np.frombuffer(image.constBits(), np.uint8, image.sizeInBytes())
              .reshape(image.height(), image.bytesPerLine()) for image in images]
    unequal = np.argwhere(pixels[0] != pixels[1])
    if len(unequal) == 0:
        return None
    row, byte = (int(i) for i in unequal[0])
    return (f"{len(np.unique(unequal[:, 0]))} rows differ, first at pixel "
            f"(x {byte // 4}, y {row})")


def compare_document(path_a: Path, path_b: Path) -> str | None:
    """First differing byte of two SVG or PDF files once :data:`VOLATILE_PATTERNS` are blanked."""
    blanked = []
    for path in (path_a, path_b):
        data = path.read_bytes()
        for name, pattern in VOLATILE_PATTERNS.items():
            data = pattern.sub(f"<{name}>".encode(), data)
        blanked.append(data)
    a, b = blanked
    if a == b:
        return None
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                 min(len(a), len(b)))
    return (f"byte {first} of {len(a)}/{len(b)}: {a[max(0, first - 30):first + 30]!r} "
            f"against {b[max(0, first - 30):first + 30]!r}")


def compare_file(relative: str, base_a: tuple[Path, Normaliser],
                 base_b: tuple[Path, Normaliser]) -> str | None:
    """First difference of one output file between the two runs, or None."""
    (out_a, norm_a), (out_b, norm_b) = base_a, base_b
    path_a, path_b = out_a / relative, out_b / relative
    suffix = path_a.suffix.lower()
    if suffix in (".npz", ".safetensors"):
        return compare_arrays(path_a, path_b, norm_a, norm_b)
    if suffix == ".png":
        return compare_png(path_a, path_b)
    if suffix in (".svg", ".pdf"):
        return compare_document(path_a, path_b)
    text_a = norm_a.text(path_a.read_text(encoding="utf-8"))
    text_b = norm_b.text(path_b.read_text(encoding="utf-8"))
    if suffix == ".csv":
        return compare_csv(text_a, text_b)
    if suffix == ".json" or text_a.lstrip().startswith("{"):
        try:
            return compare_json(json.loads(text_a), json.loads(text_b))
        except ValueError:
            pass
    return compare_text(text_a, text_b)


def compare_trees(base_a: tuple[Path, Normaliser],
                  base_b: tuple[Path, Normaliser]) -> tuple[int, list[str]]:
    """``(files compared, differences as lines)`` over the union of both output trees."""
    def listing(out: Path) -> set[str]:
        return {str(path.relative_to(out)) for path in out.rglob("*") if path.is_file()}

    files_a, files_b = listing(base_a[0]), listing(base_b[0])
    differences = [f"{name}: only in A" for name in sorted(files_a - files_b)]
    differences += [f"{name}: only in B" for name in sorted(files_b - files_a)]
    for name in sorted(files_a & files_b):
        found = compare_file(name, base_a, base_b)
        if found:
            differences.append(f"{name}: {found}")
    return len(files_a | files_b), differences
