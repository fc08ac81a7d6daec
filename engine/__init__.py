"""Attention Scale Explorer engine: exact, fast scaled dot-product attention in pure numpy.

The engine is a plain library (numpy and the standard library only) that can be used from a
notebook::

    import numpy as np, engine
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((8, 64, 64)) for _ in range(3))
    res = engine.scaled_dot_product_attention(q, k, v, rule="sqrt", mask="causal")
    print(res.weights.sum(-1).max(), engine.row_entropy(res.weights).mean())

Names are resolved lazily so that ``import engine`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    # config
    "AttentionConfig": "config",
    "SweepConfig": "config",
    "ScalingRule": "config",
    "MaskKind": "config",
    "SweepParam": "config",
    "DEFAULT_MEMORY_BUDGET_BYTES": "config",
    "config_from_dict": "config",
    "config_from_json": "config",
    # attention (core: attention, scaling, softmax, plan, memory, parallel)
    "AttentionResult": "core.attention",
    "MemoryBudgetError": "core.memory",
    "scaled_dot_product_attention": "core.attention",
    "scaled_dot_product_attention_backward": "core.attention",
    "scale_factor": "core.scaling",
    "Rule": "core.scaling",
    "softmax": "core.softmax",
    "causal_mask": "core.plan",
    "get_memory_budget": "core.memory",
    "set_memory_budget": "core.memory",
    "tune_allocator": "core.memory",
    "attention_logits": "core.attention",
    "check_memory": "core.memory",
    "get_num_threads": "core.parallel",
    "set_num_threads": "core.parallel",
    # stats
    "row_entropy": "core.stats",
    "p_max": "core.stats",
    "effective_support": "core.stats",
    "saturated_share": "core.stats",
    "softmax_jacobian": "core.stats",
    "jacobian_fro_norm": "core.stats",
    "jacobian_spectral_norm": "core.stats",
    "logit_moments": "core.stats",
    "row_summary": "core.stats",
    # theory
    "theory": "core",
    # sweeps and experiments
    "SweepPoint": "analysis.sweep",
    "iter_sweep": "analysis.sweep",
    "run_sweep": "analysis.sweep",
    "SWEEP_CSV_COLUMNS": "analysis.sweep",
    "write_sweep_csv": "analysis.sweep",
    "AttentionSnapshot": "analysis.experiment",
    "run_experiment": "analysis.experiment",
    "RuleView": "analysis.experiment",
    "draw_qk": "analysis.sampling",
    "temperature_comparison": "analysis.experiment",
    "correlation_rms": "analysis.correlation",
    # training (config.train, training.tasks, .snapshot, .trainer, .lr_sweep, .lr_results)
    "TrainConfig": "config",
    "TaskKind": "config",
    "OptimizerKind": "config",
    "make_task": "training.tasks",
    "TrainSnapshot": "training.snapshot",
    "RuleTrainState": "training.snapshot",
    "iter_training": "training.trainer",
    "run_training": "training.trainer",
    "LrSweepResult": "training.lr_results",
    "iter_lr_sweep": "training.lr_sweep",
    "lr_sweep_table": "training.lr_results",
    "run_lr_sweep": "training.lr_sweep",
    "write_lr_sweep_csv": "training.lr_results",
    # real models (models: open a Hugging Face folder or a GGUF file, capture q and k)
    "open_model": "models",
    "Model": "models",
    "Capture": "models",
    "ModelError": "models",
    # language-model runs of a real model under an intervention on its attention (the
    # model sweep's SweepPoint and iter_sweep are engine.models', beside the toy sweep's)
    "Intervention": "models",
    "DEFAULT_ALPHAS": "models",
    "TextScore": "models",
    "TokenPrediction": "models",
    "score_text": "models",
    "TextLogits": "models",
    "text_logits": "models",
    "Continuation": "models",
    "continue_text": "models",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    if name == "theory":
        return importlib.import_module(f"{__name__}.core.theory")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
