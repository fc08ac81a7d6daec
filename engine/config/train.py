"""The training configuration: a frozen, validated dataclass like the other engine configs.

``TrainConfig`` describes one side-by-side training run of the tiny attention model
(:mod:`engine.training.model`) on a synthetic task (:mod:`engine.training.tasks`) for several
scaling rules at once. It round-trips through dictionaries and JSON (``kind = "train"``) and is
registered with
:func:`engine.config.config_from_dict`.
"""

from __future__ import annotations

import dataclasses
import math
from enum import StrEnum
from typing import Any, ClassVar

from engine.config.attention import (
    ScalingRule,
    _check_enum,
    _check_float,
    _check_int,
    _JsonConfig,
    register_config_kind,
)

__all__ = ["TRAIN_LIMITS", "DType", "OptimizerKind", "TaskKind", "TrainConfig"]

#: Inclusive (low, high) limits of the fields that only the trainer has (the shared ones,
#: d_k, heads, d_model, seed, temperature, gain, cap, live in :data:`engine.config.LIMITS`).
TRAIN_LIMITS: dict[str, tuple[float, float]] = {
    "n": (2, 1024),
    "vocab": (2, 4096),
    "offset": (1, 1023),
    "batch": (1, 65_536),
    "steps": (1, 10_000_000),
    "lr": (1e-8, 100.0),
    "init_std": (1e-6, 1e3),
    "clip_norm": (1e-8, 1e8),
    "eval_size": (1, 100_000),
    "snapshot_every": (1, 1_000_000),
    "divergence_factor": (1.0, 1e6),
}


class TaskKind(StrEnum):
    """The synthetic tasks of :mod:`engine.training.tasks`."""

    RETRIEVAL = "retrieval"
    """n key/value pairs, then a query key: output the value paired with it."""
    COPY_BACK = "copy_back"
    """Output the token ``offset`` places back (causal mask)."""


class OptimizerKind(StrEnum):
    """The optimizers of :mod:`engine.training.optim`."""

    ADAM = "adam"
    SGD = "sgd"


class DType(StrEnum):
    """Floating-point precision of the parameters and activations."""

    FLOAT32 = "float32"
    """Fast; the default for training."""
    FLOAT64 = "float64"
    """Exact enough for finite-difference gradient checks."""


def _check_train_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {value!r}")
    low, high = TRAIN_LIMITS[name]
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{int(low)}, {int(high)}], got {value}")
    return value


def _check_train_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    low, high = TRAIN_LIMITS[name]
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value:g}")
    return value


@register_config_kind
@dataclasses.dataclass(frozen=True, slots=True)
class TrainConfig(_JsonConfig):
    """Train the tiny attention model for several scaling rules side by side.

    Every rule starts from the same initial weights and sees the same batches; only the rule
    differs. The run is deterministic for a given ``seed``.

    Parameters
    ----------
    task
        ``"retrieval"`` or ``"copy_back"`` (see :mod:`engine.training.tasks`).
    rules
        Scaling rules trained side by side (at least one, no duplicates).
    d_k
        Head dimension.
    d_model
        Model width; ``None`` means ``d_k × heads``.
    heads
        Number of attention heads.
    n
        Retrieval: number of key/value pairs (the sequence has n + 1 tokens). Copy-back: the
        sequence length.
    vocab
        Number of distinct symbols (keys, values, copied tokens); the readout has ``vocab``
        classes, so chance-level loss is ln(vocab). Retrieval needs ``vocab >= n``.
    offset
        Copy-back distance k (the target at position t is the token at t − k); ``offset < n``.
    batch
        Training examples per step.
    steps
        Optimizer steps.
    optimizer
        ``"adam"`` (β = 0.9, 0.999, ε = 1e-8) or ``"sgd"`` (plain).
    lr
        Learning rate.
    clip_norm
        Global gradient-norm clipping threshold; ``None`` (default) disables clipping.
    init_std
        Standard deviation of the W_Q, W_K, W_V entries; ``None`` means 1/√d_model, which gives
        q and k components of unit variance at init (so unscaled logits have variance d_k).
    temperature, gain, cap
        Parameters of the temperature, QK-norm and soft-cap rules; ``None`` for temperature
        and gain means √d_k.
    dtype
        ``"float32"`` (fast) or ``"float64"``.
    eval_size
        Size of the fixed held-out set (drawn from the seed); example 0 is the probe whose
        attention map is reported.
    seed
        Seed of the initial weights, the training batches and the held-out set.
    snapshot_every
        Steps between snapshots (a snapshot is also emitted after at most ~30 ms).
    divergence_factor
        A run is marked diverged when its training loss exceeds this multiple of its initial
        held-out loss, or when the loss, the gradients or the parameters become non-finite.
    """

    kind: ClassVar[str] = "train"

    task: TaskKind = TaskKind.RETRIEVAL
    rules: tuple[ScalingRule, ...] = (ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR)
    d_k: int = 64
    d_model: int | None = None
    heads: int = 1
    n: int = 16
    vocab: int = 32
    offset: int = 2
    batch: int = 64
    steps: int = 500
    optimizer: OptimizerKind = OptimizerKind.ADAM
    lr: float = 0.01
    clip_norm: float | None = None
    init_std: float | None = None
    temperature: float | None = None
    gain: float | None = None
    cap: float = 50.0
    dtype: DType = DType.FLOAT32
    eval_size: int = 256
    seed: int = 0
    snapshot_every: int = 10
    divergence_factor: float = 10.0

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "task", _check_enum("task", TaskKind, self.task))
        set_(self, "optimizer", _check_enum("optimizer", OptimizerKind, self.optimizer))
        set_(self, "dtype", _check_enum("dtype", DType, self.dtype))
        rules = (self.rules,) if isinstance(self.rules, str) else tuple(self.rules)
        if not rules:
            raise ValueError("rules must name at least one scaling rule")
        rules = tuple(_check_enum("rules", ScalingRule, r) for r in rules)
        if len(set(rules)) != len(rules):
            raise ValueError(f"rules must not repeat a rule, got {[r.value for r in rules]}")
        set_(self, "rules", rules)
        for name in ("d_k", "heads", "seed"):
            set_(self, name, _check_int(name, getattr(self, name)))
        # d_model stays None when derived, so that replace(d_k=...) keeps deriving it.
        if self.d_model is not None:
            set_(self, "d_model", _check_int("d_model", self.d_model))
        _check_int("d_model", self.model_width)
        for name in ("n", "vocab", "offset", "batch", "steps", "eval_size", "snapshot_every"):
            set_(self, name, _check_train_int(name, getattr(self, name)))
        for name in ("lr", "divergence_factor"):
            set_(self, name, _check_train_float(name, getattr(self, name)))
        for name in ("clip_norm", "init_std"):
            if getattr(self, name) is not None:
                set_(self, name, _check_train_float(name, getattr(self, name)))
        for name in ("temperature", "gain"):
            if getattr(self, name) is not None:
                set_(self, name, _check_float(name, getattr(self, name)))
        set_(self, "cap", _check_float("cap", self.cap))
        if self.task is TaskKind.RETRIEVAL and self.vocab < self.n:
            raise ValueError(
                f"vocab ({self.vocab}) must be >= n ({self.n}) for the retrieval task: the n "
                "keys of an example are distinct"
            )
        if self.task is TaskKind.COPY_BACK and self.offset >= self.n:
            raise ValueError(
                f"offset must be in [1, n - 1] = [1, {self.n - 1}] for copy_back, got {self.offset}"
            )

    @property
    def model_width(self) -> int:
        """d_model, or d_k × heads when ``d_model`` is None."""
        return self.d_model if self.d_model is not None else self.d_k * self.heads

    @property
    def head_dims(self) -> int:
        """heads × d_k: the width of the concatenated head outputs."""
        return self.heads * self.d_k

    @property
    def resolved_init_std(self) -> float:
        """The W_Q/W_K/W_V init std actually used (1/√d_model unless given)."""
        if self.init_std is not None:
            return self.init_std
        return 1.0 / math.sqrt(self.model_width)

    def replace(self, **changes: Any) -> TrainConfig:
        """Return a validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)
