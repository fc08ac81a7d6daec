"""The single place that resolves paths of bundled resource files.

The files live in the repository's top-level ``resources/`` folder. Where that folder is at run
time depends on how the program was started, tried in this order:

1. ``$ATTENTION_EXPLORER_RESOURCES`` when set (tests point it at a damaged copy);
2. the PyInstaller bundle: ``sys._MEIPASS/resources`` (attention_explorer.spec collects it);
3. a source checkout (``python main.py``, or an editable install that runs the checkout's code):
   the ``resources/`` folder next to ``gui/``;
4. an installed wheel: the package ``attention_explorer_resources``, which is ``resources/``
   installed under a name no other distribution uses (pyproject.toml, ``package-dir``).

Qt loads fonts and catalogues from file names, so this module returns real paths, not
``importlib.resources`` traversables (pip installs wheels unzipped, so the package has one).
The module imports no Qt: the packaging tests use :data:`RESOURCE_FILES` without it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

__all__ = [
    "RESOURCES_ENV",
    "RESOURCE_FILES",
    "RESOURCE_PACKAGE",
    "SAMPLE_TENSORS",
    "ResourceError",
    "i18n_dir",
    "missing_resources",
    "resource_dir",
    "resource_path",
    "sample_tensors_path",
]

#: Environment variable that overrides the resource folder (tests, unusual installs).
RESOURCES_ENV = "ATTENTION_EXPLORER_RESOURCES"
#: Import name under which a wheel installs ``resources/``.
RESOURCE_PACKAGE = "attention_explorer_resources"
#: Every file the program reads at run time, relative to the resource folder. The wheel, the
#: bundle and the start-up check are tested against this list (tests/test_packaging.py).
RESOURCE_FILES: tuple[str, ...] = (
    "tour/tour.json",
    "tour/tour.en.json",
    "tour/tour.zh_CN.json",
    "i18n/explorer_zh_CN.qm",
    "fonts/ExplorerNotoSansSC-Subset.otf",
    "samples/trained_heads.npz",
)
#: The sample tensor file (trained heads of the mini-trainer; docs/heads.md says how it was made).
SAMPLE_TENSORS = "samples/trained_heads.npz"


class ResourceError(SystemExit):
    """A resource file is missing or damaged: the program cannot start.

    A ``SystemExit`` on purpose: wherever it is raised during start-up (window, ``export``,
    ``--self-test``), no handler in between swallows it, and when nothing catches it Python
    prints the message to stderr and exits with status 1, with no traceback. Raise it only
    where no worker thread is left running (MainWindow stops its threads before re-raising).
    ``gui.app.run_app`` catches it to show the message in a dialog as well.
    """

    def __init__(self, message: str) -> None:
        super().__init__(f"attention-explorer: cannot start: {message}")
        self.message = message

    def __str__(self) -> str:
        return self.message


def _checkout_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "resources"


def resource_dir() -> Path:
    """Return the folder holding the resource files (see the module docstring for the order)."""
    override = os.environ.get(RESOURCES_ENV, "")
    if override:
        return Path(override)
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None:
        return Path(bundle) / "resources"
    checkout = _checkout_dir()
    # In site-packages the folder next to gui/ may be some other distribution's "resources"
    # package; only a checkout also has our pyproject.toml beside it.
    if (checkout.parent / "pyproject.toml").is_file() and checkout.is_dir():
        return checkout
    try:
        spec = importlib.util.find_spec(RESOURCE_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        return Path(spec.origin).resolve().parent
    return checkout  # not found anywhere: error messages then name the checkout's path


def resource_path(*parts: str) -> Path:
    """Return the path of a resource file below :func:`resource_dir`."""
    return resource_dir().joinpath(*parts)


def i18n_dir() -> Path:
    """Return the folder holding compiled ``.qm`` translation catalogues."""
    return resource_path("i18n")


def sample_tensors_path() -> Path:
    """Return the path of the shipped sample tensor file (``samples/trained_heads.npz``)."""
    return resource_path(SAMPLE_TENSORS)


def missing_resources() -> list[Path]:
    """Return the paths of the files of :data:`RESOURCE_FILES` that do not exist."""
    folder = resource_dir()
    return [folder / name for name in RESOURCE_FILES if not (folder / name).is_file()]
