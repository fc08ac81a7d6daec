"""Tensor files are read lazily: a head reads its own bytes, each array is unpacked or read
whole at most once, and no file is opened again for every head."""

from __future__ import annotations

import builtins
import os
import zipfile
from collections import Counter
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from engine.analysis.head_scan import iter_file_diagnostics
from engine.io import readers
from engine.io.safetensors_file import SafetensorsFile
from engine.io.tensors import load_tensors, write_tensors


def _qk(shape: tuple[int, ...], layers: tuple[int, ...] = (0,), seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {f"layer{layer}.{p}": rng.standard_normal(shape) for layer in layers for p in "qk"}


def _count_calls(monkeypatch, owner: object, name: str, counts: Counter, key: str) -> None:
    """Count the calls of ``owner.name`` in ``counts[key]``."""
    real = getattr(owner, name)

    def spy(*args, **kwargs):
        counts[key] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)


def test_npy_folder_is_memory_mapped_and_qk_slices_one_head(tmp_path, monkeypatch) -> None:
    arrays = _qk((2, 4, 6, 3), layers=(7,))
    folder = tmp_path / "qk"
    folder.mkdir()
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    modes = []
    real_load = np.load

    def spy(file, *args, **kwargs):
        modes.append(kwargs.get("mmap_mode"))
        return real_load(file, *args, **kwargs)

    monkeypatch.setattr(np, "load", spy)
    tf = load_tensors(folder)
    assert tf.layers == (7,) and tf.batch == 2
    q, k = tf.qk(7, 3)
    assert modes and set(modes) == {"r"}
    np.testing.assert_array_equal(q, arrays["layer7.q"][:, 3])
    np.testing.assert_array_equal(k, arrays["layer7.k"][:, 3])


def test_safetensors_reads_only_the_requested_tensors(tmp_path, monkeypatch) -> None:
    arrays = _qk((4, 6, 3), layers=(0, 1, 2))
    tf = load_tensors(write_tensors(tmp_path / "qk.safetensors", arrays), check_finite=False)
    requested = []
    real_array = SafetensorsFile.array
    monkeypatch.setattr(SafetensorsFile, "array",
                        lambda self, name: (requested.append(name), real_array(self, name))[1])
    q, _ = tf.qk(2, 1)
    assert sorted(set(requested)) == ["layer2.k", "layer2.q"]
    np.testing.assert_array_equal(q[0], arrays["layer2.q"][1])


def test_safetensors_bfloat16_is_read_as_bfloat16(tmp_path) -> None:
    values = np.array([[[1.5, -2.25]]], dtype=ml_dtypes.bfloat16)
    path = write_tensors(tmp_path / "b.safetensors", {"layer0.q": values, "layer0.k": values})
    q, _ = load_tensors(path).qk(0, 0)
    np.testing.assert_array_equal(q, [[[1.5, -2.25]]])


@pytest.mark.parametrize("head", [0, 5, 7])
def test_a_stored_npz_head_is_read_at_its_offset(tmp_path, monkeypatch, head) -> None:
    """zipfile reaches a position in a stored member by reading everything before it."""
    arrays = _qk((2, 8, 16, 4))
    tf = load_tensors(write_tensors(tmp_path / "qk.npz", arrays))
    read = []
    real_pread = os.pread

    def spy(fd, n, offset):
        read.append(n)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(os, "pread", spy)
    q, _ = tf.qk(0, head)
    np.testing.assert_array_equal(q, arrays["layer0.q"][:, head])
    block = 16 * 4 * 8  # one (n, d_k) float64 block: q's and k's, of both batch entries
    assert max(read) == block and sum(read) == 2 * 2 * block


def test_heads_of_a_compressed_member_read_in_order_unpack_it_once(tmp_path, monkeypatch):
    """A zipfile handle seeks by unpacking: each head would unpack its member from the start."""
    arrays = _qk((16, 32, 8), seed=4)
    path = tmp_path / "c.npz"
    np.savez_compressed(path, **arrays)
    tf = load_tensors(path, check_finite=False)
    opened = []
    real_open = zipfile.ZipFile.open

    def spy(self, name, *args, **kwargs):
        opened.append(name)
        return real_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", spy)
    for head in range(16):
        q, k = tf.qk(0, head)
        np.testing.assert_array_equal(q[0], arrays["layer0.q"][head])
        np.testing.assert_array_equal(k[0], arrays["layer0.k"][head])
    assert sorted(opened) == ["layer0.k.npy", "layer0.q.npy"]  # one handle each, moving on


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_fortran_order_heads_are_right_and_each_array_is_read_once(tmp_path, monkeypatch,
                                                                   save) -> None:
    rng = np.random.default_rng(5)
    arrays = {f"layer{layer}.{p}": np.asfortranarray(rng.standard_normal((3, 5, 4)))
              for layer in (0, 1) for p in "qk"}
    path = tmp_path / "f.npz"
    save(path, **arrays)
    tf = load_tensors(path, check_finite=False)
    read, opened = [], []
    real_pread, real_open = os.pread, zipfile.ZipFile.open
    monkeypatch.setattr(os, "pread", lambda fd, n, at: (read.append(n), real_pread(fd, n, at))[1])
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, name, *args, **kwargs: (
        opened.append(name), real_open(self, name, *args, **kwargs))[1])
    for layer in (0, 1):
        for head in (2, 0, 1, 2):
            q, k = tf.qk(layer, head)
            np.testing.assert_array_equal(q[0], arrays[f"layer{layer}.q"][head])
            np.testing.assert_array_equal(k[0], arrays[f"layer{layer}.k"][head])
    # Stored members are read by offset, deflated ones through one zipfile handle each.
    whole = sum(array.nbytes for array in arrays.values())
    assert sum(read) == (whole if save is np.savez else 0)
    assert sorted(opened) == ([] if save is np.savez else sorted(f"{n}.npy" for n in arrays))


def _many_layers(tmp_path: Path, fmt: str) -> Path:
    rng = np.random.default_rng(1)
    arrays = {f"layer{i}.{p}": rng.standard_normal((1, 4, 2)).astype(np.float32)
              for i in range(500) for p in "qk"}
    if fmt == "npy":
        folder = tmp_path / "many"
        folder.mkdir()
        for name, array in arrays.items():
            np.save(folder / f"{name}.npy", array)
        return folder
    return write_tensors(tmp_path / f"many.{fmt}", arrays)


@pytest.mark.parametrize("fmt", ["npz", "safetensors", "npy"])
def test_500_tiny_layers_are_read_without_reopening_the_file(tmp_path, monkeypatch, fmt):
    """Diagnosing every head opens or parses the file at most once more, and checks only the
    files of the head it reads for changes (not the other 999 arrays)."""
    tf = load_tensors(_many_layers(tmp_path, fmt))
    counts: Counter = Counter()
    _count_calls(monkeypatch, builtins, "open", counts, "opened")
    _count_calls(monkeypatch, zipfile.ZipFile, "__init__", counts, "opened")
    _count_calls(monkeypatch, readers, "map_regular", counts, "opened")
    _count_calls(monkeypatch, os, "stat", counts, "stat")
    assert len(list(iter_file_diagnostics(tf))) == 500
    assert counts["opened"] <= 1 and counts["stat"] <= 2 * 500, counts
