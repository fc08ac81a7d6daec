"""Which GGUF metadata keys each architecture's reading models, which are known not to matter
and which are refused, so that no hyperparameter of a file is silently dropped.

llama.cpp names its hyperparameters ``<architecture>.<name>`` (gguf-py's ``gguf.constants.Keys``
lists every name it knows). Each name is, for each architecture this app opens:

* modelled: read by :func:`engine.models.spec.spec_from_gguf`, which checks its value;
* known not to matter up to q and k (:data:`GGUF_IGNORED`, each with why), or
* refused at open, naming the key and its value, unless it holds the one value at which the
  pass here computes what llama.cpp would (:data:`GGUF_REFUSED`; absent for most).

A name outside all three lists is one gguf-py did not know when they were written: it is let
through, as ``tests/engine/test_model_keylists.py`` fails when a new gguf-py adds one. Keys
outside the architecture's namespace (``general.*``: provenance; ``tokenizer.*``: read by the
tokenizer; ``split.*``: read by the file reader) are not hyperparameters, but an adapter's
``adapter.type`` says the file is a LoRA delta, not a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.models.values import Values

__all__ = ["GGUF_IGNORED", "GGUF_MODELLED", "GGUF_REFUSED", "check_gguf_keys"]

_LLAMA = ("block_count", "context_length", "embedding_length", "feed_forward_length",
          "attention.head_count", "attention.head_count_kv", "attention.key_length",
          "attention.value_length", "attention.layer_norm_rms_epsilon", "rope.dimension_count",
          "rope.freq_base", "rope.scaling.type", "rope.scaling.factor", "rope.scale_linear",
          "expert_count")
#: The names under ``<architecture>.`` that spec_from_gguf reads for each architecture.
GGUF_MODELLED: Mapping[str, tuple[str, ...]] = {
    "llama": _LLAMA, "qwen2": _LLAMA, "qwen3": _LLAMA,
    "gemma2": (*_LLAMA, "attn_logit_softcapping", "attention.sliding_window"),
    # (and rope.scaling.original_context_length, listed as ignored for all, which the loader
    # reads with Phi-3's LongRoPE factors)
    "phi3": (*_LLAMA, "attention.sliding_window", "rope.scaling.attn_factor"),
    # (engine.models.gguf_families; Granite's rope.scaling.finetuned, listed as ignored for
    # all, is refused there when false; Gemma 3's and Granite's final_logit_softcapping and
    # logit_scale are ignored as for all: after what this app captures)
    "gemma3": (*_LLAMA, "attention.sliding_window"),
    "granite": (*_LLAMA, "attention.scale", "embedding_scale", "residual_scale"),
    "olmo2": _LLAMA,
}

#: Names no pass up to q and k reads, in any architecture.
GGUF_IGNORED = (
    # the rows of the embedding table: the tensor's own shape is what is read
    "vocab_size",
    # of the LM head's logits, after what this app captures
    "final_logit_softcapping", "logit_scale",
    # pooling of the last layer's states into one embedding, after every layer
    "pooling_type", "dense_2_feat_in", "dense_2_feat_out", "dense_3_feat_in",
    "dense_3_feat_out", "classifier.output_labels",
    # notes the converter leaves: the source's layout and whether it was fine-tuned long
    # (but llama.cpp's Granite pass runs no RoPE when finetuned is false: gguf_families
    # refuses that for granite)
    "tensor_data_layout", "rope.scaling.finetuned",
    # read by llama.cpp only for YaRN and LongRoPE scaling, which rope.scaling.type refuses
    # (Phi-3's LongRoPE tensors: engine.models.loader reads it with them)
    "rope.scaling.original_context_length",
    # generation: the first token an encoder-decoder's decoder is fed
    "decoder_start_token_id",
)

_ABSENT = ((), "absent")
#: Every other name gguf-py knows, by the values at which it changes nothing here (the rest
#: change the pass: experts, other attention and norm rules, extra scales, other RoPE).
GGUF_REFUSED: Mapping[str, tuple[tuple[Any, ...], str]] = {
    **{name: ((0,), "0") for name in (
        "expert_used_count", "expert_shared_count", "expert_group_count",
        "expert_group_used_count", "leading_dense_block_count", "interleave_moe_layer_step",
        "moe_every_n_layers", "nextn_predict_layers", "rescale_every_n_layers",
        "attention.clamp_kqv", "attention.max_alibi_bias", "full_attention_interval",
        "n_deepstack_layers", "altup.num_inputs", "attention.shared_kv_layers")},
    **{name: ((1,), "1") for name in (
        "embedding_scale", "residual_scale", "rope.scaling.attn_factor",
        "rope.scaling.yarn_attn_factor", "attention.output_scale", "expert_weights_scale",
        "expert_group_scale")},
    "attention.causal": ((True,), "true (attention that sees later tokens is not modelled)"),
    "use_parallel_residual": ((False,), "false (parallel attention and MLP is not modelled)"),
    "swin_norm": ((False,), "false"),
    "expert_weights_norm": ((False,), "false"),
    **{name: _ABSENT for name in (
        "activation_sparsity_scale", "altup.active_idx", "decoder_block_count",
        "embedding_length_out", "embedding_length_per_layer_input",
        "expert_chunk_feed_forward_length", "expert_feed_forward_length", "expert_gating_func",
        "expert_shared_feed_forward_length", "experts_per_group", "features_length",
        "moe_latent_size", "router_logit_softcapping", "swiglu_clamp_exp", "swiglu_clamp_shexp",
        "time_decay_extra_dim", "time_mix_extra_dim", "token_shift_count",
        "attention.decay_lora_rank", "attention.gate_lora_rank", "attention.group_norm_epsilon",
        "attention.group_norm_groups", "attention.iclr_lora_rank", "attention.key_length_mla",
        "attention.key_length_swa", "attention.kv_lora_rank", "attention.layer_norm_epsilon",
        "attention.q_lora_rank", "attention.relative_buckets_count", "attention.scale",
        # (a window as wide as context_length is let through: it hides no key)
        "attention.sliding_window", "attention.sliding_window_pattern",
        "attention.temperature_length", "attention.temperature_scale",
        "attention.value_length_mla", "attention.value_length_swa",
        "attention.value_residual_mix_lora_rank", "attn_logit_softcapping",
        "rope.dimension_count_swa", "rope.dimension_sections", "rope.freq_base_swa",
        "rope.scaling.alpha", "rope.scaling.yarn_beta_fast", "rope.scaling.yarn_beta_slow",
        "rope.scaling.yarn_ext_factor", "rope.scaling.yarn_log_multiplier",
        "ssm.conv_kernel", "ssm.dt_b_c_rms", "ssm.group_count", "ssm.inner_size",
        "ssm.state_size", "ssm.time_step_rank", "wkv.head_size", "kda.head_dim",
        "posnet.block_count", "posnet.embedding_length", "convnext.block_count",
        "convnext.embedding_length", "shortconv.l_cache")},
}


def check_gguf_keys(metadata: Mapping[str, Any], arch: str, label: str) -> None:
    """Refuse, in one line naming the key and its value, a key of ``arch``'s namespace that
    changes the pass in a way not modelled, or an adapter file.

    Raises
    ------
    ModelError
        For the first such key.
    """
    values = Values(metadata, label)
    if "adapter.type" in metadata:
        raise values.refuse("adapter.type", metadata["adapter.type"],
                            "absent (a LoRA adapter is not a model: open the model it adapts)")
    modelled = GGUF_MODELLED.get(arch, ())
    prefix = f"{arch}."
    for key, value in metadata.items():
        name = key[len(prefix):] if key.startswith(prefix) else None
        if name is None or name in modelled or name in GGUF_IGNORED:
            continue
        harmless, allowed = GGUF_REFUSED.get(name, (None, ""))
        if name == "attention.sliding_window" and _wider_than_context(value, metadata, arch):
            # llama.cpp's llama and qwen passes read no window; one as wide as the context
            # hides no key, so the full attention here is what the model computes.
            continue
        if harmless is not None and not any(_same(value, h) for h in harmless):
            raise values.refuse(key, value, f"{allowed} (llama.cpp's '{name}' is not "
                                            f"modelled for {arch})")


def _same(value: Any, harmless: Any) -> bool:
    """Whether ``value`` is ``harmless``: a flag only as a flag, a number only as a number
    (Python takes True for 1 and 0 for False)."""
    if isinstance(harmless, bool) or isinstance(value, bool):
        return value is harmless
    return isinstance(value, (int, float)) and value == harmless


def _wider_than_context(window: Any, metadata: Mapping[str, Any], arch: str) -> bool:
    context = metadata.get(f"{arch}.context_length")
    return (all(isinstance(v, int) and not isinstance(v, bool) for v in (window, context))
            and window >= context)
