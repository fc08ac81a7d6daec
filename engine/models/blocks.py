"""The pieces of each family's forward pass, in numpy float32 (engine.models.forward runs them).

Each piece follows its Hugging Face ``transformers`` implementation (eager attention) step by
step: what a family adds to the token embeddings, how a layer makes q, k and v from its input,
and the rest of the layer after attention; :data:`BLOCKS` names them per family.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from engine.core.parallel import rows_product
from engine.models.spec import ModelSpec
from engine.models.weights import ModelError, WeightStore

__all__ = ["BLOCKS", "CaptureCancelled", "Layer", "Step", "activation", "check_cancel", "erf",
           "layer_norm", "rms_norm", "rotate", "split_linear"]


class CaptureCancelled(Exception):
    """Raised between two steps of a forward pass when its ``cancelled`` callback says so."""


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


def activation(name: str) -> Callable[[np.ndarray], np.ndarray]:
    def gelu(x: np.ndarray) -> np.ndarray:
        return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(np.float32)

    def gelu_tanh(x: np.ndarray) -> np.ndarray:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + np.tanh(inner))

    def silu(x: np.ndarray) -> np.ndarray:
        # x·σ(x) written with tanh: exp(-x) would overflow for very negative x.
        # in place on one temporary: the same operations, bit for bit, as
        # x * (0.5 + 0.5 * tanh(0.5 * x))
        out = 0.5 * x
        np.tanh(out, out=out)
        out *= 0.5
        out += 0.5
        out *= x
        return out

    table = {"gelu": gelu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh,
             "gelu_fast": gelu_tanh, "silu": silu, "swish": silu}
    if name not in table:
        raise ModelError(f"the activation '{name}' is not supported; supported: "
                         f"{', '.join(table)}")
    return table[name]


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    return centred / np.sqrt(var + np.float32(eps)) * w + b


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float, plus_one: bool = False) -> np.ndarray:
    # np.mean's own sum and quotient, without its Python layer (a new token's step calls
    # this twice a layer)
    var = np.add.reduce(x * x, axis=-1, keepdims=True)
    var /= np.float32(x.shape[-1])
    y = x / np.sqrt(var + np.float32(eps))
    return _times(y, np.float32(1.0) + w if plus_one else w)


def _times(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """y·w, into ``y`` (a fresh temporary) when that keeps the product's dtype."""
    if np.result_type(y, w) != y.dtype:
        return y * w
    y *= w
    return y


def _heads(x: np.ndarray, count: int, dim: int) -> np.ndarray:
    """(n, count·dim) → (count, n, dim)."""
    return np.ascontiguousarray(x.reshape(x.shape[0], count, dim).transpose(1, 0, 2))


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x turned by cos and sin; with partial rotary (cos narrower than x) only its first
    dimensions turn and the rest pass unchanged, as transformers' apply_rotary_pos_emb."""
    width = cos.shape[-1]
    if width < x.shape[-1]:
        return np.concatenate([rotate(x[..., :width], cos, sin), x[..., width:]], axis=-1)
    half = width // 2
    # x·cos + rotate_half(x)·sin, rotate_half(x) = (−x₂, x₁), without building it: a − b·s
    # is a + (−b)·s bit for bit
    out = x * cos
    out[..., :half] -= x[..., half:] * sin[..., :half]
    out[..., half:] += x[..., :half] * sin[..., half:]
    return out


class Layer:
    """The float32 weights of one layer, read by short names.

    Reading a weight is where the forward's steps meet (each is followed by its matrix
    product), so a cancel is checked there: a large model's layer takes seconds, and closing
    the window must not wait for a whole one.
    """

    def __init__(self, store: WeightStore, names: Callable[[str], str],
                 cancelled: Callable[[], bool] | None = None) -> None:
        self._store, self._names, self._cancelled = store, names, cancelled

    def __call__(self, short: str) -> np.ndarray:
        check_cancel(self._cancelled)
        return self._store.get(self._names(short))

    def optional(self, short: str) -> np.ndarray | None:
        name = self._names(short)
        return self._store.get(name) if name in self._store.names else None


def _linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    y = (w @ x.T).T
    return y if b is None else y + b


def split_linear(x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """:func:`_linear`, a one-row ``x``'s output rows shared over the engine's threads
    (:func:`engine.core.parallel.rows_product`: the same bits)."""
    y = rows_product(w, x).T
    return y if b is None else y + b


def check_cancel(cancelled: Callable[[], bool] | None) -> None:
    if cancelled is not None and cancelled():
        raise CaptureCancelled


class Step(NamedTuple):
    """What one layer's pieces read beyond its weights: the spec, the activation, the
    residual branches' multiplier, whether norms scale by 1 + w, and the product of a
    stream with a weight matrix (and bias)."""

    spec: ModelSpec
    act: Callable[[np.ndarray], np.ndarray]
    residual: np.float32
    plus_one: bool
    linear: Callable[[np.ndarray, np.ndarray, np.ndarray | None], np.ndarray] = _linear


Qkv = tuple[np.ndarray, np.ndarray, np.ndarray]


def _embed_bert(x: np.ndarray, store: WeightStore, top: Layer, names: Callable[[int, str], str],
                s: Step, positions: np.ndarray) -> np.ndarray:
    n = len(x)
    x = x + store.rows(names(-1, "pos"), positions)
    type_name = names(-1, "type")
    if type_name in store.names:
        x = x + store.rows(type_name, np.zeros(n, dtype=np.int64))
    return layer_norm(x, top("embed_norm.w"), top("embed_norm.b"), s.spec.eps)


def _embed_gpt2(x: np.ndarray, store: WeightStore, top: Layer,
                names: Callable[[int, str], str], s: Step, positions: np.ndarray) -> np.ndarray:
    return x + store.rows(names(-1, "pos"), positions)


def _embed_none(x: np.ndarray, store: WeightStore, top: Layer,
                names: Callable[[int, str], str], s: Step, positions: np.ndarray) -> np.ndarray:
    return x


def _qkv_bert(x: np.ndarray, w: Layer, s: Step) -> Qkv:
    heads, hd = s.spec.heads, s.spec.head_dim
    return (_heads(s.linear(x, w("q.w"), w("q.b")), heads, hd),
            _heads(s.linear(x, w("k.w"), w("k.b")), heads, hd),
            _heads(s.linear(x, w("v.w"), w("v.b")), heads, hd))


def _qkv_gpt2(x: np.ndarray, w: Layer, s: Step) -> Qkv:
    spec, hd = s.spec, s.spec.head_dim
    h = layer_norm(x, w("norm1.w"), w("norm1.b"), spec.eps)
    qkv = h @ w("qkv.w") + w("qkv.b")  # Conv1D: (in, 3·hidden), no transpose
    width = spec.heads * hd
    q, k, v = (_heads(qkv[:, j * width:(j + 1) * width], spec.heads, hd) for j in range(3))
    return q, k, v


def _qkv_olmo2(x: np.ndarray, w: Layer, s: Step) -> Qkv:
    # No norm first; QK-norm over all heads, then split.
    spec, hd = s.spec, s.spec.head_dim
    q = rms_norm(s.linear(x, w("q.w"), w.optional("q.b")), w("q_norm.w"), spec.eps)
    k = rms_norm(s.linear(x, w("k.w"), w.optional("k.b")), w("k_norm.w"), spec.eps)
    q, k = _heads(q, spec.heads, hd), _heads(k, spec.kv_heads, hd)
    return q, k, _heads(s.linear(x, w("v.w"), w.optional("v.b")), spec.kv_heads, hd)


def _qkv_llama(x: np.ndarray, w: Layer, s: Step) -> Qkv:
    spec, hd = s.spec, s.spec.head_dim
    if spec.fused:  # Phi-3: one matrix gives q, then k, then v
        qkv = s.linear(rms_norm(x, w("norm1.w"), spec.eps), w("qkv.w"), None)
        q_end, k_end = spec.heads * hd, (spec.heads + spec.kv_heads) * hd
        return (_heads(qkv[:, :q_end], spec.heads, hd),
                _heads(qkv[:, q_end:k_end], spec.kv_heads, hd),
                _heads(qkv[:, k_end:], spec.kv_heads, hd))
    h = rms_norm(x, w("norm1.w"), spec.eps, s.plus_one)
    q = _heads(s.linear(h, w("q.w"), w.optional("q.b")), spec.heads, hd)
    k = _heads(s.linear(h, w("k.w"), w.optional("k.b")), spec.kv_heads, hd)
    v = _heads(s.linear(h, w("v.w"), w.optional("v.b")), spec.kv_heads, hd)
    if spec.qk_norm:
        q = rms_norm(q, w("q_norm.w"), spec.eps, s.plus_one)
        k = rms_norm(k, w("k_norm.w"), spec.eps, s.plus_one)
    return q, k, v


def _rest_bert(x: np.ndarray, attended: np.ndarray, w: Layer, s: Step) -> np.ndarray:
    eps = s.spec.eps
    x = layer_norm(s.linear(attended, w("o.w"), w("o.b")) + x, w("norm1.w"), w("norm1.b"), eps)
    inner = s.act(s.linear(x, w("up.w"), w("up.b")))
    return layer_norm(s.linear(inner, w("down.w"), w("down.b")) + x, w("norm2.w"),
                       w("norm2.b"), eps)


def _rest_gpt2(x: np.ndarray, attended: np.ndarray, w: Layer, s: Step) -> np.ndarray:
    x = x + attended @ w("o.w") + w("o.b")
    h = layer_norm(x, w("norm2.w"), w("norm2.b"), s.spec.eps)
    return x + s.act(h @ w("up.w") + w("up.b")) @ w("down.w") + w("down.b")


def _rest_gemma2(x: np.ndarray, attended: np.ndarray, w: Layer, s: Step) -> np.ndarray:
    eps, plus_one = s.spec.eps, s.plus_one
    h = s.linear(attended, w("o.w"), w.optional("o.b"))
    x = x + rms_norm(h, w("post_attn_norm.w"), eps, plus_one)
    h = rms_norm(x, w("pre_ff_norm.w"), eps, plus_one)
    h = s.linear(s.act(s.linear(h, w("gate.w"), None)) * s.linear(h, w("up.w"), None),
                w("down.w"), None)
    return x + rms_norm(h, w("post_ff_norm.w"), eps, plus_one)


def _rest_olmo2(x: np.ndarray, attended: np.ndarray, w: Layer, s: Step) -> np.ndarray:
    eps = s.spec.eps
    h = s.linear(attended, w("o.w"), w.optional("o.b"))
    x = x + rms_norm(h, w("post_attn_norm.w"), eps)
    h = s.linear(s.act(s.linear(x, w("gate.w"), None)) * s.linear(x, w("up.w"), None),
                w("down.w"), None)
    return x + rms_norm(h, w("post_ff_norm.w"), eps)


def _rest_llama(x: np.ndarray, attended: np.ndarray, w: Layer, s: Step) -> np.ndarray:
    # in place on each product's own fresh result; y * 1 is y, so an unscaled branch skips it
    residual = s.residual
    x = _branch(s.linear(attended, w("o.w"), w.optional("o.b")), residual, x)
    h = rms_norm(x, w("norm2.w"), s.spec.eps)
    if s.spec.fused:  # Phi-3's gate_up_proj: the gate's rows, then the up's
        gate, up = np.split(s.linear(h, w("gate_up.w"), None), 2, axis=-1)
    else:
        gate, up = s.linear(h, w("gate.w"), None), s.linear(h, w("up.w"), None)
    return _branch(s.linear(_times(s.act(gate), up), w("down.w"), None), residual, x)


def _branch(y: np.ndarray, residual: np.float32, x: np.ndarray) -> np.ndarray:
    """x + y·residual, written into ``y`` (a fresh product), bit for bit as that sum."""
    if np.result_type(y, x) != y.dtype:
        return x + y * residual
    if residual != 1.0:
        y *= residual
    y += x
    return y


class _Block(NamedTuple):
    """One family's pieces of the pass: what it adds to the token embeddings, how a layer
    makes q, k and v from its input, and the rest of the layer after attention;
    ``plus_one``: its norms scale by 1 + w (unless the weights already hold the 1)."""

    embed: Callable[..., np.ndarray]
    qkv: Callable[[np.ndarray, Layer, Step], Qkv]
    rest: Callable[[np.ndarray, np.ndarray, Layer, Step], np.ndarray]
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
