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
    # attention
    "AttentionResult": "attention",
    "MemoryBudgetError": "attention",
    "scaled_dot_product_attention": "attention",
    "scaled_dot_product_attention_backward": "attention",
    "scale_factor": "attention",
    "softmax": "attention",
    "causal_mask": "attention",
    "get_memory_budget": "attention",
    "set_memory_budget": "attention",
    "attention_logits": "attention",
    "check_memory": "attention",
    "get_num_threads": "attention",
    "set_num_threads": "attention",
    # stats
    "row_entropy": "stats",
    "p_max": "stats",
    "effective_support": "stats",
    "saturated_share": "stats",
    "softmax_jacobian": "stats",
    "jacobian_fro_norm": "stats",
    "jacobian_spectral_norm": "stats",
    "logit_moments": "stats",
    "row_summary": "stats",
    # theory
    "theory": "",
    # sweeps and experiments
    "SweepPoint": "sweep",
    "iter_sweep": "sweep",
    "run_sweep": "sweep",
    "SWEEP_CSV_COLUMNS": "sweep",
    "write_sweep_csv": "sweep",
    "AttentionSnapshot": "experiment",
    "run_experiment": "experiment",
    "RuleView": "experiment",
    "draw_qk": "experiment",
    "temperature_comparison": "experiment",
    "correlation_rms": "experiment",
    # training (trainer_config, tasks, model, trainer, lr_sweep)
    "TrainConfig": "trainer_config",
    "TaskKind": "trainer_config",
    "OptimizerKind": "trainer_config",
    "make_task": "tasks",
    "TrainSnapshot": "trainer",
    "RuleTrainState": "trainer",
    "iter_training": "trainer",
    "run_training": "trainer",
    "LrSweepResult": "lr_sweep",
    "iter_lr_sweep": "lr_sweep",
    "lr_sweep_table": "lr_sweep",
    "run_lr_sweep": "lr_sweep",
    "write_lr_sweep_csv": "lr_sweep",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'engine' has no attribute {name!r}")
    if module_name == "":
        return importlib.import_module(f"{__name__}.{name}")
    value = getattr(importlib.import_module(f"{__name__}.{module_name}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
