"""View › Pin curves: a view's curves stay as a faded, labelled reference, in exports and in
the saved session, until Clear pins."""

from __future__ import annotations

import json

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage

from gui.kit.export import export_png
from gui.kit.pins import MAX_PINS, pin_from_dict
from gui.kit.session import VIEW_KEYS, SessionError, load_session
from tests.gui.conftest import HANG_MS
from tests.gui.pixels import rgb


def _datasets(view) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for plot in view.plots():
        for item in plot.listDataItems():
            if isinstance(item, pg.PlotDataItem) and item.isVisible():
                x, y = item.getOriginalDataset()
                if x is not None and len(x):
                    out.append((np.asarray(x, float), np.asarray(y, float)))
    return out


def _texts(view) -> list[str]:
    scene = view.export_item().scene()
    return [item.toPlainText() for item in scene.items()
            if isinstance(item, pg.TextItem) and item.isVisible()]


def _contains(datasets, x, y) -> bool:
    return any(a.shape == x.shape and np.array_equal(a, x, equal_nan=True)
               and np.array_equal(b, y, equal_nan=True) for a, b in datasets)


def test_pinned_curves_stay_while_the_live_ones_change_and_survive_a_session(
        make_window, settle, tmp_path):
    window = make_window()
    window.show_view("laws")
    settle(window)
    view = window.view("laws")
    before = _datasets(view)
    plain = rgb(QImage(str(export_png(view.export_item(), tmp_path / "plain.png", 900, 600))))

    pin = window.pins.pin_current()
    assert pin is not None and pin.label.startswith("n = 24, d_k = 16")  # the small test config
    assert len(pin.curves) == len(before)
    assert any("pin 1: n = 24" in text for text in _texts(view))

    window.panel.n_tokens.spin.setValue(32)
    settle(window)
    shown = _datasets(view)
    assert len(shown) == 2 * len(before)  # live curves plus the pinned copies
    for x, y in before:  # every curve as it was at the pin, still drawn
        assert _contains(shown, x, y)
    assert any(not _contains(before, x, y) for x, y in shown)  # the live ones moved
    pinned = rgb(QImage(str(export_png(view.export_item(), tmp_path / "pinned.png", 900, 600))))
    assert (np.abs(pinned - plain).max(axis=-1) > 30).sum() > 500  # the export shows them

    path = tmp_path / "with-pins.json"
    assert window.files.save_session_to(path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [p["view"] for p in saved["pins"]] == ["laws"]
    assert load_session(path).pins == (pin,)

    window.pins.clear_current()
    assert len(_datasets(view)) == len(before)
    assert not any("pin 1" in text for text in _texts(view))

    assert window.files.open_session(path)  # the pin comes back from the file
    settle(window)
    restored = _datasets(view)
    for x, y in before:
        assert _contains(restored, x, y)
    assert any("pin 1: n = 24" in text for text in _texts(view))


def test_a_heatmap_has_nothing_to_pin_and_a_view_holds_three_pins(make_window, settle):
    window = make_window()
    window.show_view("heatmap")
    settle(window)
    assert window.pins.pin_current() is None
    assert "no curves to pin" in window.status.text()
    window.show_view("gradients")
    settle(window)
    for _ in range(MAX_PINS):
        assert window.pins.pin_current() is not None
    assert window.pins.pin_current() is None
    assert "at most 3 pins" in window.status.text()
    labels = [text for text in _texts(window.view("gradients")) if "pin " in text]
    assert len(labels) == 1 and labels[0].count("\n") == MAX_PINS - 1


GOOD = {"view": "laws", "label": "n = 64", "curves": [
    {"plot": 0, "x": [1.0, 2.0], "y": [1.0, None], "color": "#d55e00"}]}


@pytest.mark.parametrize("change, message", [
    ({"view": "nowhere"}, "pin view"),
    ({"label": 7}, "label"),
    ({"curves": []}, "1 to 200 curves"),
    ({"curves": [{"plot": -1, "x": [], "y": [], "color": "red"}]}, "plot"),
    ({"curves": [{"plot": 0, "x": [1], "y": [], "color": "red"}]}, "differ in length"),
    ({"curves": [{"plot": 0, "x": ["a"], "y": [1], "color": "red"}]}, "non-number"),
    ({"curves": [{"plot": 0, "x": [1], "y": [1], "color": "not a colour"}]}, "colour"),
])
def test_a_bad_pin_is_refused_with_its_reason(change, message, tmp_path):
    pin_from_dict(GOOD, VIEW_KEYS)  # the unchanged pin is fine
    with pytest.raises(ValueError, match=message):
        pin_from_dict({**GOOD, **change}, VIEW_KEYS)
    session = {"app": "attention-scale-explorer", "version": 1, "attention": {},
               "pins": [{**GOOD, **change}]}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(session), encoding="utf-8")
    with pytest.raises(SessionError, match="invalid pin"):
        load_session(path)


def test_training_curves_can_be_pinned_and_outlive_a_reset(make_window, qtbot):
    window = make_window()
    tab = window.train_tab
    assert window.show_view("train_curves")
    assert tab.start_training()
    assert tab.wait_until_idle(60_000)
    qtbot.waitUntil(lambda: len(_datasets(tab.curves)) > 0, timeout=HANG_MS)
    pin = window.pins.pin_current()
    assert pin is not None, window.status.text()
    assert pin.label.startswith("d_k = ")
    tab.panel.reset_button.click()  # the live curves go, the pinned ones stay
    assert len(_datasets(tab.curves)) == len(pin.curves)
