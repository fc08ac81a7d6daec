"""Hostile model folders and GGUF files (built in tests/engine/hostile_containers.py): each gets
one line naming the file, the key or tensor, the value and what is allowed, without hanging,
within a memory bound, and changes nothing on disk.

All cases are opened (and, where the weights are the problem, captured) in one child process,
so that a hang is a timeout, an unbounded allocation hits the child's address-space limit, and
the imports are paid once. A few go through ``main.py capture`` as well, for its exit status.
Hostile tensor files are in test_hostile_files.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import stat
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from engine.io.files import read_regular_file
from engine.models import CaptureCancelled, ModelError, open_model
from tests.engine.fuzzing import mutate, run_bounded
from tests.engine.hostile_containers import (
    CASES,
    FIXTURES,
    LLAMA,
    ROOT,
    TEXT,
    gguf_kv,
    gguf_string,
    raw_gguf,
    tiny,
)

#: Address space the child may add after its imports and a warm-up capture, and the resident
#: growth allowed for one case (the unbounded parses of before took 2.8 and 7.9 GB).
CHILD_ADDRESS_SPACE = 1 << 30
CASE_GROWTH = 128 << 20
CHILD = textwrap.dedent("""
    import json, resource, sys, traceback
    import gguf, tokenizers  # the lazy imports, before the address space is bounded
    from engine.models import ModelError, open_model
    for warm in ("tiny-llama.gguf", "tiny-llama", "tiny-gpt2"):
        open_model({fixtures!r} + "/" + warm).capture({text!r})
    size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + {space}, resource.RLIM_INFINITY))
    for name, path, capture in json.loads(sys.stdin.read()):
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        try:
            model = open_model(path)
            if capture:
                model.capture({text!r})
            status, message = "OPENED", ""
        except ModelError as exc:
            status, message = "REFUSED", str(exc)
        except BaseException:
            status, message = "CRASHED", traceback.format_exc()
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
        print(json.dumps([name, status, message, grown]), flush=True)
""")


def _fingerprint(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a file's SHA-256, a link's target, else its type (a FIFO
    is never opened)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            out[str(path)] = "link " + os.readlink(path)
        elif stat.S_ISREG(info.st_mode):
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[str(path)] = f"mode {stat.S_IFMT(info.st_mode):o}"
    return out


def _run(args: list[str], stdin: str = "", timeout: float = 300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, cwd=ROOT, input=stdin, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"hung for {timeout} s; last output: {str(exc.stdout)[-2000:]}")


def test_hostile_models_get_one_line_in_bounded_time_and_memory(tmp_path: Path) -> None:
    jobs = []
    for number, (name, (build, capture, _words)) in enumerate(CASES.items()):
        where = tmp_path / f"case{number}"
        where.mkdir()
        jobs.append((name, str(build(where)), capture))
    before = _fingerprint(tmp_path)
    code = CHILD.format(fixtures=str(FIXTURES), text=TEXT, space=CHILD_ADDRESS_SPACE)
    result = _run([sys.executable, "-c", code], json.dumps(jobs))
    assert result.returncode == 0 and not result.stderr, result.stderr[-3000:]
    answers = {name: rest for name, *rest in map(json.loads, result.stdout.splitlines())}
    assert list(answers) == list(CASES)
    for (name, path, _capture), (_b, _c, words) in zip(jobs, CASES.values(), strict=True):
        status, message, grown = answers[name]
        assert status == "REFUSED", (name, status, message)
        assert "\n" not in message and len(message) < 400, (name, message)
        # The folder, or the file in it, that is wrong comes first.
        named = {Path(path).name} | ({p.name for p in Path(path).iterdir()}
                                     if Path(path).is_dir() else set())
        assert message.split(": ", 1)[0] in named, (name, message)
        for word in words:
            assert word in message, (name, word, message)
        assert grown <= CASE_GROWTH, (name, grown)
    assert _fingerprint(tmp_path) == before  # nothing written, nothing left behind


@pytest.mark.parametrize("name", ["a FIFO named x.gguf", "config.json nested 200k deep",
                                  "overlapping tensors", "NaN in a q projection"])
def test_the_capture_command_exits_2_with_one_line(tmp_path: Path, name: str) -> None:
    build, _capture, words = CASES[name]
    model = build(tmp_path)
    out = tmp_path / "out.npz"
    before = _fingerprint(tmp_path)
    result = _run([sys.executable, str(ROOT / "main.py"), "capture", str(model), "--text", TEXT,
                   "--out", str(out), "--quiet"], timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and not result.stdout, result.stderr
    assert lines[0].startswith("error: ") and all(word in lines[0] for word in words), lines
    assert _fingerprint(tmp_path) == before and not out.exists()


@pytest.mark.parametrize(("path", "reason"), [
    ("bad\x00name.gguf", "no such file or folder"), ("x" * 5000 + ".gguf", "File name too long"),
    ("/proc/self/status", "open a Hugging Face model folder"),
    ("/dev/null", "open a Hugging Face model folder")])
def test_an_impossible_path_is_one_short_line(path: str, reason: str) -> None:
    with pytest.raises(ModelError) as info:
        open_model(path)
    message = str(info.value)
    assert reason in message and "\n" not in message and len(message) < 300, message


def test_a_hugging_face_cache_snapshot_still_opens(tmp_path: Path) -> None:
    """Shards that are links into the cache's blobs (how huggingface_hub stores them) are
    inside the model as far as the loader is concerned; any other link out is not."""
    repo = tmp_path / "models--tiny--llama"
    snapshot = repo / "snapshots" / "0123abc"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for source in (FIXTURES / "tiny-llama").iterdir():
        blob = repo / "blobs" / hashlib.sha256(source.read_bytes()).hexdigest()
        shutil.copyfile(source, blob)
        (snapshot / source.name).symlink_to(Path("../../blobs") / blob.name)
    reference = open_model(FIXTURES / "tiny-llama").capture(TEXT)
    capture = open_model(snapshot).capture(TEXT)
    np.testing.assert_array_equal(capture.layers[0].q, reference.layers[0].q)


def _polls(path: Path) -> int:
    calls = 0

    def cancelled() -> bool:
        nonlocal calls
        calls += 1
        return False

    open_model(path, cancelled=cancelled)
    return calls


@pytest.mark.parametrize("name", ["tiny-llama.gguf", "tiny-llama", "tiny-gpt2"])
def test_an_open_stops_at_any_poll_once_cancelled(name: str) -> None:
    path = FIXTURES / name
    total = _polls(path)
    assert total >= 3
    for stop_at in range(1, total + 1):
        calls = 0

        def cancelled(stop_at: int = stop_at) -> bool:
            nonlocal calls
            calls += 1
            return calls >= stop_at

        with pytest.raises(CaptureCancelled):
            open_model(path, cancelled=cancelled)
        assert calls == stop_at  # not polled again: nothing more was done


def test_a_large_vocabulary_is_polled_every_few_thousand_strings(tmp_path: Path) -> None:
    """A cancel takes effect within a bounded amount of parsing: 100,000 tokens (a real
    vocabulary's size) are polled at least once per 4,096 strings."""
    tokens = struct.pack("<IQ", 8, 100_000) + b"".join(gguf_string(f"t{i}")
                                                       for i in range(100_000))
    path = raw_gguf(tmp_path / "vocab.gguf", [LLAMA, gguf_kv("tokenizer.ggml.tokens", 9, tokens)],
                    [])
    calls = 0

    def cancelled() -> bool:
        nonlocal calls
        calls += 1
        return False

    with pytest.raises(ModelError):  # no llama metadata: refused after the polls counted
        open_model(path, cancelled=cancelled)
    assert calls >= 100_000 // 4096


def test_read_regular_file_refuses_what_would_block_or_never_end(tmp_path: Path) -> None:
    """The helper a text file (``--text-file``) is read with: a FIFO without a writer, a
    device and a file over the limit are refused at once, each with the reason."""
    os.mkfifo(tmp_path / "pipe.txt")
    with pytest.raises(OSError, match=r"a FIFO \(named pipe\), not a regular text file"):
        read_regular_file(tmp_path / "pipe.txt", 100, "text file")
    with pytest.raises(OSError, match="a device, not a regular file"):
        read_regular_file("/dev/zero", 100)
    (tmp_path / "big.txt").write_bytes(b"x" * 101)
    with pytest.raises(OSError, match=r"101 bytes is more than a file may hold \(100 bytes\)"):
        read_regular_file(tmp_path / "big.txt", 100)
    assert read_regular_file(tmp_path / "big.txt", 101) == b"x" * 101


def test_fuzzed_headers_open_or_give_one_clear_message(tmp_path: Path) -> None:
    """tiny-llama.gguf and tiny-gpt2's model.safetensors with their headers mutated: each
    opens or raises one ModelError of one line; nothing else escapes and nothing hangs."""
    gguf_bytes = (FIXTURES / "tiny-llama.gguf").read_bytes()
    folder = tiny(tmp_path, "gpt2")
    st_bytes = (folder / "model.safetensors").read_bytes()
    st_header = 8 + struct.unpack_from("<Q", st_bytes)[0]
    escaped: list[str] = []

    def fuzz() -> None:
        rnd = random.Random(20261206)
        for i in range(300):
            if i % 2:
                target = tmp_path / "fuzzed.gguf"
                target.write_bytes(mutate(gguf_bytes, rnd, 6656))  # its tensor infos end there
            else:
                target = folder
                (folder / "model.safetensors").write_bytes(mutate(st_bytes, rnd, st_header))
            try:
                open_model(target)
            except ModelError as exc:
                if "\n" in str(exc):
                    escaped.append(f"#{i}: two lines: {exc!r}")
            except BaseException as exc:  # anything else is what this looks for
                escaped.append(f"#{i}: {type(exc).__name__}: {exc}")

    run_bounded(fuzz, 120)
    assert not escaped, escaped[:5]
