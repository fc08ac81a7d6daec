"""A real attention head from a tensor file as the explorer's source of q and k.

A :class:`HeadRef` names one (layer, head, batch entry) of a checked
:class:`~engine.io.tensors.TensorFile`; :func:`load_head` reads it into a :class:`RealHead`
(read-only float64 q and k, tokens, the causal flag and the layer's own scale and cap).
:func:`explorer_config_for` turns a head into the :class:`~engine.config.AttentionConfig` the
explorer runs with (its geometry fixed by the head, the scaling rule kept), and
:func:`own_rule` expresses the model's own scale as one of the explorer's rules.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from engine.analysis.experiment import check_snapshot_memory
from engine.config import AttentionConfig, MaskKind, ScalingRule
from engine.io.tensors import TensorFile, TensorFileError

__all__ = [
    "HeadRef",
    "RealHead",
    "explorer_config_for",
    "load_head",
    "own_rule",
    "with_own_rule",
]

#: Relative tolerance when matching the file's scale c against 1, 1/√d_k and 1/d_k.
_SCALE_RTOL = 1e-6


def _is_index(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


@dataclasses.dataclass(frozen=True)
class HeadRef:
    """One head of a tensor file: ``file``, ``layer`` (as stored), ``head`` and batch entry.

    Indices are those of the file (0-based, as ``main.py inspect`` writes them).

    Raises
    ------
    ValueError
        If the layer is not in the file or the head or batch entry is out of range.
    """

    file: TensorFile
    layer: int
    head: int
    batch_entry: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.file, TensorFile):
            raise ValueError(f"file must be a TensorFile, got {type(self.file).__name__}")
        name = self.file.path.name
        if not _is_index(self.layer) or self.layer not in self.file.layers:
            raise ValueError(f"{name}: layer {self.layer!r} is not in the file "
                             f"(layers: {', '.join(map(str, self.file.layers))})")
        if not _is_index(self.head) or not 0 <= self.head < self.file.heads:
            raise ValueError(f"{name}: head {self.head!r} is out of range "
                             f"(0..{self.file.heads - 1})")
        if not _is_index(self.batch_entry) or not 0 <= self.batch_entry < self.file.batch:
            raise ValueError(f"{name}: batch entry {self.batch_entry!r} is out of range "
                             f"(0..{self.file.batch - 1})")
        for key in ("layer", "head", "batch_entry"):
            object.__setattr__(self, key, int(getattr(self, key)))

    @property
    def label(self) -> str:
        """E.g. ``"model.npz · layer 3 · head 5"`` (+ ``" · batch 2"`` when batch > 1)."""
        parts = [self.file.path.name, f"layer {self.layer}"]
        name = self.file.layer_name(self.layer)
        if name != f"layer {self.layer}":
            parts[-1] += f" ({name})"
        parts.append(f"head {self.head}")
        if self.file.batch > 1:
            parts.append(f"batch {self.batch_entry}")
        return " · ".join(parts)


@dataclasses.dataclass(frozen=True, eq=False)
class RealHead:
    """The q and k of one real head (read-only float64 arrays of shape (n, d_k)).

    Attributes
    ----------
    ref
        Which head of which file.
    q, k
        Queries and keys of the head's batch entry.
    tokens
        The file's n token strings, or ``None``.
    causal
        Whether the model masks causally (the file's ``meta.causal``).
    scale
        The model's own logit scale c of this layer (``file.layer_scale(layer)``).
    cap
        The layer's soft-cap (``file.layer_cap(layer)``), or ``None``.
    """

    ref: HeadRef
    q: np.ndarray
    k: np.ndarray
    tokens: tuple[str, ...] | None
    causal: bool
    scale: float
    cap: float | None

    def __post_init__(self) -> None:
        for name in ("q", "k"):
            arr = np.array(getattr(self, name), dtype=np.float64, order="C")
            if arr.ndim != 2:
                raise ValueError(f"{name} must have shape (n, d_k), got {arr.shape}")
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        if self.q.shape != self.k.shape:
            raise ValueError(f"q {self.q.shape} and k {self.k.shape} differ in shape")

    @property
    def n(self) -> int:
        """Tokens (queries and keys)."""
        return int(self.q.shape[0])

    @property
    def d_k(self) -> int:
        """Key dimension."""
        return int(self.q.shape[1])

    @property
    def label(self) -> str:
        """E.g. ``"model.npz · layer 3 · head 5"`` (+ ``" · batch 2"`` when batch > 1)."""
        return self.ref.label


def load_head(ref: HeadRef) -> RealHead:
    """Read the head ``ref`` names (only that head is read from the file).

    Raises
    ------
    engine.io.source.TensorFileError
        If the head holds NaN/inf, would exceed the memory budget, or the file cannot be
        read any more.
    """
    file = ref.file
    try:
        q, k = file.qk(ref.layer, ref.head)
    except TensorFileError as exc:
        # The reader names the array; the user also needs to know which file and head.
        raise TensorFileError(f"{ref.label}: {exc}") from exc
    return RealHead(ref=ref, q=q[ref.batch_entry], k=k[ref.batch_entry], tokens=file.tokens,
                    causal=file.causal, scale=file.layer_scale(ref.layer),
                    cap=file.layer_cap(ref.layer))


def _ref(head: RealHead | HeadRef) -> HeadRef:
    return head.ref if isinstance(head, RealHead) else head


def own_rule(head: RealHead | HeadRef) -> tuple[ScalingRule, float | None, float | None]:
    """The model's own scale as an explorer rule: ``(rule, temperature, cap)``.

    c = 1, 1/√d_k, 1/d_k → ``none``, ``sqrt``, ``linear``; a soft-capped layer with c = 1/√d_k
    → ``softcap``; any other c > 0 → ``temperature`` with T = 1/c. ``temperature`` and ``cap``
    are ``None`` except for their own rule (the caller keeps its value). A cap with another
    scale has no rule (soft-cap scales by 1/√d_k first): the rule then shows the uncapped logits.

    Raises
    ------
    ValueError
        If c ≤ 0 or T = 1/c is outside the temperature range of :class:`AttentionConfig`.
    """
    ref = _ref(head)
    file = ref.file
    c, cap, d = file.layer_scale(ref.layer), file.layer_cap(ref.layer), file.d_k
    if not c > 0 or not math.isfinite(c):
        raise ValueError(f"the model's scale c = {c:g} has no scaling rule (c must be > 0)")

    def near(value: float) -> bool:
        return math.isclose(c, value, rel_tol=_SCALE_RTOL)

    if cap is not None and near(1.0 / math.sqrt(d)):
        return ScalingRule.SOFTCAP, None, cap
    if near(1.0):
        return ScalingRule.NONE, None, None
    if near(1.0 / math.sqrt(d)):
        return ScalingRule.SQRT, None, None
    if near(1.0 / d):
        return ScalingRule.LINEAR, None, None
    temperature = 1.0 / c
    allowed = AttentionConfig.FIELDS["temperature"].interval
    if not math.isfinite(temperature) or temperature not in allowed:
        raise ValueError(f"the model's scale c = {c:g} needs T = {temperature:g}: T must be "
                         f"{allowed.requirement()}")
    return ScalingRule.TEMPERATURE, temperature, None


def with_own_rule(head: RealHead | HeadRef, config: AttentionConfig) -> AttentionConfig:
    """``config`` with the rule of :func:`own_rule` (temperature or cap where it has one).

    A scale that no rule expresses (c ≤ 0, T out of range) leaves ``config``'s rule.
    """
    try:
        rule, temperature, cap = own_rule(head)
    except ValueError:
        return config
    changes: dict[str, object] = {"rule": rule}
    if temperature is not None:
        changes["temperature"] = temperature
    if cap is not None:
        changes["cap"] = cap
    return dataclasses.replace(config, **changes)  # type: ignore[arg-type]


def explorer_config_for(
    head: RealHead | HeadRef, base: AttentionConfig, *, keep_mask: bool = False
) -> AttentionConfig:
    """The explorer configuration that shows ``head``: geometry from the head, rule from ``base``.

    n and d_k of the head, one head, ``link_heads`` off, the file's mask (``keep_mask``:
    ``base``'s), the query row clamped to n − 1 (row 0 of a causal head: the last row); every
    other field is ``base``'s (the theory
    views still use those of random q, k). A :class:`HeadRef` needs no array read, so a head
    can be checked before it is loaded.

    Raises
    ------
    ValueError
        If n or d_k is outside AttentionConfig's declared ranges, or the snapshot of every
        rule would exceed the memory budget (:class:`~engine.core.memory.MemoryBudgetError`);
        the message names the head.
    """
    ref = _ref(head)
    file, label = ref.file, ref.label
    n = file.n
    mask = base.mask if keep_mask else (MaskKind.CAUSAL if file.causal else MaskKind.NONE)
    # Row 0 of a causal head sees one key (every rule gives it p_max = 1): show the last row,
    # which sees them all, unless another row was chosen.
    row = n - 1 if mask is MaskKind.CAUSAL and base.query_row == 0 else min(base.query_row, n - 1)
    try:  # n and d_k are checked by the config's declared ranges, the memory once, here
        config = dataclasses.replace(base, n_tokens=n, d_k=file.d_k, heads=1, link_heads=False,
                                     mask=mask, query_row=row)
        check_snapshot_memory(config, tuple(ScalingRule))
    except ValueError as exc:
        raise type(exc)(f"{label}: {exc}") from exc
    return config
