"""The weights each forward pass reads, one row per family: their Hugging Face names, their
shapes in the config's terms, and which biases and norms the family's layers may hold.

A new forward family is a row here (with its block in engine.models.blocks); the GGUF
names are llama.cpp's, shared by every family a GGUF file holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["GGUF_LAYER", "GGUF_TOP", "HF_HEAD", "HF_MLM", "HF_MLM_TIED", "WEIGHT_ROWS", "WeightRow"]

Shapes = Mapping[str, tuple[str, ...]]

_BERT = {
    "embed": "embeddings.word_embeddings.weight", "pos": "embeddings.position_embeddings.weight",
    "type": "embeddings.token_type_embeddings.weight",
    "embed_norm.w": "embeddings.LayerNorm.weight", "embed_norm.b": "embeddings.LayerNorm.bias",
}
_BERT_LAYER = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "o": "attention.output.dense", "norm1": "attention.output.LayerNorm",
    "up": "intermediate.dense", "down": "output.dense", "norm2": "output.LayerNorm",
}
_GPT2 = {"embed": "wte.weight", "pos": "wpe.weight", "final_norm.w": "ln_f.weight",
         "final_norm.b": "ln_f.bias"}
_GPT2_LAYER = {"norm1": "ln_1", "qkv": "attn.c_attn", "o": "attn.c_proj", "norm2": "ln_2",
               "up": "mlp.c_fc", "down": "mlp.c_proj"}
_LLAMA = {"embed": "embed_tokens.weight", "final_norm.w": "norm.weight"}
_LLAMA_LAYER = {
    "norm1": "input_layernorm", "q": "self_attn.q_proj", "k": "self_attn.k_proj",
    "v": "self_attn.v_proj", "o": "self_attn.o_proj", "q_norm": "self_attn.q_norm",
    "k_norm": "self_attn.k_norm", "norm2": "post_attention_layernorm",
    "post_attn_norm": "post_attention_layernorm", "pre_ff_norm": "pre_feedforward_layernorm",
    "post_ff_norm": "post_feedforward_layernorm", "gate": "mlp.gate_proj", "up": "mlp.up_proj",
    "down": "mlp.down_proj", "qkv": "self_attn.qkv_proj", "gate_up": "mlp.gate_up_proj",
}
#: The language-model head's weights outside the model's prefix ("model.", "bert.", …), as
#: *ForCausalLM and BertForMaskedLM store them: the causal head, then BERT's MLM head.
HF_HEAD = "lm_head.weight"
HF_MLM = {"dense.w": "cls.predictions.transform.dense.weight",
          "dense.b": "cls.predictions.transform.dense.bias",
          "norm.w": "cls.predictions.transform.LayerNorm.weight",
          "norm.b": "cls.predictions.transform.LayerNorm.bias",
          "bias": "cls.predictions.bias"}
#: Copies of tied weights a BertForMaskedLM checkpoint may also hold (transformers ties them
#: to the word embeddings and to cls.predictions.bias).
HF_MLM_TIED = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")
#: llama.cpp's names of the weights outside the layers.
GGUF_TOP = {"embed": "token_embd.weight", "final_norm.w": "output_norm.weight",
            "head": "output.weight"}
# llama.cpp's names (gguf-py's tensor map): Gemma 2's norm before the MLP is ffn_norm, as
# the llama's second norm; its norms after attention and MLP have names of their own.
GGUF_LAYER = {
    "norm1": "attn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v", "o": "attn_output",
    "q_norm": "attn_q_norm", "k_norm": "attn_k_norm", "norm2": "ffn_norm",
    "post_attn_norm": "post_attention_norm", "pre_ff_norm": "ffn_norm",
    "post_ff_norm": "post_ffw_norm", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down",
    "qkv": "attn_qkv", "gate_up": "ffn_up",
}

# Shapes of the weights each forward pass reads (engine.models.forward), in the config's
# terms: h the width, q the query heads' width (heads × head width), kv the key heads', i the
# MLP's, d one head's; P a table of at least max_positions rows, V any rows.
_ROTARY_ATTENTION = {"norm1.w": ("h",), "q.w": ("q", "h"), "k.w": ("kv", "h"),
                     "v.w": ("kv", "h"), "o.w": ("h", "q")}
_GATED_MLP = {"gate.w": ("i", "h"), "up.w": ("i", "h"), "down.w": ("h", "i")}


@dataclass(frozen=True)
class WeightRow:
    """The weights of one forward family (see engine.models.loader for how they are checked)."""

    #: Short name -> Hugging Face name of the weights outside the layers.
    top: Mapping[str, str]
    #: Short name -> Hugging Face module inside each layer, and the layers' stem.
    layer: Mapping[str, str]
    stem: str
    #: The shapes of the weights the forward pass reads, outside and inside each layer.
    top_shapes: Shapes
    layer_shapes: Shapes
    #: Weights outside the layers read when present, checked only then (BERT's token types).
    optional_top: Shapes = field(default_factory=dict)
    #: Rotary families: q, k, v and o biases as the config asks, MLP biases refused.
    rotary: bool = False
    #: Whether a QK-norm is one weight per head width (OLMo 2's spans all heads and is in
    #: its layer_shapes already).
    head_qk_norm: bool = False


_TOP_ROTARY = {"embed": ("V", "h")}
WEIGHT_ROWS: Mapping[str, WeightRow] = {
    "bert": WeightRow(
        _BERT, _BERT_LAYER, "encoder.layer",
        {"embed": ("V", "h"), "pos": ("P", "h"), "embed_norm.w": ("h",),
         "embed_norm.b": ("h",)},
        {"q.w": ("q", "h"), "q.b": ("q",), "k.w": ("q", "h"), "k.b": ("q",),
         "v.w": ("q", "h"), "v.b": ("q",), "o.w": ("h", "q"), "o.b": ("h",),
         "norm1.w": ("h",), "norm1.b": ("h",), "up.w": ("i", "h"), "up.b": ("i",),
         "down.w": ("h", "i"), "down.b": ("h",), "norm2.w": ("h",), "norm2.b": ("h",)},
        optional_top={"type": ("V", "h")}),
    # GPT-2's Conv1D stores (in, out), the transpose of nn.Linear.
    "gpt2": WeightRow(
        _GPT2, _GPT2_LAYER, "h", {"embed": ("V", "h"), "pos": ("P", "h")},
        {"norm1.w": ("h",), "norm1.b": ("h",), "qkv.w": ("h", "3q"), "qkv.b": ("3q",),
         "o.w": ("q", "h"), "o.b": ("h",), "norm2.w": ("h",), "norm2.b": ("h",),
         "up.w": ("h", "i"), "up.b": ("i",), "down.w": ("i", "h"), "down.b": ("h",)}),
    "llama": WeightRow(
        _LLAMA, _LLAMA_LAYER, "layers", _TOP_ROTARY,
        {**_ROTARY_ATTENTION, "norm2.w": ("h",), **_GATED_MLP},
        rotary=True, head_qk_norm=True),
    "gemma2": WeightRow(
        _LLAMA, _LLAMA_LAYER, "layers", _TOP_ROTARY,
        {**_ROTARY_ATTENTION, "post_attn_norm.w": ("h",), "pre_ff_norm.w": ("h",),
         "post_ff_norm.w": ("h",), **_GATED_MLP},
        rotary=True, head_qk_norm=True),
    # OLMo 2: no norm before attention or the MLP; its QK-norm spans all heads.
    "olmo2": WeightRow(
        _LLAMA, _LLAMA_LAYER, "layers", _TOP_ROTARY,
        {**{k: v for k, v in _ROTARY_ATTENTION.items() if k != "norm1.w"},
         "post_attn_norm.w": ("h",), "post_ff_norm.w": ("h",), "q_norm.w": ("q",),
         "k_norm.w": ("kv",), **_GATED_MLP},
        rotary=True),
}
