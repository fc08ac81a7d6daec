"""The Heads tab on its own: a constructed file's heads in the grid, the table and the replay.

Files are written in code with planted heads: layer 1 head 2 has queries 12× larger (its rows
saturate), layer 0 head 1 has every key aligned with the first one (a sink on token 0).
Assertions compare what the tab shows with the engine's own diagnostics of the same heads.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from engine.analysis.head_scan import every_rule, iter_file_diagnostics, replay_head
from engine.config import ScalingRule
from engine.core.scaling import Rule
from engine.io.tensors import load_tensors, write_tensors
from gui.heads.metrics import metric_by_key, ratio_text
from gui.heads.replay import DEFAULT_REPLAY_RULES
from gui.heads.view import HeadsView
from tests.gui.conftest import HANG_MS

RNG_SEED = 20261201
LAYERS, HEADS, BATCH, N, D_K = 2, 3, 2, 24, 16


def planted_file(path, *, n=N, heads=HEADS, layers=LAYERS, dtype=np.float32):
    rng = np.random.default_rng(RNG_SEED)
    arrays = {}
    for layer in range(layers):
        q = rng.standard_normal((BATCH, heads, n, D_K))
        k = rng.standard_normal((BATCH, heads, n, D_K))
        if layer == 1 and heads > 2:
            q[:, 2] *= 12.0  # saturated head
        if layer == 0 and heads > 1:
            k[:, 1, 0] = 4.0 * q[:, 1].mean(axis=1)  # every query points at key 0: a sink
            q[:, 1] += 2.0 * k[:, 1, :1] / np.linalg.norm(k[:, 1, :1], axis=-1, keepdims=True)
        arrays[f"layer{layer}.q"] = q.astype(dtype)
        arrays[f"layer{layer}.k"] = k.astype(dtype)
    tokens = [f"tok{i}" for i in range(n)]
    return write_tensors(path, arrays, tokens=tokens, meta={"model": "planted", "causal": True})


@pytest.fixture
def view(qtbot):
    widget = HeadsView()
    qtbot.addWidget(widget)
    widget.resize(1200, 760)
    widget.show()
    yield widget
    widget.controller.shutdown(5000)


def _open(view, path):
    view.open_file(path)
    assert view.wait_idle(30_000)


def _column(view, key):
    return view.table.model().sourceModel().column_keys().index(key)


def test_grid_table_and_flags_show_the_engines_diagnostics(view, tmp_path) -> None:
    path = planted_file(tmp_path / "planted.npz")
    _open(view, path)
    expected = list(iter_file_diagnostics(load_tensors(path)))
    metric = metric_by_key("p_max_mean")
    colour_by = view.controls.colour_by
    colour_by.setCurrentIndex(colour_by.findText(metric.text()))  # the user picks "mean p_max"
    view.wait_idle()
    values = view.grid.grid_values()
    assert values.shape == (LAYERS, HEADS)
    for record in expected:
        assert values[record.layer, record.head] == metric.value(record.diagnostics)
    assert view.table.model().rowCount() == LAYERS * HEADS
    flagged = {(r.layer, r.head): r.diagnostics.flags for r in expected if r.diagnostics.flags}
    assert "saturated" in flagged[(1, 2)]
    assert "L1 H2 (saturated" in view.flagged_text()
    markers = {(int(x), int(y)): text for x, y, text in view.grid.marker_texts()}
    assert markers[(2, 1)].startswith("S") and len(markers) == len(flagged)
    assert "planted.npz" in view.status_text() and "n = 24" in view.status_text()


def test_sorting_the_table_by_p_max_puts_the_saturated_head_first(view, tmp_path) -> None:
    _open(view, planted_file(tmp_path / "planted.npz"))
    column = _column(view, "p_max_mean")
    view.table.sortByColumn(column, Qt.SortOrder.DescendingOrder)
    model = view.table.model()
    assert (model.index(0, _column(view, "layer")).data(),
            model.index(0, _column(view, "head")).data()) == ("1", "2")
    assert model.index(0, 0).data() == "saturated"  # the flags come first
    values = [float(model.index(row, column).data()) for row in range(model.rowCount())]
    assert values == sorted(values, reverse=True)


def test_clicking_a_head_replays_every_rule_on_its_real_q_and_k(view, tmp_path, qtbot) -> None:
    path = planted_file(tmp_path / "planted.npz")
    _open(view, path)
    view.set_replay_rules(tuple(ScalingRule))
    view.controls.batch.setValue(1)
    with qtbot.waitSignal(view.headChosen) as chosen:
        view.choose_head(1, 2)
    assert chosen.args == [1, 2, 1]
    view.wait_idle()
    q, k = load_tensors(path).qk(1, 2)
    expected = replay_head(q, k, causal=True, batch_entry=1,
                           rules=every_rule(Rule("sqrt", temperature=8.0, cap=50.0)))
    images = view.replay.panel.replay_images()
    assert len(images) == len(ScalingRule)
    for image, replay in zip(images, expected, strict=True):
        np.testing.assert_array_equal(image.image, replay.weights)
    header, rows = view.data_table()
    replay_rows = [row for row in rows if row[1] == "replay"]
    assert [row[header.index("rule")] for row in replay_rows] == [r.value for r in ScalingRule]
    assert {row[header.index("batch_entry")] for row in replay_rows} == {1}
    selected = [row for row in rows if row[1] == "heads" and row[-1] == 1]
    assert [(row[header.index("layer")], row[header.index("head")]) for row in selected] == [
        (1, 2)]
    chosen_row = view.table.selectionModel().selectedRows(_column(view, "layer"))[0]
    assert chosen_row.data() == "1"


def test_a_replayed_rule_rediagnoses_every_head(view, tmp_path) -> None:
    path = planted_file(tmp_path / "planted.npz")
    _open(view, path)
    logits = view.controls.logits_rule
    logits.setCurrentIndex(logits.findText("QK-norm"))
    assert view.wait_idle()
    header, rows = view.data_table()
    expected = list(iter_file_diagnostics(load_tensors(path),
                                          rule=Rule("qk_norm", temperature=8.0, cap=50.0)))
    assert [row[header.index("rule")] for row in rows] == ["qk_norm"] * len(expected)
    for row, record in zip(rows, expected, strict=True):
        assert float(row[header.index("entropy_mean")]) == record.diagnostics.entropy_mean


def test_a_bad_file_is_reported_and_the_file_shown_stays(view, tmp_path, qtbot) -> None:
    _open(view, planted_file(tmp_path / "planted.npz"))
    shown = view.status_text()
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    with qtbot.waitSignal(view.controller.errorOccurred) as error:
        view.open_file(broken)
    assert "broken.npz" in error.args[0]
    view.wait_idle()
    assert view.status_text() == shown
    assert view.table.model().rowCount() == LAYERS * HEADS


def test_cancel_stops_the_scan_and_keeps_what_arrived(view, tmp_path, qtbot) -> None:
    path = planted_file(tmp_path / "big.npz", n=384, heads=12, layers=6)
    view.open_file(path)
    qtbot.waitUntil(lambda: len(view.controller.records()) > 0, timeout=HANG_MS)
    assert view.controls.cancel.isVisible()
    view.controls.cancel.click()
    assert view.wait_idle()
    done = len(view.controller.records())
    assert 0 < done < 6 * 12
    values = view.grid.grid_values()
    assert np.isfinite(values).sum() == done and np.isnan(values).sum() == 6 * 12 - done


@pytest.mark.parametrize(("size", "rules"), [((1200, 760), 9), ((700, 900), 9),
                                             ((900, 560), 4), ((1000, 500), 4)])
def test_replay_titles_never_cover_an_image_or_each_other(view, tmp_path, qtbot,
                                                          size, rules) -> None:
    """Nine maps wide or tall, the four default ones short: no title covers an image or
    another title, no two images overlap, and every map stays inside the replay widget."""
    _open(view, planted_file(tmp_path / "planted.npz"))
    view.set_replay_rules(tuple(ScalingRule)[:rules] if rules == 9 else DEFAULT_REPLAY_RULES)
    view.choose_head(1, 2)
    view.wait_idle()
    view.resize(*size)
    qtbot.wait(100)  # the layouts settle on posted events
    rects = view.replay.panel.replay_rects()
    assert len(rects) == rules
    area = view.replay.sceneRect().adjusted(-0.5, -0.5, 0.5, 0.5)
    for index, (title, image) in enumerate(rects):
        assert title.bottom() <= image.top() + 1.0  # above its image
        assert image.width() >= 20.0  # the weights stay readable
        assert area.contains(image) and area.contains(title)
        for other, (other_title, other_image) in enumerate(rects):
            assert not title.intersects(other_image)
            if other != index:
                assert not title.intersects(other_title)
                assert not image.intersects(other_image)


def test_the_tab_shows_a_replays_maps_one_per_event_and_all_by_idle(view, tmp_path,
                                                                   qtbot) -> None:
    path = planted_file(tmp_path / "planted.npz")
    _open(view, path)
    panel = view.replay.panel
    with qtbot.waitSignal(view.controller.replayReady, timeout=HANG_MS):
        view.choose_head(1, 2)
    # Right after the replay arrives the first map is drawn and the others are still hidden.
    visible = [image.parentItem() is not None and image.isVisible()
               for image in panel.replay_images()]
    assert panel.is_filling() and visible[0] and not all(visible)
    assert view.wait_idle()
    q, k = load_tensors(path).qk(1, 2)
    rules = every_rule(Rule("sqrt", temperature=8.0, cap=50.0))
    expected = {r.rule: r for r in replay_head(q, k, causal=True, rules=rules)}
    assert not panel.is_filling()
    for image, replay in zip(panel.replay_images(), panel.shown(), strict=True):
        assert image.isVisible()
        np.testing.assert_array_equal(image.image, expected[replay.rule].weights)


def test_ratios_read_as_numbers_and_flags_fit_their_column(view, tmp_path) -> None:
    path = planted_file(tmp_path / "planted.npz")
    tf = load_tensors(path)
    records = tuple(iter_file_diagnostics(tf))
    # A head that arrives after the columns were sized, with more flags than any before it
    # and a share the float says is 1.655e-38.
    late = records[-1]
    tiny = dataclasses.replace(late.diagnostics, flags=("saturated", "sharp", "sink"),
                               sink_mass=1.655e-38)
    table = view.table
    table.show_records(tf, records[:-1])
    table.show_records(tf, (*records[:-1], dataclasses.replace(late, diagnostics=tiny)))
    model = table.model()
    source = model.sourceModel()
    row = model.mapFromSource(source.index(source.rowCount() - 1, 0)).row()
    flags = model.index(row, 0)
    assert flags.data() == "saturated, sharp, sink"
    assert flags.data(Qt.ItemDataRole.ToolTipRole) == flags.data()
    assert table.fontMetrics().horizontalAdvance(flags.data()) < table.columnWidth(0)
    assert model.index(row, _column(view, "sink_mass")).data() == "< 0.001"
    for key in ("entropy_fraction", "p_max_mean", "saturated_share", "rho"):
        for r in range(model.rowCount()):
            text = model.index(r, _column(view, key)).data()
            assert "e" not in text and len(text.split(".")[-1]) == 3, (key, text)


def test_ratio_text() -> None:
    assert ratio_text(1.655e-38) == "< 0.001"
    assert ratio_text(-2e-9) == "> −0.001"
    assert ratio_text(0.0) == "0.000"
    assert ratio_text(0.42) == "0.420"
    assert ratio_text(-0.5) == "−0.500"
    assert ratio_text(0.0006) == "0.001"


def test_a_windowed_models_heads_show_each_layers_own_mask(view, tmp_path, qtbot) -> None:
    """Gemma 2 with a window of 4 keys: the tab says which layers slide, its grid shows the
    entropy ratio over the keys each row sees, and the maps of a sliding layer are 0 behind
    the window."""
    from engine.models import open_model

    folder = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "tiny-gemma2-sw"
    capture = open_model(folder).capture("The quick brown fox jumps over the lazy dog today.")
    path = capture.save(tmp_path / "gemma.npz")
    _open(view, path)
    assert "sliding window of 4 keys on layers 0, 2" in view.status_text()
    tf = load_tensors(path)
    metric = metric_by_key("entropy_fraction")
    colour_by = view.controls.colour_by
    colour_by.setCurrentIndex(colour_by.findText(metric.text()))
    view.wait_idle()
    values = view.grid.grid_values()
    # The uniform reference of row i: ln min(i + 1, 4) keys on a sliding layer, ln(i + 1) on
    # the full one.
    for layer, seen in ((0, 4), (1, tf.n), (2, 4)):
        uniform = np.log(np.minimum(np.arange(1, tf.n + 1), seen)).mean()
        for record in iter_file_diagnostics(tf):
            if record.layer == layer:
                assert values[layer, record.head] == pytest.approx(
                    record.diagnostics.entropy_mean / uniform, rel=1e-12)
    view.set_replay_rules(tuple(ScalingRule))
    view.choose_head(2, 1)
    view.wait_idle()
    behind = np.tri(tf.n, k=-4, dtype=bool)
    images = view.replay.panel.replay_images()
    assert len(images) == len(ScalingRule)
    for image in images:
        assert not image.image[behind].any() and image.image[~behind].any()
