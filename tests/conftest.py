"""Shared pytest setup: make the repository importable and keep Qt offscreen."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Tests never need a display; set before any test module can import Qt.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
