"""The shipped CJK font: registered at start-up, used as the fallback for Chinese text.

Many Linux machines (and this project's CI image) have no CJK font at all, so Chinese text
would render as boxes. ``resources/fonts/ExplorerNotoSansSC-Subset.otf`` is a subset of Noto
Sans CJK SC (SIL Open Font License 1.1, licence text next to it) holding the characters of the
Chinese catalogue and the tour texts plus CJK punctuation; ``resources/i18n/
update_translations.py --font`` regenerates it when translations change.
"""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontDatabase, QGuiApplication

__all__ = ["CJK_FONT_FILE", "apply_language_font", "register_cjk_font"]

#: File name of the shipped subset below ``resources/fonts``.
CJK_FONT_FILE = "ExplorerNotoSansSC-Subset.otf"

_state: dict[str, object] = {"family": None, "base_font": None}


def register_cjk_font() -> str | None:
    """Register the shipped CJK font with Qt (once) and return its family name.

    Returns None when the file is missing or unreadable (text then relies on system fonts).
    Needs a ``QGuiApplication``.
    """
    if _state["family"] is not None:
        return str(_state["family"])
    from gui.kit.resources import resource_path

    font_id = QFontDatabase.addApplicationFont(str(resource_path("fonts", CJK_FONT_FILE)))
    if font_id < 0:
        return None
    families = QFontDatabase.applicationFontFamilies(font_id)
    if not families:
        return None
    # With fontconfig (Linux) a registered font also serves as the fallback of every other font,
    # including fonts that widgets and pyqtgraph items copied before a language switch.
    # (QFont.insertSubstitution is no substitute: for an alias such as "Sans Serif" it makes
    # the CJK subset the *primary* font, and Qt then loads Latin glyph ids from it.)
    _state["family"] = families[0]
    return families[0]


def apply_language_font(language: str) -> None:
    """Make the application font fall back to the CJK family while ``language`` is Chinese.

    The Latin glyphs keep coming from the platform's UI font; only characters it lacks are
    taken from the shipped font. English restores the original application font.
    """
    app = QGuiApplication.instance()
    if app is None:
        return
    family = register_cjk_font()
    if _state["base_font"] is None:
        _state["base_font"] = QFont(QGuiApplication.font())
    base: QFont = _state["base_font"]  # type: ignore[assignment]
    if family is None or not language.startswith("zh"):
        if QGuiApplication.font() != base:
            QGuiApplication.setFont(base)
        return
    font = QFont(base)
    families = [f for f in base.families() if f != family] or [base.defaultFamily()]
    font.setFamilies([*families, family])
    QGuiApplication.setFont(font)
