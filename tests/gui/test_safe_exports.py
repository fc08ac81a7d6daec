"""Exports and sessions on a full disk: the files that were there stay as they were, nothing is
left behind, and the message names the file the user asked for.

A full disk is reproduced with RLIMIT_FSIZE in a child process (every write past the limit
fails with an OSError, as with ENOSPC); the exports run as a user runs them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.engine.test_safe_outputs import OLD, ROOT, _limit_file_size, run_main, snapshot


def test_export_on_a_full_disk_changes_no_file_and_names_a_real_target(tmp_path: Path) -> None:
    import numpy as np

    from engine.io.tensors import write_tensors

    # A small real head: the export writes as it does for any session, without waiting for
    # the default configuration's sweep and the Train views' demo run.
    qk = np.random.default_rng(0).standard_normal((1, 8, 4)).astype(np.float32)
    head = write_tensors(tmp_path / "head.npz", {"layer0.q": qk, "layer0.k": qk})
    out = tmp_path / "figures"
    out.mkdir()
    (out / "heatmap.png").write_bytes(OLD)
    (out / "notes.txt").write_bytes(OLD)
    before = snapshot(out)
    proc = run_main("export", "--out", str(out), "--force", "--width", "400", "--height",
                    "300", "--tensors", str(head), "--head", "0,0", file_limit=20_000,
                    timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert f"could not write {out}/" in errors[0] and ".part" not in errors[0], errors[0]
    assert snapshot(out) == before  # no new file, no fragment, no staging folder
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_export_refuses_a_folder_that_holds_its_session(tmp_path: Path) -> None:
    from engine.config import AttentionConfig
    from gui.kit.session import Session, save_session

    session = tmp_path / "session.json"
    save_session(session, Session(AttentionConfig()))
    before = snapshot(tmp_path)
    proc = run_main("export", "--out", str(tmp_path), "--force", "--session", str(session))
    assert proc.returncode == 2
    assert "holds the input" in proc.stderr and "Traceback" not in proc.stderr
    assert snapshot(tmp_path) == before


def test_session_save_on_a_full_disk_keeps_the_old_session(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(OLD)
    script = textwrap.dedent(f"""
        from engine.config import AttentionConfig
        from gui.kit.session import Session, save_session
        try:
            save_session({str(path)!r}, Session(AttentionConfig()))
        except OSError as exc:
            print(exc)
        else:
            print("saved")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, preexec_fn=_limit_file_size(200))
    assert proc.stdout.startswith(f"could not write {path}: "), proc.stdout + proc.stderr
    assert snapshot(tmp_path) == {"s.json": OLD}  # no s.json.tmp, no fragment
