"""Train the tiny attention model for several scaling rules side by side.

Every rule starts from the *same* initial weights and sees the *same* batches; only the scaling
rule differs. A run whose loss becomes non-finite or explodes (training loss above
``divergence_factor`` × its initial held-out loss), or whose gradients or parameters become
non-finite, is marked "diverged at step k" and stops; the other rules continue.

:func:`iter_training` yields immutable :class:`TrainSnapshot` objects every
``config.snapshot_every`` steps and at least every ~30 ms, checks ``cancel`` after every step,
and is deterministic for a seed (the steps at which time-triggered snapshots evaluate the
held-out set do not influence training).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from engine.config import ScalingRule
from engine.config.train import TrainConfig
from engine.core.memory import check_memory
from engine.training.model import (
    EvalResult,
    ModelDims,
    ParamSet,
    PreparedBatch,
    RuleSpec,
    evaluate,
    init_params,
    loss_and_grad,
    prepare_batch,
)
from engine.training.optim import Optimizer, clip_grad_norm, make_optimizer
from engine.training.tasks import Task, make_task

__all__ = [
    "RuleTrainState",
    "TrainSnapshot",
    "TrainingSession",
    "check_training_memory",
    "estimate_training_bytes",
    "iter_training",
    "run_training",
    "wait_for_gate",
]

#: A snapshot is emitted at the latest this long after the previous one (seconds).
SNAPSHOT_INTERVAL_S = 0.03

#: How often a run held by a cleared ``step_gate`` checks its ``cancel`` event (seconds).
GATE_POLL_S = 0.01

#: Below this many multiply-adds in the largest matrix product of a step, BLAS runs on one
#: thread. At the default size (64·17·64·128 ≈ 9e6) a second OpenBLAS thread costs more in
#: hand-off and spinning than it saves, and when the other core is busy it made every product
#: 5-10× slower in measurements on the 2-core development machine.
SINGLE_THREAD_MACS = 5e7

_controller: object | None = None


def blas_threads(config: TrainConfig) -> contextlib.AbstractContextManager[object]:
    """Context manager that limits BLAS to one thread for small models.

    Uses :mod:`threadpoolctl` when it is installed (otherwise does nothing). The limit is
    process-wide, so callers hold it only while computing, never across a ``yield``.
    """
    global _controller
    task = make_task(config)
    macs = config.batch * task.seq_len * config.model_width * 2 * config.head_dims
    if macs >= SINGLE_THREAD_MACS:
        return contextlib.nullcontext()
    if _controller is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return contextlib.nullcontext()
        _controller = ThreadpoolController()
    return _controller.limit(limits=1, user_api="blas")  # type: ignore[attr-defined]


def _readonly(a: np.ndarray) -> np.ndarray:
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


class _RuleRun:
    """Mutable training state of one rule (private to the session)."""

    def __init__(self, rule: ScalingRule, spec: RuleSpec, params: ParamSet, config: TrainConfig,
                 opt: Optimizer) -> None:
        self.rule = rule
        self.spec = spec
        self.params = params
        self.grads = params.zeros_like()
        self.opt = opt
        self.diverged_at: int | None = None
        self.diverge_reason = ""
        self.train_loss = float("nan")
        self.grad_norm = float("nan")
        # run.grads holds the latest gradient times grads_scale (< 1 after clipping); the
        # per-matrix norms are computed from it only when a snapshot asks for them.
        self.grads_scale = 1.0
        self.initial_eval_loss = float("nan")
        self.loss_history = np.full(config.steps, np.nan)
        self.last_eval: EvalResult | None = None
        self.eval_steps: list[int] = []
        self.eval_losses: list[float] = []
        self.eval_accs: list[float] = []
        self.max_logits: list[float] = []
        self.entropies: list[np.ndarray] = []


def _model_dims(config: TrainConfig, task: Task) -> ModelDims:
    return ModelDims(
        input_vocab=task.input_vocab,
        seq_len=task.seq_len,
        d_model=config.model_width,
        heads=config.heads,
        d_k=config.d_k,
        n_classes=task.n_classes,
    )


def estimate_training_bytes(config: TrainConfig) -> int:
    """Estimate the peak memory of training ``config`` side by side (an upper bound).

    Counts the shared initial parameters, and per rule the parameters, their gradients and the
    optimiser's state (Adam: two moments; SGD: one buffer), plus the activations of one forward
    and backward pass on the larger of the training batch and the held-out set: the one-hot
    inputs, x, q, k, v, the (batch, heads, targets, n) logits, exponentials and weights, the head
    outputs, the class logits, their gradients, and the float64 entropy terms of an
    evaluation.

    Parameters
    ----------
    config
        The training configuration.

    Returns
    -------
    int
        Bytes.
    """
    task = make_task(config)
    dims = _model_dims(config, task)
    itemsize = np.dtype(config.dtype.value).itemsize
    n_params = sum(int(np.prod(shape)) for shape in dims.param_shapes().values())
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
    """Raise :class:`~engine.core.attention.MemoryBudgetError` if ``config`` would not fit.

    Parameters
    ----------
    config
        The training configuration.
    budget
        Bytes; ``None`` uses the engine-wide budget (:func:`engine.get_memory_budget`).
    """
    task = make_task(config)
    n_params = sum(int(np.prod(s)) for s in _model_dims(config, task).param_shapes().values())
    check_memory(
        estimate_training_bytes(config),
        f"training {len(config.rules)} rule(s) side by side ({n_params:,} parameters each, "
        f"d_model {config.model_width}, {config.heads} head(s) of d_k {config.d_k}, "
        f"batch {config.batch}, n {config.n})",
        budget,
    )


class TrainingSession:
    """A side-by-side training run, advanced one step at a time.

    This is the machinery behind :func:`iter_training` and
    :func:`engine.training.lr_sweep.run_lr_sweep`;
    most callers want those.

    Parameters
    ----------
    config
        What to train.
    """

    def __init__(self, config: TrainConfig) -> None:
        check_training_memory(config)  # refuse before allocating, with a message
        self.config = config
        self.task: Task = make_task(config)
        self.dtype = np.dtype(config.dtype.value)
        self.dims = _model_dims(config, self.task)
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
            spec = RuleSpec(
                rule=rule,
                temperature=config.temperature if config.temperature is not None
                else float(np.sqrt(config.d_k)),
                gain=config.gain,
                cap=config.cap,
            )
            opt = make_optimizer(config.optimizer, params0.flat.size, config.lr, self.dtype)
            self.runs[rule] = _RuleRun(rule, spec, params0.copy(), config, opt)
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

        Parameters
        ----------
        stop
            Checked before each rule; when it returns True the evaluation ends early, the
            session's records are incomplete and the session must be discarded.

        Returns
        -------
        bool
            False if ``stop`` ended it early.
        """
        for run in self.runs.values():
            if stop is not None and stop():
                return False
            if run.diverged_at is not None:
                continue
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                try:
                    result = evaluate(run.params, run.spec, self._eval_pb)
                except ValueError as exc:  # non-finite activations inside attention
                    self._diverge(run, self.step, f"held-out forward failed: {exc}")
                    continue
            run.last_eval = result
            run.eval_steps.append(self.step)
            run.eval_losses.append(result.loss)
            run.eval_accs.append(result.accuracy)
            run.max_logits.append(result.max_abs_logit)
            run.entropies.append(result.entropy)
        return True

    def _diverge(self, run: _RuleRun, step: int, reason: str) -> None:
        run.diverged_at = step
        run.diverge_reason = reason

    def train_step(self, stop: Callable[[], bool] | None = None) -> bool:
        """Advance every live rule by one optimizer step on one shared batch.

        Parameters
        ----------
        stop
            Checked before each rule, so that a stop request need not wait for the whole step
            of a large model (seconds, times the number of rules). When it returns True the
            step ends early, leaving the rules at different steps: discard the session.

        Returns
        -------
        bool
            False if ``stop`` ended the step early.
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
                    value = loss_and_grad(run.params, run.grads, run.spec, pb)
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
                run.grads_scale = 1.0
                if self.config.clip_norm is not None:
                    clip_grad_norm(flat, self.config.clip_norm)
                    if run.grad_norm > self.config.clip_norm:
                        run.grads_scale = self.config.clip_norm / run.grad_norm
                run.opt.step(run.params.flat, flat)
                if not np.isfinite(run.params.flat).all():
                    self._diverge(run, step, "parameters became non-finite")
        return True

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
            loss_history=_readonly(run.loss_history[: self.step].copy()),
            eval_steps=tuple(run.eval_steps),
            eval_loss_history=tuple(run.eval_losses),
            eval_accuracy_history=tuple(run.eval_accs),
            max_logit_history=tuple(run.max_logits),
            entropy_history=_readonly(ent_hist),
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
            probe_ids=_readonly(np.array(self.eval_batch.ids[0])),
            probe_targets=_readonly(np.array(self.eval_batch.targets[0])),
            target_positions=self.task.target_positions,
        )


def wait_for_gate(
    step_gate: threading.Event | None, cancel: threading.Event | None
) -> bool:
    """Block while ``step_gate`` is cleared; False if ``cancel`` got set meanwhile.

    A GUI clears the gate while it updates and paints its views so that the training thread
    does not compete with it for the interpreter lock (the trainer is many small numpy calls,
    each taking the GIL). The wait polls ``cancel`` every 10 ms, so Stop still ends a gated run
    promptly even if the gate were never set again.
    """
    if step_gate is None:
        return True
    while not step_gate.wait(GATE_POLL_S):
        if cancel is not None and cancel.is_set():
            return False
    return True


def iter_training(
    config: TrainConfig,
    cancel: threading.Event | None = None,
    *,
    step_gate: threading.Event | None = None,
) -> Iterator[TrainSnapshot]:
    """Train every rule of ``config`` side by side, yielding snapshots.

    Parameters
    ----------
    config
        What to train.
    cancel
        When set, the generator returns after the current step (no further snapshot).
    step_gate
        Optional "may step" flag, waited for before each optimisation step: a GUI clears it
        while it paints so the trainer does not compete for the interpreter lock, and sets it
        again afterwards. ``cancel`` is still honoured while the gate is cleared (see
        :func:`wait_for_gate`). None: never wait.

    Yields
    ------
    TrainSnapshot
        First at step 0 (initial held-out metrics), then every ``config.snapshot_every``
        steps or after at most ~30 ms, and finally with ``done=True`` after the last step
        (or as soon as every rule has diverged).
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, got {type(config).__name__}")
    if cancel is not None and cancel.is_set():
        return
    stop = cancel.is_set if cancel is not None else None
    start = time.perf_counter()
    with blas_threads(config):
        session = TrainingSession(config)
        snap = session.snapshot(done=False, elapsed_s=time.perf_counter() - start)
    yield snap
    every = config.snapshot_every
    report_cost = 0.0  # duration of the last evaluation + snapshot, budgeted into the interval
    while True:
        last_yield = time.perf_counter()
        with blas_threads(config):
            while True:
                if cancel is not None and cancel.is_set():
                    return
                if step_gate is not None and not step_gate.is_set():
                    t_gate = time.perf_counter()
                    if not wait_for_gate(step_gate, cancel):
                        return
                    # Time held at the gate is the GUI's, not training's: it must not trigger
                    # an extra time-based snapshot (and evaluation) right after every paint.
                    last_yield += time.perf_counter() - t_gate
                if not session.train_step(stop):
                    return
                done = session.step >= config.steps or not session.alive
                if (
                    done
                    or session.step % every == 0
                    or time.perf_counter() - last_yield + report_cost >= SNAPSHOT_INTERVAL_S
                ):
                    break
            t_report = time.perf_counter()
            if not session.evaluate(stop):
                return
            snap = session.snapshot(done=done, elapsed_s=time.perf_counter() - start)
            report_cost = time.perf_counter() - t_report
        yield snap
        if done:
            return


def run_training(config: TrainConfig, cancel: threading.Event | None = None) -> TrainSnapshot:
    """Train to the end and return the last snapshot.

    Raises
    ------
    RuntimeError
        If ``cancel`` was set before the run finished.
    """
    last: TrainSnapshot | None = None
    for snap in iter_training(config, cancel):
        last = snap
    if last is None or not last.done:
        raise RuntimeError("training was cancelled")
    return last
