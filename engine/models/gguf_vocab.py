"""A GGUF file's own vocabulary rebuilt as a ``tokenizers`` tokenizer.

Two kinds of ``tokenizer.ggml.model``:

* ``gpt2``: byte-level BPE with the merges the file lists, split first by the regex of the
  pre-tokenizer ``tokenizer.ggml.pre`` names (llama.cpp's llama-vocab.cpp); a name this module
  does not know is refused, since the default split would give other tokens silently.
* ``llama``: SentencePiece BPE (Llama 2, Mistral v0.1-0.3, Gemma, Phi-3). The file lists
  pieces, scores and token types but no merges; the merges are recovered from the pieces and
  ordered by score as transformers' GGUF loader does, with byte fallback to ``<0xE6>`` pieces,
  the ``add_space_prefix`` of the file and BOS/EOS as it says.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engine.io.source import shown
from engine.models.token_text import byte_alphabet
from engine.models.weights import ModelError

__all__ = ["GGUF_PRE_TOKENIZERS", "GGUF_TOKENIZERS", "check_gguf_vocabulary",
           "gguf_backend"]

#: ``tokenizer.ggml.model`` values whose vocabulary this app can rebuild.
GGUF_TOKENIZERS = ("gpt2", "llama")

# llama.cpp's pre-tokenizer regexes (llm_tokenizer_bpe in llama-vocab.cpp).
_LLAMA3 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2 = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_TEKKEN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT4O = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# GPT-2's own regex, which the ``ByteLevel`` pre-tokenizer applies by itself.
_GPT2 = "gpt2"
# GPT-2's regex after each digit is split off.
_DIGITS = "digits"


@dataclasses.dataclass(frozen=True)
class _Pre:
    """How llama.cpp pre-tokenizes for one ``tokenizer.ggml.pre`` name."""

    split: str
    # A word that is a token is taken whole, merges or not (Llama 3's tokenizer.json says
    # "ignore_merges": true; llama.cpp sets it for these names).
    ignore_merges: bool = False
    # llama.cpp adds BOS for these names when the file does not say add_bos_token.
    bos: bool = False


# As llama.cpp's llama_vocab::impl::load groups the names and llm_tokenizer_bpe gives each
# group its regexes. Left out on purpose: names whose split is a chain of regexes or a custom
# one (falcon, deepseek-llm/-coder/-v3, bloom, viking, chameleon, kimi-k2, superbpe, ...).
_SPLITS: dict[str, _Pre] = {
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
                     "midm-2.0", "lfm2"), _Pre(_LLAMA3, ignore_merges=True, bos=True)),
    **dict.fromkeys(("dbrx", "smaug-bpe"), _Pre(_LLAMA3)),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"), _Pre(_QWEN2)),
    "tekken": _Pre(_TEKKEN, ignore_merges=True, bos=True),
    **dict.fromkeys(("gpt-4o", "llama4"), _Pre(_GPT4O)),
    # "default": llama.cpp splits punctuation runs and digit runs first; transformers' GGUF
    # loader (and this app's fixtures) take GPT-2's regex alone.
    **dict.fromkeys(("default", "gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion",
                     "exaone4"), _Pre(_GPT2)),
    **dict.fromkeys(("smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
                     "minerva-7b"), _Pre(_DIGITS)),
}
#: ``tokenizer.ggml.pre`` names of byte-level vocabularies this app splits as llama.cpp does.
GGUF_PRE_TOKENIZERS = tuple(_SPLITS)

# The special tokens a GGUF file names by id (``tokenizer.ggml.<key>_token_id``).
_GGUF_TOKEN_IDS = ("bos", "eos", "unknown", "separator", "padding", "cls", "mask", "eot", "eom")
# llama.cpp's token types (tokenizer.ggml.token_type).
_UNKNOWN, _CONTROL, _USER_DEFINED = 2, 3, 4
# SentencePiece's word-start mark, which stands for a space inside pieces.
_SPACE = "\u2581"


def _string_list(metadata: Mapping[str, Any], key: str, label: str) -> list[str] | None:
    values = metadata.get(f"tokenizer.ggml.{key}")
    if values is None:
        return None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ModelError(f"{label}: tokenizer.ggml.{key} must be a list of strings")
    return values


def check_gguf_vocabulary(metadata: Mapping[str, Any], label: str) -> tuple[list, list]:
    """The GGUF vocabulary's tokens and merges (none for SentencePiece files that list none),
    if this app can rebuild it (else :class:`ModelError`, one line naming the key)."""
    kind = metadata.get("tokenizer.ggml.model")
    if kind not in GGUF_TOKENIZERS:
        raise ModelError(f"{label}: the GGUF tokenizer {shown(repr(kind), 40)} "
                         "(tokenizer.ggml.model) is not supported; supported: gpt2 (byte-level "
                         "BPE), llama (SentencePiece)")
    tokens = _string_list(metadata, "tokens", label)
    merges = _string_list(metadata, "merges", label)
    if not tokens or (kind == "gpt2" and merges is None):
        raise ModelError(f"{label}: the GGUF metadata lacks the vocabulary"
                         + (" or its merges" if kind == "gpt2" else ""))
    types = metadata.get("tokenizer.ggml.token_type", [])
    if not isinstance(types, list) or not all(type(t) is int for t in types):
        raise ModelError(f"{label}: tokenizer.ggml.token_type must be a list of integers")
    if kind == "llama":
        _check_scores(metadata, len(tokens), label)
    pre = metadata.get("tokenizer.ggml.pre", "default")
    if not isinstance(pre, str):
        raise ModelError(f"{label}: tokenizer.ggml.pre must be a string (a pre-tokenizer's "
                         "name)")
    if kind == "gpt2" and pre not in _SPLITS:
        raise ModelError(f"{label}: the pre-tokenizer {shown(repr(pre), 40)} "
                         "(tokenizer.ggml.pre) is not supported; supported: "
                         f"{', '.join(GGUF_PRE_TOKENIZERS)}")
    for key in _GGUF_TOKEN_IDS:
        token = metadata.get(f"tokenizer.ggml.{key}_token_id")
        if token is not None and (type(token) is not int or not 0 <= token < len(tokens)):
            raise ModelError(f"{label}: tokenizer.ggml.{key}_token_id is "
                             f"{shown(repr(token), 40)}; a token id is 0..{len(tokens) - 1} "
                             "(the vocabulary's size less one)")
    for key in ("add_bos_token", "add_eos_token", "add_space_prefix"):
        flag = metadata.get(f"tokenizer.ggml.{key}")
        if flag is not None and not isinstance(flag, bool):
            raise ModelError(f"{label}: tokenizer.ggml.{key} is {shown(repr(flag), 40)}; "
                             "it must be true or false")
    return tokens, merges or []


def _check_scores(metadata: Mapping[str, Any], count: int, label: str) -> None:
    scores = metadata.get("tokenizer.ggml.scores")
    if (not isinstance(scores, list) or len(scores) != count
            or not all(isinstance(s, float | int) and not isinstance(s, bool) for s in scores)):
        raise ModelError(f"{label}: tokenizer.ggml.scores must list one number per token "
                         f"({count}) in a SentencePiece vocabulary")


def gguf_backend(metadata: Mapping[str, Any], label: str) -> Any:
    """The ``tokenizers.Tokenizer`` the GGUF metadata describes (raises :class:`ModelError`)."""
    tokens, merges = check_gguf_vocabulary(metadata, label)
    if metadata["tokenizer.ggml.model"] == "llama":
        return _sentencepiece(metadata, tokens, merges)
    return _byte_level(metadata, tokens, merges)


def _byte_level(metadata: Mapping[str, Any], tokens: list[str], merges: list[str]) -> Any:
    from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers
    from tokenizers import Tokenizer as Backend

    spell = byte_alphabet()
    alphabet = set(spell.values())
    vocab: dict[str, int] = {}
    for index, token in enumerate(tokens):
        if not set(token) <= alphabet:
            token = "".join(spell[b] for b in token.encode("utf-8"))
        vocab.setdefault(token, index)
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    pre = _SPLITS[metadata.get("tokenizer.ggml.pre", "default")]
    backend = Backend(models.BPE(vocab, pairs, fuse_unk=False, ignore_merges=pre.ignore_merges))
    split = pre.split
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if split == _GPT2:
        backend.pre_tokenizer = byte_level
    elif split == _DIGITS:
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True), byte_level])
    else:
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(split), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    backend.decoder = decoders.ByteLevel()
    types = metadata.get("tokenizer.ggml.token_type") or []
    # A control token spelled outside the byte alphabet is a converter's mislabel, and adding
    # it would grow the vocabulary past the model's (transformers skips it too).
    control = [AddedToken(t, special=True, normalized=False)
               for t, kind in zip(tokens, types, strict=False)
               if kind == _CONTROL and set(t) <= alphabet]
    if control:
        backend.add_special_tokens(control)
    _add_bos_eos(backend, metadata, tokens, default_bos=pre.bos)
    return backend


def score_merges(tokens: list[str], scores: list[float]) -> list[tuple[str, str]]:
    """The merges a SentencePiece vocabulary implies, best first, as transformers'
    ``generate_merges`` orders them: every split of a piece into two pieces of the vocabulary
    ranks by the piece's score (ties: longer left part, then longer right part first, then
    the order of the parts' ids)."""
    ids = {token: index for index, token in enumerate(tokens)}
    merges = []
    for piece, score in dict(zip(tokens, scores, strict=True)).items():
        local = [(piece[:i], piece[i:], score) for i in range(1, len(piece))
                 if piece[:i] in ids and piece[i:] in ids]
        local.sort(key=lambda m: (ids[m[0]], ids[m[1]]))
        merges.extend(local)
    # Stable sort, as in transformers: equal keys keep the order built above.
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(left, right) for left, right, _ in merges]


def _sentencepiece(metadata: Mapping[str, Any], tokens: list[str], merges: list[str]) -> Any:
    from tokenizers import AddedToken, decoders, models, normalizers, pre_tokenizers
    from tokenizers import Tokenizer as Backend

    architecture = metadata.get("general.architecture")
    scores = [float(s) for s in metadata["tokenizer.ggml.scores"]]
    if str(architecture).startswith("gemma"):
        # Gemma files spell runs of spaces as spaces, and its scores do not follow its merge
        # order while the pieces' order does (transformers' gemma_tokenizer).
        tokens = [_SPACE * len(t) if t and not t.strip(" ") else t for t in tokens]
        scores = [-float(index) for index in range(len(tokens))]
    # A later duplicate wins, as in llama.cpp's token_to_id and transformers' vocab.
    vocab = {token: index for index, token in enumerate(tokens)}
    pairs = ([tuple(m.split(" ", 1)) for m in merges] if merges
             else score_merges(tokens, scores))
    unknown = metadata.get("tokenizer.ggml.unknown_token_id")
    backend = Backend(models.BPE(vocab, pairs, unk_token=None if unknown is None
                                 else tokens[unknown], fuse_unk=True, byte_fallback=True))
    prefix = metadata.get("tokenizer.ggml.add_space_prefix", True)
    if architecture == "phi3" and prefix:
        # Phi-3's tokenizer.json prefixes a space even to a text that starts with one ("  hi"
        # is ▁▁▁hi; Metaspace gives ▁▁hi), as transformers' phi3_tokenizer rebuilds it.
        backend.normalizer = normalizers.Sequence([normalizers.Prepend(_SPACE),
                                                   normalizers.Replace(" ", _SPACE)])
    else:
        # "first": only the text's start gets the space, not the text after a special token.
        backend.pre_tokenizer = pre_tokenizers.Metaspace(
            replacement=_SPACE, prepend_scheme="first" if prefix else "never", split=False)
    # Each token's text keeps its space (" the"), as byte-level tokens show theirs.
    backend.decoder = decoders.Sequence([decoders.Replace(_SPACE, " "),
                                         decoders.ByteFallback(), decoders.Fuse()])
    types = metadata.get("tokenizer.ggml.token_type") or []
    # llama.cpp matches control, unknown and user-defined pieces whole in the text.
    special = [AddedToken(t, special=True, normalized=False)
               for t, kind in zip(tokens, types, strict=False) if kind in (_CONTROL, _UNKNOWN)]
    if special:
        backend.add_special_tokens(special)
    user = [AddedToken(t, special=False, normalized=False)
            for t, kind in zip(tokens, types, strict=False) if kind == _USER_DEFINED]
    if user:
        backend.add_tokens(user)
    # llama.cpp adds BOS to a SentencePiece vocabulary that does not say otherwise.
    _add_bos_eos(backend, metadata, tokens, default_bos=True)
    return backend


def _add_bos_eos(backend: Any, metadata: Mapping[str, Any], tokens: list[str],
                 default_bos: bool) -> None:
    from tokenizers import processors

    ends = {}
    for end, default in (("bos", default_bos), ("eos", False)):
        token = metadata.get(f"tokenizer.ggml.{end}_token_id")
        if metadata.get(f"tokenizer.ggml.add_{end}_token", default) and token is not None:
            ends[end] = (tokens[token], token)
    if not ends:
        return
    bos = [ends["bos"][0]] if "bos" in ends else []
    eos = [ends["eos"][0]] if "eos" in ends else []
    backend.post_processor = processors.TemplateProcessing(
        single=" ".join([*bos, "$A", *eos]), pair=" ".join([*bos, "$A", *eos, *bos, "$B", *eos]),
        special_tokens=sorted(set(ends.values()), key=lambda e: e[1]))
