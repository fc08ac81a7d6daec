"""Train tab › Inspect trained model: writes the trained q and k off the GUI thread, then says
where (``tensorsWritten``). The save dialog is replaced by a stub returning a chosen path."""

from __future__ import annotations

import multiprocessing
import os
import signal
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from engine.analysis.heads import diagnose_head
from engine.config.train import TrainConfig
from engine.io.tensors import load_tensors
from gui.kit.settings import open_settings
from gui.train import TrainTab
from gui.train import tab as tab_module
from gui.train.state import TrainState
from tests.gui.conftest import HANG_MS

SMALL = TrainConfig(rules=("none", "sqrt"), d_k=16, d_model=32, heads=2, n=8, vocab=16,
                    batch=32, steps=40, lr=0.01, eval_size=24)


@pytest.fixture
def tab(make_train_tab):
    return make_train_tab(SMALL)


class SaveDialog:
    """Stands in for QFileDialog.getSaveFileName: records what it offered, returns ``answer``."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.offered: list[str] = []

    def __call__(self, parent, caption, directory, filter_text):
        self.offered.append(directory)
        assert ".npz" in filter_text and caption
        return self.answer, filter_text


@pytest.fixture
def dialog(monkeypatch, tmp_path):
    stub = SaveDialog(str(tmp_path / "out" / "heads.npz"))
    monkeypatch.setattr(tab_module.QFileDialog, "getSaveFileName", stub)
    return stub


def _train(tab: TrainTab, config: TrainConfig = SMALL) -> None:
    tab.panel.set_config(config)
    assert tab.start_training()
    assert tab.wait_until_idle(30_000)


def test_button_writes_the_trained_heads_and_emits_the_path(tab, qtbot, dialog, tmp_path):
    button = tab.panel.inspect_button
    assert not button.isEnabled()  # nothing trained yet
    assert button.toolTip() and button.text()
    assert button.shortcut().toString(QKeySequence.SequenceFormat.PortableText) == "Ctrl+Shift+I"
    assert button.focusPolicy() != Qt.FocusPolicy.NoFocus  # reachable with Tab
    _train(tab)
    assert button.isEnabled()
    (tmp_path / "out").mkdir()
    with qtbot.waitSignal(tab.tensorsWritten, timeout=HANG_MS) as signal:
        button.click()
        # Written on the training thread: meanwhile nothing else may start.
        assert tab.controller.state() == TrainState.EXPORTING
        assert not button.isEnabled() and not tab.panel.start_button.isEnabled()
        assert not tab.panel.reset_button.isEnabled()
    path = Path(signal.args[0])
    assert path == tmp_path / "out" / "heads.npz"
    assert dialog.offered == [str(Path.home() / "trained_heads.npz")]
    assert tab.wait_until_idle(10_000) and button.isEnabled()

    tf = load_tensors(path)
    assert tf.layers == (0, 1) and [tf.layer_name(i) for i in tf.layers] == ["none", "sqrt"]
    assert tf.heads == 2 and tf.d_k == 16 and tf.n == SMALL.n + 1 and tf.batch == 16
    assert tf.layer_scale(0) == 1.0 and tf.layer_scale(1) == pytest.approx(0.25)
    assert tf.meta["config"] == SMALL.to_dict() and tf.meta["step"] == SMALL.steps
    assert "Train tab" in tf.meta["command"] and "python main.py train" in tf.meta["command"]
    for layer in tf.layers:
        for head in range(tf.heads):
            diag = diagnose_head(*tf.qk(layer, head), scale=tf.layer_scale(layer))
            assert diag.n == tf.n
    assert "heads.npz" in tab.panel.status_label.text()
    assert tab.panel.error_text() == ""
    # The folder is remembered: the next dialog offers it.
    assert open_settings().get("export/last_dir") == str(tmp_path / "out")
    dialog.answer = ""  # cancelled: nothing happens
    button.click()
    assert dialog.offered[-1] == str(tmp_path / "out" / "trained_heads.npz")
    assert tab.controller.state() == TrainState.IDLE


@pytest.mark.parametrize("name", ["heads.npz", "heads.safetensors"])
def test_unwritable_path_shows_a_message_and_keeps_the_run(tab, qtbot, dialog, tmp_path, name):
    _train(tab)
    snap = tab.controller.results().snapshot
    dialog.answer = str(tmp_path / "missing-folder" / name)
    written: list[str] = []
    tab.tensorsWritten.connect(written.append)
    with qtbot.waitSignal(tab.controller.errorOccurred, timeout=HANG_MS):
        tab.panel.inspect_button.click()
    assert tab.wait_until_idle(10_000)
    assert written == []
    # Both formats give the system's reason, not a serialiser's internals.
    message = tab.panel.error_text()
    assert f"Could not write {dialog.answer}: No such file or directory" in message
    assert tab.controller.results().snapshot is snap  # nothing lost
    assert tab.panel.inspect_button.isEnabled()
    # A name without a tensor suffix gets .npz; the retry works.
    with qtbot.waitSignal(tab.tensorsWritten, timeout=HANG_MS) as signal:
        assert tab.inspect_trained(tmp_path / "again")
    assert signal.args[0] == str(tmp_path / "again.npz") and load_tensors(signal.args[0])


def test_a_training_process_that_died_is_reported_when_inspecting(tab, qtbot, dialog):
    # The trained model lives in the training process: killed after the run (by the system,
    # say), there is nothing to write, and the message says so instead of naming a bug.
    _train(tab)
    (child,) = [p for p in multiprocessing.active_children() if p.name == "attention-training"]
    os.kill(child.pid, signal.SIGKILL)
    child.join(5)
    with qtbot.waitSignal(tab.controller.errorOccurred, timeout=HANG_MS):
        tab.panel.inspect_button.click()
    assert tab.wait_until_idle(10_000)
    assert "no trained model" in tab.panel.error_text()
    _train(tab)  # a new process trains the next run
    assert tab.controller.results().snapshot.step == SMALL.steps


def test_a_stopped_run_can_be_inspected_reset_disables(tab, qtbot, dialog, tmp_path):
    tab.panel.set_config(SMALL.replace(steps=100_000, rules=("sqrt", "qk_norm")))
    assert tab.start_training()
    qtbot.waitUntil(lambda: tab.controller.has_trained_model(), timeout=HANG_MS)
    assert not tab.panel.inspect_button.isEnabled()  # training runs
    tab.controller.stop()
    assert tab.wait_until_idle(30_000)
    assert tab.panel.inspect_button.isEnabled()
    with qtbot.waitSignal(tab.tensorsWritten, timeout=HANG_MS) as signal:
        assert tab.inspect_trained(tmp_path / "stopped.npz")
    tf = load_tensors(signal.args[0])
    assert [tf.layer_name(i) for i in tf.layers] == ["sqrt", "qk_norm"]
    steps = [tf.meta["layers"][str(i)]["steps"] for i in tf.layers]
    assert all(step >= tab.controller.results().snapshot.step for step in steps)
    tab.panel.reset_button.click()
    assert not tab.panel.inspect_button.isEnabled()
    assert not tab.inspect_trained(tmp_path / "after-reset.npz")
    assert not (tmp_path / "after-reset.npz").exists()
