"""The Heads tab in the window: File › Open tensors, drag and drop, sessions, exports, closing."""

from __future__ import annotations

import json

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

from gui.kit.export import image_stats
from tests.gui.conftest import HANG_MS
from tests.gui.test_heads_view import planted_file

#: A session's logits choice when the heads are diagnosed at the file's own scale.
OWN_SCALE = {"rule": None, "temperature": 8.0, "gain": None, "cap": 50.0}


def _visible_boxes() -> list[QMessageBox]:
    return [w for w in QApplication.topLevelWidgets()
            if isinstance(w, QMessageBox) and w.isVisible()]


def _close_boxes() -> None:
    for box in _visible_boxes():
        box.close()


def test_file_open_tensors_asks_for_a_file_and_shows_the_heads_tab(window, tmp_path,
                                                                    monkeypatch) -> None:
    path = planted_file(tmp_path / "planted.npz")
    action = window.menu_actions["open_tensors"]
    assert action.shortcut().toString() == "Ctrl+Shift+O"
    asked = []

    def fake_dialog(parent, caption, folder, filters):
        asked.append(filters)
        return str(path), filters

    monkeypatch.setattr(QFileDialog, "getOpenFileName", fake_dialog)
    action.trigger()
    heads = window.heads.view
    assert heads.wait_idle()
    assert window.mode_tabs.currentWidget() is heads
    assert window.current_view() is heads
    assert "*.safetensors" in asked[0]
    assert heads.table.model().rowCount() == 6
    assert window.settings.get("tensors/last_dir") == str(tmp_path)
    assert not window.parameter_dock.isVisible()  # the explorer's panel is not for this tab


def _drag(window, path, event_class):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = event_class(QPoint(20, 20) if event_class is QDragEnterEvent else QPointF(20, 20),
                        Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier)
    event.ignore()
    QApplication.sendEvent(window, event)
    return event.isAccepted()


def test_dropping_a_tensor_file_on_the_window_opens_it(window, tmp_path) -> None:
    # Qt delivers a drop to the widget that accepted the drag's enter event.
    assert not _drag(window, tmp_path / "notes.txt", QDragEnterEvent)
    path = planted_file(tmp_path / "dropped.npz")
    assert _drag(window, path, QDragEnterEvent)
    assert _drag(window, path, QDropEvent)
    assert window.heads.view.wait_idle()
    assert "dropped.npz" in window.heads.view.status_text()
    assert window.mode_tabs.currentWidget() is window.heads.view


def test_a_broken_file_shows_one_clear_message_and_keeps_everything(window, tmp_path) -> None:
    window.heads.open_tensors(planted_file(tmp_path / "good.npz"))
    assert window.heads.view.wait_idle()
    broken = tmp_path / "half.npz"
    broken.write_bytes(planted_file(tmp_path / "whole.npz").read_bytes()[:300])
    window.heads.open_tensors(broken)
    window.heads.view.wait_idle()
    boxes = _visible_boxes()
    assert boxes and "half.npz" in boxes[-1].text()
    _close_boxes()
    assert "good.npz" in window.heads.view.status_text()


def test_the_session_remembers_the_tensor_file(window, make_window, tmp_path) -> None:
    path = planted_file(tmp_path / "planted.npz")
    window.heads.open_tensors(path)
    assert window.heads.view.wait_idle()
    session = tmp_path / "s.json"
    assert window.files.save_session_to(session)
    data = json.loads(session.read_text(encoding="utf-8"))
    assert data["tensors"] == {"path": str(path), "layer": None, "head": None,
                               "batch_entry": 0, "logits": OWN_SCALE}
    assert data["view"]["current_view"] == "heads"
    other = make_window()
    assert other.files.open_session(session)
    assert other.heads.view.wait_idle()
    assert "planted.npz" in other.heads.view.status_text()
    assert other.mode_tabs.currentWidget() is other.heads.view


def test_a_moved_tensor_file_is_reported_and_the_rest_of_the_session_opens(
        window, tmp_path, small_config) -> None:
    session = tmp_path / "s.json"
    config = small_config.replace(d_k=24) if hasattr(small_config, "replace") else small_config
    data = {"app": "attention-scale-explorer", "version": 1, "attention": config.to_dict(),
            "view": {"current_view": "softmax", "temperature": 3.0},
            "tensors": {"path": str(tmp_path / "moved.npz"), "layer": 0, "head": 1}}
    session.write_text(json.dumps(data), encoding="utf-8")
    assert window.files.open_session(session)
    boxes = _visible_boxes()
    assert boxes and "moved.npz" in boxes[-1].text() and "not found" in boxes[-1].text()
    _close_boxes()
    assert window.panel.config() == config
    assert window.controller.temperature() == 3.0
    assert window.current_view().key == "softmax"


def test_export_all_includes_the_heads_tab_once_a_file_is_open(window, tmp_path) -> None:
    # Which views are exported does not depend on the format: CSV alone answers it.
    before = {p.name for p in window.files.export_everything(tmp_path / "none", 640, 480,
                                                             formats=("csv",))}
    assert not any(name.startswith("heads") for name in before)
    window.heads.open_tensors(planted_file(tmp_path / "planted.npz"))
    assert window.heads.view.wait_idle()
    written = {p.name: p for p in window.files.export_everything(tmp_path / "all", 640, 480)}
    assert {"heads.png", "heads.svg", "heads.csv"} <= set(written)
    assert image_stats(written["heads.png"])["colors"] > 50
    rows = written["heads.csv"].read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("file,table,batch_entry,layer,head") and len(rows) == 1 + 6


def test_closing_while_a_large_file_is_diagnosed_exits_cleanly(make_window, tmp_path,
                                                               qtbot) -> None:
    window = make_window()
    path = planted_file(tmp_path / "big.npz", n=384, heads=12, layers=6)
    window.heads.open_tensors(path)
    qtbot.waitUntil(lambda: len(window.heads.view.controller.records()) > 0, timeout=HANG_MS)
    window.close()
    qtbot.waitUntil(lambda: not window.workers_running(), timeout=HANG_MS)


def test_help_open_sample_tensors_shows_the_shipped_trained_heads(window) -> None:
    window.menu_actions["open_sample"].trigger()
    view = window.heads.view
    assert view.wait_idle()
    assert "trained_heads.npz" in view.status_text()
    header, rows = view.data_table()
    flagged = {(row[header.index("layer")], row[header.index("head")]):
               row[header.index("flags")] for row in rows}
    # The sample's unscaled run (layer 0) saturates; QK-norm (layer 2), trained to retrieve
    # one token, is sharp (entropy 0.2 of uniform) but not one-hot.
    assert flagged[(0, 0)] == "saturated" and flagged[(2, 0)] == "sharp"
    assert "L0 H0 (saturated)" in view.flagged_text()
    column = view.table.model().sourceModel().column_keys().index("layer")
    layer_names = [view.table.model().index(row, column).data() for row in range(3)]
    # Readable names, not the trainer's rule ids ("0 · none").
    assert layer_names == ["0 · trained with none", "1 · trained with 1/√d_k",
                           "2 · trained with QK-norm"]


def test_inspect_trained_model_opens_its_file_in_the_heads_tab(window, tmp_path,
                                                               monkeypatch) -> None:
    from engine.config.train import TrainConfig
    from gui.train import tab as tab_module

    config = TrainConfig(rules=("none", "sqrt"), d_k=16, d_model=32, heads=2, n=8, vocab=16,
                         batch=32, steps=20, lr=0.01, eval_size=8)
    target = tmp_path / "mine.npz"
    monkeypatch.setattr(tab_module.QFileDialog, "getSaveFileName",
                        lambda *args: (str(target), args[-1]))
    train = window.train_tab
    window.mode_tabs.setCurrentWidget(train)
    train.panel.set_config(config)
    assert train.start_training() and train.wait_until_idle(30_000)
    train.panel.inspect_button.click()
    view = window.heads.view
    heads = view.controller
    assert train.wait_until_idle(30_000)
    from gui.kit.qt_lifetime import wait_until

    wait_until(lambda: heads.tensor_file() is not None and not heads.is_busy(),
               (heads.fileOpened, heads.busyChanged), 30_000)
    assert window.mode_tabs.currentWidget() is view
    assert "mine.npz" in view.status_text()
    assert view.table.model().rowCount() == 2 * 2  # two runs (layers) × two heads
