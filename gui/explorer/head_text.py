"""How the explorer names a real head on screen (translated)."""

from __future__ import annotations

from typing import Any

from gui.kit.i18n import translate
from gui.kit.style import layer_name

__all__ = ["head_label"]

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
