"""Hostile tensor and session files, built in code: each gets one clear message naming the
file, in bounded time (≤ 5 s) and memory (≤ the memory budget), and changes nothing on disk.

Each case is opened in a child process, as ``inspect`` or the window would open it, so that
a hang is a timeout and the memory is the child's own peak (``os.wait4``).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from engine.io.tensors import write_tensors

ROOT = Path(__file__).resolve().parents[2]


def _qk(heads: int = 2, n: int = 8, d: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {f"layer0.{p}": rng.standard_normal((heads, n, d)).astype(np.float32) for p in "qk"}


def _npz_with(path: Path, extra: dict[str, np.ndarray], *, meta: dict | None = None) -> Path:
    return write_tensors(path, {**_qk(), **extra}, meta=meta)


def _patch_member_flags(path: Path, member: str, *, flag: int = 0, method: int | None = None
                        ) -> None:
    """Set a general-purpose flag bit (0x1: encrypted) or the compression method of
    ``member`` in both its local and central headers, as another zip tool would write them."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    name = member.encode()
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (at := data.find(signature, start)) >= 0:
            name_at = at + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at:name_at + len(name)] == name:
                data[at + flag_at] |= flag
                if method is not None:
                    data[at + flag_at + 2:at + flag_at + 4] = method.to_bytes(2, "little")
            start = at + 4
    assert info.header_offset >= 0
    path.write_bytes(bytes(data))


def _zip_bomb(path: Path) -> Path:
    """A small npz whose Fortran-order q and k unpack to 256 MiB each, which every head read
    whole (3.4 GB for a 522 KB file before)."""
    header = {"descr": "<f4", "fortran_order": True, "shape": (64, 1024, 1024)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in ("layer0.q.npy", "layer0.k.npy"):
            with zf.open(name, "w", force_zip64=True) as fh:
                np.lib.format.write_array_header_1_0(fh, header)
                zeros = bytes(1 << 24)
                for _ in range(64 * 1024 * 1024 * 4 // len(zeros)):
                    fh.write(zeros)
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


def _folder(path: Path, extra: Callable[[Path], None]) -> Path:
    path.mkdir()
    for name, array in _qk().items():
        np.save(path / f"{name}.npy", array)
    extra(path)
    return path


def _many_layers(path: Path) -> Path:
    rng = np.random.default_rng(1)
    arrays = {f"layer{i}.{p}": rng.standard_normal((1, 4, 2)).astype(np.float32)
              for i in range(500) for p in "qk"}
    return write_tensors(path, arrays)


#: name -> (builder of the file in tmp_path, words the one-line message must hold)
CASES: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "fifo": (lambda d: (os.mkfifo(d / "pipe.npz"), d / "pipe.npz")[1], ("FIFO",)),
    "fifo in a .npy folder": (
        lambda d: _folder(d / "qk", lambda f: os.mkfifo(f / "layer0.v.npy")),
        ("layer0.v.npy", "FIFO")),
    "a device": (lambda d: Path("/dev/zero"), ("device",)),
    "a /proc file": (lambda d: Path("/proc/self/status"), ("status", "empty")),
    "a symlink out of the folder": (
        lambda d: _folder(d / "qk", lambda f: (f / "layer0.v.npy").symlink_to(
            (np.save(d / "outside.npy", np.zeros((2, 8, 4))), d / "outside.npy")[1])),
        ("layer0.v.npy", "outside the folder")),
    "a 0-byte .npy": (lambda d: _folder(d / "qk", lambda f: (f / "tokens.npy").touch()),
                      ("tokens.npy", "empty")),
    "an object array in a folder": (
        lambda d: _folder(d / "qk", lambda f: np.save(
            f / "tokens.npy", np.array([{}] * 8, dtype=object), allow_pickle=True)),
        ("tokens", "object (pickled) arrays are not read")),
    "a zip bomb": (lambda d: _zip_bomb(d / "bomb.npz"), ("bomb.npz", "Fortran-order")),
    "tokens declared 2^26 long": (lambda d: _long_tokens(d / "tokens.npz"),
                                  ("tokens.npz", "67108864 tokens, but n = 8")),
    "an encrypted member": (
        lambda d: (_patch_member_flags(p := _npz_with(d / "enc.npz", {}), "layer0.k.npy",
                                       flag=0x1), p)[1], ("enc.npz", "layer0.k", "encrypted")),
    "an unknown compression": (
        lambda d: (_patch_member_flags(p := _npz_with(d / "comp.npz", {}), "layer0.q.npy",
                                       method=99), p)[1], ("comp.npz", "layer0.q")),
    "nested JSON": (lambda d: _npz_with(d / "nest.npz", {
        "meta": np.array("[" * 100_000 + "]" * 100_000)}), ("nest.npz", "nested too deeply")),
    "an integer of 5000 digits": (lambda d: _npz_with(d / "digits.npz", {
        "meta": np.array('{"scale": ' + "1" * 5000 + "}")}), ("digits.npz", "4300 digits")),
    "meta cap 1e308": (lambda d: _npz_with(d / "cap.npz", {}, meta={"cap": 1e308}),
                       ("cap.npz", "'cap'", "1e+308")),
    "a 100,000-character layer name": (
        lambda d: _npz_with(d / "name.npz", {}, meta={"layers": {"0": {"name": "x" * 100_000}}}),
        ("name.npz", "layers.0.name", "100000 characters")),
    "tokens not UTF-8": (lambda d: _npz_with(d / "utf.npz", {
        "tokens": np.array([b"\xff\xfe"] * 8)}), ("utf.npz", "'tokens'", "not UTF-8")),
    "JSON meta of 2 MB": (lambda d: _npz_with(d / "big.npz", {
        "meta": np.array(json.dumps({"notes": "x" * (2 << 20)}))}), ("big.npz", "'meta'")),
}


def run_child(code: str, timeout: float = 30) -> str:
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
    import resource, time
    from engine.core.memory import set_memory_budget
    from engine.io.tensors import TensorFileError, load_tensors
    from engine.analysis.head_scan import iter_file_diagnostics
    set_memory_budget({budget})
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.monotonic()
    try:
        tf = load_tensors({path!r})
        list(iter_file_diagnostics(tf))
    except TensorFileError as exc:
        print("REFUSED", exc)
    else:
        print("OPENED")
    print("SECONDS", time.monotonic() - start)
    print("GROWN", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)
""")


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_file_gets_one_clear_message_in_bounded_time_and_memory(tmp_path, case):
    build, words = CASES[case]
    path = build(tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if not p.is_symlink()}
    out = run_child(LOAD_AND_DIAGNOSE.format(path=str(path), budget=CHILD_BUDGET))
    lines = out.splitlines()
    refused = [line for line in lines if line.startswith("REFUSED ")]
    assert len(refused) == 1, out
    message = refused[0][len("REFUSED "):]
    assert "\n" not in message and "Traceback" not in out
    assert message.startswith((f"{path.name}:", f"{path}:")), message
    for word in words:
        assert word in message, message
    value = {line.split()[0]: float(line.split()[1]) for line in lines
             if line.startswith(("SECONDS", "GROWN"))}
    assert value["SECONDS"] <= 5.0, (case, value)
    assert value["GROWN"] <= CHILD_BUDGET, (case, value)
    after = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*") if not p.is_symlink()}
    assert after == before  # nothing written, nothing left behind


def test_an_archive_member_shorter_than_its_header_declares_is_refused(tmp_path) -> None:
    from engine.io.tensors import TensorFileError, load_tensors

    path = tmp_path / "short.npz"
    with zipfile.ZipFile(path, "w") as zf:
        for name, array in _qk().items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array)
            zf.writestr(f"{name}.npy", buffer.getvalue()[:-16])
    with pytest.raises(TensorFileError, match=r"^short\.npz: array 'layer0\.[qk]': its header "
                       r"declares shape \(2, 8, 4\)"):
        load_tensors(path)


def test_500_tiny_layers_are_read_without_reopening_the_file(tmp_path) -> None:
    """Each head re-opened the archive and re-read all 1,000 headers: 25 s for this file."""
    from engine.analysis.head_scan import iter_file_diagnostics
    from engine.io.tensors import load_tensors

    path = _many_layers(tmp_path / "many.npz")
    start = time.monotonic()
    records = list(iter_file_diagnostics(load_tensors(path)))
    assert len(records) == 500
    assert time.monotonic() - start <= 5.0


def test_a_file_replaced_after_opening_is_read_as_it_is_now(tmp_path) -> None:
    from engine.io.tensors import TensorFileError, load_tensors

    path = _npz_with(tmp_path / "v.npz", {})
    tf = load_tensors(path)
    arrays = _qk()
    arrays["layer0.q"][1, 0, 0] = np.nan
    write_tensors(path, arrays)
    with pytest.raises(TensorFileError, match=r"^v\.npz: .*head 1 holds 1 NaN/inf"):
        tf.qk(0, 1)


@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "nested"])
def test_a_hostile_session_file_is_refused_at_once(tmp_path, what) -> None:
    if what == "fifo":
        path = tmp_path / "s.json"
        os.mkfifo(path)
    elif what == "nested":
        path = tmp_path / "s.json"
        path.write_text("[" * 100_000 + "]" * 100_000)
    else:
        path = Path(what)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "main.py", "--session", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=30, env=env)
    assert time.monotonic() - start < 15
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: --session: ") and proc.stderr.count("\n") == 1, \
        proc.stderr
    assert "Traceback" not in proc.stderr
