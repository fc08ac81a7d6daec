"""The forward passes, in numpy float32, that compute what each layer's attention sees.

Each pass follows its Hugging Face ``transformers`` implementation (eager attention) step by
step (the families' pieces are in :mod:`engine.models.blocks`), so the captured q and k are the
ones that enter the model's logits: after the rotary embedding and any QK-norm, with
grouped-query keys repeated to their query heads. :class:`Pass` runs one layer at a time, each
layer's weights converted to float32 only while it runs; the capture runs the layers up to the
last one asked for, the language-model scoring (:mod:`engine.models.scoring`) all of them, with
an intervention's changes to the attention applied by the same code
(:func:`engine.models.attend.attend`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.models.attend import LayerChange, LayerStats, attend
from engine.models.blocks import (
    BLOCKS,
    CaptureCancelled,
    Layer,
    Step,
    activation,
    check_cancel,
    erf,
    rotate,
    split_linear,
)
from engine.models.spec import ModelSpec
from engine.models.weights import WeightStore

__all__ = ["CaptureCancelled", "LayerCapture", "Pass", "erf", "run_forward"]

Qkv = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class LayerCapture:
    """q, k (and v) of one layer, each (heads, n, head_dim) float32; k and v repeated per
    query head."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray | None


def _rotary(spec: ModelSpec, start: int, n: int, local: bool) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of positions start … start + n − 1, (n, turned width), float32 (``local``:
    with the sliding layers' own frequencies; the frequencies those of a text of start + n
    tokens), times LongRoPE's attention factor where it has one."""
    inv = spec.rope_inverse_frequencies(local, start + n)
    angles = np.arange(start, start + n, dtype=np.float64)[:, None] * inv[None, :]
    angles = np.concatenate([angles, angles], axis=-1)
    factor = spec.rope_attention_factor()
    return ((np.cos(angles) * factor).astype(np.float32),
            (np.sin(angles) * factor).astype(np.float32))


class Pass:
    """One model's forward pass, a step at a time: the embeddings, then per layer q, k and v,
    the attention and the rest of the layer.

    ``names(layer, short)`` gives the store's name of a weight (``layer`` −1 for the weights
    outside the layers); ``cancelled()`` is polled between the steps (raising
    :class:`CaptureCancelled`). ``dtype`` is the residual stream's: float32 as the models
    run, float64 to tell a float32 round-off from a real difference (the weights stay the
    float32 ones). ``split_rows``: a one-row stream's products share their output rows over
    the engine's threads (:func:`engine.core.parallel.rows_product`; the same bits), for a
    new token's steps, which run with BLAS on one thread.
    """

    def __init__(self, spec: ModelSpec, store: WeightStore, names: Callable[[int, str], str],
                 cancelled: Callable[[], bool] | None = None,
                 dtype: type[np.floating] = np.float32, *, split_rows: bool = False) -> None:
        # cached: a new token's step looks up every weight's name of every layer again
        self.spec, self.store, self.cancelled = spec, store, cancelled
        self.names = functools.cache(names)
        self.dtype = dtype
        self.block = BLOCKS[spec.family]
        # Gemma's norms scale by 1 + w, unless the weights already hold the 1 (GGUF files).
        self.step = Step(spec, activation(spec.activation), np.float32(spec.residual_scale),
                         self.block.plus_one and not spec.norms_hold_one)
        if split_rows:
            self.step = self.step._replace(linear=split_linear)
        self.group = spec.heads // spec.kv_heads
        self._rotary: dict[tuple[int, int, bool], tuple[np.ndarray, np.ndarray]] = {}

    def top(self) -> Layer:
        """The weights outside the layers, by short name."""
        return Layer(self.store, lambda short: self.names(-1, short), self.cancelled)

    def embed(self, ids: np.ndarray, start: int = 0) -> np.ndarray:
        """The residual stream entering layer 0 for tokens ``ids`` at positions start …"""
        spec = self.spec
        x = self.store.rows(self.names(-1, "embed"), ids)
        positions = np.arange(start, start + len(ids))
        x = self.block.embed(x, self.store, self.top(), self.names, self.step, positions)
        if spec.embed_scale != 1.0:
            x = x * np.float32(spec.embed_scale)
        return x.astype(self.dtype, copy=False)

    def weights(self, i: int) -> Layer:
        """Layer ``i``'s weights, by short name."""
        return Layer(self.store, lambda short: self.names(i, short), self.cancelled)

    def qkv(self, i: int, x: np.ndarray, w: Layer, start: int = 0, *,
            repeat: bool = True) -> Qkv:
        """q, k and v of layer ``i`` for the stream ``x`` of positions start …: rotated, and
        (``repeat``) k and v repeated to their query heads; :meth:`attend` takes either."""
        check_cancel(self.cancelled)
        spec = self.spec
        q, k, v = self.block.qkv(x, w, self.step)
        if spec.rope_theta is not None:
            # Gemma 3's sliding layers turn by their own base; a layer slides iff it has a
            # window (windows.py refuses sliding layers without one).
            local = spec.local_rope_theta is not None and spec.window(i) is not None
            key = (start, len(x), local)
            if key not in self._rotary:
                self._rotary = {key: _rotary(spec, start, len(x), local),
                                **{old: t for old, t in self._rotary.items() if old[0] == 0}}
            cos, sin = self._rotary[key]
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if repeat and self.group > 1:
            k, v = np.repeat(k, self.group, axis=0), np.repeat(v, self.group, axis=0)
        return q, k, v

    def attend(self, i: int, q: np.ndarray, k: np.ndarray, v: np.ndarray, *, offset: int = 0,
               change: LayerChange | None = None,
               stats: list[LayerStats] | None = None) -> np.ndarray:
        """Layer ``i``'s attention output (m, heads·d) (see :func:`attend`)."""
        check_cancel(self.cancelled)
        spec = self.spec
        return attend(q, k, v, spec.scales[i], spec.cap, spec.causal, spec.window(i),
                      offset=offset, change=change, stats=stats)

    def rest(self, x: np.ndarray, attended: np.ndarray, w: Layer) -> np.ndarray:
        """The stream leaving the layer, given its attention output."""
        return self.block.rest(x, attended, w, self.step).astype(self.dtype, copy=False)

    def layer(self, i: int, x: np.ndarray, *, change: LayerChange | None = None,
              stats: list[LayerStats] | None = None) -> np.ndarray:
        """The stream leaving layer ``i`` (no cache: every position at once)."""
        w = self.weights(i)
        q, k, v = self.qkv(i, x, w, repeat=False)
        return self.rest(x, self.attend(i, q, k, v, change=change, stats=stats), w)


def run_forward(
    spec: ModelSpec,
    store: WeightStore,
    names: Callable[[int, str], str],
    ids: np.ndarray,
    layers: Sequence[int],
    *,
    keep_v: bool = False,
    progress: Callable[[int, int], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> dict[int, LayerCapture]:
    """Run ``spec``'s model on token ids ``ids`` and return q, k (and v) of ``layers``.

    ``names(layer, short)`` gives the store's name of a weight (``layer`` −1 for the weights
    outside the layers); ``progress(done, total)`` is called after each layer and
    ``cancelled()`` is polled between the steps (raising :class:`CaptureCancelled`).
    """
    wanted = sorted(set(layers))
    last = wanted[-1]
    run = Pass(spec, store, names, cancelled)
    x = run.embed(ids)
    out: dict[int, LayerCapture] = {}
    for i in range(last + 1):
        check_cancel(cancelled)
        w = run.weights(i)
        q, k, v = run.qkv(i, x, w)
        if i in wanted:
            out[i] = LayerCapture(q=q, k=k, v=v if keep_v else None)
        if i < last:
            x = run.rest(x, run.attend(i, q, k, v), w)
        if progress is not None:
            progress(i + 1, last + 1)
    return out
