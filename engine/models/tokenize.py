"""The model's own tokenizer: ``tokenizer.json`` of a Hugging Face folder, or the vocabulary
in a GGUF file's metadata, both run by the ``tokenizers`` library."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.io.readers import shown
from engine.models.weights import ModelError

__all__ = ["GGUF_TOKENIZERS", "Tokenizer", "gguf_tokenizer", "hf_tokenizer"]

#: ``tokenizer.ggml.model`` values whose vocabulary this app can rebuild.
GGUF_TOKENIZERS = ("gpt2",)

# llama.cpp's pre-tokenizer regexes (``tokenizer.ggml.pre``), as in its llama-vocab.cpp.
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_SPLITS = {"llama3": _LLAMA3_SPLIT, "llama-bpe": _LLAMA3_SPLIT, "qwen2": _QWEN2_SPLIT}
# Byte-level vocabularies whose pre-tokenizer is GPT-2's, with digits split one by one first.
_DIGITS_FIRST = ("smollm", "starcoder", "refact")


class Tokenizer:
    """Text → token ids and the token strings shown on the axes."""

    def __init__(self, backend: Any, source: str) -> None:
        self._backend = backend
        #: Where the tokenizer came from: "tokenizer.json" or "GGUF vocabulary".
        self.source = source

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` with the special tokens the model adds by default."""
        return list(self._backend.encode(text, add_special_tokens=True).ids)

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        """Each id decoded on its own, special tokens kept (``[CLS]``, ``<|im_start|>``)."""
        return [self._backend.decode([int(i)], skip_special_tokens=False) for i in ids]


def hf_tokenizer(folder: Path) -> Tokenizer:
    """The ``tokenizer.json`` of a Hugging Face model folder."""
    from tokenizers import Tokenizer as Backend

    path = folder / "tokenizer.json"
    if not path.is_file():
        raise ModelError(f"{shown(folder.name)}: no tokenizer.json in the folder (the model's "
                         "fast tokenizer, which the app runs to turn a text into tokens)")
    try:
        backend = Backend.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own Exception subclass
        raise ModelError(f"{shown(folder.name)}: tokenizer.json cannot be read: "
                         f"{str(exc)[:200]}") from exc
    # Saved with padding to a fixed length, or truncation (sentence-transformers' MiniLM
    # pads to 128): the capture wants the text's own tokens; max tokens cuts it.
    backend.no_padding()
    backend.no_truncation()
    return Tokenizer(backend, "tokenizer.json")


@functools.lru_cache(maxsize=1)
def _byte_alphabet() -> Mapping[int, str]:
    # GPT-2's printable stand-ins for the 256 byte values.
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


def gguf_tokenizer(metadata: Mapping[str, Any], label: str) -> Tokenizer:
    """Rebuild a GGUF file's byte-level BPE vocabulary (``tokenizer.ggml.model`` ``gpt2``)."""
    from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers, processors
    from tokenizers import Tokenizer as Backend

    kind = metadata.get("tokenizer.ggml.model")
    if kind not in GGUF_TOKENIZERS:
        raise ModelError(f"{label}: the GGUF tokenizer {kind!r} is not supported; supported: "
                         f"{', '.join(GGUF_TOKENIZERS)} (byte-level BPE)")
    tokens = metadata.get("tokenizer.ggml.tokens")
    merges = metadata.get("tokenizer.ggml.merges")
    if not isinstance(tokens, list) or not isinstance(merges, list):
        raise ModelError(f"{label}: the GGUF metadata lacks the vocabulary or its merges")
    alphabet = set(_byte_alphabet().values())
    spell = _byte_alphabet()
    vocab = {}
    for index, token in enumerate(tokens):
        if not set(token) <= alphabet:
            token = "".join(spell[b] for b in token.encode("utf-8"))
        vocab.setdefault(token, index)
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    backend = Backend(models.BPE(vocab, pairs, fuse_unk=False))
    pre = metadata.get("tokenizer.ggml.pre", "default")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre in _SPLITS:
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(_SPLITS[pre]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    elif pre in _DIGITS_FIRST:
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        backend.pre_tokenizer = byte_level
    backend.decoder = decoders.ByteLevel()
    types = metadata.get("tokenizer.ggml.token_type") or []
    control = [AddedToken(t, special=True, normalized=False)
               for t, kind_of in zip(tokens, types, strict=False) if kind_of == 3
               and set(t) <= alphabet]
    if control:
        backend.add_special_tokens(control)
    bos = metadata.get("tokenizer.ggml.bos_token_id")
    if metadata.get("tokenizer.ggml.add_bos_token") and isinstance(bos, int) and bos < len(tokens):
        name = tokens[bos]
        backend.post_processor = processors.TemplateProcessing(
            single=f"{name} $A", pair=f"{name} $A {name} $B", special_tokens=[(name, bos)])
    return Tokenizer(backend, "GGUF vocabulary")
