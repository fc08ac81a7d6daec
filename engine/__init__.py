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

# submodule -> the public names it defines
_NAMES: dict[str, tuple[str, ...]] = {
    # config (with training's TrainConfig, TaskKind and OptimizerKind, from config.train)
    "config": ("AttentionConfig", "SweepConfig", "ScalingRule", "MaskKind", "SweepParam",
               "DEFAULT_MEMORY_BUDGET_BYTES", "config_from_dict", "config_from_json",
               "TrainConfig", "TaskKind", "OptimizerKind"),
    # attention (core: attention, scaling, softmax, plan, memory, parallel)
    "core.attention": ("AttentionResult", "scaled_dot_product_attention",
                       "scaled_dot_product_attention_backward", "attention_logits"),
    "core.memory": ("MemoryBudgetError", "get_memory_budget", "set_memory_budget",
                    "tune_allocator", "check_memory"),
    "core.scaling": ("scale_factor", "Rule"),
    "core.softmax": ("softmax",),
    "core.plan": ("causal_mask",),
    "core.parallel": ("get_num_threads", "set_num_threads"),
    # stats
    "core.stats": ("row_entropy", "p_max", "effective_support", "saturated_share",
                   "softmax_jacobian", "jacobian_fro_norm", "jacobian_spectral_norm",
                   "logit_moments", "row_summary"),
    # theory
    "core": ("theory",),
    # sweeps and experiments
    "analysis.sweep": ("SweepPoint", "iter_sweep", "run_sweep", "SWEEP_CSV_COLUMNS",
                       "write_sweep_csv"),
    "analysis.experiment": ("AttentionSnapshot", "run_experiment", "RuleView",
                            "temperature_comparison"),
    "analysis.sampling": ("draw_qk",),
    "analysis.correlation": ("correlation_rms",),
    # training (config.train, training.tasks, .snapshot, .trainer, .lr_sweep, .lr_results)
    "training.tasks": ("make_task",),
    "training.snapshot": ("TrainSnapshot", "RuleTrainState"),
    "training.trainer": ("iter_training", "run_training"),
    "training.lr_results": ("LrSweepResult", "lr_sweep_table", "write_lr_sweep_csv"),
    "training.lr_sweep": ("iter_lr_sweep", "run_lr_sweep"),
    # real models (models: open a Hugging Face folder or a GGUF file, capture q and k), and
    # language-model runs of a real model under an intervention on its attention (the
    # model sweep's SweepPoint and iter_sweep are engine.models', beside the toy sweep's)
    "models": ("open_model", "Model", "Capture", "ModelError", "Intervention",
               "DEFAULT_ALPHAS", "TextScore", "TokenPrediction", "score_text", "TextLogits",
               "text_logits", "Continuation", "continue_text"),
}
# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {name: module for module, names in _NAMES.items() for name in names}
assert len(_EXPORTS) == sum(map(len, _NAMES.values())), "a public name is listed twice"

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
