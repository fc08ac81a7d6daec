"""The forward passes, in numpy float32, that compute what each layer's attention sees.

Each pass follows its Hugging Face ``transformers`` implementation (eager attention) step by
step, so the captured q and k are the ones that enter the model's logits: after the rotary
embedding and any QK-norm, with grouped-query keys repeated to their query heads. Only the
layers up to the last one asked for are run, each layer's weights converted to float32 only
while it runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from engine.core.plan import layer_mask
from engine.models.spec import ModelSpec
from engine.models.weights import ModelError, WeightStore

__all__ = ["CaptureCancelled", "LayerCapture", "erf", "run_forward"]


class CaptureCancelled(Exception):
    """Raised between two steps of a forward pass when its ``cancelled`` callback says so."""


@dataclass(frozen=True)
class LayerCapture:
    """q, k (and v) of one layer, each (heads, n, head_dim) float32; k and v repeated per
    query head."""

    q: np.ndarray
    k: np.ndarray
    v: np.ndarray | None


def erf(x: np.ndarray) -> np.ndarray:
    """The error function, to an absolute error below 1.2e-7 (Numerical Recipes' erfc
    Chebyshev fit), in float64: numpy has none, and BERT's GELU needs the exact one."""
    z = np.abs(x.astype(np.float64))
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0)


def _activation(name: str) -> Callable[[np.ndarray], np.ndarray]:
    def gelu(x: np.ndarray) -> np.ndarray:
        return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(np.float32)

    def gelu_tanh(x: np.ndarray) -> np.ndarray:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + np.tanh(inner))

    def silu(x: np.ndarray) -> np.ndarray:
        # x·σ(x) written with tanh: exp(-x) would overflow for very negative x.
        return x * (0.5 + 0.5 * np.tanh(0.5 * x))

    table = {"gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh,
             "gelu_fast": gelu_tanh, "silu": silu, "swish": silu}
    if name not in table:
        raise ModelError(f"the activation '{name}' is not supported; supported: "
                         f"{', '.join(table)}")
    return table[name]


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * w + b


def _rms_norm(x: np.ndarray, w: np.ndarray, eps: float, plus_one: bool = False) -> np.ndarray:
    var = np.mean(x * x, axis=-1, keepdims=True)
    y = x / np.sqrt(var + np.float32(eps))
    return y * (np.float32(1.0) + w if plus_one else w)


def _softmax(z: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in place (``z`` is a scratch array of the caller's)."""
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def _heads(x: np.ndarray, count: int, dim: int) -> np.ndarray:
    """(n, count·dim) → (count, n, dim)."""
    return np.ascontiguousarray(x.reshape(x.shape[0], count, dim).transpose(1, 0, 2))


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x turned by cos and sin; with partial rotary (cos narrower than x) only its first
    dimensions turn and the rest pass unchanged, as transformers' apply_rotary_pos_emb."""
    width = cos.shape[-1]
    if width < x.shape[-1]:
        return np.concatenate([_rotate(x[..., :width], cos, sin), x[..., width:]], axis=-1)
    half = width // 2
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


class _Layer:
    """The float32 weights of one layer, read by short names.

    Reading a weight is where the forward's steps meet (each is followed by its matrix
    product), so a cancel is checked there: a large model's layer takes seconds, and closing
    the window must not wait for a whole one.
    """

    def __init__(self, store: WeightStore, names: Callable[[str], str],
                 cancelled: Callable[[], bool] | None = None) -> None:
        self._store, self._names, self._cancelled = store, names, cancelled

    def __call__(self, short: str) -> np.ndarray:
        _check(self._cancelled)
        return self._store.get(self._names(short))

    def optional(self, short: str) -> np.ndarray | None:
        name = self._names(short)
        return self._store.get(name) if name in self._store.names else None


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    y = x @ w.T
    return y if b is None else y + b


def _attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, cap: float | None,
            causal: bool, window: int | None = None) -> np.ndarray:
    """softmax(c·q·kᵀ [soft-capped], masked) v for (heads, n, d) inputs; returns (n, heads·d).

    ``window`` (causal only): query i sees keys i − window + 1 … i, the mask of
    :func:`engine.core.plan.layer_mask` that the app's own attention views apply too."""
    z = q @ k.transpose(0, 2, 1)
    z *= np.float32(scale)
    if cap is not None:
        z /= np.float32(cap)
        np.tanh(z, out=z)
        z *= np.float32(cap)
    mask = layer_mask(z.shape[-1], causal, window)
    if mask is not None:  # the keys a query may not see: -inf, weight 0 (in place)
        seen = np.tri(z.shape[-1], dtype=bool) if isinstance(mask, str) else mask
        z[:, ~seen] = -np.inf
    out = _softmax(z) @ v
    return out.transpose(1, 0, 2).reshape(q.shape[1], -1)


def _rotary(spec: ModelSpec, n: int, local: bool) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of positions 0 … n − 1, (n, turned width), float32 (``local``: with the
    sliding layers' own frequencies), times LongRoPE's attention factor where it has one."""
    inv = spec.rope_inverse_frequencies(local, n)
    angles = np.arange(n, dtype=np.float64)[:, None] * inv[None, :]
    angles = np.concatenate([angles, angles], axis=-1)
    factor = spec.rope_attention_factor()
    return ((np.cos(angles) * factor).astype(np.float32),
            (np.sin(angles) * factor).astype(np.float32))


def _check(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise CaptureCancelled


class _Step(NamedTuple):
    """What one layer's pieces read beyond its weights: the spec, the activation, the
    residual branches' multiplier and whether norms scale by 1 + w."""

    spec: ModelSpec
    act: Callable[[np.ndarray], np.ndarray]
    residual: np.float32
    plus_one: bool


Qkv = tuple[np.ndarray, np.ndarray, np.ndarray]


def _embed_bert(x: np.ndarray, store: WeightStore, top: _Layer, names: Callable[[int, str], str],
                s: _Step) -> np.ndarray:
    n = len(x)
    x = x + store.rows(names(-1, "pos"), np.arange(n))
    type_name = names(-1, "type")
    if type_name in store.names:
        x = x + store.rows(type_name, np.zeros(n, dtype=np.int64))
    return _layer_norm(x, top("embed_norm.w"), top("embed_norm.b"), s.spec.eps)


def _embed_gpt2(x: np.ndarray, store: WeightStore, top: _Layer,
                names: Callable[[int, str], str], s: _Step) -> np.ndarray:
    return x + store.rows(names(-1, "pos"), np.arange(len(x)))


def _embed_none(x: np.ndarray, store: WeightStore, top: _Layer,
                names: Callable[[int, str], str], s: _Step) -> np.ndarray:
    return x


def _qkv_bert(x: np.ndarray, w: _Layer, s: _Step) -> Qkv:
    heads, hd = s.spec.heads, s.spec.head_dim
    return (_heads(_linear(x, w("q.w"), w("q.b")), heads, hd),
            _heads(_linear(x, w("k.w"), w("k.b")), heads, hd),
            _heads(_linear(x, w("v.w"), w("v.b")), heads, hd))


def _qkv_gpt2(x: np.ndarray, w: _Layer, s: _Step) -> Qkv:
    spec, hd = s.spec, s.spec.head_dim
    h = _layer_norm(x, w("norm1.w"), w("norm1.b"), spec.eps)
    qkv = h @ w("qkv.w") + w("qkv.b")  # Conv1D: (in, 3·hidden), no transpose
    width = spec.heads * hd
    q, k, v = (_heads(qkv[:, j * width:(j + 1) * width], spec.heads, hd) for j in range(3))
    return q, k, v


def _qkv_olmo2(x: np.ndarray, w: _Layer, s: _Step) -> Qkv:
    # No norm first; QK-norm over all heads, then split.
    spec, hd = s.spec, s.spec.head_dim
    q = _rms_norm(_linear(x, w("q.w"), w.optional("q.b")), w("q_norm.w"), spec.eps)
    k = _rms_norm(_linear(x, w("k.w"), w.optional("k.b")), w("k_norm.w"), spec.eps)
    q, k = _heads(q, spec.heads, hd), _heads(k, spec.kv_heads, hd)
    return q, k, _heads(_linear(x, w("v.w"), w.optional("v.b")), spec.kv_heads, hd)


def _qkv_llama(x: np.ndarray, w: _Layer, s: _Step) -> Qkv:
    spec, hd = s.spec, s.spec.head_dim
    if spec.fused:  # Phi-3: one matrix gives q, then k, then v
        qkv = _linear(_rms_norm(x, w("norm1.w"), spec.eps), w("qkv.w"), None)
        q_end, k_end = spec.heads * hd, (spec.heads + spec.kv_heads) * hd
        return (_heads(qkv[:, :q_end], spec.heads, hd),
                _heads(qkv[:, q_end:k_end], spec.kv_heads, hd),
                _heads(qkv[:, k_end:], spec.kv_heads, hd))
    h = _rms_norm(x, w("norm1.w"), spec.eps, s.plus_one)
    q = _heads(_linear(h, w("q.w"), w.optional("q.b")), spec.heads, hd)
    k = _heads(_linear(h, w("k.w"), w.optional("k.b")), spec.kv_heads, hd)
    v = _heads(_linear(h, w("v.w"), w.optional("v.b")), spec.kv_heads, hd)
    if spec.qk_norm:
        q = _rms_norm(q, w("q_norm.w"), spec.eps, s.plus_one)
        k = _rms_norm(k, w("k_norm.w"), spec.eps, s.plus_one)
    return q, k, v


def _rest_bert(x: np.ndarray, attended: np.ndarray, w: _Layer, s: _Step) -> np.ndarray:
    eps = s.spec.eps
    x = _layer_norm(_linear(attended, w("o.w"), w("o.b")) + x, w("norm1.w"), w("norm1.b"), eps)
    inner = s.act(_linear(x, w("up.w"), w("up.b")))
    return _layer_norm(_linear(inner, w("down.w"), w("down.b")) + x, w("norm2.w"),
                       w("norm2.b"), eps)


def _rest_gpt2(x: np.ndarray, attended: np.ndarray, w: _Layer, s: _Step) -> np.ndarray:
    x = x + attended @ w("o.w") + w("o.b")
    h = _layer_norm(x, w("norm2.w"), w("norm2.b"), s.spec.eps)
    return x + s.act(h @ w("up.w") + w("up.b")) @ w("down.w") + w("down.b")


def _rest_gemma2(x: np.ndarray, attended: np.ndarray, w: _Layer, s: _Step) -> np.ndarray:
    eps, plus_one = s.spec.eps, s.plus_one
    h = _linear(attended, w("o.w"), w.optional("o.b"))
    x = x + _rms_norm(h, w("post_attn_norm.w"), eps, plus_one)
    h = _rms_norm(x, w("pre_ff_norm.w"), eps, plus_one)
    h = _linear(s.act(_linear(h, w("gate.w"), None)) * _linear(h, w("up.w"), None),
                w("down.w"), None)
    return x + _rms_norm(h, w("post_ff_norm.w"), eps, plus_one)


def _rest_olmo2(x: np.ndarray, attended: np.ndarray, w: _Layer, s: _Step) -> np.ndarray:
    eps = s.spec.eps
    h = _linear(attended, w("o.w"), w.optional("o.b"))
    x = x + _rms_norm(h, w("post_attn_norm.w"), eps)
    h = _linear(s.act(_linear(x, w("gate.w"), None)) * _linear(x, w("up.w"), None),
                w("down.w"), None)
    return x + _rms_norm(h, w("post_ff_norm.w"), eps)


def _rest_llama(x: np.ndarray, attended: np.ndarray, w: _Layer, s: _Step) -> np.ndarray:
    residual = s.residual
    x = x + _linear(attended, w("o.w"), w.optional("o.b")) * residual
    h = _rms_norm(x, w("norm2.w"), s.spec.eps)
    if s.spec.fused:  # Phi-3's gate_up_proj: the gate's rows, then the up's
        gate, up = np.split(_linear(h, w("gate_up.w"), None), 2, axis=-1)
    else:
        gate, up = _linear(h, w("gate.w"), None), _linear(h, w("up.w"), None)
    return x + _linear(s.act(gate) * up, w("down.w"), None) * residual


class _Block(NamedTuple):
    """One family's pieces of the pass: what it adds to the token embeddings, how a layer
    makes q, k and v from its input, and the rest of the layer after attention;
    ``plus_one``: its norms scale by 1 + w (unless the weights already hold the 1)."""

    embed: Callable[..., np.ndarray]
    qkv: Callable[[np.ndarray, _Layer, _Step], Qkv]
    rest: Callable[[np.ndarray, np.ndarray, _Layer, _Step], np.ndarray]
    plus_one: bool = False


#: Each ModelSpec.family's pieces. Families that differ from these only in settings (Mistral,
#: Qwen, Granite, Phi-3, Gemma 3) are rows of them: see engine.models.families.
BLOCKS: dict[str, _Block] = {
    "bert": _Block(_embed_bert, _qkv_bert, _rest_bert),
    "gpt2": _Block(_embed_gpt2, _qkv_gpt2, _rest_gpt2),
    "llama": _Block(_embed_none, _qkv_llama, _rest_llama),
    "gemma2": _Block(_embed_none, _qkv_llama, _rest_gemma2, plus_one=True),
    "olmo2": _Block(_embed_none, _qkv_olmo2, _rest_olmo2),
}


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
    n = len(ids)
    top = _Layer(store, lambda short: names(-1, short))
    x = store.rows(names(-1, "embed"), ids)
    block = BLOCKS[spec.family]
    # Gemma's norms scale by 1 + w, unless the weights already hold the 1 (GGUF files).
    step = _Step(spec, _activation(spec.activation), np.float32(spec.residual_scale),
                 block.plus_one and not spec.norms_hold_one)
    x = block.embed(x, store, top, names, step)
    if spec.embed_scale != 1.0:
        x = x * np.float32(spec.embed_scale)
    rotary = {local: _rotary(spec, n, local) for local in (False, True)
              if spec.rope_theta is not None
              and (not local or spec.local_rope_theta is not None)}
    group = spec.heads // spec.kv_heads
    out: dict[int, LayerCapture] = {}
    for i in range(last + 1):
        _check(cancelled)
        w = _Layer(store, lambda short, i=i: names(i, short), cancelled)
        q, k, v = block.qkv(x, w, step)
        if rotary:
            # Gemma 3's sliding layers turn by their own base; a layer slides iff it has a
            # window (windows.py refuses sliding layers without one).
            cos, sin = rotary[True in rotary and spec.window(i) is not None]
            q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if group > 1:
            k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)
        if i in wanted:
            out[i] = LayerCapture(q=q, k=k, v=v if keep_v else None)
        if i == last:
            if progress is not None:
                progress(i + 1, last + 1)
            break
        _check(cancelled)
        attended = _attend(q, k, v, spec.scales[i], spec.cap, spec.causal, spec.window(i))
        x = block.rest(x, attended, w, step)
        x = x.astype(np.float32, copy=False)
        if progress is not None:
            progress(i + 1, last + 1)
    return out
