"""Translation helpers: every user-visible string goes through Qt's translator.

The English text is the source; a Chinese ``.qm`` catalogue (when present under
``resources/i18n``) is installed by :func:`install_translator`.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLocale, QTranslator

__all__ = ["install_translator", "tr"]


def tr(context: str, text: str) -> str:
    """Translate ``text`` in ``context`` with the installed translators.

    Parameters
    ----------
    context
        Translation context, usually the class name of the widget showing the text.
    text
        The English source string.

    Returns
    -------
    str
        The translated string, or ``text`` itself when no translation exists.
    """
    return QCoreApplication.translate(context, text)


def install_translator(app: QCoreApplication, locale: QLocale | None = None) -> QTranslator | None:
    """Install the catalogue for ``locale`` (default: the system locale) if one is shipped.

    Parameters
    ----------
    app
        The application to install the translator on.
    locale
        Locale to load; ``None`` uses ``QLocale()``.

    Returns
    -------
    QTranslator or None
        The installed translator (keep a reference), or ``None`` when no catalogue matched.
    """
    from gui.resources import i18n_dir

    translator = QTranslator(app)
    if translator.load(locale or QLocale(), "explorer", "_", str(i18n_dir())):
        app.installTranslator(translator)
        return translator
    return None
