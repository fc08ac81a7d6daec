"""How the explorer names a real head and its tokens on screen (translated, readable ticks)."""

from __future__ import annotations

from typing import Any

from gui.kit.i18n import translate
from gui.kit.style import layer_name

__all__ = ["MAX_TOKEN_CHARS", "head_label", "short_token"]

#: Tokens longer than this are cut (with "…") so that one long token cannot eat the axis.
MAX_TOKEN_CHARS = 12


def head_label(ref: Any, *, with_file: bool = True) -> str:
    """E.g. "model.npz · layer 3 · head 5" (+ " · batch 2" when the file has a batch) in the
    current language; ``ref`` is an ``engine.analysis.real_head.HeadRef``."""
    text = translate("RealHead", "layer {0} · head {1}").format(ref.layer, ref.head)
    name = layer_name(ref.file, ref.layer)
    if name != layer_name(None, ref.layer):
        text = translate("RealHead", "layer {0} ({1}) · head {2}").format(
            ref.layer, name, ref.head)
    if ref.file.batch > 1:
        text += " · " + translate("RealHead", "batch {0}").format(ref.batch_entry)
    return f"{ref.file.path.name} · {text}" if with_file else text


def short_token(token: str) -> str:
    """``token`` made printable on an axis: whitespace shown, cut to MAX_TOKEN_CHARS."""
    shown = token.replace("\n", "↵").replace("\t", "⇥")
    if not shown.strip():
        shown = "␣" * max(len(shown), 1)
    return shown if len(shown) <= MAX_TOKEN_CHARS else shown[:MAX_TOKEN_CHARS - 1] + "…"
