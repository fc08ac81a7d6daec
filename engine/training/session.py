"""One side-by-side training run, advanced step by step, and its memory estimate.

Every rule starts from the *same* initial weights and sees the *same* batches; only the scaling
rule differs. A run whose loss becomes non-finite or explodes (training loss above
``divergence_factor`` × its initial held-out loss), or whose gradients or parameters become
non-finite, is marked "diverged at step k" and stops; the other rules continue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from engine.config import ScalingRule
from engine.config.train import TrainConfig
from engine.core.checks import readonly
from engine.core.memory import check_memory
from engine.core.scaling import Rule
from engine.training.model import (
    EvalResult,
    PreparedBatch,
    evaluate,
    loss_and_grad,
    prepare_batch,
)
from engine.training.optim import Optimizer, clip_grad_norm, make_optimizer
from engine.training.params import ModelDims, ParamSet, init_params
from engine.training.snapshot import RuleTrainState, TrainSnapshot
from engine.training.tasks import Task, make_task

__all__ = ["TrainedRun", "TrainingSession", "check_training_memory", "estimate_training_bytes",
           "model_dims"]


@dataclass(frozen=True, slots=True)
class TrainedRun:
    """A copy of one rule's trained parameters and what describes them.

    Attributes
    ----------
    rule, scaling
        The scaling rule, and the rule with its parameters as the model applies it.
    params
        A private copy of the parameters (later training does not change it).
    steps
        Optimizer steps applied to ``params``.
    diverged_at, diverge_reason
        As in :class:`~engine.training.snapshot.RuleTrainState`.
    eval_loss, eval_accuracy
        Held-out metrics at the latest evaluation (NaN when none succeeded).
    """

    rule: ScalingRule
    scaling: Rule
    params: ParamSet
    steps: int
    diverged_at: int | None
    diverge_reason: str
    eval_loss: float
    eval_accuracy: float


class _RuleRun:
    """Mutable training state of one rule (private to the session)."""

    def __init__(self, rule: ScalingRule, scaling: Rule, params: ParamSet, config: TrainConfig,
                 opt: Optimizer) -> None:
        self.rule = rule
        self.scaling = scaling
        self.params = params
        self.grads = params.zeros_like()
        self.opt = opt
        self.diverged_at: int | None = None
        self.diverge_reason = ""
        self.steps_done = 0  # optimizer steps applied to params (a stopped step may lack one)
        self.train_loss = float("nan")
        self.grad_norm = float("nan")
        # run.grads holds the latest gradient times grads_scale (< 1 after clipping); the
        # per-matrix norms are computed from it only when a snapshot asks for them.
        self.grads_scale = 1.0
        self.initial_eval_loss = float("nan")
        self.loss_history = np.full(config.steps, np.nan)
        self.grad_norm_history = np.full(config.steps, np.nan)
        self.last_eval: EvalResult | None = None
        self.eval_steps: list[int] = []
        self.eval_losses: list[float] = []
        self.eval_accs: list[float] = []
        self.entropies: list[np.ndarray] = []


def model_dims(config: TrainConfig, task: Task) -> ModelDims:
    """The training model's dimensions for ``config`` on ``task``."""
    return ModelDims(
        input_vocab=task.input_vocab,
        seq_len=task.seq_len,
        d_model=config.model_width,
        heads=config.heads,
        d_k=config.d_k,
        n_classes=task.n_classes,
    )


def _param_count(dims: ModelDims) -> int:
    return sum(int(np.prod(shape)) for shape in dims.param_shapes().values())


def estimate_training_bytes(config: TrainConfig) -> int:
    """Bytes training ``config`` side by side needs at its peak (an upper bound): the shared
    initial parameters, per rule the parameters, gradients and optimiser state, and one forward
    and backward pass on the larger of the training batch and the held-out set."""
    task = make_task(config)
    dims = model_dims(config, task)
    itemsize = np.dtype(config.dtype.value).itemsize
    n_params = _param_count(dims)
    optimizer_buffers = 2 if config.optimizer == "adam" else 1
    # The shared initial parameters, then per rule: parameters, gradients, optimiser state.
    params_bytes = itemsize * n_params * (1 + len(config.rules) * (2 + optimizer_buffers))
    rows = max(config.batch, config.eval_size)
    t, h, p = dims.seq_len, dims.heads, len(task.target_positions)  # p: scored query rows
    scores = h * p * t
    per_example = (
        t * dims.input_vocab  # one-hot inputs
        + 2 * (t * dims.d_model + p * dims.hd + 2 * t * dims.hd  # x, q, k and v
               + 3 * scores + 2 * p * dims.hd + p * dims.n_classes)  # and their gradients
    )
    activation_bytes = itemsize * rows * per_example + 8 * 3 * config.eval_size * scores
    return int(params_bytes + activation_bytes)


def check_training_memory(config: TrainConfig, budget: int | None = None) -> None:
    """Raise :class:`~engine.core.memory.MemoryBudgetError` if ``config`` would not fit in
    ``budget`` bytes (``None``: the engine-wide budget)."""
    n_params = _param_count(model_dims(config, make_task(config)))
    check_memory(
        estimate_training_bytes(config),
        f"training {len(config.rules)} rule(s) side by side ({n_params:,} parameters each, "
        f"d_model {config.model_width}, {config.heads} head(s) of d_k {config.d_k}, "
        f"batch {config.batch}, n {config.n})",
        budget,
    )


class TrainingSession:
    """A side-by-side training run of ``config``, advanced one step at a time: the machinery
    behind :func:`~engine.training.trainer.iter_training` and
    :func:`~engine.training.lr_sweep.run_lr_sweep`, which most callers want."""

    def __init__(self, config: TrainConfig) -> None:
        check_training_memory(config)  # refuse before allocating, with a message
        self.config = config
        self.task: Task = make_task(config)
        self.dtype = np.dtype(config.dtype.value)
        self.dims = model_dims(config, self.task)
        init_seq, train_seq, eval_seq = np.random.SeedSequence(config.seed).spawn(3)
        self._train_rng = np.random.default_rng(train_seq)
        self.eval_batch = self.task.sample(np.random.default_rng(eval_seq), config.eval_size)
        self._eval_pb = prepare_batch(self.eval_batch, self.task, self.dtype)
        params0 = init_params(
            self.dims,
            np.random.default_rng(init_seq),
            init_std=config.resolved_init_std,
            channels=self.task.channels,
            dtype=self.dtype,
        )
        self.runs: dict[ScalingRule, _RuleRun] = {}
        for rule in config.rules:
            scaling = Rule.of(rule, config)
            opt = make_optimizer(config.optimizer, params0.flat.size, config.lr, self.dtype)
            self.runs[rule] = _RuleRun(rule, scaling, params0.copy(), config, opt)
        self.step = 0
        self.evaluate()
        for run in self.runs.values():
            if run.last_eval is not None:
                run.initial_eval_loss = run.last_eval.loss

    @property
    def alive(self) -> bool:
        """True while some rule has not diverged."""
        return any(run.diverged_at is None for run in self.runs.values())

    def evaluate(self, stop: Callable[[], bool] | None = None) -> bool:
        """Evaluate every live rule on the held-out set and record it at the current step.

        ``stop`` is checked before each rule; False is returned when it ended the evaluation
        early, which leaves the records incomplete: discard the session then.
        """
        for run in self.runs.values():
            if stop is not None and stop():
                return False
            if run.diverged_at is not None:
                continue
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                try:
                    result = evaluate(run.params, run.scaling, self._eval_pb)
                except ValueError as exc:  # non-finite activations inside attention
                    self._diverge(run, self.step, f"held-out forward failed: {exc}")
                    continue
            run.last_eval = result
            run.eval_steps.append(self.step)
            run.eval_losses.append(result.loss)
            run.eval_accs.append(result.accuracy)
            run.entropies.append(result.entropy)
        return True

    def _diverge(self, run: _RuleRun, step: int, reason: str) -> None:
        run.diverged_at = step
        run.diverge_reason = reason

    def train_step(self, stop: Callable[[], bool] | None = None) -> bool:
        """Advance every live rule by one optimizer step on one shared batch.

        ``stop`` is checked before each rule, so that a stop need not wait for a whole step of
        a large model; False is returned when it ended the step early, which leaves the rules
        at different steps: discard the session then.
        """
        if self.step >= self.config.steps:
            raise RuntimeError(f"all {self.config.steps} steps are done")
        self.step += 1
        step = self.step
        batch = self.task.sample(self._train_rng, self.config.batch)
        pb: PreparedBatch | None = None
        limit_factor = self.config.divergence_factor
        for run in self.runs.values():
            if stop is not None and stop():
                return False
            if run.diverged_at is not None:
                continue
            if pb is None:
                pb = prepare_batch(batch, self.task, self.dtype)
            # Overflow inside a diverging run is expected and detected below; it must not
            # warn (or raise under warnings-as-errors).
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                try:
                    value = loss_and_grad(run.params, run.grads, run.scaling, pb)
                except ValueError as exc:  # attention refuses non-finite q, k, v or logits
                    self._diverge(run, step, f"non-finite activations: {exc}")
                    continue
                run.train_loss = value
                run.loss_history[step - 1] = value
                if not np.isfinite(value):
                    self._diverge(run, step, f"loss is {value}")
                    continue
                if value > limit_factor * run.initial_eval_loss:
                    self._diverge(
                        run, step,
                        f"loss {value:.4g} > {limit_factor:g} × initial loss "
                        f"{run.initial_eval_loss:.4g}",
                    )
                    continue
                flat = run.grads.flat
                run.grad_norm = float(np.sqrt(np.dot(flat, flat)))
                if not np.isfinite(run.grad_norm):
                    self._diverge(run, step, "gradient is not finite")
                    continue
                run.grad_norm_history[step - 1] = run.grad_norm
                run.grads_scale = 1.0
                if self.config.clip_norm is not None:
                    clip_grad_norm(flat, self.config.clip_norm)
                    if run.grad_norm > self.config.clip_norm:
                        run.grads_scale = self.config.clip_norm / run.grad_norm
                run.opt.step(run.params.flat, flat)
                run.steps_done = step
                if not np.isfinite(run.params.flat).all():
                    self._diverge(run, step, "parameters became non-finite")
        return True

    def trained_runs(self) -> tuple[TrainedRun, ...]:
        """Copies of every rule's current parameters, in ``config.rules`` order.

        The session is not thread-safe: call this from the thread that trains it, between
        steps (e.g. after :func:`~engine.training.trainer.iter_training` ended), so that the
        parameters are never read while an update writes them.
        """
        out = []
        for run in self.runs.values():
            ev = run.last_eval
            out.append(TrainedRun(
                rule=run.rule, scaling=run.scaling, params=run.params.copy(), steps=run.steps_done,
                diverged_at=run.diverged_at, diverge_reason=run.diverge_reason,
                eval_loss=float("nan") if ev is None else ev.loss,
                eval_accuracy=float("nan") if ev is None else ev.accuracy,
            ))
        return tuple(out)

    def state(self, run: _RuleRun) -> RuleTrainState:
        """Immutable copy of one rule's state."""
        ev = run.last_eval
        heads = self.dims.heads
        if ev is None:  # the initial held-out forward already failed (absurd init scale)
            p = len(self.task.target_positions)
            ev = EvalResult(float("nan"), float("nan"), np.full(heads, np.nan), float("nan"),
                            np.zeros((heads, p, self.dims.seq_len)))
        ent_hist = np.array(run.entropies, dtype=np.float64).reshape(-1, heads)
        return RuleTrainState(
            rule=run.rule,
            train_loss=run.train_loss,
            eval_loss=ev.loss,
            eval_accuracy=ev.accuracy,
            initial_eval_loss=run.initial_eval_loss,
            grad_norms=MappingProxyType(
                {k: v / run.grads_scale for k, v in run.grads.norms().items()}
                if self.step > 0 else {}
            ),
            grad_norm=run.grad_norm,
            entropy=tuple(float(e) for e in ev.entropy),
            max_abs_logit=ev.max_abs_logit,
            probe_weights=ev.weights,  # already a read-only private copy
            diverged_at=run.diverged_at,
            diverge_reason=run.diverge_reason,
            loss_history=readonly(run.loss_history[: self.step].copy()),
            grad_norm_history=readonly(run.grad_norm_history[: self.step].copy()),
            eval_steps=tuple(run.eval_steps),
            eval_loss_history=tuple(run.eval_losses),
            eval_accuracy_history=tuple(run.eval_accs),
            entropy_history=readonly(ent_hist),
        )

    def snapshot(self, *, done: bool, elapsed_s: float) -> TrainSnapshot:
        """Immutable snapshot of every rule at the current step."""
        rules = {rule: self.state(run) for rule, run in self.runs.items()}
        return TrainSnapshot(
            config=self.config,
            step=self.step,
            total_steps=self.config.steps,
            done=done,
            elapsed_s=elapsed_s,
            steps_per_s=self.step / elapsed_s if elapsed_s > 0 else 0.0,
            rules=MappingProxyType(rules),
            chance_loss=self.task.chance_loss,
            probe_ids=readonly(np.array(self.eval_batch.ids[0])),
            probe_targets=readonly(np.array(self.eval_batch.targets[0])),
            target_positions=self.task.target_positions,
        )
