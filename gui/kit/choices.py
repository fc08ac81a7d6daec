"""What the window and the command line both offer: export formats, image sizes, UI languages.

Without Qt, so that ``main.py`` builds ``--help`` and checks ``export --formats``,
``--width``/``--height`` and ``--lang`` before anything loads Qt, from the same definitions
the window's export dialog, its renderers and its language menu use.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["FORMATS", "LANGUAGES", "MAX_SIZE", "MIN_SIZE", "check_formats", "check_size"]

#: What an export of a view can write, in the order written: images, then the data.
FORMATS = ("png", "svg", "pdf", "csv")
#: Smallest and largest export width or height in pixels.
MIN_SIZE, MAX_SIZE = 16, 8192
#: UI language code -> its own name (menu entries are endonyms and deliberately not
#: translated); English, the source language, first.
LANGUAGES: dict[str, str] = {"en": "English", "zh_CN": "简体中文"}


def check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    """``formats`` as a tuple of :data:`FORMATS` entries; ValueError naming an unknown one
    (or none given)."""
    chosen = tuple(dict.fromkeys(f.strip().lower() for f in formats if f.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise ValueError(f"unknown export format {', '.join(unknown) or '(none given)'}: "
                         f"choose from {', '.join(FORMATS)}")
    return chosen


def check_size(width: int, height: int) -> tuple[int, int]:
    """Return ``(width, height)`` as ints; ValueError outside [MIN_SIZE, MAX_SIZE]."""
    width, height = int(width), int(height)
    for name, value in (("width", width), ("height", height)):
        if not MIN_SIZE <= value <= MAX_SIZE:
            raise ValueError(f"{name} must be in [{MIN_SIZE}, {MAX_SIZE}] pixels, got {value}")
    return width, height
