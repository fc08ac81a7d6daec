"""The self-test's check of the shipped sample tensor file, through the window.

Opens ``resources/samples/trained_heads.npz`` with *Help › Open sample tensors*, waits for the
Heads tab to diagnose every head, picks the first flagged head (its replay under every rule and
the explorer's views of its real q and k follow), so that the wheel and the frozen bundle prove
they can read real tensor files (numpy's ``.npz`` reader, JSON meta, the sample itself) and run
the whole path a user takes.
"""

from __future__ import annotations

from typing import Any

__all__ = ["check_model_capture", "check_sample_tensors"]


def check_sample_tensors(window: Any, timeout_ms: int) -> tuple[list[str], str]:
    """Open the sample in ``window``'s Heads tab and show a flagged head in the explorer;
    return the report lines and the reason of a failure ("" when everything worked)."""
    from engine.config import ScalingRule

    view = window.heads.view
    window.menu_actions["open_sample"].trigger()
    if not view.wait_idle(timeout_ms):
        return [], "sample tensors: the Heads tab did not finish"
    tf = view.controller.tensor_file()
    if tf is None or tf.path.name != "trained_heads.npz":
        return [], f"sample tensors: not opened ({view.flagged_text()})"
    records = view.controller.records()
    flagged = [r for r in records if r.diagnostics.flags]
    line = (f"sample tensors {tf.path.name}: {len(records)} heads diagnosed "
            f"({len(tf.layers)} layers × {tf.heads}, n {tf.n}, d_k {tf.d_k}, batch {tf.batch}); "
            f"flagged {len(flagged)}: "
            + ("; ".join(f"{tf.layer_name(r.layer)}/{r.head}: {','.join(r.diagnostics.flags)}"
                         for r in flagged) or "none"))
    if len(records) != len(tf.layers) * tf.heads or not flagged:
        return [line], "sample tensors: expected every head diagnosed and one flagged"
    chosen = flagged[0]
    view.choose_head(chosen.layer, chosen.head)
    if not view.wait_idle(timeout_ms) or not window.wait_until_settled(timeout_ms):
        return [line], "sample tensors: the chosen head did not show in time"
    real = window.controller.results().real_head
    replayed = len(view.replays())
    if real is None or (real.ref.layer, real.ref.head) != (chosen.layer, chosen.head):
        return [line], "sample tensors: the explorer does not show the chosen head"
    if replayed != len(ScalingRule):
        return [line], f"sample tensors: {replayed} replayed rules, expected {len(ScalingRule)}"
    return [line, f"explorer shows {real.label}; replayed under {replayed} rules"], ""


def check_model_capture(window: Any, path: str, timeout_ms: int) -> tuple[list[str], str]:
    """Capture from the model at ``path`` through File › Open model… and diagnose its heads,
    so that the bundle proves it can tokenize, dequantize and run a real model file; return
    as :func:`check_sample_tensors` does."""
    from PySide6.QtCore import QDeadlineTimer
    from PySide6.QtWidgets import QApplication

    from gui.heads.capture_dialog import DEFAULT_TEXT

    view = window.heads.view
    dialog = window.heads.open_model(path)
    # The same capture on every machine, whatever the dialog remembers from the user's runs.
    dialog.set_values(text=DEFAULT_TEXT, max_tokens=128, layers="", keep_v=False)
    failed: list[str] = []
    view.controller.captureFailed.connect(failed.append)
    dialog.findChild(object, "capture_button").click()
    deadline = QDeadlineTimer(timeout_ms)
    while (view.controller.is_capturing() or dialog.isVisible()) and not failed \
            and not deadline.hasExpired():
        QApplication.processEvents()
        view.controller.thread().msleep(5)
    if failed:
        return [], f"model capture: {failed[0]}"
    if not view.wait_idle(max(int(deadline.remainingTime()), 1)):
        return [], "model capture: the Heads tab did not finish"
    tf = view.controller.tensor_file()
    if tf is None or tf.format != "memory":
        return [], f"model capture: not opened ({dialog.message()})"
    records = view.controller.records()
    flagged = sum(1 for r in records if r.diagnostics.flags)
    line = (f"model capture {tf.meta.get('model')} ({tf.meta.get('format')}, "
            f"{tf.meta.get('architecture')}): {len(tf.tokens or ())} tokens, {len(records)} "
            f"heads diagnosed, {flagged} flagged")
    if len(records) != len(tf.layers) * tf.heads:
        return [line], "model capture: expected every head diagnosed"
    # A chosen head fills the tab's maps (and so the exported heads.png), as a user would.
    chosen = next((r for r in records if r.diagnostics.flags), records[0])
    view.choose_head(chosen.layer, chosen.head)
    if not view.wait_idle(max(int(deadline.remainingTime()), 1)) \
            or not window.wait_until_settled(max(int(deadline.remainingTime()), 1)):
        return [line], "model capture: the chosen head did not show in time"
    real = window.controller.results().real_head
    if real is None or (real.ref.layer, real.ref.head) != (chosen.layer, chosen.head):
        return [line], "model capture: the explorer does not show the chosen head"
    return [line, f"explorer shows {real.label}"], ""
