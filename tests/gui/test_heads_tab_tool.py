"""The Heads tab as a tool (issue J, section 2), checked in the window as a user sees it.

Replay maps large enough to show a one-column sink, with axes, and a click that opens a rule's
map in the explorer; the table's flags visible at 1024×768, columns that can be hidden; the
logits choice in the session and reset, with a word, on the next file; exports that name the
file, the rule and the batch entry; readable layer names in both languages; the status bar
stating the tab in front; failures that clear "Opening…" and name the file.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QContextMenuEvent, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine.config import ScalingRule
from engine.core.scaling import Rule
from engine.io.tensors import write_tensors
from gui.heads.replay import DEFAULT_REPLAY_RULES
from gui.heads.table import DEFAULT_HIDDEN_COLUMNS
from gui.heads.worker import Logits
from gui.kit import i18n
from gui.kit.resources import sample_tensors_path
from tests.gui.conftest import HANG_MS, OFFSCREEN_NOISE
from tests.gui.pixels import agreement, chromium_images, coloured, pdf_to_image, rgb, rsvg_image
from tests.gui.test_heads_view import planted_file
from tests.gui.test_heads_window import _close_boxes, _visible_boxes


def _sink_file(path, n=128, d_k=32):
    """One head whose every query puts ~0.6 of its weight on key 0 (a one-column sink)."""
    rng = np.random.default_rng(7)
    q = rng.standard_normal((1, 1, n, d_k))
    k = rng.standard_normal((1, 1, n, d_k)) * 0.3
    direction = np.ones(d_k) / np.sqrt(d_k)
    q[0, 0] += 3.0 * direction
    k[0, 0, 0] = 1.9 * np.sqrt(d_k) * direction  # key 0 answers every query
    return write_tensors(path, {"layer0.q": q.astype(np.float32),
                                "layer0.k": k.astype(np.float32)}, meta={"model": "sink"})


def _open(window, path) -> None:
    window.heads.open_tensors(path)
    assert window.heads.view.wait_idle()


def _pick_logits(view, text: str) -> None:
    combo = view.controls.logits_rule
    combo.setCurrentIndex(combo.findText(text))


def _untick_in_header_menu(table, text: str) -> None:
    """Right-click the table's header and untick ``text`` in the menu that opens."""
    def untick() -> None:
        menu = QApplication.activePopupWidget()
        menu.setActiveAction(next(a for a in menu.actions() if a.text() == text))
        QTest.keyClick(menu, Qt.Key.Key_Return)

    QTimer.singleShot(0, untick)
    viewport = table.horizontalHeader().viewport()
    QApplication.sendEvent(viewport, QContextMenuEvent(
        QContextMenuEvent.Reason.Mouse, QPoint(5, 5), viewport.mapToGlobal(QPoint(5, 5))))


def test_replay_maps_show_a_one_column_sink_at_1280x800(make_window, tmp_path, qtbot) -> None:
    window = make_window(show=False)
    window.resize(1280, 800)
    window.show()
    _open(window, _sink_file(tmp_path / "sink.npz"))
    view = window.heads.view
    view.choose_head(0, 0)
    assert view.wait_idle()
    qtbot.wait(100)
    panel = view.replay.panel
    assert tuple(r.rule for r in panel.shown()) == DEFAULT_REPLAY_RULES
    for (title, image), replay in zip(panel.replay_rects(), panel.shown(), strict=True):
        assert min(image.width(), image.height()) >= 200.0, image  # pixels a side
        assert title.bottom() <= image.top() + 1.0
        # The sink is in the data drawn: column 0 holds the most weight.
        weights = replay.weights
        assert int(np.argmax(weights.sum(axis=0))) == 0
    sqrt = next(r for r in panel.shown() if r.rule == ScalingRule.SQRT)
    assert sqrt.diagnostics.sink_mass > 0.5 and "sink" in sqrt.diagnostics.flags
    # On screen, the sink column is one bright stripe of at least one pixel.
    shot = view.replay.grab().toImage()
    _title, image_rect = panel.replay_rects()[list(DEFAULT_REPLAY_RULES).index(ScalingRule.SQRT)]
    rect = view.replay.mapFromScene(image_rect).boundingRect()
    y = rect.center().y()
    column0 = QImage.pixelColor(shot, rect.left() + 1, y).lightness()
    middle = QImage.pixelColor(shot, rect.center().x(), y).lightness()
    assert column0 > middle + 60
    # Axes name what the maps show (on the first map only: the others have the same axes).
    labels = [(axis.orientation, axis.labelText) for axis in view.replay.scene().items()
              if isinstance(axis, pg.AxisItem) and axis.isVisible() and axis.label.isVisible()]
    assert len(labels) == 2
    assert "key j" in dict(labels)["bottom"] and "query i" in dict(labels)["left"]


def test_clicking_a_replayed_map_opens_that_rule_in_the_explorer(window, tmp_path,
                                                                 qtbot) -> None:
    _open(window, planted_file(tmp_path / "planted.npz"))
    view = window.heads.view
    view.choose_head(1, 2)
    assert view.wait_idle()
    qtbot.wait(50)
    panel = view.replay.panel
    index = [r.rule for r in panel.shown()].index(ScalingRule.QK_NORM)
    _title, image = panel.replay_rects()[index]
    point = view.replay.mapFromScene(image.center())
    with qtbot.waitSignal(view.ruleChosen) as chosen:
        QTest.mouseClick(view.replay.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert chosen.args == [1, 2, 0, "qk_norm"]
    assert window.wait_until_settled(HANG_MS)
    assert window.mode_tabs.currentWidget() is window.explorer_page
    assert window.current_view().key == "heatmap"
    assert window.controller.config().rule == ScalingRule.QK_NORM
    real = window.controller.results().real_head
    assert (real.ref.layer, real.ref.head) == (1, 2)


# The offscreen platform cannot raise the header's popup menu nor give it the keyboard.
@pytest.mark.qt_log_ignore(OFFSCREEN_NOISE, r"This plugin does not support (raise|grabbing)")
def test_flags_show_first_at_1024x768_and_columns_can_be_hidden(make_window, tmp_path,
                                                                 qtbot) -> None:
    window = make_window(show=False)
    window.resize(1024, 768)
    window.show()
    _open(window, planted_file(tmp_path / "planted.npz"))
    view = window.heads.view
    table = view.table
    header = table.horizontalHeader()
    model = table.model()
    assert model.headerData(0, Qt.Orientation.Horizontal) == "flags"
    assert header.sectionViewportPosition(0) >= 0
    assert header.sectionViewportPosition(0) + header.sectionSize(0) <= table.viewport().width()
    flags = {model.index(r, 0).data() for r in range(model.rowCount())}
    assert "saturated" in flags
    # Hidden by the user (a right-click on a header), remembered by the next window.
    keys = model.sourceModel().column_keys()
    for column in ("rho", "sink_mass"):
        _untick_in_header_menu(table, model.headerData(keys.index(column),
                                                       Qt.Orientation.Horizontal))
    assert table.isColumnHidden(keys.index("rho")) and not table.isColumnHidden(0)
    other_table = make_window().heads.view.table
    hidden = {key for column, key in enumerate(keys) if other_table.isColumnHidden(column)}
    assert hidden == {"rho", "sink_mass", *DEFAULT_HIDDEN_COLUMNS}


def test_the_logits_choice_is_saved_and_resets_with_a_word(window, make_window,
                                                           tmp_path) -> None:
    first = planted_file(tmp_path / "first.npz")
    _open(window, first)
    view = window.heads.view
    qk_norm = Logits(Rule(ScalingRule.QK_NORM, temperature=8.0, gain=4.0, cap=50.0),
                     own_scale=False)
    view.controls.gain.setValue(4.0)
    _pick_logits(view, "QK-norm")
    assert view.wait_idle()
    header, rows = view.data_table()
    assert {row[header.index("rule")] for row in rows} == {"qk_norm"}
    assert "QK-norm" in view.status_text()
    session = tmp_path / "s.json"
    assert window.files.save_session_to(session)
    saved = json.loads(session.read_text(encoding="utf-8"))["tensors"]["logits"]
    assert saved == {"rule": "qk_norm", "temperature": 8.0, "gain": 4.0, "cap": 50.0}
    # The session brings the choice back.
    other = make_window()
    assert other.files.open_session(session)
    assert other.heads.view.wait_idle()
    assert other.heads.view.controls.logits() == qk_norm  # as the controls show it
    header, rows = other.heads.view.data_table()
    assert {row[header.index("rule")] for row in rows} == {"qk_norm"}
    # Another file opens at its own scale, and the tab says the choice was reset.
    _open(window, planted_file(tmp_path / "second.npz"))
    header, rows = view.data_table()
    assert {row[header.index("rule")] for row in rows} == {"file"}
    assert view.controls.logits_rule.currentText() == "file's own scale"
    assert "Logits reset to the file's own scale (were QK-norm)" in view.flagged_text()


def test_every_export_names_the_file_the_rule_and_the_batch_entry(window, tmp_path) -> None:
    _open(window, planted_file(tmp_path / "planted.npz"))
    view = window.heads.view
    _pick_logits(view, "1/d_k")
    view.controls.batch.setValue(1)
    view.choose_head(0, 1)
    assert view.wait_idle()
    figure = view.export_item()
    header_text = figure.header.text
    assert "planted.npz" in header_text and "1/d_k re-applied" in header_text
    assert "layer 0, head 1, batch entry 1" in header_text
    written = {p.name: p for p in window.files.export_everything(tmp_path / "out", 1200, 800)}
    assert QImage(str(written["heads.png"])).width() == 1200
    svg = written["heads.svg"].read_text(encoding="utf-8")
    assert "planted.npz" in svg and "batch entry 1" in svg
    # The vector files as other viewers draw them: the grid, the maps and the letters where
    # the PNG has them.
    png = coloured(rgb(QImage(str(written["heads.png"]))))
    for renderer, drawn in (("librsvg", rsvg_image(written["heads.svg"], 1200, 800)),
                            ("chromium", chromium_images([written["heads.svg"]], 1200, 800)[0]),
                            ("poppler", pdf_to_image(written["heads.pdf"], 1200, 800))):
        figure = agreement(png, coloured(rgb(drawn)))
        print(f"heads: {renderer}/PNG coloured-pixel agreement within 3 px = {figure:.3f}")
        assert figure >= 0.9, renderer
    rows = list(csv.DictReader(written["heads.csv"].open(encoding="utf-8")))
    assert {r["file"] for r in rows} == {str(tmp_path / "planted.npz")}
    assert {r["rule"] for r in rows if r["table"] == "heads"} == {"linear"}
    replay = [r for r in rows if r["table"] == "replay"]
    assert {r["batch_entry"] for r in replay} == {"1"}
    assert {r["rule"] for r in replay} == {rule.value for rule in ScalingRule}


@pytest.fixture
def english_after():
    yield
    i18n.set_language("en")


def test_layer_names_are_readable_in_both_languages(window, english_after) -> None:
    _open(window, sample_tensors_path())
    view = window.heads.view
    column = view.table.model().sourceModel().column_keys().index("layer")
    names = [view.table.model().index(r, column).data() for r in range(3)]
    assert names[2] == "2 · trained with QK-norm"
    window.language.actions["zh_CN"].trigger()
    names = [view.table.model().index(r, column).data() for r in range(3)]
    assert names[0] == "0 · 用 none 训练" or names[0].startswith("0 · 用 ")
    assert all("训练" in name for name in names)


def test_the_status_bar_states_the_tab_in_front(window, tmp_path, qtbot) -> None:
    status = window.status
    window.mode_tabs.setCurrentIndex(0)
    assert "d_k" in status.text()  # the explorer's parameters
    window.mode_tabs.setCurrentWidget(window.train_tab)
    assert status.text() == window.train_tab.status_line()
    assert "d_k" not in status.text() and not status.progress.isVisible()
    _open(window, planted_file(tmp_path / "planted.npz"))
    assert status.text() == "planted.npz: 6 heads diagnosed"
    window.controller.set_config(window.controller.config())  # the explorer keeps working
    assert status.text().startswith("planted.npz")
    assert not status.cancel_button.isVisible()


def test_a_failed_open_clears_opening_and_every_dialog_names_the_file(window,
                                                                      tmp_path) -> None:
    _open(window, planted_file(tmp_path / "good.npz"))
    bad = tmp_path / "badnan.npz"
    arrays = {"layer0.q": np.full((1, 4, 8), np.nan, np.float32),
              "layer0.k": np.zeros((1, 4, 8), np.float32)}
    np.savez(bad, **arrays)
    window.heads.open_tensors(bad)
    assert window.status.text() == "Opening badnan.npz…"
    window.heads.view.wait_idle()
    boxes = _visible_boxes()
    assert boxes and "badnan.npz" in boxes[-1].text()
    _close_boxes()
    assert "Opening" not in window.status.text()
    assert "badnan.npz" in window.status.text()
    assert "good.npz" in window.heads.view.status_text()  # the file shown stays
    # A head the explorer cannot take names the file too.
    missing = tmp_path / "gone.npz"
    window.heads.view.open_file(missing)
    window.heads.view.wait_idle()
    boxes = _visible_boxes()
    assert boxes and "gone.npz" in boxes[-1].text()
    _close_boxes()
