"""Immutable, validated configurations: the only contract between the GUI and the engine."""

from __future__ import annotations

from engine.config.attention import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    LIMITS,
    AttentionConfig,
    MaskKind,
    ScalingRule,
    SweepConfig,
    SweepParam,
    config_from_dict,
    config_from_json,
)
from engine.config.train import TRAIN_LIMITS, DType, OptimizerKind, TaskKind, TrainConfig

__all__ = [
    "DEFAULT_MEMORY_BUDGET_BYTES",
    "LIMITS",
    "TRAIN_LIMITS",
    "AttentionConfig",
    "DType",
    "MaskKind",
    "OptimizerKind",
    "ScalingRule",
    "SweepConfig",
    "SweepParam",
    "TaskKind",
    "TrainConfig",
    "config_from_dict",
    "config_from_json",
]
