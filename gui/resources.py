"""The single place that resolves paths of bundled resource files.

Paths derive from ``Path(__file__)`` so that they also resolve inside a PyInstaller bundle,
where ``sys._MEIPASS`` holds the data files.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["i18n_dir", "resource_dir", "resource_path"]


def resource_dir() -> Path:
    """Return the ``resources`` folder (source tree or PyInstaller bundle)."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None:
        return Path(bundle) / "resources"
    return Path(__file__).resolve().parent.parent / "resources"


def resource_path(*parts: str) -> Path:
    """Return the path of a resource file below :func:`resource_dir`."""
    return resource_dir().joinpath(*parts)


def i18n_dir() -> Path:
    """Return the folder holding compiled ``.qm`` translation catalogues."""
    return resource_path("i18n")
