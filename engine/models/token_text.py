"""The text shown for each token: what it decodes to, or its bytes where it holds part of a
character.

Byte-level BPE (GPT-2, Llama 3, SmolLM2, Qwen) and SentencePiece's byte fallback split a
character outside their vocabulary into its UTF-8 bytes, one or two per token: 猫 (e7 8c ab)
may be the two tokens e7 8c | ab. Decoded on its own, each such token is U+FFFD "�", so a
Chinese text's attention maps had an axis of identical labels. Each token's own bytes are
known (its vocabulary entry spells them), and the bytes that do not form a whole character
are written as ``⟨e7 8c⟩``: every token keeps its own label, one per id.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

__all__ = ["byte_alphabet", "piece_bytes", "readable_bytes"]

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
# surrogateescape decodes each byte that is not part of a whole character to U+DC80 + byte.
_ESCAPED = re.compile("[\udc80-\udcff]+")


@functools.lru_cache(maxsize=1)
def byte_alphabet() -> Mapping[int, str]:
    """GPT-2's printable stand-ins for the 256 byte values, as byte-level BPE vocabularies
    spell their tokens (``Ġ`` is the space, 0x20)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@functools.lru_cache(maxsize=1)
def _byte_of() -> Mapping[str, int]:
    return {char: b for b, char in byte_alphabet().items()}


def piece_bytes(piece: str | None) -> bytes | None:
    """The bytes a vocabulary entry stands for, or None when it spells none.

    ``<0xE6>`` is SentencePiece's byte-fallback token for the byte 0xE6; a piece written in
    GPT-2's byte alphabet (``æ³``) stands for one byte per character.
    """
    if not piece:
        return None
    match = _BYTE_PIECE.fullmatch(piece)
    if match is not None:
        return bytes([int(match[1], 16)])
    byte_of = _byte_of()
    if all(char in byte_of for char in piece):
        return bytes(byte_of[char] for char in piece)
    return None


def readable_bytes(raw: bytes) -> str:
    """``raw`` decoded as UTF-8, each run of bytes that form no whole character written as
    ``⟨e6 b3⟩`` (``b" \\xe6"`` → ``" ⟨e6⟩"``)."""
    text = raw.decode("utf-8", errors="surrogateescape")
    return _ESCAPED.sub(
        lambda run: "⟨" + " ".join(f"{ord(c) - 0xDC00:02x}" for c in run[0]) + "⟩", text)
