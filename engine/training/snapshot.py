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

__all__ = ["RuleTrainState", "TrainSnapshot", "readonly"]


def readonly(a: np.ndarray) -> np.ndarray:
    """Mark ``a`` read-only and return it."""
    a.flags.writeable = False
    return a


@dataclass(frozen=True, slots=True)
class RuleTrainState:
    """The state of one rule's run at a snapshot (immutable).

    Attributes
    ----------
    rule
        The scaling rule.
    train_loss
        Training loss of the latest step (before its update; NaN at step 0).
    eval_loss, eval_accuracy
        Held-out loss and accuracy at the latest evaluation (``eval_steps[-1]``).
    initial_eval_loss
        Held-out loss at step 0 (the reference of the divergence test).
    grad_norms
        Frobenius norm of the latest gradient of each weight matrix (``embed``, ``pos``,
        ``W_Q``, ``W_K``, ``W_V``, ``W_O``, ``W_U``, ``b_U``), before clipping; empty at step 0.
    grad_norm
        Global gradient norm of the latest step (before clipping; NaN at step 0).
    entropy
        Mean attention entropy (nats) of the target query rows on the held-out set, per head.
    max_abs_logit
        Largest |attention logit| on the held-out set's target query rows.
    probe_weights
        (heads, T, T) attention map of the probe example (held-out example 0).
    diverged_at
        ``None``, or the step whose loss, gradient or update was non-finite or exploded.
    diverge_reason
        Human-readable reason ("" when not diverged).
    loss_history
        (step,) training loss of steps 1..step (NaN after divergence).
    eval_steps, eval_loss_history, eval_accuracy_history, max_logit_history
        Held-out metrics at every evaluation so far.
    entropy_history
        (len(eval_steps), heads) attention entropy at every evaluation.
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
    eval_steps: tuple[int, ...]
    eval_loss_history: tuple[float, ...]
    eval_accuracy_history: tuple[float, ...]
    max_logit_history: tuple[float, ...]
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
    config
        The configuration being trained.
    step, total_steps
        Optimizer steps done and planned.
    done
        True on the last snapshot of a run that was not cancelled.
    elapsed_s
        Wall-clock seconds since training started.
    steps_per_s
        Steps (of all rules together) per second so far, held-out evaluations included.
    rules
        Rule → :class:`RuleTrainState`, in ``config.rules`` order.
    chance_loss
        ln(vocab): the loss of the best input-independent prediction.
    probe_ids
        (T, channels) token ids of the probe example.
    probe_targets
        Target classes of the probe example at ``target_positions``.
    target_positions
        Positions whose output is scored.
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
