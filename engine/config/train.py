"""The training configuration: a frozen, validated dataclass like the other engine configs.

``TrainConfig`` describes one side-by-side training run of the tiny attention model
(:mod:`engine.training.model`) on a synthetic task (:mod:`engine.training.tasks`) for several
scaling rules at once. It round-trips through dictionaries and JSON (``kind = "train"``).
:data:`TRAIN_FIELDS`, next to it, declares each field once: range, Train-panel row and
``train``/``lr-sweep`` option.
"""

from __future__ import annotations

import dataclasses
import math
from enum import StrEnum
from typing import ClassVar

from engine.config.attention import ScalingRule, shared_field
from engine.config.base import (
    QT_TRANSLATE_NOOP,
    Cli,
    FieldSpec,
    Gui,
    JsonConfig,
    validate_fields,
)
from engine.config.rules import parse_rule
from engine.config.sweep import RULES_HELP

__all__ = ["TRAIN_FIELDS", "DType", "OptimizerKind", "TaskKind", "TrainConfig"]


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


#: Every field of :class:`TrainConfig`, in the Train panel's row order (``group``: its box).
#: ``Gui.high`` narrows a row where larger models only take minutes per run or fail the memory
#: budget (a d_k 512 step already takes seconds here); the CLI takes the engine's full range.
#: ``Cli.after`` keeps the established order of the options in ``--help``.
TRAIN_FIELDS: dict[str, FieldSpec] = {
    "task": FieldSpec(gui=Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Task"),
        QT_TRANSLATE_NOOP(
            "TrainPanel",
            "Retrieval: n key/value pairs and a query key; answer the paired value (needs "
            "a sharp attention on one of n keys). Copy back: output the token k places back "
            "(causal mask).",
        ),
        "combo", group="model", choices={
            TaskKind.RETRIEVAL: QT_TRANSLATE_NOOP("TrainPanel", "key → value lookup"),
            TaskKind.COPY_BACK: QT_TRANSLATE_NOOP("TrainPanel", "copy k places back"),
        }), cli=Cli(("--task",), "synthetic task: retrieval (n key/value pairs and a query key; "
                   "answer its value) or copy_back (the token --offset places back)",
                   choices=True)),
    "rules": FieldSpec(
        gui=Gui(QT_TRANSLATE_NOOP("TrainPanel", "Rules"), widget="custom", group="model"),
        cli=Cli(("--rules",), RULES_HELP)),
    "d_k": shared_field("d_k", Gui(
        "d_k", QT_TRANSLATE_NOOP("TrainPanel", "Head dimension d_k (width of q and k)."),
        high=1024, group="model"), Cli(("--d-k",), "head dimension d_k (width of q and k)")),
    "d_model": shared_field("d_model", Gui(
        "d_model", QT_TRANSLATE_NOOP("TrainPanel", "Model width d_model; 'auto' uses d_k × heads."),
        high=1024, group="model",
        default_text=QT_TRANSLATE_NOOP("TrainPanel", "auto (d_k × heads)")),
        Cli(("--d-model",), "model width (default d_k × heads)")),
    "heads": shared_field("heads", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Heads"),
        QT_TRANSLATE_NOOP("TrainPanel", "Number of attention heads."),
        high=16, group="model"), Cli(("--heads",), "attention heads")),
    "n": FieldSpec(2, 1024, "tokens", Gui(
        "n", QT_TRANSLATE_NOOP(
            "TrainPanel", "Retrieval: number of key/value pairs; copy back: sequence length."),
        high=256, group="model"),
        Cli(("--n",), "retrieval: key/value pairs; copy_back: sequence length")),
    "vocab": FieldSpec(2, 4096, "symbols", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Vocabulary"),
        QT_TRANSLATE_NOOP(
            "TrainPanel",
            "Distinct symbols; chance loss is ln(vocab). Retrieval needs vocab ≥ n.",
        ),
        high=1024, group="model"),
        Cli(("--vocab",), "number of distinct symbols", after="optimizer")),
    "offset": FieldSpec(1, 1023, "tokens", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Copy offset k"),
        QT_TRANSLATE_NOOP("TrainPanel", "Copy back: distance k to the copied token (k < n)."),
        high=255, group="model", enabled_when=("task", TaskKind.COPY_BACK)),
        Cli(("--offset",), "copy_back distance (target is the token this far back)",
            after="vocab")),
    "optimizer": FieldSpec(gui=Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Optimiser"),
        QT_TRANSLATE_NOOP("TrainPanel", "Adam (β = 0.9, 0.999) or plain SGD."),
        "combo", group="training",
        choices={OptimizerKind.ADAM: "Adam", OptimizerKind.SGD: "SGD"}),
        cli=Cli(("--optimizer",), "optimiser: Adam (β = 0.9, 0.999) or plain SGD", choices=True,
                after="steps")),
    "lr": FieldSpec(1e-8, 100.0, "", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Learning rate"),
        QT_TRANSLATE_NOOP(
            "TrainPanel", "Learning rate of the training run (arrows step 1, 2, 3, 5 × 10^k)."),
        "log_spin", group="training"), Cli(("--lr",), "learning rate", commands=("train",))),
    "batch": FieldSpec(1, 65_536, "examples", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Batch"),
        QT_TRANSLATE_NOOP("TrainPanel", "Training examples per step."),
        high=1024, group="training"), Cli(("--batch",), "training examples per step")),
    "steps": FieldSpec(1, 10_000_000, "steps", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Steps"),
        QT_TRANSLATE_NOOP("TrainPanel", "Optimiser steps per run."),
        high=100_000, group="training"), Cli(("--steps",), "optimiser steps per run")),
    "seed": shared_field("seed", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Seed"),
        QT_TRANSLATE_NOOP(
            "TrainPanel", "Seed of the initial weights, the batches and the held-out set."),
        high=1_000_000, group="training"),
        Cli(("--seed",), "seed of the initial weights, the batches and the held-out set",
            commands=("train",))),
    "init_std": shared_field("init_std", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Init std"),
        QT_TRANSLATE_NOOP(
            "TrainPanel",
            "Standard deviation of the W_Q, W_K, W_V entries at init. Auto: 1/√d_model, "
            "so q and k components have unit variance and unscaled logits variance d_k.",
        ),
        "log_spin", group="training",
        default_text=QT_TRANSLATE_NOOP("TrainPanel", "auto (1/√d_model)"), first=0.1),
        Cli(("--init-std",), "weight init std (default 1/√d_model: unscaled logit variance "
            "d_k at init)")),
    "clip_norm": FieldSpec(1e-8, 1e8, "", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Clip norm"),
        QT_TRANSLATE_NOOP(
            "TrainPanel",
            "Clip the global gradient norm to this value before each optimiser step "
            "(off: no clipping).",
        ),
        "log_spin", group="training", default_text=QT_TRANSLATE_NOOP("TrainPanel", "off"),
        first=1.0), Cli(("--clip-norm",), "clip the global gradient norm (default: off)")),
    "eval_size": FieldSpec(1, 100_000, "examples", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Held-out size"),
        QT_TRANSLATE_NOOP(
            "TrainPanel",
            "Examples in the fixed held-out set (drawn from the seed); example 0 is the "
            "probe whose attention is shown.",
        ),
        group="training"), Cli(("--eval-size",), "held-out examples")),
    "temperature": shared_field("temperature"),
    "gain": shared_field("gain"),
    "cap": shared_field("cap"),
    "dtype": FieldSpec(),
    "snapshot_every": FieldSpec(1, 1_000_000, "steps"),
    "divergence_factor": FieldSpec(1.0, 1e6, "× initial loss", Gui(
        QT_TRANSLATE_NOOP("TrainPanel", "Divergence factor"),
        QT_TRANSLATE_NOOP(
            "TrainPanel",
            "A run is marked diverged when its training loss exceeds this multiple of its "
            "initial held-out loss (or the loss, gradients or weights become non-finite).",
        ),
        "log_spin", high=1000.0, group="training")),
}


@dataclasses.dataclass(frozen=True, slots=True)
class TrainConfig(JsonConfig):
    """Train the tiny attention model for several scaling rules side by side.

    Every rule starts from the same initial weights and sees the same batches, so only the rule
    differs; the run is deterministic for a given ``seed``.

    Parameters
    ----------
    task, rules
        ``"retrieval"`` or ``"copy_back"`` (:mod:`engine.training.tasks`); the rules trained
        (no duplicates).
    d_k, d_model, heads
        Head dimension, model width (``None``: ``d_k × heads``) and number of heads.
    n, vocab, offset
        Key/value pairs (retrieval) or sequence length (copy-back); symbols (chance loss
        ln(vocab), retrieval needs ``vocab >= n``); copy-back distance (``offset < n``).
    batch, steps, optimizer, lr, clip_norm
        Examples per step, steps, ``"adam"`` or ``"sgd"``, learning rate, gradient-norm clip
        (``None``: off).
    init_std
        Std of the W_Q, W_K, W_V entries (``None``: 1/√d_model, unit-variance q and k at init).
    temperature, gain, cap
        Rule parameters (``None`` temperature and gain: √d_k).
    dtype
        ``"float32"`` (fast) or ``"float64"``.
    eval_size, seed
        Size of the fixed held-out set (example 0 is the probe); seed of weights, batches, set.
    snapshot_every
        Steps between snapshots (one also comes at least every ~50 ms).
    divergence_factor
        Diverged when the training loss exceeds this multiple of the initial held-out loss (or
        anything becomes non-finite).
    """

    kind: ClassVar[str] = "train"
    FIELDS: ClassVar[dict[str, FieldSpec]] = TRAIN_FIELDS

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
        rules = (self.rules,) if isinstance(self.rules, str) else tuple(self.rules)
        if not rules:
            raise ValueError("rules must name at least one scaling rule")
        rules = tuple(parse_rule(r, "rules") for r in rules)
        if len(set(rules)) != len(rules):
            raise ValueError(f"rules must not repeat a rule, got {[r.value for r in rules]}")
        object.__setattr__(self, "rules", rules)
        # d_model stays None when derived, so that replace(d_k=...) keeps deriving it.
        validate_fields(self)
        self.bound()["d_model"].check(self.model_width)
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
