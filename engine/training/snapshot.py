"""What the trainer reports: immutable snapshots of a side-by-side training run.

A :class:`TrainSnapshot` holds one :class:`RuleTrainState` per scaling rule. Both are frozen and
their arrays read-only copies, so a GUI thread may keep and draw them while training goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from engine.config import ScalingRule
from engine.config.train import TrainConfig

__all__ = ["RuleTrainState", "TrainSnapshot"]


@dataclass(frozen=True, slots=True)
class RuleTrainState:
    """The state of one rule's run at a snapshot (immutable).

    Attributes
    ----------
    rule
        The scaling rule.
    train_loss, grad_norm, grad_norms
        Latest step's training loss, global gradient norm and per-matrix norms (before the
        update and clipping; NaN / empty at step 0).
    eval_loss, eval_accuracy, initial_eval_loss
        Held-out loss and accuracy at ``eval_steps[-1]``; held-out loss at step 0.
    entropy, max_abs_logit
        Per-head mean attention entropy (nats) and largest |logit| of the held-out target rows.
    probe_weights
        (heads, T, T) attention map of the probe example (held-out example 0).
    diverged_at, diverge_reason
        ``None`` or the step that was non-finite or exploded; the reason ("" when not diverged).
    loss_history
        (step,) training loss of steps 1..step (NaN after divergence).
    grad_norm_history
        (step,) global gradient norm of steps 1..step, before clipping (NaN where a step
        computed no finite gradient: once the rule diverged). Every step, so that the curve
        and its CSV do not depend on which steps a snapshot happened to report (snapshots
        also come on a timer).
    eval_steps, eval_loss_history, eval_accuracy_history, entropy_history
        Held-out metrics at every evaluation so far (entropy: one column per head).
    """

    rule: ScalingRule
    train_loss: float
    eval_loss: float
    eval_accuracy: float
    initial_eval_loss: float
    grad_norms: Mapping[str, float]
    grad_norm: float
    entropy: tuple[float, ...]
    max_abs_logit: float
    probe_weights: np.ndarray
    diverged_at: int | None
    diverge_reason: str
    loss_history: np.ndarray
    grad_norm_history: np.ndarray
    eval_steps: tuple[int, ...]
    eval_loss_history: tuple[float, ...]
    eval_accuracy_history: tuple[float, ...]
    entropy_history: np.ndarray

    @property
    def diverged(self) -> bool:
        """True when the run diverged."""
        return self.diverged_at is not None


@dataclass(frozen=True, slots=True)
class TrainSnapshot:
    """Everything the trainer reports at one moment (immutable).

    Attributes
    ----------
    config, step, total_steps
        The configuration being trained; optimizer steps done and planned.
    done
        True on the last snapshot of a run that was not cancelled.
    elapsed_s, steps_per_s
        Wall-clock seconds since the start; steps of all rules per second, evaluations included.
    rules
        Rule → :class:`RuleTrainState`, in ``config.rules`` order.
    chance_loss
        ln(vocab): the loss of the best input-independent prediction.
    probe_ids, probe_targets, target_positions
        (T, channels) token ids and target classes of the probe; positions whose output is scored.
    """

    config: TrainConfig
    step: int
    total_steps: int
    done: bool
    elapsed_s: float
    steps_per_s: float
    rules: Mapping[ScalingRule, RuleTrainState]
    chance_loss: float
    probe_ids: np.ndarray
    probe_targets: np.ndarray
    target_positions: tuple[int, ...]

    @property
    def progress(self) -> float:
        """step / total_steps."""
        return self.step / self.total_steps
