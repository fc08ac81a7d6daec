"""Immutable, validated configurations: the only contract between the GUI and the engine.

Every field is declared once, in the ``*_FIELDS`` table next to its dataclass (see
:mod:`engine.config.base`); panels and command-line options are generated from the tables.
"""

from __future__ import annotations

from engine.config.attention import (
    ATTENTION_FIELDS,
    DEFAULT_MEMORY_BUDGET_BYTES,
    RULE_PARAMETERS,
    AttentionConfig,
    MaskKind,
    RuleParameters,
    ScalingRule,
)
from engine.config.precision import Precision, Rounding, ScaleOrder, SoftmaxForm
from engine.config.registry import config_from_dict, config_from_json
from engine.config.rules import RULE_FIELDS, RULES, RuleSpec, rules_where
from engine.config.sweep import SWEEP_FIELDS, SweepConfig, SweepParam
from engine.config.train import TRAIN_FIELDS, DType, OptimizerKind, TaskKind, TrainConfig

__all__ = [
    "ATTENTION_FIELDS",
    "DEFAULT_MEMORY_BUDGET_BYTES",
    "RULES",
    "RULE_FIELDS",
    "RULE_PARAMETERS",
    "SWEEP_FIELDS",
    "TRAIN_FIELDS",
    "AttentionConfig",
    "DType",
    "MaskKind",
    "OptimizerKind",
    "Precision",
    "Rounding",
    "RuleParameters",
    "RuleSpec",
    "ScaleOrder",
    "ScalingRule",
    "SoftmaxForm",
    "SweepConfig",
    "SweepParam",
    "TaskKind",
    "TrainConfig",
    "config_from_dict",
    "config_from_json",
    "rules_where",
]
