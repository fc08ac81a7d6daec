"""Chinese and English UI: complete catalogue, runtime switching, real CJK glyphs.

The catalogue tests read ``resources/i18n/explorer_zh_CN.ts`` (the translation source) and the
Python sources; the window tests switch the language of a live window offscreen and read back
every text a user can see, widgets and pyqtgraph items alike.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PySide6.QtCore import QLocale, Qt
from PySide6.QtGui import QFont, QFontDatabase, QFontMetrics, QImage, QRawFont, QTextLayout
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDockWidget,
    QGraphicsTextItem,
    QGraphicsView,
    QGroupBox,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QTabWidget,
    QTextEdit,
    QWidget,
)

from gui.kit import fonts, i18n

ROOT = Path(__file__).resolve().parents[2]
TS = ROOT / "resources" / "i18n" / "explorer_zh_CN.ts"
QM = ROOT / "resources" / "i18n" / "explorer_zh_CN.qm"
CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f]")
#: Words that are the same in Chinese ML texts (maths, file formats, function names).
SYMBOL_WORDS = {
    "softmax", "logit", "logits", "rms", "var", "max", "tanh", "cos", "log", "png", "svg", "csv",
    "json", "raw", "sgd", "adam",
    "float", "bfloat",  # number-format names (the precision view's selector)
    "maxj", "pmax",  # plain text of max<sub>j</sub> and p<sub>max</sub> in plot items
    "ssmax", "yarn",  # method names (Scalable-Softmax, YaRN), written so in Chinese texts
    "llama",  # a model's name (the Llama 4 rule)
    "viridis", "cividis",  # colour-map names
    "gib",  # the memory limit's unit symbol (the Model tab shows it)
}
#: Whole texts that are deliberately not translated: the language menu's endonyms.
UNTRANSLATED_TEXTS = set(i18n.LANGUAGES.values())
#: Calls whose text argument is a variable by design; the strings themselves are marked with
#: QT_TRANSLATE_NOOP where they are defined (the test below checks that those are extracted).
INDIRECT_CALLS = {
    "translate(text.context, text.text)",  # gui.kit.forms.translated: the field declarations
    "translate('ScalingRule', ScalingRule(rule).label)",
    "translate(ACTION_CONTEXT, spec.text)",
    "translate(ACTION_CONTEXT, spec.status_tip)",
    "translate(menu_table.ACTION_CONTEXT, title)",
    "translate('MainWindow', title)",  # gui.window_modes: the page titles, marked where added
    "translate('HeadsView', self.label)",  # gui.heads.metrics: the METRICS table
    "translate('HeadsView', self.tooltip)",
    "translate('HeadsView', FLAG_TEXT.get(flag, flag))",
    "translate('HeadsView', text)",  # gui.heads.table: the fixed column titles
    "translate(spec.tip.context, spec.tip.text)",  # gui.train.panel: engine.config.RULES' tips
    "translate('ViewBox', text)",  # gui.kit.plot_menus: pyqtgraph's texts, marked in MENU_TEXTS
    "translate('PlotItem', text)",
}


def ts_messages() -> list[tuple[str, str, ET.Element]]:
    """(context, source, translation element) of every message of the Chinese catalogue."""
    out = []
    for context in ET.parse(TS).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            out.append((name, message.findtext("source") or "", message.find("translation")))
    return out


def needs_translation(text: str) -> bool:
    """True when ``text`` holds an English word that a Chinese UI must not show."""
    if text in UNTRANSLATED_TEXTS:
        return False
    plain = re.sub(r"<[^>]+>", " ", text).replace("&", "")
    plain = re.sub(r"\S*_\S*", " ", plain)  # identifiers such as d_model, W_Q, p_max
    words = [w for w in re.findall(r"[A-Za-z]{3,}", plain) if w.lower() not in SYMBOL_WORDS]
    return bool(words)


@pytest.fixture
def english_after():
    """Whatever a test switches to, leave the process in English (other tests expect it)."""
    yield
    i18n.set_language("en")


# -- the catalogue ----------------------------------------------------------------------------
def test_catalogue_is_complete_and_compiled():
    messages = ts_messages()
    assert len(messages) > 150
    unfinished = [(c, s) for c, s, t in messages
                  if t is None or t.get("type") in {"unfinished", "obsolete", "vanished"}
                  or not "".join(t.itertext()).strip()]
    assert unfinished == []
    for context, source, translation in messages:
        text = "".join(translation.itertext())
        # Placeholders and markup survive translation.
        assert sorted(re.findall(r"\{\d[^}]*\}", source)) == sorted(
            re.findall(r"\{\d[^}]*\}", text)), (context, source)
        assert sorted(re.findall(r"</?\w+>", source)) == sorted(
            re.findall(r"</?\w+>", text)), (context, source)
        assert not needs_translation(text) or CJK.search(text), (context, source, text)
    assert QM.stat().st_size > 10_000


def test_committed_qm_matches_the_ts(tmp_path):
    lrelease = Path(sys.executable).with_name("pyside6-lrelease")
    if not lrelease.exists():
        lrelease = Path(shutil.which("pyside6-lrelease") or "pyside6-lrelease")
    out = tmp_path / "fresh.qm"
    subprocess.run([str(lrelease), "-silent", str(TS), "-qm", str(out)], check=True)
    assert out.read_bytes() == QM.read_bytes(), "run resources/i18n/update_translations.py"


def test_every_translate_call_is_extractable_and_extracted():
    """pyside6-lupdate sees only literal (context, text) pairs: every call in gui/ and in the
    config field declarations (engine/config) is one of those and is in the catalogue, or is
    a reviewed indirect call over marked strings."""
    catalogue = {(c, s) for c, s, _ in ts_messages()}
    non_literal, not_extracted = [], []
    marked_in_engine = 0
    paths = [*(ROOT / "gui").rglob("*.py"), *(ROOT / "engine" / "config").rglob("*.py")]
    for path in sorted(paths):
        if path.name == "i18n.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = getattr(func, "id", None) or getattr(func, "attr", None)
            if name not in {"translate", "tr", "QT_TRANSLATE_NOOP"}:
                continue
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            args = node.args[:2]
            literal = len(args) == 2 and all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args)
            if name == "tr" or not literal:
                if ast.unparse(node) not in INDIRECT_CALLS:
                    non_literal.append(f"{where} {ast.unparse(node)}")
            elif (args[0].value, args[1].value) not in catalogue:
                not_extracted.append(f"{where} {args[1].value!r}")
            else:
                marked_in_engine += path.is_relative_to(ROOT / "engine")
    assert marked_in_engine > 60  # the panels' labels and tooltips live with the fields
    assert non_literal == []
    assert not_extracted == [], "run resources/i18n/update_translations.py"


def test_rule_names_shown_as_words_are_in_the_catalogue():
    from engine.config import ScalingRule
    from gui.kit.style import RULE_WORDS

    labels = {rule.label for rule in ScalingRule}
    assert set(RULE_WORDS) <= labels
    # Every label that is a word (not a formula such as 1/√d_k) is marked for translation.
    assert {label for label in labels if re.search(r"[a-z]{2}", label)} <= set(RULE_WORDS)


# -- language selection -----------------------------------------------------------------------
def test_system_locale_picks_the_language():
    chinese = QLocale(QLocale.Language.Chinese, QLocale.Country.China)
    taiwan = QLocale(QLocale.Language.Chinese, QLocale.Country.Taiwan)
    assert i18n.system_language(chinese) == "zh_CN"
    assert i18n.system_language(taiwan) == "zh_CN"  # the only Chinese catalogue
    assert i18n.system_language(QLocale(QLocale.Language.German)) == "en"
    assert i18n.resolve_language("zh_CN") == "zh_CN"
    assert i18n.resolve_language("en") == "en"
    assert i18n.resolve_language("") == i18n.system_language()
    assert i18n.resolve_language("klingon") == i18n.system_language()
    with pytest.raises(ValueError, match="language must be one of"):
        i18n.set_language("fr")


def test_translation_follows_set_language(qapp, english_after):
    assert i18n.set_language("zh_CN")
    assert i18n.current_language() == "zh_CN"
    assert i18n.translate("MainWindow", "&File") == "文件(&F)"
    assert i18n.set_language("en")
    assert i18n.translate("MainWindow", "&File") == "&File"


# -- the whole window in Chinese --------------------------------------------------------------
def visible_texts(window: QWidget) -> list[tuple[str, str]]:
    """(where, text) of every user-visible string of ``window``: widgets, menus and actions,
    tooltips, tabs, combo items, docks and every text item of every plot scene."""
    out: list[tuple[str, str]] = [("window title", window.windowTitle())]
    widgets = [window, *window.findChildren(QWidget)]
    for w in widgets:
        kind = f"{type(w).__name__}({w.objectName()})"
        out += [(f"{kind} tooltip", w.toolTip()), (f"{kind} status tip", w.statusTip())]
        if isinstance(w, QLabel):
            out.append((kind, w.text()))
        elif isinstance(w, QAbstractButton):
            out.append((kind, w.text()))
        elif isinstance(w, QGroupBox):
            out.append((kind, w.title()))
        elif isinstance(w, QDockWidget):
            out.append((kind, w.windowTitle()))
        elif isinstance(w, QProgressBar):
            out.append((kind, w.format()))
        elif isinstance(w, QLineEdit):
            out.append((f"{kind} placeholder", w.placeholderText()))
        elif isinstance(w, QTextEdit):
            out.append((kind, w.toPlainText()))
        elif isinstance(w, QAbstractSpinBox):
            out += [(kind, w.specialValueText()), (kind, getattr(w, "prefix", str)()),
                    (kind, getattr(w, "suffix", str)())]
        elif isinstance(w, QComboBox):
            out += [(f"{kind} item", w.itemText(i)) for i in range(w.count())]
        elif isinstance(w, QTabWidget):
            for i in range(w.count()):
                out += [(f"{kind} tab", w.tabText(i)), (f"{kind} tab tip", w.tabToolTip(i))]
        elif isinstance(w, QMenu):
            out.append((f"{kind} title", w.title()))
        elif isinstance(w, QAbstractItemView) and w.model() is not None:
            model = w.model()
            for orientation, count in ((Qt.Orientation.Horizontal, model.columnCount()),
                                       (Qt.Orientation.Vertical, 0)):
                out += [(f"{kind} header", str(model.headerData(i, orientation) or ""))
                        for i in range(count)]
        for action in w.actions():
            out += [(f"action in {kind}", action.text()),
                    (f"action tip in {kind}", action.statusTip())]
        if isinstance(w, QGraphicsView) and w.scene() is not None:
            for item in w.scene().items():
                if isinstance(item, QGraphicsTextItem) and item.isVisible():
                    out.append((f"plot text in {kind}", item.toPlainText()))
    return [(where, text) for where, text in out if text and text.strip()]


def untranslated(texts: list[tuple[str, str]]) -> list[str]:
    return sorted({f"{where}: {text!r}" for where, text in texts
                   if needs_translation(text) and not CJK.search(text)})


def test_every_visible_string_of_the_chinese_window_is_translated(make_window, english_after):
    """The window as a Chinese user starts it: every text of every tab, dock, menu and plot."""
    assert i18n.set_language("zh_CN")
    window = make_window()
    window.tour_action.trigger()  # the guided tour's dock too
    window.controller.refresh_views()  # hidden views too
    texts = visible_texts(window)
    assert len(texts) > 200
    assert untranslated(texts) == []


def test_switching_language_at_runtime_translates_the_explorer(window, english_after):
    """Started in English, switched from the menu: the explorer (views, parameter panel, menus,
    status bar, tour) and the Train tab (panel, views) re-translate without a restart."""
    window.tour_action.trigger()
    window.language.actions["zh_CN"].trigger()
    window.controller.refresh_views()
    window.train_tab.controller.refresh_views()  # hidden training views too
    texts = visible_texts(window)
    assert len(texts) > 200
    assert untranslated(texts) == []
    train_texts = {text for _where, text in visible_texts(window.train_tab)}
    assert {"开始", "训练曲线"} <= train_texts, sorted(train_texts)
    # The same walk in English finds the English texts (so the walk itself reads real text).
    window.language.actions["en"].trigger()
    english = {text for _where, text in visible_texts(window)}
    assert {"&File", "Parameters", "Scaling laws", "tokens n", "Guided tour"} <= english
    assert {"Train", "Start", "Training curves", "Learning-rate sweep"} <= english
    assert not any(CJK.search(text) for text in english - UNTRANSLATED_TEXTS)


def test_language_switch_at_runtime_and_persisted(window, english_after):
    laws = window.view("laws")
    english_title = laws.plot("logit_var").titleLabel.text
    menus = [a.text() for a in window.menuBar().actions()]
    assert menus[0] == "&File"
    zh_action = window.language.actions["zh_CN"]
    zh_action.trigger()  # the View → Language menu entry
    assert i18n.current_language() == "zh_CN" and zh_action.isChecked()
    assert window.settings.get("ui/language") == "zh_CN"
    tabs = [window.view_tabs.tabs.tabText(i) for i in range(window.view_tabs.tabs.count())]
    assert tabs[:2] == ["注意力权重", "单行 Softmax"]
    assert [a.text() for a in window.menuBar().actions()][:2] == ["文件(&F)", "视图(&V)"]
    assert window.parameter_dock.windowTitle() == "参数"
    assert laws.plot("logit_var").titleLabel.text != english_title
    assert "Logit 方差" in laws.plot("logit_var").titleLabel.text
    softmax = window.view("softmax")
    assert "查询行" in softmax.plots()[0].titleLabel.text  # result-dependent title, re-drawn
    assert "规则" in window.status.label.text()
    window.language.actions["en"].trigger()
    assert [window.view_tabs.tabs.tabText(i) for i in range(window.view_tabs.tabs.count())][:2] == [
        "Attention weights", "Softmax of one row"]
    assert laws.plot("logit_var").titleLabel.text == english_title
    assert "Query row" in softmax.plots()[0].titleLabel.text
    assert window.settings.get("ui/language") == "en"


# -- glyphs -----------------------------------------------------------------------------------
def catalogue_cjk_characters() -> set[str]:
    chars = set()
    for _c, _s, translation in ts_messages():
        chars |= set(CJK.findall("".join(translation.itertext())))
    chars |= set(CJK.findall("".join(i18n.LANGUAGES.values())))
    # The guided tour's Chinese step texts (resources/tour) are drawn with the same font.
    for path in (ROOT / "resources" / "tour").glob("*zh*.json"):
        chars |= set(CJK.findall(path.read_text(encoding="utf-8")))
    return chars


def test_shipped_font_is_small_licensed_and_covers_the_translations(qapp):
    path = ROOT / "resources" / "fonts" / fonts.CJK_FONT_FILE
    assert path.stat().st_size < 2 * 1024 * 1024
    assert "SIL OPEN FONT LICENSE Version 1.1" in (path.parent / "OFL.txt").read_text("utf-8")
    family = fonts.register_cjk_font()
    assert family in QFontDatabase.families()
    raw = QRawFont(str(path), 16)
    assert raw.isValid()
    missing = sorted(c for c in catalogue_cjk_characters() if not raw.supportsCharacter(ord(c)))
    assert missing == [], "run resources/i18n/update_translations.py --font …"
    metrics = QFontMetrics(QFont(family, 12))
    assert all(metrics.inFontUcs4(ord(c)) for c in "注意力缩放梯度饱和")


def render(text: str, font: QFont) -> QImage:
    label = QLabel(text)
    label.setFont(font)
    label.resize(label.sizeHint())
    image = QImage(label.size(), QImage.Format.Format_RGB32)
    image.fill(Qt.GlobalColor.white)
    label.render(image)
    return image


def ink(image: QImage) -> int:
    return sum(1 for y in range(image.height()) for x in range(image.width())
               if image.pixelColor(x, y).lightness() < 128)


def glyph_families(text: str, font: QFont) -> list[str]:
    """Families of the fonts Qt actually draws ``text`` with (after its fallback search)."""
    layout = QTextLayout(text, font)
    layout.beginLayout()
    layout.createLine()
    layout.endLayout()
    return [run.rawFont().familyName() for run in layout.glyphRuns()]


def test_chinese_renders_as_glyphs_not_boxes(qapp, english_after):
    i18n.set_language("zh_CN")
    family = fonts.register_cjk_font()  # registered by set_language: returns the family
    # The UI font while Chinese is shown: the platform's Latin family, the shipped CJK fallback.
    ui_font = QApplication.font()
    assert ui_font.families()[-1] == family
    assert glyph_families("注意力缩放", ui_font) == [family]
    mixed = glyph_families("Logit 方差", ui_font)
    assert family in mixed and len(mixed) == 2  # Latin from the UI font, CJK from ours
    # Drawn with the shipped font, every character has its own glyph: a missing glyph would
    # draw the same empty box for all of them.
    shipped = QFont(family, 16)
    images = {c: render(c * 3, shipped) for c in "注意梯熵饱"}
    for c, image in images.items():
        assert ink(image) > 30, c
    assert len({bytes(image.constBits()) for image in images.values()}) == len(images)
    raw = QRawFont.fromFont(shipped)
    assert raw.familyName() == family
    assert all(raw.supportsCharacter(ord(c)) for c in "注意梯熵饱")
