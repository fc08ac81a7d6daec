"""Optimizers that update one flat parameter buffer in place
(see :class:`engine.training.params.ParamSet`).

Every update is a fixed handful of vectorised numpy calls on preallocated buffers: at the
model sizes of this project a step is overhead-bound, so the number of calls matters more
than the arithmetic.
"""

from __future__ import annotations

import math

import numpy as np

from engine.config.train import OptimizerKind

__all__ = ["SGD", "Adam", "Optimizer", "clip_grad_norm", "make_optimizer"]


class Optimizer:
    """Base class: ``step(params, grads)`` updates ``params`` in place."""

    def __init__(self, size: int, lr: float, dtype: np.dtype) -> None:
        if not (math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a positive finite number, got {lr!r}")
        self.lr = float(lr)
        self.t = 0
        self._tmp = np.empty(size, dtype=dtype)

    def step(self, params: np.ndarray, grads: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError


class SGD(Optimizer):
    """Plain gradient descent: θ ← θ − lr·g."""

    def step(self, params: np.ndarray, grads: np.ndarray) -> None:
        self.t += 1
        np.multiply(grads, params.dtype.type(self.lr), out=self._tmp)
        params -= self._tmp


class Adam(Optimizer):
    """Adam (Kingma & Ba 2015) with bias correction, as ``torch.optim.Adam`` (no weight decay).

    θ ← θ − lr·m̂/(√v̂ + ε) with m̂ = m/(1−β₁ᵗ), v̂ = v/(1−β₂ᵗ). Computed as
    θ ← θ − (lr·√(1−β₂ᵗ)/(1−β₁ᵗ))·m/(√v + ε·√(1−β₂ᵗ)), which is the same number with the
    bias corrections folded into two scalars.
    """

    def __init__(
        self,
        size: int,
        lr: float,
        dtype: np.dtype,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        super().__init__(size, lr, dtype)
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.m = np.zeros(size, dtype=dtype)
        self.v = np.zeros(size, dtype=dtype)

    def step(self, params: np.ndarray, grads: np.ndarray) -> None:
        self.t += 1
        f = params.dtype.type
        b1, b2, tmp = self.beta1, self.beta2, self._tmp
        bc1 = 1.0 - b1**self.t
        bc2_sqrt = math.sqrt(1.0 - b2**self.t)
        self.m *= f(b1)
        np.multiply(grads, f(1.0 - b1), out=tmp)
        self.m += tmp
        self.v *= f(b2)
        np.multiply(grads, grads, out=tmp)
        tmp *= f(1.0 - b2)
        self.v += tmp
        np.sqrt(self.v, out=tmp)
        tmp += f(self.eps * bc2_sqrt)
        np.divide(self.m, tmp, out=tmp)
        tmp *= f(self.lr * bc2_sqrt / bc1)
        params -= tmp


def clip_grad_norm(grads: np.ndarray, max_norm: float) -> float:
    """Scale ``grads`` in place so that its global ℓ₂ norm is at most ``max_norm``.

    Returns the norm before clipping (as ``torch.nn.utils.clip_grad_norm_``).
    """
    norm = float(np.sqrt(np.dot(grads, grads)))
    if norm > max_norm and math.isfinite(norm):
        grads *= grads.dtype.type(max_norm / norm)
    return norm


def make_optimizer(kind: OptimizerKind | str, size: int, lr: float, dtype: np.dtype) -> Optimizer:
    """Return an :class:`Adam` or :class:`SGD` for a flat buffer of ``size`` entries."""
    kind = OptimizerKind(kind)
    if kind is OptimizerKind.ADAM:
        return Adam(size, lr, dtype)
    return SGD(size, lr, dtype)
