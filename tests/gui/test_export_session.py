"""PNG/SVG/CSV export, clipboard, export-all, session files (round trip and corrupt files)."""

from __future__ import annotations

import csv
import dataclasses
import json

import pyqtgraph as pg
import pytest
from PySide6.QtWidgets import QApplication, QMessageBox

from engine.config import AttentionConfig, MaskKind
from gui.kit import export, render, svg_export
from gui.kit.plot_view import PlotView
from gui.kit.session import VIEW_KEYS, Session, SessionError, load_session, save_session


@pytest.mark.parametrize(("width", "height"), [(640, 480), (1000, 420), (300, 900)])
def test_png_has_requested_size_and_is_not_blank(shared_window, tmp_path, width, height):
    for key in ("heatmap", "laws"):
        path = export.export_png(shared_window.view(key).export_item(), tmp_path / f"{key}.png",
                                 width, height)
        stats = export.image_stats(path)
        assert (stats["width"], stats["height"]) == (width, height)
        assert stats["colors"] > 16
        assert stats["non_background"] > 0.02


def test_hidden_view_exports_at_requested_size(window, tmp_path):
    # The correlation tab was never shown: pyqtgraph would lay it out at 640×480.
    window.show_view("heatmap")
    view = window.view("correlation")
    assert not view.isVisible()
    image = render.render_image(view.export_item(), 1500, 500)
    assert (image.width(), image.height()) == (1500, 500)
    assert export.image_stats(image)["non_background"] > 0.02


def test_svg_and_csv(shared_window, tmp_path):
    view = shared_window.view("softmax")
    svg = svg_export.export_svg(view.export_item(), tmp_path / "softmax.svg", 800, 600)
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "<path" in text
    header, rows = view.data_table()
    path = export.export_csv(header, rows, tmp_path / "softmax.csv")
    with path.open(encoding="utf-8") as handle:
        read = list(csv.reader(handle))
    assert read[0] == header
    assert len(read) == len(rows) + 1
    assert float(read[1][4]) == pytest.approx(rows[0][4])


class _LinePlot(PlotView):
    """A plot view of neither the explorer nor the Train tab: only the base interface."""

    key = "line"

    def __init__(self) -> None:
        super().__init__()
        self._plot = pg.PlotWidget()
        self._layout.addWidget(self._plot)
        self._plot.plot([0.0, 1.0, 2.0], [1.0, 3.0, 2.0], pen=pg.mkPen("r", width=3))

    def title(self) -> str:
        return "Line"

    def show_results(self, results: object) -> None:
        pass  # fixed data: nothing arrives

    def export_item(self) -> pg.PlotWidget:
        return self._plot

    def data_table(self) -> tuple[list[str], list[list[float | str]]]:
        return ["x", "y"], [[0.0, 1.0], [1.0, 3.0], [2.0, 2.0]]


def test_export_needs_only_the_plot_view_interface(qtbot, tmp_path):
    view = _LinePlot()
    qtbot.addWidget(view)
    written = export.export_all([view], tmp_path, None, 320, 200)
    assert [p.name for p in written] == ["line.png", "line.svg", "line.pdf", "line.csv"]
    stats = export.image_stats(tmp_path / "line.png")
    assert (stats["width"], stats["height"]) == (320, 200)
    assert stats["non_background"] > 0.005  # the red line and the axes are drawn
    assert "<path" in (tmp_path / "line.svg").read_text(encoding="utf-8")
    with (tmp_path / "line.csv").open(encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [["x", "y"], ["0.0", "1.0"], ["1.0", "3.0"],
                                            ["2.0", "2.0"]]


def test_export_size_is_validated(shared_window, tmp_path):
    with pytest.raises(ValueError, match="width"):
        export.export_png(shared_window.view("heatmap").export_item(), tmp_path / "x.png", 0, 100)


def test_copy_to_clipboard(shared_window):
    export.copy_to_clipboard(shared_window.current_view().export_item(), 400, 300)
    image = QApplication.clipboard().image()
    assert (image.width(), image.height()) == (400, 300)
    assert export.image_stats(image)["colors"] > 16


def test_export_all_writes_every_view_and_the_session(shared_window, tmp_path):
    written = shared_window.files.export_everything(tmp_path / "all", 500, 350)
    names = {p.name for p in written}
    for view in shared_window.views:
        assert {f"{view.key}.png", f"{view.key}.svg", f"{view.key}.csv"} <= names
    assert "session.json" in names
    assert all(p.exists() and p.stat().st_size > 0 for p in written)
    assert load_session(tmp_path / "all" / "session.json").config == shared_window.panel.config()
    for path in written:
        if path.suffix == ".png":
            stats = export.image_stats(path)
            assert (stats["width"], stats["height"]) == (500, 350), path.name
            assert stats["non_background"] > 0.02, path.name


def test_session_round_trip(window, settle, tmp_path):
    config = AttentionConfig(n_tokens=30, d_k=8, d_model=8, mask="causal", query_row=7,
                             rule="softcap", cap=3.0, samples=200, seed=4)
    path = tmp_path / "s.json"
    save_session(path, Session(config, current_view="histogram", temperature=2.5))
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["app"] == "attention-scale-explorer" and data["version"] == 1
    assert data["attention"]["mask"] == "causal"

    assert window.files.open_session(path)
    settle(window)
    assert window.panel.config() == config
    assert window.controller.results().config == config
    assert window.controller.results().temperature == 2.5
    assert window.current_view().key == "histogram"
    assert window.panel.mask.currentData() == MaskKind.CAUSAL.value
    assert window.files.session_path() == str(path)

    again = tmp_path / "again.json"
    assert window.files.save_session_to(again)
    # …with the Model tab's inputs (tests/gui/test_model_inputs.py checks them)
    assert dataclasses.replace(load_session(again), model=None) == Session(config, "histogram",
                                                                           2.5)


_VALID = Session(AttentionConfig()).to_dict()


def test_unknown_view_message_names_the_views(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**_VALID, "view": {"current_view": "lawz"}}), encoding="utf-8")
    with pytest.raises(SessionError, match=r"unknown view\.current_view 'lawz'.*heatmap"):
        load_session(path)


def test_session_view_keys_are_the_windows_views(shared_window):
    window = shared_window
    keys = [v.key for v in [*window.views, *window.train_tab.views, window.heads.view,
                            window.model_view]]
    assert sorted(keys) == sorted(VIEW_KEYS)
    front = window.current_view().key
    for key in VIEW_KEYS:  # every accepted key can be brought to the front
        assert window.show_view(key)
    assert window.show_view(front)


@pytest.mark.parametrize("content", [
    "{not json",
    json.dumps({"app": "something-else", "version": 1, "attention": {}}),
    json.dumps({"app": "attention-scale-explorer", "version": 99, "attention": {}}),
    json.dumps({"app": "attention-scale-explorer", "version": 1,
                "attention": {"kind": "attention", "n_tokens": -5}}),
    json.dumps([1, 2, 3]),
    # Hostile files: Python's json raises RecursionError / a bare ValueError (4300-digit limit)
    # / the temperature check overflowed; an unknown front view was accepted silently.
    "[" * 100_000 + "]" * 100_000,
    '{"app": "attention-scale-explorer", "version": 1, "attention": {"d_k": '
    + "7" * 5000 + "}}",
    json.dumps({**_VALID, "attention": {**_VALID["attention"], "rho": 10**400}}),
    json.dumps({**_VALID, "view": {"current_view": "heatmap", "temperature": 10**400}}),
    json.dumps({**_VALID, "view": {"current_view": "no_such_view"}}),
], ids=["not-json", "foreign", "version", "invalid-value", "not-object", "deep-nesting",
        "5000-digits", "huge-int-setting", "huge-int-temperature", "unknown-view"])
def test_corrupt_session_changes_nothing(shared_window, tmp_path, qtbot, content):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SessionError) as raised:
        load_session(path)
    message = str(raised.value)
    assert "\n" not in message and len(message) <= 300
    config_before = shared_window.panel.config()
    results_before = shared_window.controller.results()
    assert not shared_window.files.open_session(path)
    boxes = [w for w in QApplication.topLevelWidgets()
             if isinstance(w, QMessageBox) and w.isVisible()]
    assert boxes and "session" in boxes[-1].windowTitle().lower()
    assert boxes[-1].text() == message
    for box in boxes:
        box.close()
    assert shared_window.panel.config() == config_before
    assert shared_window.controller.config() == config_before
    assert shared_window.controller.results() is results_before
    assert shared_window.files.session_path() == ""
