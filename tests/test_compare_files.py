"""benchmarks/compare_files.py, the file comparisons of compare_outputs.py: every kind of
file it compares reports a real difference, and it passes over only what its allow-lists name
(timings, dates, ids, the runs' own roots). Two output trees are built here; no commit is
checked out."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("compare_files",
                                               ROOT / "benchmarks" / "compare_files.py")
assert _SPEC is not None and _SPEC.loader is not None
compare = importlib.util.module_from_spec(_SPEC)
sys.modules["compare_files"] = compare
_SPEC.loader.exec_module(compare)

PDF = (b"%PDF-1.4\n/Creator (\xfe\xff\x00Q\x00t)\n/CreationDate (D:2026120619{minute}Z)\n"
       b'<rdf:Description xmp:CreateDate="2026-12-06T19:{minute}:29+00:00" '
       b'xmpMM:DocumentID="uuid:{uuid}"/>\n/ID [ <{uuid}> <{uuid}> ]\nBT (heatmap) Tj ET\n')


def _pdf(minute: str, uuid: str, text: bytes = b"heatmap") -> bytes:
    return (PDF.replace(b"{minute}", minute.encode()).replace(b"{uuid}", uuid.encode())
            .replace(b"heatmap", text))


def _tree(root: Path, name: str, *, loss: str = "0.25", rate: float = 100.0,
          pdf_text: bytes = b"heatmap", array_value: float = 1.0) -> tuple[Path, object]:
    out = root / f"out-{name}"
    out.mkdir()
    (out / "sweep.csv").write_text(f"rule,loss,steps_per_s\nsqrt,{loss},{rate}\n")
    (out / "train.stdout.txt").write_text(json.dumps(
        {"loss": float(loss), "elapsed_s": 1 / rate, "tensors_out": f"{out}/t.npz"}))
    (out / "table.stdout.txt").write_text(f"40 steps, {rate:.0f} steps/s\n")
    minute, uuid = ("50", "ab12") if name == "A" else ("51", "cd34")
    (out / "view.pdf").write_bytes(_pdf(minute, uuid, pdf_text))
    np.savez(out / "t.npz", q=np.array([0.5, array_value], np.float32),
             meta=np.array(json.dumps({"path": f"{root / name}/tests/fixtures/m"})))
    return out, compare.Normaliser(root / name, out)


def test_same_outputs_of_two_runs_compare_equal(tmp_path: Path) -> None:
    # Different timings, dates, document ids and roots: all named in the allow-lists.
    count, differences = compare.compare_trees(_tree(tmp_path, "A", rate=100.0),
                                               _tree(tmp_path, "B", rate=87.0))
    assert (count, differences) == (5, [])


@pytest.mark.parametrize(("change", "expected"), [
    ({"loss": "0.25000000000000006"}, "sweep.csv: line 2, column loss: '0.25' against "
                                      "'0.25000000000000006'"),
    ({"loss": "0.5"}, "train.stdout.txt: /loss: 0.25 against 0.5"),
    ({"pdf_text": b"softmax"}, "view.pdf: byte "),
    ({"array_value": float(np.nextafter(np.float32(1), np.float32(2)))},
     "t.npz: q[1]: np.float32(1.0) against np.float32(1.0000001)"),
], ids=["csv-last-bit", "json", "pdf-content", "npz-last-bit"])
def test_a_changed_value_is_a_difference(tmp_path: Path, change: dict, expected: str) -> None:
    _count, differences = compare.compare_trees(_tree(tmp_path, "A"),
                                                _tree(tmp_path, "B", **change))
    assert any(line.startswith(expected) for line in differences), differences


def test_a_file_of_one_run_only_is_a_difference(tmp_path: Path) -> None:
    a, b = _tree(tmp_path, "A"), _tree(tmp_path, "B")
    (b[0] / "extra.csv").write_text("x\n")
    assert compare.compare_trees(a, b)[1] == ["extra.csv: only in B"]


def test_a_path_outside_the_run_roots_still_compares(tmp_path: Path) -> None:
    norm_a, norm_b = (compare.Normaliser(tmp_path / n, tmp_path / f"out-{n}") for n in "AB")
    same = [norm.text(f"{tmp_path}/{n}/x.npz") for norm, n in ((norm_a, "A"), (norm_b, "B"))]
    assert same == ["<TREE>/x.npz", "<TREE>/x.npz"]
    assert compare.compare_text(norm_a.text("/elsewhere/x"), norm_b.text("/elsewhere/y"))
