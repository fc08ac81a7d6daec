"""The tiny model's shapes and parameters: one flat buffer with named views, and its init.

All parameters live in one flat buffer (:class:`ParamSet`) with named views, so that the
optimizer updates, gradient clipping and finiteness checks are a handful of vectorised calls
on one array instead of a Python loop over matrices; that is most of a step's cost at this size.
W_K and W_V are stored side by side as one (d_model, 2·h·d_k) matrix ``w_kv`` so that their
projections (and weight and input gradients) are single matrix products; ``W_K`` and ``W_V``
are views for reporting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ModelDims", "ParamSet", "init_params"]


@dataclass(frozen=True, slots=True)
class ModelDims:
    """Shapes of the model."""

    input_vocab: int
    seq_len: int
    d_model: int
    heads: int
    d_k: int
    n_classes: int

    @property
    def hd(self) -> int:
        """heads × d_k."""
        return self.heads * self.d_k

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Name → shape of every parameter, in storage order."""
        return {
            "embed": (self.input_vocab, self.d_model),
            "pos": (self.seq_len, self.d_model),
            "w_q": (self.d_model, self.hd),
            "w_kv": (self.d_model, 2 * self.hd),
            "w_o": (self.hd, self.d_model),
            "w_u": (self.d_model, self.n_classes),
            "b_u": (self.n_classes,),
        }


class ParamSet:
    """All parameters (or gradients) of ``dims`` in one contiguous flat buffer of ``dtype``
    with named views; ``flat`` wraps an existing buffer (not copied)."""

    def __init__(self, dims: ModelDims, dtype: Any, flat: np.ndarray | None = None) -> None:
        shapes = dims.param_shapes()
        size = sum(math.prod(s) for s in shapes.values())
        self.dims = dims
        self.flat = np.zeros(size, dtype=dtype) if flat is None else flat
        if self.flat.shape != (size,):
            raise ValueError(f"flat must have shape ({size},), got {self.flat.shape}")
        self.views: dict[str, np.ndarray] = {}
        start = 0
        for name, shape in shapes.items():
            stop = start + math.prod(shape)
            self.views[name] = self.flat[start:stop].reshape(shape)
            start = stop
        # [Embed; Pos] as one (input_vocab + seq_len, d_model) view: they are stored one after
        # the other, and the model computes X = onehot·[Embed; Pos] (see model.prepare_batch).
        n_inputs = dims.input_vocab + dims.seq_len
        self.inputs = self.flat[: n_inputs * dims.d_model].reshape(n_inputs, dims.d_model)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.views[name]

    def copy(self) -> ParamSet:
        """A deep copy."""
        return ParamSet(self.dims, self.flat.dtype, self.flat.copy())

    def zeros_like(self) -> ParamSet:
        """A zero buffer with the same layout (e.g. for gradients)."""
        return ParamSet(self.dims, self.flat.dtype)

    def matrices(self) -> dict[str, np.ndarray]:
        """Views of the reported matrices: W_K and W_V split out of ``w_kv``."""
        hd = self.dims.hd
        kv = self.views["w_kv"]
        return {
            "embed": self.views["embed"],
            "pos": self.views["pos"],
            "W_Q": self.views["w_q"],
            "W_K": kv[:, :hd],
            "W_V": kv[:, hd:],
            "W_O": self.views["w_o"],
            "W_U": self.views["w_u"],
            "b_U": self.views["b_u"],
        }

    def norms(self) -> dict[str, float]:
        """Frobenius norm of every reported matrix."""
        return {
            name: float(np.sqrt(np.sum(np.square(m, dtype=np.float64))))
            for name, m in self.matrices().items()
        }


def init_params(
    dims: ModelDims, rng: np.random.Generator, *, init_std: float, channels: int, dtype: Any
) -> ParamSet:
    """Draw initial parameters.

    Embedding and positional entries ~ N(0, 1/(channels + 1)) so that each component of X has
    unit variance; W_Q, W_K, W_V ~ N(0, init_std²) (1/√d_model gives unit-variance q and k
    components, so that an unscaled logit q·k has variance d_k); W_O ~ N(0, 1/(h·d_k));
    W_U ~ N(0, 1/d_model);
    b_U = 0. Draws are made in float64 and then cast, so float32 and float64 models start from
    the same values.
    """
    params = ParamSet(dims, dtype)
    x_std = 1.0 / math.sqrt(channels + 1)
    stds = {
        "embed": x_std,
        "pos": x_std,
        "w_q": init_std,
        "w_kv": init_std,
        "w_o": 1.0 / math.sqrt(dims.hd),
        "w_u": 1.0 / math.sqrt(dims.d_model),
    }
    for name, std in stds.items():
        view = params[name]
        view[...] = rng.standard_normal(view.shape) * std
    return params
