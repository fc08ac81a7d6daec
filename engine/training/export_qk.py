"""Write the mini-trainer's trained q and k as a tensor file (format of :mod:`engine.io.tensors`).

One file holds every trained rule of a :class:`~engine.training.session.TrainingSession`:
layer ``i`` is the run of ``config.rules[i]``, so the rules trained side by side on the same
data and initial weights can be diagnosed side by side. For each run, q = X W_Q and k = X W_K
are computed at *every* position of the first held-out sequences (training scores only the
target rows, but these are what the weights compute everywhere), split into heads, and written
so that the file's logits ``c·q·kᵀ`` (capped when the layer has a cap) equal the model's
attention logits:

* ``none``, ``sqrt``, ``linear``, ``temperature``: the raw q and k; the layer's scale is the
  rule's own c (1, 1/√d_k, 1/d_k, 1/T);
* ``softcap``: the raw q and k, scale 1/√d_k and the layer's ``cap``;
* ``qk_norm``: the ℓ₂-normalised q and k (as the model normalises them), scale = the gain.

A run whose q or k is not finite (its parameters diverged to NaN/inf) is left out and named in
``meta["skipped"]``; its layer index stays unused so that layer ``i`` is still rule ``i``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from engine.config import MaskKind, ScalingRule
from engine.config.base import check_int
from engine.config.train import TaskKind
from engine.core.scaling import rule_operands
from engine.io.meta import json_number
from engine.io.names import layer_array
from engine.io.tensors import write_tensors
from engine.training.model import prepare_batch, project_qk
from engine.training.session import TrainedRun, TrainingSession
from engine.training.tasks import Batch, Task

__all__ = ["MAX_BATCH", "token_labels", "write_trained_tensors"]

#: At most this many held-out sequences are written (keeps files small: the batch is the
#: largest factor of the file size).
MAX_BATCH = 16

_MODEL = ("Attention Scale Explorer mini-trainer: one attention layer (no residual, no MLP), "
          "{heads} head(s) of d_k {d_k}, d_model {d_model}, task {task}")


def token_labels(task: Task, batch: Batch, entry: int = 0) -> tuple[str, ...]:
    """Short strings for the tokens of batch entry ``entry``, one per position.

    Retrieval: ``k{key}:v{value}`` for each pair, then ``k{key}?`` for the query; copy back:
    the symbol's number.
    """
    ids = np.asarray(batch.ids[entry])
    if task.kind is TaskKind.RETRIEVAL:
        vocab = task.vocab
        pairs = [f"k{int(key)}:v{int(value) - vocab}" for key, value in ids[:-1]]
        return (*pairs, f"k{int(ids[-1, 0])}?")
    return tuple(str(int(symbol)) for symbol in ids[:, 0])


def _operands(run: TrainedRun, q: np.ndarray, k: np.ndarray, d_k: int,
              causal: bool) -> tuple[np.ndarray, np.ndarray, dict[str, Any], str]:
    """q, k as written for ``run``'s rule, its layer meta, and what was written."""
    scaling = run.scaling
    entry: dict[str, Any] = {"name": run.rule.value, "rule": run.rule.value}
    if run.rule.length_dependent:
        # c depends on the keys each row sees (i + 1 under the causal mask), which one scale
        # per layer cannot say: the per-row c is folded into q, and the scale is 1.
        n = q.shape[-2]
        keys = np.arange(1, n + 1) if causal else np.full(n, n)
        # In q's own dtype: a file's q and k arrays must share one dtype to open.
        c = scaling.row_scales(d_k, keys)[:, None].astype(q.dtype)
        entry["scale"] = 1.0
        return q * c, k, entry, "q times the rule's per-row c = s·ln(keys seen)/√d_k"
    if run.rule is ScalingRule.QK_NORM:
        gain = scaling.gain_at(d_k)
        # The engine's own normalisation (clamped norms), so the written unit vectors are the
        # ones the model multiplied.
        ops = rule_operands(ScalingRule.QK_NORM, q, k, scale=1.0, gain=gain, cap=1.0)
        assert ops.q_hat is not None
        entry.update(scale=gain, gain=gain)
        return ops.q_hat, ops.ks, entry, "after QK-norm (unit q and k; scale = gain)"
    entry["scale"] = scaling.scale(d_k)
    if run.rule is ScalingRule.SOFTCAP:
        entry["cap"] = scaling.cap
        return q, k, entry, "raw (logits = cap·tanh(scale·q·kᵀ/cap))"
    return q, k, entry, "raw (logits = scale·q·kᵀ)"


def write_trained_tensors(path: str | Path, session: TrainingSession, *,
                          max_batch: int = MAX_BATCH, command: str = "") -> Path:
    """Write the tensor file of ``session``'s trained runs (see the module docstring) to
    ``path`` (``.npz`` or ``.safetensors``), on the first ``min(max_batch, eval_size)``
    held-out sequences, with ``command`` (how the training was started) as
    ``meta["command"]``. Call it from the thread that trains ``session``.

    Raises
    ------
    ValueError
        If ``path`` has another suffix, ``max_batch`` < 1 or no run has finite q and k.
    OSError
        If the file cannot be written.
    """
    if Path(path).suffix not in (".npz", ".safetensors"):
        raise ValueError(f"{Path(path).name}: the tensor file must end in .npz or .safetensors")
    max_batch = check_int("max_batch", max_batch, integral_floats=False)
    config, task, dims = session.config, session.task, session.dims
    full = session.eval_batch
    size = min(max_batch, full.size)
    batch = Batch(ids=np.array(full.ids[:size]), targets=np.array(full.targets[:size]))
    pb = prepare_batch(batch, task, session.dtype)
    arrays: dict[str, np.ndarray] = {}
    layers: dict[str, Any] = {}
    where: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for index, run in enumerate(session.trained_runs()):
        with np.errstate(over="ignore", invalid="ignore"):
            q, k = project_qk(run.params, pb)
        if not (np.isfinite(q).all() and np.isfinite(k).all()):
            skipped[run.rule.value] = (
                f"q or k is not finite ({run.diverge_reason or 'parameters not finite'})")
            continue
        q, k, entry, written = _operands(run, q, k, dims.d_k, task.mask is MaskKind.CAUSAL)
        arrays[layer_array(index, "q")] = q
        arrays[layer_array(index, "k")] = k
        entry.update(steps=run.steps, diverged_at=run.diverged_at,
                     eval_loss=json_number(run.eval_loss),
                     eval_accuracy=json_number(run.eval_accuracy))
        layers[str(index)] = entry
        where[run.rule.value] = written
    if not arrays:
        raise ValueError("no trained run has finite q and k to write: "
                         + "; ".join(f"{rule}: {why}" for rule, why in skipped.items()))
    meta: dict[str, Any] = {
        "model": _MODEL.format(heads=dims.heads, d_k=dims.d_k, d_model=dims.d_model,
                               task=task.kind.value),
        "where": {"positions": "q = X W_Q and k = X W_K at every position (training scores "
                               "only target_positions); layer i = config.rules[i]",
                  **where},
        "causal": task.mask is MaskKind.CAUSAL,
        "layers": layers,
        "batch": f"the first {size} sequences of the seed's held-out set",
        "tokens_of": "batch entry 0" + (
            " (retrieval: k{key}:v{value} per pair, then k{key}? for the query)"
            if task.kind is TaskKind.RETRIEVAL else " (copy back: the symbols)"),
        "target_positions": list(task.target_positions),
        "step": session.step,
        "seed": config.seed,
        "config": config.to_dict(),
        "command": command,
    }
    if skipped:
        meta["skipped"] = skipped
    return write_tensors(path, arrays, tokens=list(token_labels(task, batch)), meta=meta)
