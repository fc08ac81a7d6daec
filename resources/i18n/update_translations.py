"""Re-extract, compile and (optionally) re-subset the font for the UI translations.

Run from anywhere with the project's Python (PySide6 installed)::

    python resources/i18n/update_translations.py          # lupdate + lrelease
    python resources/i18n/update_translations.py --font \
        /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc   # also re-subset the font

1. ``pyside6-lupdate`` scans every ``gui/**/*.py`` and ``engine/config/*.py`` (the field
   labels and tooltips) for ``translate("Context", "text")`` and
   ``QT_TRANSLATE_NOOP("Context", "text")`` calls and merges new strings into
   ``explorer_zh_CN.ts`` (translations of unchanged strings are kept, vanished strings
   dropped). English is the source language and needs no catalogue: texts are worded without
   plurals ("Heads not shown: 3"), because pyside6-lupdate marks a ``%n`` numerus form only when
   the count is a literal, and Chinese has no plural forms.
2. New strings appear as ``type="unfinished"``: translate them in the .ts (a text editor or
   ``pyside6-linguist``); ``tests/gui/test_i18n.py`` fails while any are left.
3. ``pyside6-lrelease`` compiles it into ``explorer_zh_CN.qm``, which the app loads (committed,
   so that running the app needs no Qt tools).
4. ``--font SOURCE`` re-subsets the shipped CJK font from a Noto Sans CJK SC font (``.ttc``
   from Debian's ``fonts-noto-cjk``, or an ``.otf``) to the characters of the Chinese catalogue,
   the Chinese tour texts in ``resources/tour`` and CJK punctuation. It needs ``fontTools``
   (``pip install fonttools``), a build-time tool only. Without ``--font`` the script lists any
   character of the translations that the shipped font lacks.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FONT_OUT = ROOT / "resources" / "fonts" / "ExplorerNotoSansSC-Subset.otf"
#: Family name of the subset. The OFL lets a modified font keep the name "Noto" (only
#: "Source" is reserved), but a distinct name keeps it from shadowing a full system install.
FONT_FAMILY = "Explorer Noto Sans SC Subset"
TS_FILES = {"zh_CN": HERE / "explorer_zh_CN.ts"}


def qt_tool(name: str) -> str:
    """Return the path of a PySide6 tool, preferring the one next to this Python."""
    local = Path(sys.executable).with_name(name)
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if found is None:
        sys.exit(f"{name} not found: install PySide6 (pip install PySide6-Essentials)")
    return found


#: Folders whose Python files hold user-visible strings: the GUI, and the config field
#: declarations (labels and tooltips marked with engine.config.base.QT_TRANSLATE_NOOP).
SOURCE_DIRS = ("gui", "engine/config")


def sources() -> list[str]:
    """Every Python file with UI strings, relative to the repository root (stable .ts
    locations)."""
    return sorted(str(p.relative_to(ROOT)) for folder in SOURCE_DIRS
                  for p in (ROOT / folder).rglob("*.py"))


def run(args: list[str]) -> None:
    print("$", " ".join(args[:2]), "…" if len(args) > 4 else " ".join(args[2:]))
    subprocess.run(args, cwd=ROOT, check=True)


def update_catalogues() -> None:
    lupdate, lrelease = qt_tool("pyside6-lupdate"), qt_tool("pyside6-lrelease")
    files = sources()
    common = ["-no-obsolete", "-source-language", "en"]
    run([lupdate, *files, *common, "-target-language", "zh_CN",
         "-ts", str(TS_FILES["zh_CN"].relative_to(ROOT))])
    for ts in TS_FILES.values():
        run([lrelease, str(ts.relative_to(ROOT))])


def translated_text() -> str:
    """All Chinese text the UI can show: catalogue translations, tour texts, language names."""
    parts = []
    for message in ET.parse(TS_FILES["zh_CN"]).getroot().iter("message"):
        translation = message.find("translation")
        if translation is not None:
            parts.append("".join(translation.itertext()))
    tour = ROOT / "resources" / "tour"
    if tour.is_dir():
        for path in sorted(tour.rglob("*")):
            if path.is_file() and path.suffix in {".json", ".md", ".html", ".txt"}:
                parts.append(path.read_text(encoding="utf-8"))
    sys.path.insert(0, str(ROOT))
    from gui.kit.i18n import LANGUAGES

    parts.extend(LANGUAGES.values())
    return "".join(parts)


def needed_characters() -> set[str]:
    """Non-ASCII characters of :func:`translated_text` plus CJK punctuation and full-width
    forms (U+3000–303F, U+FF01–FF5E), which Latin UI fonts usually lack."""
    chars = {c for c in translated_text() if ord(c) > 0x7F and not c.isspace()}
    chars |= {chr(c) for c in range(0x3000, 0x3040)}
    chars |= {chr(c) for c in range(0xFF01, 0xFF5F)}
    return chars


def subset_font(source: Path) -> None:
    try:
        from fontTools import subset
        from fontTools.ttLib import TTCollection, TTFont
    except ImportError:
        sys.exit("--font needs fontTools: pip install fonttools")
    if source.suffix.lower() == ".ttc":
        fonts = TTCollection(str(source)).fonts
        font = next(f for f in fonts if f["name"].getDebugName(1) == "Noto Sans CJK SC")
    else:
        font = TTFont(str(source))
    cmap = font.getBestCmap()
    chars = {c for c in needed_characters() if ord(c) in cmap}
    # Only CJK characters are worth shipping; Latin, Greek and maths come from the UI font.
    chars = {c for c in chars if ord(c) >= 0x2E80}
    options = subset.Options()
    options.layout_features = ["kern", "palt", "vert", "locl"]
    options.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]  # keep copyright and licence fields
    options.hinting = False
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(ord(c) for c in chars))
    subsetter.subset(font)
    name = font["name"]
    for record in list(name.names):
        if record.nameID in (1, 4, 16):
            record.string = FONT_FAMILY
        elif record.nameID == 3:
            record.string = f"{FONT_FAMILY}; subset of Noto Sans CJK SC"
        elif record.nameID == 6:
            record.string = FONT_FAMILY.replace(" ", "") + "-Regular"
    # Version and family-specific records left over from the CJK font would confuse matching.
    name.names = [r for r in name.names if r.nameID not in (17,)]
    font.recalcTimestamp = False  # same characters, same bytes: no churn in git
    FONT_OUT.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(FONT_OUT))
    print(f"{FONT_OUT.relative_to(ROOT)}: {len(chars)} characters, "
          f"{FONT_OUT.stat().st_size / 1024:.0f} KiB")


def check_font() -> None:
    """Print the characters of the translations that the shipped font does not cover."""
    try:
        from fontTools.ttLib import TTFont
    except ImportError:
        print("(install fontTools to check the shipped font's coverage)")
        return
    if not FONT_OUT.exists():
        print(f"{FONT_OUT.relative_to(ROOT)} is missing: run with --font")
        return
    cmap = TTFont(str(FONT_OUT)).getBestCmap()
    missing = sorted(c for c in needed_characters() if ord(c) >= 0x2E80 and ord(c) not in cmap)
    if missing:
        print(f"the shipped font lacks {len(missing)} characters: {''.join(missing)}\n"
              "re-run with --font NotoSansCJK-Regular.ttc (apt-get install fonts-noto-cjk)")
    else:
        print("the shipped font covers every character of the translations")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--font", type=Path, help="Noto Sans CJK SC .ttc/.otf to subset")
    parser.add_argument("--no-lupdate", action="store_true",
                        help="only compile the .ts files (and subset the font)")
    args = parser.parse_args()
    if args.no_lupdate:
        for ts in TS_FILES.values():
            run([qt_tool("pyside6-lrelease"), str(ts.relative_to(ROOT))])
    else:
        update_catalogues()
    if args.font:
        subset_font(args.font)
    else:
        check_font()
    return 0


if __name__ == "__main__":
    sys.exit(main())
