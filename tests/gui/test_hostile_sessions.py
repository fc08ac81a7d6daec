"""Hostile session files, built in code: each gets one line of SessionError naming the file,
without blocking and within the memory budget, through ``load_session`` and through
``main.py --session`` (which reads the session before it opens a window).

A FIFO would block its reader forever, so each read runs in a thread or a child process with
a timeout: a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engine.config import AttentionConfig
from gui.kit.session import MAX_SESSION_BYTES, Session, SessionError, TensorsChoice, load_session

ROOT = Path(__file__).resolve().parents[2]


def _valid(**tensors: object) -> str:
    data = Session(config=AttentionConfig()).to_dict()
    data["tensors"] = {"path": "model.npz", "layer": 0, "head": 0, **tensors}
    return json.dumps(data)


def _write(name: str, text: str | bytes) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        path = folder / name
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return build


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "pipe.json")
    return folder / "pipe.json"


#: name -> (builder of the session file in tmp_path, words the message must hold)
CASES: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "/dev/zero": (lambda d: Path("/dev/zero"), ("/dev/zero", "device")),
    "a FIFO": (_fifo, ("pipe.json", "FIFO")),
    "a folder": (lambda d: (d / "s.json").mkdir() or d / "s.json", ("s.json", "folder")),
    "a /proc file": (lambda d: Path("/proc/self/status"), ("status", "not valid JSON")),
    "a file of 2 MiB": (_write("big.json", " " * (2 << 20)), ("big.json", str(MAX_SESSION_BYTES))),
    "nested JSON": (_write("deep.json", "[" * 100_000 + "]" * 100_000),
                    ("deep.json", "nested too deeply")),
    "an integer of 5000 digits": (_write("digits.json", '{"app": ' + "1" * 5000 + "}"),
                                  ("digits.json", "5000 digits")),
    "not UTF-8": (_write("latin.json", b'{"app": "\xe9"}'), ("latin.json", "UTF-8")),
}


def _load_with_timeout(path: Path, timeout: float = 10) -> BaseException | None:
    """What ``load_session(path)`` raised (None if it returned); fails if it blocks."""
    result: list[BaseException | None] = []

    def run() -> None:
        try:
            load_session(path)
        except BaseException as exc:  # reported to the test
            result.append(exc)
        else:
            result.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        if path.exists() and path.is_fifo():  # unblock the reader so the thread can end
            with open(path, "wb"):
                pass
        pytest.fail(f"load_session({path}) blocked for {timeout} s")
    return result[0]


@pytest.mark.parametrize("case", list(CASES))
def test_load_session_refuses_a_hostile_file_at_once(tmp_path, case) -> None:
    build, words = CASES[case]
    path = build(tmp_path)
    raised = _load_with_timeout(path)
    assert isinstance(raised, SessionError), repr(raised)
    message = str(raised)
    assert "\n" not in message and len(message) <= 300, message
    for word in words:
        assert word in message, message


def test_a_valid_session_with_a_tensor_file_still_loads(tmp_path) -> None:
    path = _write("ok.json", _valid())(tmp_path)
    assert load_session(path).tensors == TensorsChoice(path="model.npz", layer=0, head=0)


CHILD = textwrap.dedent("""
    import resource
    from gui.kit.session import SessionError, load_session
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    try:
        load_session({path!r})
    except SessionError as exc:
        print("REFUSED", exc)
    print("GROWN", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base)
""")


@pytest.mark.parametrize("name", ["/dev/zero", "/dev/urandom"])
def test_an_endless_session_file_costs_no_memory(name) -> None:
    """``--session /dev/zero`` read without end; now it is refused before it is opened."""
    from engine.core.memory import get_memory_budget

    proc = subprocess.run([sys.executable, "-c", CHILD.format(path=name)], cwd=ROOT,
                          capture_output=True, text=True, timeout=30)
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert "device" in lines["REFUSED"], proc.stdout + proc.stderr
    assert int(lines["GROWN"]) < min(get_memory_budget(), 4 * MAX_SESSION_BYTES)


@pytest.mark.parametrize("what", ["/dev/zero", "fifo", "nested", "tensors-fifo"])
def test_main_refuses_a_hostile_session_with_one_line(tmp_path, what) -> None:
    if what == "fifo":
        path = _fifo(tmp_path)
    elif what == "nested":
        path = _write("s.json", "[" * 100_000 + "]" * 100_000)(tmp_path)
    elif what == "tensors-fifo":  # the session is valid; its tensor file is a FIFO
        os.mkfifo(tmp_path / "qk.npz")
        path = _write("s.json", _valid(path=str(tmp_path / "qk.npz")))(tmp_path)
    else:
        path = Path(what)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    args = [sys.executable, "main.py", "--session", str(path)]
    if what == "tensors-fifo":  # the same path given directly is checked before any window
        args = [sys.executable, "main.py", "--tensors", str(tmp_path / "qk.npz")]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2, proc.stderr
    option = "--tensors" if what == "tensors-fifo" else "--session"
    assert proc.stderr.startswith(f"error: {option}: ") and proc.stderr.count("\n") == 1, \
        proc.stderr
    assert "Traceback" not in proc.stderr
    assert ("FIFO" in proc.stderr) == (what in ("fifo", "tensors-fifo"))


def test_a_session_whose_tensor_file_is_a_fifo_is_refused_when_it_is_opened(tmp_path) -> None:
    """The session is valid; the Heads tab's worker opens its path with load_tensors, which
    refuses the FIFO before opening it (it blocked the worker, and the window's close)."""
    from engine.io.tensors import TensorFileError, load_tensors

    os.mkfifo(tmp_path / "qk.npz")
    session = load_session(_write("s.json", _valid(path=str(tmp_path / "qk.npz")))(tmp_path))
    assert session.tensors is not None
    raised: list[BaseException] = []

    def run() -> None:
        try:
            load_tensors(session.tensors.path)
        except TensorFileError as exc:
            raised.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        with open(tmp_path / "qk.npz", "wb"):
            pass
        pytest.fail("load_tensors blocked on a FIFO")
    assert raised and "FIFO" in str(raised[0]) and "qk.npz" in str(raised[0])
