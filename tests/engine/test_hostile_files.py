"""Hostile tensor files, built in code: each gets one clear message naming the file (and the
array), without hanging, within the memory budget, and changes nothing on disk.

Each case is opened in a child process, as ``inspect`` or the window would open it (load, then
diagnose every head), so that a hang is a timeout and the memory is the child's own peak. A
fuzz set mutates valid files of each container and requires a TensorFileError or a file that
reads. Hostile session files are in tests/gui/test_hostile_sessions.py (main.py needs Qt).
"""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

from engine.io.tensors import TensorFileError, load_tensors, write_tensors
from tests.engine.fuzzing import mutate, run_bounded

ROOT = Path(__file__).resolve().parents[2]


def _qk(heads: int = 2, n: int = 8, d: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {f"layer0.{p}": rng.standard_normal((heads, n, d)).astype(np.float32) for p in "qk"}


def _npz_with(path: Path, extra: dict[str, np.ndarray], *, meta: dict | None = None) -> Path:
    return write_tensors(path, {**_qk(), **extra}, meta=meta)


def _patch_member_flags(path: Path, member: str, *, flag: int = 0, method: int | None = None,
                        name: bytes | None = None) -> None:
    """Set general-purpose flag bits (0x1: encrypted, 0x800: UTF-8 name), the compression
    method or the name bytes of ``member`` in its local and central headers, as another zip
    tool would write them."""
    data = bytearray(path.read_bytes())
    old = member.encode()
    for signature, flag_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = 0
        while (at := data.find(signature, start)) >= 0:
            if data[at + name_at:at + name_at + len(old)] == old:
                flags = int.from_bytes(data[at + flag_at:at + flag_at + 2], "little") | flag
                data[at + flag_at:at + flag_at + 2] = flags.to_bytes(2, "little")
                if method is not None:
                    data[at + flag_at + 2:at + flag_at + 4] = method.to_bytes(2, "little")
                if name is not None:
                    assert len(name) == len(old)
                    data[at + name_at:at + name_at + len(old)] = name
            start = at + 4
    path.write_bytes(bytes(data))


def _patched(path: Path, member: str, **kw) -> Path:
    _npz_with(path, {})
    _patch_member_flags(path, member, **kw)
    return path


def _zip_bomb(path: Path, *, fortran: bool = False) -> Path:
    """A 2.3 MB npz of q and k (64, 1024, 1024) float32 zeros, deflated (256 MiB each, 229×:
    the fastest level is bomb enough): neither unpacking a member up to each head nor reading
    a Fortran-order array whole may pass."""
    header = {"descr": "<f4", "fortran_order": fortran, "shape": (64, 1024, 1024)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name in ("layer0.q.npy", "layer0.k.npy"):
            with zf.open(name, "w", force_zip64=True) as fh:
                np.lib.format.write_array_header_1_0(fh, header)
                zeros = bytes(1 << 24)
                for _ in range(64 * 1024 * 1024 * 4 // len(zeros)):
                    fh.write(zeros)
    return path


def _large_fortran(path: Path) -> Path:
    """Fortran-order q and k of 17 MiB each, 99 % zeros: they compress 50×, within the ratio,
    but are larger than a quarter of the child's 64 MiB budget."""
    rng = np.random.default_rng(2)
    arrays = {}
    for p in "qk":
        values = rng.standard_normal((17, 512, 512)).astype(np.float32)
        values[rng.random(values.shape) < 0.99] = 0.0
        arrays[f"layer0.{p}"] = np.asfortranarray(values)
    np.savez_compressed(path, **arrays)
    return path


def _long_tokens(path: Path) -> Path:
    """q and k of n = 8, and a `tokens` array that declares 2^26 entries (compressed: 250 KB)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, array in _qk().items():
            with zf.open(f"{name}.npy", "w") as fh:
                np.lib.format.write_array(fh, array)
        with zf.open("tokens.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(
                fh, {"descr": "<U1", "fortran_order": False, "shape": (1 << 26,)})
            chunk = np.full(1 << 22, "a", dtype="<U1").tobytes()
            for _ in range(16):
                fh.write(chunk)
    return path


def _lzma(path: Path) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_LZMA) as zf:
        for name, array in _qk().items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array)
            zf.writestr(f"{name}.npy", buffer.getvalue())
    return path


def _many_arrays(path: Path, count: int) -> Path:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.zeros((1, 1, 1), np.float32))
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(count):
            zf.writestr(f"layer{i // 2}.{'qk'[i % 2]}.npy", buffer.getvalue())
    return path


def _safetensors_header(path: Path, length: int) -> Path:
    path.write_bytes(length.to_bytes(8, "little") + b'{"a": 1}' + bytes(64))
    return path


def _nested_tokens(path: Path) -> Path:
    safetensors.numpy.save_file(_qk(), str(path), metadata={"tokens": "[" * 50_000})
    return path


def _folder(path: Path, extra: Callable[[Path], None]) -> Path:
    path.mkdir()
    for name, array in _qk().items():
        np.save(path / f"{name}.npy", array)
    extra(path)
    return path


def _outside(folder: Path) -> None:
    np.save(folder.parent / "outside.npy", np.zeros((2, 8, 4)))
    (folder / "layer0.v.npy").symlink_to(folder.parent / "outside.npy")


#: name -> (builder of the file in tmp_path, words the one-line message must hold)
CASES: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "a FIFO": (lambda d: (os.mkfifo(d / "pipe.npz"), d / "pipe.npz")[1], ("FIFO",)),
    "a FIFO in a .npy folder": (
        lambda d: _folder(d / "qk", lambda f: os.mkfifo(f / "layer0.v.npy")),
        ("layer0.v.npy", "FIFO")),
    "a device": (lambda d: Path("/dev/zero"), ("device",)),
    "a /proc file": (lambda d: Path("/proc/self/status"), ("status", "empty", "0 bytes")),
    "a symlink out of the folder": (lambda d: _folder(d / "qk", _outside),
                                    ("layer0.v.npy", "outside the folder")),
    "a symlink loop in the folder": (
        lambda d: _folder(d / "qk", lambda f: (f / "layer0.v.npy").symlink_to(
            f / "layer0.v.npy")), ("layer0.v.npy", "symbolic link")),
    "a 0-byte .npy": (lambda d: _folder(d / "qk", lambda f: (f / "tokens.npy").touch()),
                      ("tokens.npy", "empty")),
    "a truncated .npy": (
        lambda d: _folder(d / "qk", lambda f: (f / "layer0.k.npy").write_bytes(
            (f / "layer0.k.npy").read_bytes()[:-10])), ("layer0.k.npy", "truncated")),
    "an object array in a folder": (
        lambda d: _folder(d / "qk", lambda f: np.save(
            f / "tokens.npy", np.array([{}] * 8, dtype=object), allow_pickle=True)),
        ("tokens", "object (pickled) arrays are not read")),
    "a zip bomb": (lambda d: _zip_bomb(d / "bomb.npz"), ("bomb.npz", "layer0.q", "zip bomb")),
    "a zip bomb of Fortran-order arrays": (lambda d: _zip_bomb(d / "bombf.npz", fortran=True),
                                           ("bombf.npz", "layer0.q", "zip bomb")),
    "a Fortran-order array too large to read whole": (
        lambda d: _large_fortran(d / "fortran.npz"),
        ("fortran.npz", "layer0.q", "Fortran-order", "C order")),
    "tokens declared 2^26 long": (lambda d: _long_tokens(d / "tokens.npz"),
                                  ("tokens.npz", "67108864 tokens, but n = 8")),
    "an encrypted member": (lambda d: _patched(d / "enc.npz", "layer0.k.npy", flag=0x1),
                            ("enc.npz", "layer0.k", "encrypted")),
    "an unknown compression": (lambda d: _patched(d / "comp.npz", "layer0.q.npy", method=99),
                               ("comp.npz", "layer0.q", "method 99", "stored or deflated")),
    "an lzma member": (lambda d: _lzma(d / "lzma.npz"), ("lzma.npz", "lzma", "deflated")),
    "a member name that is not UTF-8": (
        lambda d: _patched(d / "utf8.npz", "layer0.q.npy", flag=0x800, name=b"layer0.\xff.npy"),
        ("utf8.npz", "damaged")),
    "an archive of 10,001 arrays": (lambda d: _many_arrays(d / "many.npz", 10_001),
                                    ("many.npz", "10001", "at most 10000")),
    "a safetensors header of 2^40 bytes": (
        lambda d: _safetensors_header(d / "head.safetensors", 1 << 40),
        ("head.safetensors", "1,099,511,627,776 bytes")),
    "nested JSON": (lambda d: _npz_with(d / "nest.npz", {
        "meta": np.array("[" * 100_000 + "]" * 100_000)}), ("nest.npz", "nested too deeply")),
    "nested JSON tokens": (lambda d: _nested_tokens(d / "nest.safetensors"),
                           ("nest.safetensors", "'tokens'", "nested too deeply")),
    "an integer of 5000 digits": (lambda d: _npz_with(d / "digits.npz", {
        "meta": np.array('{"scale": ' + "1" * 5000 + "}")}), ("digits.npz", "4300 digits")),
    "meta cap 1e308": (lambda d: _npz_with(d / "cap.npz", {}, meta={"cap": 1e308}),
                       ("cap.npz", "'cap'", "1e+308", "1e-06..1e+06")),
    "meta cap 1e-300": (lambda d: _npz_with(d / "tiny.npz", {}, meta={"cap": 1e-300}),
                        ("tiny.npz", "'cap'", "1e-300")),
    "meta scale 1e400 written out": (lambda d: _npz_with(d / "scale.npz", {
        "meta": np.array('{"scale": 1' + "0" * 400 + "}")}), ("scale.npz", "'scale'", "finite")),
    "a 100,000-character layer name": (
        lambda d: _npz_with(d / "name.npz", {}, meta={"layers": {"0": {"name": "x" * 100_000}}}),
        ("name.npz", "layers.0.name", "100000 characters")),
    "tokens not UTF-8": (lambda d: _npz_with(d / "utf.npz", {
        "tokens": np.array([b"\xff\xfe"] * 8)}), ("utf.npz", "'tokens'", "not UTF-8")),
    "a token of 5000 characters": (lambda d: _npz_with(d / "tok.npz", {
        "tokens": np.array(["a" * 5000] + ["b"] * 7)}), ("tok.npz", "'tokens'", "5000")),
    "JSON meta of 2 MB": (lambda d: _npz_with(d / "big.npz", {
        "meta": np.array(json.dumps({"notes": "x" * (2 << 20)}))}), ("big.npz", "'meta'")),
    "meta as a float array": (lambda d: _npz_with(d / "float.npz", {"meta": np.ones(3)}),
                              ("float.npz", "'meta'", "expected JSON text")),
}


def run_child(code: str, timeout: float = 60) -> str:
    """Run ``code`` in a fresh interpreter; its stdout and stderr (a hang fails the test)."""
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"hung for {timeout} s: {out}")
    return out


#: The budget the child runs with: small, so that a bound that is not kept shows quickly.
CHILD_BUDGET = 64 << 20
LOAD_AND_DIAGNOSE = textwrap.dedent("""
    import resource
    from engine.core.memory import set_memory_budget
    from engine.io.tensors import TensorFileError, load_tensors
    from engine.analysis.head_scan import iter_file_diagnostics
    set_memory_budget({budget})
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        tf = load_tensors({path!r})
        list(iter_file_diagnostics(tf))
    except TensorFileError as exc:
        print("REFUSED", exc)
    else:
        print("OPENED")
    print("GROWN", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)
""")


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_file_gets_one_clear_message_in_bounded_time_and_memory(tmp_path, case):
    build, words = CASES[case]
    path = build(tmp_path)
    before = {p: p.lstat().st_mtime_ns for p in tmp_path.rglob("*")}
    out = run_child(LOAD_AND_DIAGNOSE.format(path=str(path), budget=CHILD_BUDGET))
    lines = out.splitlines()
    refused = [line for line in lines if line.startswith("REFUSED ")]
    assert len(refused) == 1, out
    message = refused[0][len("REFUSED "):]
    assert "Traceback" not in out and "Warning" not in out, out
    assert message.startswith((f"{path.name}:", f"{path}:")), message
    assert not message.startswith(f"{path.name}: {path.name}:"), message  # named once
    for word in words:
        assert word in message, message
    grown = next(float(line.split()[1]) for line in lines if line.startswith("GROWN "))
    assert grown <= CHILD_BUDGET, (case, grown)
    after = {p: p.lstat().st_mtime_ns for p in tmp_path.rglob("*")}
    assert after == before  # nothing written, nothing left behind


@pytest.mark.parametrize("path", ["bad\x00name.npz", "\ud800.npz", "x" * 5000 + ".npz"])
def test_an_impossible_path_is_refused_in_one_short_line(path) -> None:
    with pytest.raises(TensorFileError) as info:
        load_tensors(path)
    message = str(info.value)
    assert "\n" not in message and len(message) < 300
    assert "usable file name" in message or "too long" in message


def test_an_archive_member_shorter_than_its_header_declares_is_refused(tmp_path) -> None:
    path = tmp_path / "short.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, array in _qk().items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array)
            zf.writestr(f"{name}.npy", buffer.getvalue()[:-16])
    with pytest.raises(TensorFileError, match=r"^short\.npz: array 'layer0\.[qk]': its header "
                       r"declares shape \(2, 8, 4\).*truncated"):
        load_tensors(path)


def _seeds(tmp_path: Path) -> dict[str, bytes]:
    """Valid files of each container (and a deflated npz), as bytes to mutate."""
    rng = np.random.default_rng(3)
    arrays = {f"layer{layer}.{p}": rng.standard_normal((2, 3, 4)).astype(np.float32)
              for layer in (0, 1) for p in "qk"}
    meta = {"scale": 0.5, "cap": 30, "layers": {"0": {"name": "x"}}}
    seeds = {}
    for suffix in ("npz", "safetensors"):
        path = write_tensors(tmp_path / f"seed.{suffix}", arrays, tokens=list("abc"), meta=meta)
        seeds[suffix] = path.read_bytes()
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays, tokens=np.array(list("abc")))
    seeds["deflated.npz"] = buffer.getvalue()
    buffer = io.BytesIO()
    np.save(buffer, arrays["layer0.q"])
    seeds["npy"] = buffer.getvalue()
    return seeds


#: Mutations per container.
FUZZ_CASES = 250


def test_fuzzed_files_read_or_give_one_clear_message(tmp_path) -> None:
    """Mutated npz (stored and deflated), safetensors and .npy files: each either loads and
    reads every head, or raises one TensorFileError naming the file; nothing else escapes,
    not even a RuntimeWarning (they are errors in this suite), and nothing hangs."""
    seeds = _seeds(tmp_path)
    escaped: list[str] = []
    bad_messages: list[str] = []

    def fuzz() -> None:
        rnd = random.Random(20261202)
        for kind, data in seeds.items():
            for i in range(FUZZ_CASES):
                mutated = mutate(data, rnd)
                if kind == "npy":
                    path = tmp_path / f"folder{i}"
                    path.mkdir()
                    for name in ("layer0.k", "layer1.q", "layer1.k"):
                        np.save(path / f"{name}.npy", np.ones((2, 3, 4), np.float32))
                    (path / "layer0.q.npy").write_bytes(mutated)
                else:
                    path = tmp_path / f"case{i}.{kind.rsplit('.', 1)[-1]}"
                    path.write_bytes(mutated)
                try:
                    tf = load_tensors(path)
                    for layer in tf.layers:
                        for head in range(tf.heads):
                            tf.qk(layer, head)
                except TensorFileError as exc:
                    text = str(exc)
                    if "\n" in text or not text.startswith(f"{path.name}: "):
                        bad_messages.append(f"{kind} #{i}: {text!r}")
                except BaseException as exc:  # anything else is what this looks for
                    escaped.append(f"{kind} #{i}: {type(exc).__name__}: {exc}")

    run_bounded(fuzz, 60)
    assert not escaped, escaped[:5]
    assert not bad_messages, bad_messages[:5]


def test_a_file_replaced_after_opening_is_read_as_it_is_now(tmp_path) -> None:
    path = _npz_with(tmp_path / "v.npz", {})
    tf = load_tensors(path)
    arrays = _qk()
    arrays["layer0.q"][1, 0, 0] = np.nan
    write_tensors(path, arrays)
    with pytest.raises(TensorFileError, match=r"^v\.npz: .*head 1 holds 1 NaN/inf"):
        tf.qk(0, 1)


def test_a_folder_file_replaced_by_another_shape_is_refused(tmp_path) -> None:
    folder = _folder(tmp_path / "qk", lambda f: None)
    tf = load_tensors(folder)
    np.save(folder / "layer0.k.npy", np.ones((2, 8, 5), np.float32))
    with pytest.raises(TensorFileError, match=r"^qk: array 'layer0\.k': the file has changed "
                       r"since it was opened \(now \(2, 8, 5\)\); open it again"):
        tf.qk(0, 0)
    np.save(folder / "layer0.k.npy", _qk()["layer0.k"] * 2)  # the geometry back: read anew
    np.testing.assert_array_equal(tf.qk(0, 1)[1][0], _qk()["layer0.k"][1] * 2)
