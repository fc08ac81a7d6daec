"""What each of the newer Hugging Face families adds to the llama forward pass, and which of its
config keys this app reads, which it knows not to matter and which it refuses.

transformers keeps one modeling file per architecture; the differences of OLMo 2, Granite and
Gemma 3 from Llama (as their ``modeling_*.py`` compute them, eager attention) are few enough to
be settings of the shared passes in :mod:`engine.models.forward`:

* OLMo 2 (``olmo2``): q and k are RMS-normed over all heads at once (weights of width
  heads × head width) before they are split into heads; no norm before attention or the MLP,
  one after each, before its residual sum.
* Granite (``granite``): the logits are scaled by ``attention_multiplier`` instead of 1/√d,
  the embeddings multiplied by ``embedding_multiplier`` and each residual branch by
  ``residual_multiplier``; ``logits_scaling`` divides the LM head's logits, after what this
  app captures (recorded for the LM head to come).
* Gemma 3's text model (``gemma3_text``, or ``gemma3`` with a ``text_config``): Gemma 2's
  pass with its norms' weights + 1, plus QK-norm per head, sliding layers (``layer_types`` or
  every layer but each ``sliding_window_pattern``-th) and a RoPE base of their own
  (``rope_local_base_freq``, or ``rope_parameters.sliding_attention``). Its attention does
  not soft-cap (transformers 5 passes no ``softcap`` to it), so ``attn_logit_softcapping``
  does not matter.
* Phi-3 / Phi-3.5 / Phi-4 mini (``phi3``): q, k and v in one ``qkv_proj`` (split by heads and
  key heads), the MLP's gate and up in one ``gate_up_proj`` (gate first), partial rotary and
  LongRoPE (:mod:`engine.models.rope`), a window on every layer when ``sliding_window`` is set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from engine.models.rope import rope_of
from engine.models.values import Values
from engine.models.weights import ModelError

__all__ = ["ARCHITECTURE_ROWS", "COMMON_IGNORED", "COMMON_REFUSED", "IGNORED_KEYS",
           "MODELLED_KEYS", "REFUSED_KEYS", "Architecture", "check_config_keys",
           "family_settings", "text_config"]


#: rope_theta and scaling of the full-attention layers, then of the sliding layers where they
#: differ (None and {} where they do not).
RopeReading = tuple[float, dict[str, Any], float | None, dict[str, Any]]
RopeReader = Callable[[Values, int], RopeReading]
#: Gemma 3's RoPE bases when the config gives none (Gemma3TextConfig.default_theta).
GEMMA3_THETA = {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}


def _rope(values: Values, head_dim: int, longrope: bool = False) -> RopeReading:
    theta, rope = rope_of(values, longrope=longrope, head_dim=head_dim)
    return theta, rope, None, {}


_phi3_rope = partial(_rope, longrope=True)


def _gemma3_rope(values: Values, head_dim: int) -> RopeReading:
    # Gemma 3's sliding layers turn q and k by a base of their own.
    theta, rope = rope_of(values, default_theta=GEMMA3_THETA["full_attention"])
    local_theta, local_rope = rope_of(values, "sliding_attention", "rope_local_base_freq",
                                      GEMMA3_THETA["sliding_attention"])
    return theta, rope, local_theta, local_rope


@dataclass(frozen=True)
class Architecture:
    """One Hugging Face ``model_type``: the forward pass that runs it (a row of
    ``engine.models.blocks.BLOCKS``) and its settings of that pass.

    ``qk_norm``: q and k are RMS-normed (per head; OLMo 2's pass over all heads);
    ``fused``: q, k, v in one matrix and the MLP's gate and up in another (Phi-3);
    ``mlp_bias``: the config's ``mlp_bias`` is read, and refused when true (the other
    families' MLPs have no biases whatever it says); ``attention_bias``: the config's
    ``attention_bias`` is read (Phi-3's fused projection has none); ``causal``: a token sees
    no later one (all but BERT); ``rope``: reads the rotary settings (None: no rotary
    embedding, BERT and GPT-2); ``activation``: the MLP's activation when ``activation_keys``
    give none; ``embed_sqrt_width``: the embeddings are multiplied by √width (Gemma);
    ``qkv_bias``: q, k and v always have biases, o may (Qwen2); ``partial_rotary``: a GGUF
    file may turn part of each head (Phi-3); ``uniform_window``: a GGUF file's
    ``attention.sliding_window`` is every layer's (Phi-3); ``longrope``: a GGUF file may hold
    LongRoPE's factors and attention factor (Phi-3); ``tied_head``: the config class's default
    ``tie_word_embeddings`` (the LM head is the embedding matrix).
    """

    family: str
    causal: bool = True
    qk_norm: bool = False
    fused: bool = False
    mlp_bias: bool = False
    attention_bias: bool = False
    rope: RopeReader | None = _rope
    activation: str = "silu"
    activation_keys: tuple[str, ...] = ("hidden_activation", "hidden_act",
                                        "activation_function")
    embed_sqrt_width: bool = False
    qkv_bias: bool = False
    partial_rotary: bool = False
    uniform_window: bool = False
    longrope: bool = False
    tied_head: bool = False


_LLAMA = Architecture("llama", mlp_bias=True, attention_bias=True)
#: Gemma's MLP reads hidden_activation only (transformers ignores hidden_act there).
_GEMMA: dict[str, Any] = {"activation": "gelu_pytorch_tanh",
                          "activation_keys": ("hidden_activation",), "embed_sqrt_width": True,
                          "tied_head": True}
_GEMMA3 = Architecture("gemma2", qk_norm=True, attention_bias=True, rope=_gemma3_rope,
                       **_GEMMA)
#: Every Hugging Face ``model_type`` this app runs (``gemma3`` is read as its text model).
ARCHITECTURE_ROWS: Mapping[str, Architecture] = {
    "bert": Architecture("bert", causal=False, rope=None, activation="gelu", tied_head=True),
    "gpt2": Architecture("gpt2", rope=None, activation="gelu", tied_head=True),
    "llama": _LLAMA,
    "mistral": _LLAMA,
    "qwen2": Architecture("llama", mlp_bias=True, attention_bias=True, qkv_bias=True),
    "qwen3": Architecture("llama", qk_norm=True, mlp_bias=True, attention_bias=True),
    "gemma2": Architecture("gemma2", mlp_bias=True, attention_bias=True, **_GEMMA),
    "olmo2": Architecture("olmo2", qk_norm=True, attention_bias=True),
    "granite": _LLAMA,
    "gemma3_text": _GEMMA3,
    "gemma3": _GEMMA3,
    "phi3": Architecture("llama", fused=True, rope=_phi3_rope),
}

#: Keys no forward pass up to q and k reads: token ids, training-only and storage settings.
_NEVER_MATTER = ("architectures", "dtype", "torch_dtype", "transformers_version",
                 "_name_or_path", "model_type", "vocab_size", "initializer_range", "use_cache",
                 "pad_token_id", "bos_token_id", "eos_token_id", "attention_dropout")
_LLAMA_LIKE = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
               "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps",
               "rope_parameters", "rope_theta", "rope_scaling", "attention_bias")

#: The config keys each family's reading models (engine.models.spec and this module), each
#: with tie_word_embeddings (whether the LM head is the embedding matrix).
MODELLED_KEYS: Mapping[str, tuple[str, ...]] = {family: (*keys, "tie_word_embeddings") for
                                                family, keys in {
    "olmo2": (*_LLAMA_LIKE, "hidden_act"),
    "granite": (*_LLAMA_LIKE, "hidden_act", "mlp_bias", "attention_multiplier",
                "embedding_multiplier", "residual_multiplier", "logits_scaling"),
    "bert": ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
             "layer_norm_eps", "max_position_embeddings", "hidden_act",
             "position_embedding_type", "is_decoder"),
    "gpt2": ("n_embd", "n_head", "n_layer", "n_inner", "n_positions", "layer_norm_epsilon",
             "activation_function", "scale_attn_weights", "scale_attn_by_inverse_layer_idx"),
    "llama": (*_LLAMA_LIKE, "hidden_act", "mlp_bias"),
    "mistral": (*_LLAMA_LIKE, "hidden_act", "mlp_bias", "sliding_window"),
    **dict.fromkeys(("qwen2", "qwen3"), (*_LLAMA_LIKE, "hidden_act", "mlp_bias", "sliding_window",
                                         "use_sliding_window", "max_window_layers",
                                         "layer_types")),
    "gemma2": (*_LLAMA_LIKE, "hidden_activation", "mlp_bias", "query_pre_attn_scalar",
               "attn_logit_softcapping", "sliding_window", "layer_types",
               "final_logit_softcapping"),
    # Phi-3 reads no attention_bias (its fused qkv_proj has none)
    "phi3": (*(k for k in _LLAMA_LIKE if k != "attention_bias"), "hidden_act",
             "partial_rotary_factor", "original_max_position_embeddings", "sliding_window"),
    "gemma3_text": (*_LLAMA_LIKE, "hidden_activation", "query_pre_attn_scalar",
                    "sliding_window", "layer_types", "sliding_window_pattern",
                    "rope_local_base_freq", "use_bidirectional_attention",
                    "final_logit_softcapping"),
}.items()}
#: Keys known not to change the computation up to q and k, with why where it is not obvious.
IGNORED_KEYS: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(("olmo2", "granite", "mistral", "qwen2", "qwen3"), _NEVER_MATTER),
    "phi3": (*_NEVER_MATTER, "resid_pdrop", "embd_pdrop"),
    # attn_logit_softcapping: Gemma 3's attention does not apply it; _sliding_window_pattern:
    # transformers' own copy of the pattern, which it writes beside layer_types and never reads.
    "gemma3_text": (*_NEVER_MATTER, "attn_logit_softcapping", "_sliding_window_pattern",
                    "cache_implementation"),
    # Dropouts act in training only; add_cross_attention adds layers that attend to an
    # encoder's states, which a text alone has none of; type_vocab_size counts token-type rows,
    # and every token here is of type 0 (row 0 is added, as transformers does by default).
    "bert": (*_NEVER_MATTER, "hidden_dropout_prob", "attention_probs_dropout_prob",
             "classifier_dropout", "add_cross_attention", "type_vocab_size"),
    # summary_*: the multiple-choice head of GPT2DoubleHeadsModel, after every layer;
    # reorder_and_upcast_attn computes the same logits in float32, which the pass here uses
    # throughout; n_ctx: an older copy of n_positions that transformers no longer reads.
    "gpt2": (*_NEVER_MATTER, "attn_pdrop", "embd_pdrop", "resid_pdrop", "summary_type",
             "summary_use_proj", "summary_activation", "summary_proj_to_labels",
             "summary_first_dropout", "add_cross_attention", "reorder_and_upcast_attn", "n_ctx"),
    # pretraining_tp split the same products into slices in transformers 4 (summed back, the
    # same numbers); transformers 5's Llama does not read it.
    "llama": (*_NEVER_MATTER, "pretraining_tp"),
    # hidden_act: an older name transformers' Gemma 2 does not read (it reads
    # hidden_activation).
    "gemma2": (*_NEVER_MATTER, "hidden_act", "cache_implementation"),
}
#: What PretrainedConfig itself writes for every family: task heads' labels, outputs asked
#: of forward(), and chunk_size_feed_forward, which runs the same MLP on chunks of tokens.
COMMON_IGNORED = ("id2label", "label2id", "output_attentions", "output_hidden_states",
                  "return_dict", "problem_type", "is_encoder_decoder", "chunk_size_feed_forward")

#: Keys none of the passes here reads but which change transformers' computation: each is
#: refused at open, naming it and its value, unless it holds one of the listed values (no
#: change). A key a family's config class does not declare is not read by transformers'
#: model either, so an unlisted key changes nothing and is let through.
COMMON_REFUSED: Mapping[str, tuple[tuple[Any, ...], str]] = {
    "quantization_config": ((), "absent (quantized weights are not modelled)"),
}
REFUSED_KEYS: Mapping[str, Mapping[str, tuple[tuple[Any, ...], str]]] = {
    # Gemma2Config declares it (null) for the bidirectional embedding variants.
    "gemma2": {"use_bidirectional_attention": (
        (False,), "false (bidirectional attention is not modelled)")},
}


def check_config_keys(values: Values, arch: str) -> None:
    """Refuse a key of :data:`COMMON_REFUSED` or ``arch``'s :data:`REFUSED_KEYS` that holds
    a value which changes the computation, in one line naming the key and the value.

    Raises
    ------
    ModelError
        For the first such key.
    """
    for key, (harmless, allowed) in {**COMMON_REFUSED, **REFUSED_KEYS.get(arch, {})}.items():
        _, value = values.raw(key)
        if value is not None and not any(value is h for h in harmless):
            raise values.refuse(key, value, allowed)


def text_config(config: Mapping[str, Any], label: str) -> Mapping[str, Any]:
    """The language model's config: ``config`` itself, or Gemma 3's ``text_config`` (the
    vision tower and its projector do not take part in a text's forward pass)."""
    if config.get("model_type") != "gemma3":
        return config
    inner = Values(config, label).mapping("text_config")
    if inner is None:
        raise ModelError(f"{label}: a 'gemma3' config needs its 'text_config' (the language "
                         "model's settings)")
    _, kind = inner.raw("model_type", default="gemma3_text")
    if kind != "gemma3_text":
        raise inner.refuse("model_type", kind, "gemma3_text")
    return {**config["text_config"], "model_type": "gemma3_text"}


def _bert(values: Values) -> dict[str, Any]:
    values.choice("position_embedding_type", options=("absolute",), default="absolute")
    if values.flag("is_decoder", default=False):
        raise values.refuse("is_decoder", True, "false (a BERT decoder, causal and with "
                            "cross-attention, is not modelled)")
    return {}


def _gpt2(values: Values) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not values.flag("scale_attn_weights", default=True):
        out.update(scale=1.0, note="1 (scale_attn_weights off)")
    if values.flag("scale_attn_by_inverse_layer_idx", default=False):
        out["per_layer"] = True
    return out


def _granite(values: Values) -> dict[str, Any]:
    # transformers takes any float; 0 or less would zero or flip the branch it scales,
    # which no trained model does, and a huge one overflows float32.
    def positive(key: str) -> float:
        return values.number(key, default=1.0, above=0, below=1e6)

    multiplier = positive("attention_multiplier")
    return {"scale": multiplier, "note": f"attention_multiplier {multiplier:g}",
            "embed_scale": positive("embedding_multiplier"),
            "residual_scale": positive("residual_multiplier"),
            "logits_divisor": positive("logits_scaling")}


def _pre_attn_scale(values: Values) -> dict[str, Any]:
    # A width-like number (Gemma 2 uses the head width or width / heads): below 1 the
    # scale 1/√scalar can overflow float32's logits. Absent, it is the config classes' 256
    # (not the head width: transformers would scale a 128-wide head by 1/16, not 1/√128).
    scalar = values.number("query_pre_attn_scalar", default=256.0, least=1)
    return {"scale": scalar ** -0.5, "note": f"query_pre_attn_scalar {scalar:g}: 1/√{scalar:g}"}


def _gemma2(values: Values) -> dict[str, Any]:
    out = _pre_attn_scale(values)
    # Gemma 2 caps at 50; outside float32's range cap·tanh(z/cap) is 0/0 or inf·0 = NaN.
    out["cap"] = values.number("attn_logit_softcapping", default=None, least=1e-3, below=1e6)
    # Gemma2Config's default is 30 (null: no cap), on the LM head's logits
    final = None if values.written("final_logit_softcapping") else 30.0
    out["final_cap"] = values.number("final_logit_softcapping", default=final, least=1e-3,
                                     below=1e6)
    return out


def _gemma3(values: Values) -> dict[str, Any]:
    if values.flag("use_bidirectional_attention", default=False):
        raise values.refuse("use_bidirectional_attention", True,
                            "false (bidirectional attention is not modelled)")
    return {**_pre_attn_scale(values),
            "final_cap": values.number("final_logit_softcapping", default=None,
                                       least=1e-3, below=1e6)}


#: What a family reads beyond the shared reading (engine.models.spec), by ``model_type``.
_SETTINGS: Mapping[str, Callable[[Values], dict[str, Any]]] = {
    "bert": _bert, "gpt2": _gpt2, "granite": _granite, "gemma2": _gemma2, "gemma3_text": _gemma3,
}


def family_settings(values: Values, arch: str) -> dict[str, Any]:
    """What ``arch`` sets beyond the shared reading, as :class:`ModelSpec` fields, plus
    ``scale`` and ``note`` (the logits' scale, where it is not 1/√(head width), and how it was
    chosen) and ``per_layer`` (that scale divided by the layer's number + 1: GPT-2).

    Raises
    ------
    ModelError
        Naming a key whose value is out of range or asks for what is not modelled.
    """
    reader = _SETTINGS.get(arch)
    return {} if reader is None else reader(values)
