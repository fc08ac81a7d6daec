"""Outputs are whole or absent: a failed write (a full disk) changes no file and leaves nothing
behind, and no command overwrites its own input.

A full disk is reproduced with RLIMIT_FSIZE in the child process: every write past the limit
fails with an OSError (EFBIG), as it would with ENOSPC, while files written before stay as
they are. The commands run as a user runs them, in subprocesses, and never import Qt.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.io.files import (
    OutputIsInputError,
    atomic_output,
    check_output_not_input,
    probe_output,
    write_bytes_atomic,
)
from engine.io.tensors import load_tensors, write_tensors

ROOT = Path(__file__).resolve().parents[2]
OLD = b"old content that must survive\n"
SMALL = ["--n", "8", "--d-k", "16", "--batch", "16"]


def _limit_file_size(limit: int):
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def run_main(*args: str, file_limit: int | None = None, timeout: float = 120
             ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1",
           "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, str(ROOT / "main.py"), *args], capture_output=True, text=True,
        env=env, timeout=timeout, cwd=ROOT,
        preexec_fn=None if file_limit is None else _limit_file_size(file_limit))


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def tensor_file(path: Path) -> Path:
    rng = np.random.default_rng(0)
    arrays = {f"layer0.{part}": rng.standard_normal((2, 6, 4)).astype(np.float32)
              for part in "qk"}
    return write_tensors(path, arrays)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    for word in words:
        assert word in errors[0], errors[0]


# --------------------------------------------------------------------------- the primitives
def test_atomic_output_replaces_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    target.write_bytes(OLD)
    with pytest.raises(RuntimeError), atomic_output(target) as handle:
        handle.write("half of the new file")
        raise RuntimeError("failed half-way")
    assert snapshot(tmp_path) == {"out.csv": OLD}
    with atomic_output(target) as handle:
        handle.write("new")
    assert snapshot(tmp_path) == {"out.csv": b"new"}
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's private 0600


def test_atomic_output_into_a_missing_folder_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), atomic_output(tmp_path / "nope" / "x.csv"):
        pass
    with pytest.raises(FileNotFoundError):
        write_bytes_atomic(tmp_path / "nope" / "x.bin", b"x")
    assert not (tmp_path / "nope").exists()


def test_probe_output_touches_nothing(tmp_path: Path) -> None:
    probe_output(tmp_path / "new.csv")
    (tmp_path / "old.csv").write_bytes(OLD)
    probe_output(tmp_path / "old.csv")
    assert snapshot(tmp_path) == {"old.csv": OLD}
    with pytest.raises(IsADirectoryError):
        probe_output(tmp_path)
    with pytest.raises(FileNotFoundError):
        probe_output(tmp_path / "missing" / "x.csv")


def test_output_that_is_an_input_is_refused_by_every_name(tmp_path: Path) -> None:
    source = tensor_file(tmp_path / "v.npz")
    (tmp_path / "hard.npz").hardlink_to(source)
    (tmp_path / "soft.npz").symlink_to(source)
    for alias in (source, tmp_path / "hard.npz", tmp_path / "soft.npz",
                  tmp_path / "." / "v.npz"):
        with pytest.raises(OutputIsInputError, match="is the input"):
            check_output_not_input(alias, [source])
    folder = tmp_path / "npy"
    folder.mkdir()
    with pytest.raises(OutputIsInputError, match="inside the input folder"):
        check_output_not_input(folder / "layer0.q.npy", [folder])
    check_output_not_input(tmp_path / "report.csv", [source, None])  # a new file is fine


# ---------------------------------------------------------------- the commands: output = input
@pytest.mark.parametrize("suffix", [".npz", ".safetensors", "folder"])
def test_inspect_refuses_to_overwrite_its_input(tmp_path: Path, suffix: str) -> None:
    if suffix == "folder":
        source = tmp_path / "v"
        source.mkdir()
        rng = np.random.default_rng(1)
        for part in "qk":
            np.save(source / f"layer0.{part}.npy", rng.standard_normal((1, 5, 4)))
        out = source / "layer0.q.npy"
    else:
        source = out = tensor_file(tmp_path / f"v{suffix}")
    before = snapshot(tmp_path)
    proc = run_main("inspect", str(source), "--out", str(out), "--quiet")
    assert proc.returncode == 2
    assert_one_line_error(proc, "--out", "input")
    assert snapshot(tmp_path) == before
    load_tensors(source)


# ------------------------------------------------------------------ the commands: a full disk
LIMIT = 120  # bytes: less than any of the outputs below


def _existing_output(tmp_path: Path, name: str) -> Path:
    out = tmp_path / name
    out.write_bytes(OLD)
    return out


def test_sweep_on_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    out = _existing_output(tmp_path, "sweep.csv")
    proc = run_main("sweep", "--values", "2,4", "--samples", "20", "--quiet", "--out", str(out),
                    file_limit=LIMIT)
    assert proc.returncode == 2
    assert_one_line_error(proc, "cannot write --out", str(out))
    assert snapshot(tmp_path) == {"sweep.csv": OLD}


def test_inspect_on_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    source = tensor_file(tmp_path / "v.npz")
    out = _existing_output(tmp_path, "report.csv")
    before = snapshot(tmp_path)
    proc = run_main("inspect", str(source), "--out", str(out), "--quiet", file_limit=LIMIT)
    assert proc.returncode == 2
    assert_one_line_error(proc, "cannot write --out", str(out))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name", ["loss.csv", "loss.json"])
def test_intervene_on_a_full_disk_keeps_the_old_file(tmp_path: Path, name: str) -> None:
    out = _existing_output(tmp_path, name)
    model = ROOT / "tests" / "fixtures" / "causal" / "tiny-llama"
    proc = run_main("intervene", str(model), "--text", "The quick brown fox.", "--alphas",
                    "1,2", "--quiet", "--out", str(out), file_limit=LIMIT)
    assert proc.returncode == 2
    assert_one_line_error(proc, "cannot write --out", str(out))
    assert snapshot(tmp_path) == {name: OLD}


def test_lr_sweep_on_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    out = _existing_output(tmp_path, "lr.csv")
    proc = run_main("lr-sweep", "--rules", "sqrt", *SMALL, "--steps", "3", "--lrs", "0.01",
                    "--seeds", "1", "--quiet", "--out", str(out), file_limit=LIMIT)
    assert proc.returncode == 2
    assert_one_line_error(proc, "cannot write --out", str(out))
    assert snapshot(tmp_path) == {"lr.csv": OLD}


def test_lr_sweep_that_fails_leaves_no_empty_file(tmp_path: Path) -> None:
    out = tmp_path / "lr.csv"
    proc = run_main("lr-sweep", "--rules", "sqrt", *SMALL, "--steps", "3", "--lrs", "0.01",
                    "--seeds", "1", "--quiet", "--out", str(out), file_limit=LIMIT)
    assert proc.returncode == 2
    assert snapshot(tmp_path) == {}


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_train_tensors_out_on_a_full_disk_keeps_the_old_file(tmp_path: Path,
                                                            suffix: str) -> None:
    out = _existing_output(tmp_path, f"heads{suffix}")
    proc = run_main("train", "--rules", "sqrt", *SMALL, "--steps", "3", "--quiet",
                    "--tensors-out", str(out), file_limit=LIMIT)
    assert proc.returncode != 0
    assert_one_line_error(proc, "cannot write --tensors-out", str(out))
    assert snapshot(tmp_path) == {f"heads{suffix}": OLD}


def test_sweep_to_a_folder_is_one_clear_error(tmp_path: Path) -> None:
    proc = run_main("sweep", "--values", "2", "--samples", "20", "--quiet", "--out",
                    str(tmp_path))
    assert proc.returncode == 2
    assert_one_line_error(proc, "folder")


def test_an_output_to_a_device_writes_to_it_and_leaves_it_a_device(tmp_path: Path) -> None:
    """`sweep --out /dev/null` once renamed a regular file over /dev/null."""
    import stat

    with atomic_output(os.devnull) as handle:
        handle.write("discarded")
    write_bytes_atomic(os.devnull, b"discarded")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    proc = run_main("sweep", "--values", "2", "--samples", "20", "--quiet", "--out", os.devnull)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
