"""What the backward pass sees: the tour's numbers about ∂L/∂Q and the other weights' gradients.

For one row with weights p and upstream gradient g = ∂L/∂p (g = dO·Vᵀ), the logits s = c·q·K
give ``∂L/∂q = c·(J·g)·K`` with the softmax Jacobian ``J = diag(p) − ppᵀ``. Three consequences
are computed here with the engine's own backward pass and optimizers:

* :func:`backward_formula_error` checks the engine's ∂L/∂Q against ``c·(J·g)·K`` written out.
* :func:`logit_step_ratio`: give an unscaled model and a scaled one (scale c) the *same* logits
  (the unscaled queries are ``c·q``), take one optimizer step on the queries and compare how far
  the logits move. The gradient carries one factor c and the logit another, so the ratio is
  ``1/c²`` under SGD and ``1/c`` under Adam (whose first step has size lr whatever the
  gradient's scale).
* :func:`train_grad_ratio`: in the training model at initialisation, the gradient norm of one
  weight matrix without scaling divided by its norm under a rule, on one shared batch. W_V and
  W_O do not pass through J (∂L/∂V = Pᵀ·dO, ∂L/∂W_O = Oᵀ·dY), so saturated rows do not starve
  them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from engine.config import AttentionConfig, MaskKind, ScalingRule, rules_where
from engine.config.train import TrainConfig

__all__ = [
    "SCALAR_RULES",
    "TRAIN_GRAD_PARAMS",
    "backward_formula_error",
    "logit_step_ratio",
    "seeded_head",
    "train_grad_ratio",
]

#: Rules whose logits are c·q·k with a scalar c (the only ones ∂L/∂Q = c·(J·g)·K describes).
SCALAR_RULES = rules_where("scalar")

#: Weight matrices of the training model whose gradient norms :func:`train_grad_ratio` compares.
TRAIN_GRAD_PARAMS = ("w_q", "w_k", "w_v", "w_o")


def _rule(config: AttentionConfig, rule: ScalingRule) -> Any:
    """``rule`` with ``config``'s parameters (an :class:`~engine.core.scaling.Rule`)."""
    from engine.core.scaling import Rule

    return Rule.of(rule, config)


def _scale(config: AttentionConfig, rule: ScalingRule) -> float:
    if rule not in SCALAR_RULES:
        raise ValueError(f"the backward-pass quantities need a rule with logits c·q·k "
                         f"({', '.join(r.value for r in SCALAR_RULES)}), got {rule.value!r}")
    return _rule(config, rule).scale(config.d_k)


def seeded_head(config: AttentionConfig, mask_ok: bool = False) -> tuple[np.ndarray, ...]:
    """Head 0's q, k of ``config`` with a seeded value matrix and upstream gradient dO
    (``mask_ok``: ``config`` may have a mask, which the caller applies)."""
    from engine.analysis.sampling import draw_qk

    if config.mask is not MaskKind.NONE and not mask_ok:
        raise ValueError("the backward-pass quantities are computed without a mask")
    q, k = draw_qk(config)
    rng = np.random.default_rng(config.seed)
    v = rng.standard_normal(q.shape[1:])
    upstream = rng.standard_normal(q.shape[1:])
    return q[0], k[0], v, upstream


def backward_formula_error(config: AttentionConfig, rule: ScalingRule) -> float:
    """Largest |∂L/∂Q(engine) − c·(J·g)·K|, relative to the largest |∂L/∂Q|.

    ``L = Σ O∘dO`` on head 0 of ``config`` (seeded V and dO); ``g = dO·Vᵀ`` per row and
    ``J·g = p∘(g − p·g)`` (J applied without forming it).
    """
    from engine.core.attention import scaled_dot_product_attention_backward
    from engine.core.softmax import softmax

    c = _scale(config, rule)
    q, k, v, upstream = seeded_head(config)
    # Seeded normals are finite by construction: the input check would only cost time.
    grad_q = scaled_dot_product_attention_backward(
        q, k, v, upstream, rule=_rule(config, rule), check_finite=False)[0]
    p = softmax(c * (q @ k.T))
    g = upstream @ v.T
    jg = p * (g - np.sum(p * g, axis=-1, keepdims=True))
    formula = c * (jg @ k)
    return float(np.max(np.abs(grad_q - formula)) / np.max(np.abs(grad_q)))


def logit_step_ratio(config: AttentionConfig, rule: ScalingRule, optimizer: str) -> float:
    """RMS logit change of one optimizer step on the queries: unscaled over ``rule``.

    Both models start from the same logits ``c·q·Kᵀ`` (the unscaled model's queries are
    ``c·q``), so p, J and g are identical; only the factor c differs. Keys, values and dO are
    fixed; the step is the training model's own optimizer (``"adam"`` or ``"sgd"``, lr 1e-3),
    and the logit change is exact: ``ΔS = c·ΔQ·Kᵀ``.
    """
    from engine.core.attention import scaled_dot_product_attention_backward
    from engine.training.optim import make_optimizer

    c = _scale(config, rule)
    q, k, v, upstream = seeded_head(config)
    changes = []
    # (queries, rule, factor of the logits): the same logits c·q·Kᵀ in both models.
    for queries, model_rule, factor in ((c * q, ScalingRule.NONE, 1.0), (q, rule, c)):
        grad_q = scaled_dot_product_attention_backward(
            queries, k, v, upstream, rule=_rule(config, model_rule), check_finite=False)[0]
        flat = np.array(queries, dtype=np.float64).ravel()
        before = flat.copy()
        make_optimizer(optimizer, flat.size, 1e-3, np.dtype(np.float64)).step(
            flat, grad_q.ravel())
        delta_s = factor * ((flat - before).reshape(q.shape) @ k.T)
        changes.append(math.sqrt(float(np.mean(delta_s * delta_s))))
    return changes[0] / changes[1]


def train_grad_ratio(config: AttentionConfig, rule: ScalingRule, param: str,
                     train: dict | None = None) -> float:
    """‖∂L/∂W‖ without scaling over ‖∂L/∂W‖ under ``rule``, at initialisation, one batch.

    The training model (TrainConfig defaults with ``config``'s d_k and seed, then ``train``)
    is initialised once; both rules see those weights and the same training batch, drawn as a
    training session draws its first one.
    """
    from engine.training.model import loss_and_grad, prepare_batch
    from engine.training.params import init_params
    from engine.training.session import model_dims
    from engine.training.tasks import make_task

    if param not in TRAIN_GRAD_PARAMS:
        raise ValueError(f"param must be one of {', '.join(TRAIN_GRAD_PARAMS)}, got {param!r}")
    _scale(config, rule)
    cfg = TrainConfig(**{"d_k": config.d_k, "seed": config.seed, **dict(train or {})})
    task = make_task(cfg)
    dims = model_dims(cfg, task)
    init_seq, train_seq, _ = np.random.SeedSequence(cfg.seed).spawn(3)
    params = init_params(dims, np.random.default_rng(init_seq), init_std=cfg.resolved_init_std,
                         channels=task.channels, dtype=np.float64)
    batch = prepare_batch(task.sample(np.random.default_rng(train_seq), cfg.batch), task,
                          np.float64)
    norms = []
    for model_rule in (ScalingRule.NONE, rule):
        grads = params.zeros_like()
        loss_and_grad(params, grads, _rule(config, model_rule), batch)
        norms.append(float(np.linalg.norm(grads.matrices()[param.upper()])))
    return norms[0] / norms[1]
