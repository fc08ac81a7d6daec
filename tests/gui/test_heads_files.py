"""The Heads tab opens the files users already have (issue J, section 3), as a user sees it:
a stack of attention weights (no q and k) and a TransformerLens cache with grouped-query keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from engine.analysis.head_scan import iter_file_diagnostics
from engine.config import ScalingRule
from engine.io.tensors import load_tensors
from gui.heads.replay import DEFAULT_REPLAY_RULES
from tests.engine.test_head_faults import planted_file
from tests.gui.conftest import HANG_MS


def _open(window, path) -> None:
    window.heads.open_tensors(path)
    assert window.heads.view.wait_idle()


def _weights_file(tmp_path, causal: bool):
    """The planted heads as a (layers, batch, heads, n, n) float32 stack, as np.save writes
    Hugging Face's output_attentions."""
    qk = load_tensors(planted_file(tmp_path / "planted.npz", causal))
    stack = np.empty((len(qk.layers), qk.batch, qk.heads, qk.n, qk.n), np.float32)
    for index, layer in enumerate(qk.layers):
        for head in range(qk.heads):
            q, k = qk.qk(layer, head)
            z = qk.layer_scale(layer) * np.einsum("bid,bjd->bij", q, k)
            if causal:
                z = np.where(np.tri(qk.n, dtype=bool), z, -np.inf)
            e = np.exp(z - z.max(axis=-1, keepdims=True))
            stack[index, :, head] = e / e.sum(axis=-1, keepdims=True)
    path = tmp_path / "attentions.npy"
    np.save(path, stack)
    return qk, path


def _column(view, key: str) -> list[str]:
    model = view.table.model()
    column = model.sourceModel().column_keys().index(key)
    return [model.index(row, column).data() for row in range(model.rowCount())]


@pytest.mark.parametrize("causal", [False, True], ids=["bidirectional", "causal"])
def test_a_file_of_weights_is_diagnosed_and_says_what_needs_q_and_k(window, tmp_path, qtbot,
                                                                   causal) -> None:
    qk, path = _weights_file(tmp_path, causal)
    _open(window, path)
    view = window.heads.view
    label = view.status_text()
    assert "attentions.npy" in label and "attention weights only (no q and k)" in label
    assert ("causal" in label) and (("not causal" in label) != causal)
    # The same flags as the q-and-k file's, and words where weights give no number.
    expected = {(r.layer, r.head): r.diagnostics.flags for r in iter_file_diagnostics(qk)}
    got = {(r.layer, r.head): r.diagnostics.flags for r in view.controller.records()}
    assert got == expected
    assert set(_column(view, "logit_std")) == {"needs q and k"}
    assert set(_column(view, "rho")) == {"needs q and k"}
    assert all(text not in ("", "needs q and k") for text in _column(view, "p_max_mean"))
    # The replay: 1/√d_k is replayed exactly from the weights; QK-norm and none say why not.
    view.choose_head(1, 2)
    assert view.wait_idle()
    qtbot.wait(50)
    panel = view.replay.panel
    shown = {r.rule: r for r in panel.shown()}
    assert tuple(shown) == DEFAULT_REPLAY_RULES
    assert shown[ScalingRule.SQRT].weights.shape == (qk.n, qk.n)
    assert shown[ScalingRule.QK_NORM].weights is None
    titles = [item.text for item in view.replay.scene().items()
              if isinstance(item, pg.LabelItem) and item.isVisible()]
    assert any("QK-norm" in title and "needs q and k" in title for title in titles)
    assert any("none" in title and "needs d_k" in title for title in titles)
    # A click on a map does not open the explorer (it has no q and k): the tab says so.
    index = list(shown).index(ScalingRule.SQRT)
    point = view.replay.mapFromScene(panel.replay_rects()[index][1].center())
    QTest.mouseClick(view.replay.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert window.mode_tabs.currentWidget() is not window.explorer_page
    assert "explorer needs q and k" in view.flagged_text()
    assert window.controller.real_head() is None
    # A rule that needs q and k is refused with the file's name; the file stays.
    logits = view.controls.logits_rule
    logits.setCurrentIndex(logits.findText("QK-norm"))
    view.wait_idle()
    assert "attentions.npy: rule 'qk_norm' needs q and k" in view.flagged_text()
    assert "attentions.npy" in view.status_text()
    # The CSV export names the source of every row.
    header, rows = view.data_table()
    assert {row[header.index("source")] for row in rows} == {"weights"}


def test_a_transformer_lens_cache_opens_with_grouped_query_keys(window, tmp_path) -> None:
    rng = np.random.default_rng(4)
    cache = {"hook_embed": np.zeros((1, 20, 16), np.float32)}
    for layer in range(2):
        q = rng.standard_normal((1, 20, 4, 8)).astype(np.float32)
        k = rng.standard_normal((1, 20, 2, 8)).astype(np.float32)
        if layer == 1:
            q[:, :, 3] *= 12.0  # one head grown: sharp
        cache[f"blocks.{layer}.attn.hook_rot_q"] = q
        cache[f"blocks.{layer}.attn.hook_rot_k"] = k
        cache[f"blocks.{layer}.hook_resid_post"] = np.zeros((1, 20, 16), np.float32)
    path = tmp_path / "cache.npz"
    np.savez(path, **cache, meta=np.array(json.dumps({"model": "tiny-tl"})))
    _open(window, path)
    view = window.heads.view
    label = view.status_text()
    assert "TransformerLens cache" in label and "grouped-query: 2 key heads" in label
    assert "d_k = 8" in label and "causal" in label and "not causal" not in label
    flags = {(r.layer, r.head): r.diagnostics.flags for r in view.controller.records()}
    assert len(flags) == 8
    assert {"sharp", "saturated"} & set(flags[1, 3]) and not flags[0, 0]
    view.choose_head(1, 3)
    assert view.wait_idle()
    assert window.wait_until_settled(HANG_MS)
    real = window.controller.results().real_head
    assert (real.ref.layer, real.ref.head) == (1, 3)


@pytest.mark.parametrize(("name", "words"), [
    ("tl_cache_full.safetensors", ("TransformerLens cache", "grouped-query: 2 key heads")),
    ("hf_llama_attentions.npy", ("attention weights only (no q and k)",)),
])
def test_files_written_by_transformer_lens_and_transformers_open(window, name, words) -> None:
    """The fixtures that real TransformerLens and transformers code wrote
    (tests/fixtures/make_real_fixtures.py) open in the tab with the diagnosis inspect gives."""
    path = Path(__file__).resolve().parents[1] / "fixtures" / "real" / name
    _open(window, path)
    view = window.heads.view
    label = view.status_text()
    assert name in label and "causal" in label and "not causal" not in label
    assert all(word in label for word in words)
    got = {(r.layer, r.head): r.diagnostics for r in view.controller.records()}
    want = {(r.layer, r.head): r.diagnostics for r in iter_file_diagnostics(load_tensors(path))}
    assert got == want and len(got) == 8
    view.choose_head(1, 3)
    assert view.wait_idle()
    assert view.replay.panel.shown()
