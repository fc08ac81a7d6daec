"""Translation helpers: every user-visible string goes through Qt's translator.

English is the source language; ``resources/i18n/explorer_zh_CN.qm`` (compiled from
``explorer_zh_CN.ts``) holds Simplified Chinese. ``resources/i18n/update_translations.py``
re-extracts the strings with ``pyside6-lupdate`` and compiles them with ``pyside6-lrelease``.

Conventions (``pyside6-lupdate`` only sees literal strings in calls it recognises):

- ``translate("Context", "English text")`` with a literal context and text; values go in with
  ``.format()`` *after* translating the template: ``translate("C", "Saved {0}").format(name)``.
- Strings kept in tables are marked with ``QT_TRANSLATE_NOOP("Context", "text")`` where they are
  defined and passed through ``translate("Context", value)`` where they are shown.
- No call inside the arguments (``translate("C", "x", None, len(a))`` is silently skipped) and
  no ``%n`` plurals: lupdate marks a numerus form only for a literal count, so texts are worded
  without plurals ("Heads not shown: {0}."); Chinese has none anyway.
- Widgets set their texts in a ``retranslate_ui()`` method, called once after construction and
  again on ``QEvent.LanguageChange`` (:class:`Retranslating`), so that :func:`set_language`
  switches the whole UI without a restart.
"""

from __future__ import annotations

from PySide6.QtCore import (
    QT_TRANSLATE_NOOP,
    QCoreApplication,
    QEvent,
    QLibraryInfo,
    QLocale,
    QTranslator,
)

from gui.kit.choices import LANGUAGES

__all__ = [
    "CATALOGUE",
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "QT_TRANSLATE_NOOP",
    "Retranslating",
    "current_language",
    "resolve_language",
    "set_language",
    "system_language",
    "translate",
]

#: Base name of the catalogues: ``resources/i18n/explorer_<code>.qm``.
CATALOGUE = "explorer"
#: The source language of every string (needs no catalogue).
DEFAULT_LANGUAGE = "en"

_state: dict[str, object] = {"language": DEFAULT_LANGUAGE, "translator": None, "qt": None}


def translate(context: str, text: str, disambiguation: str | None = None, n: int = -1) -> str:
    """Return ``text`` (a literal English string) translated in ``context`` (a literal,
    usually the widget's class name), or ``text`` itself when no translation exists."""
    return QCoreApplication.translate(context, text, disambiguation, n)


class Retranslating:
    """Mixin (before the Qt base class) for a widget with ``retranslate_ui()``: every
    ``LanguageChange`` runs :meth:`_apply_language`, which subclasses may extend."""

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        if event.type() == QEvent.Type.LanguageChange:
            self._apply_language()
        super().changeEvent(event)  # type: ignore[misc]

    def _apply_language(self) -> None:
        self.retranslate_ui()  # type: ignore[attr-defined]


def system_language(locale: QLocale | None = None) -> str:
    """Return the shipped language that fits ``locale`` (default: the system locale).

    Any Chinese locale gets Simplified Chinese (the only Chinese catalogue); everything else
    gets English.
    """
    locale = locale or QLocale.system()
    if locale.language() == QLocale.Language.Chinese:
        return "zh_CN"
    return DEFAULT_LANGUAGE


def resolve_language(code: str | None) -> str:
    """Return ``code`` if it is a shipped language, else the system's (``""`` = follow system)."""
    if code in LANGUAGES:
        return str(code)
    return system_language()


def current_language() -> str:
    """Return the code of the language the UI is currently shown in."""
    return str(_state["language"])


def set_language(code: str, app: QCoreApplication | None = None) -> bool:
    """Show the UI in ``code`` (a key of :data:`LANGUAGES`, else ``ValueError``) from now on,
    without a restart; False (nothing changed) only if its catalogue is missing.

    Swaps the catalogues, applies the Chinese font fallback (:mod:`gui.kit.fonts`) and delivers
    the ``LanguageChange`` events, so every widget has re-translated itself when this returns.
    """
    if code not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {code!r}")
    app = app or QCoreApplication.instance()
    if app is None:
        raise RuntimeError("set_language needs a QCoreApplication")
    old = _state["translator"]
    translator: QTranslator | None = None
    if code != DEFAULT_LANGUAGE:  # English is the source language: it needs no catalogue
        from gui.kit.resources import i18n_dir

        translator = QTranslator(app)
        if not translator.load(f"{CATALOGUE}_{code}", str(i18n_dir())):
            translator.deleteLater()
            return False
    # Qt's own strings (OK/Cancel, file dialogs, text-field context menus) come from Qt's
    # catalogue when the installation has it (PySide6 wheels do; a bundle may leave it out).
    qt_translator: QTranslator | None = QTranslator(app)
    qt_folder = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
    if code == DEFAULT_LANGUAGE or not qt_translator.load(f"qtbase_{code}", qt_folder):
        qt_translator.deleteLater()
        qt_translator = None
    for previous in (old, _state["qt"]):
        if previous is not None:
            app.removeTranslator(previous)  # type: ignore[arg-type]
            previous.deleteLater()  # type: ignore[attr-defined]  # one catalogue per language
    for new in (qt_translator, translator):
        if new is not None:
            app.installTranslator(new)
    _state["translator"], _state["qt"], _state["language"] = translator, qt_translator, code
    from gui.kit.fonts import apply_language_font

    apply_language_font(code)
    # QApplication answers the LanguageChange it receives by *posting* one to every top-level
    # widget; deliver those now so that callers (menus, tests) see the new texts at once.
    QCoreApplication.sendPostedEvents(None, QEvent.Type.LanguageChange)
    # pyqtgraph words its plot menus once, when a plot is built: word the built ones again.
    from gui.kit.plot_menus import retranslate_every_plot_menu  # pyqtgraph: loaded late

    retranslate_every_plot_menu()
    return True
