"""How the explorer names a real head and its tokens on screen (translated, readable ticks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gui.kit.i18n import translate

__all__ = ["MAX_TICK_LABELS", "MAX_TOKEN_CHARS", "head_label", "short_token", "token_ticks"]

#: At most this many token labels per axis; longer sequences label every k-th token.
MAX_TICK_LABELS = 24
#: Tokens longer than this are cut (with "…") so that one long token cannot eat the axis.
MAX_TOKEN_CHARS = 12


def head_label(ref: Any, *, with_file: bool = True) -> str:
    """E.g. "model.npz · layer 3 · head 5" (+ " · batch 2" when the file has a batch) in the
    current language; ``ref`` is an ``engine.analysis.real_head.HeadRef``."""
    text = translate("RealHead", "layer {0} · head {1}").format(ref.layer, ref.head)
    name = ref.file.layer_name(ref.layer)
    if name != f"layer {ref.layer}":
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


def token_ticks(tokens: Sequence[str], offset: float = 0.5,
                max_labels: int = MAX_TICK_LABELS) -> list[tuple[float, str]]:
    """Axis ticks ``(position, label)`` for the token strings, every k-th one when many.

    Position ``i + offset`` (0.5: the centre of heatmap cell i; 0: a curve's sample i).
    """
    n = len(tokens)
    step = max(1, -(-n // max_labels))
    return [(i + offset, short_token(tokens[i])) for i in range(0, n, step)]
