"""The top-level command line: help text and the engine commands' independence from Qt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_every_subcommand() -> None:
    result = subprocess.run(
        [sys.executable, "main.py", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    for command in ("sweep", "train", "lr-sweep", "export", "--self-test"):
        assert command in result.stdout


def test_parser_rejects_unknown_command() -> None:
    result = subprocess.run(
        [sys.executable, "main.py", "frobnicate"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "invalid choice" in result.stderr
