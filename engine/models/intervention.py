"""What a language-model run changes in the model's attention: :class:`Intervention`.

One value names the change and where it applies; :meth:`Intervention.change_at` turns it into
the :class:`~engine.models.attend.LayerChange` that the forward pass's attention applies
(:mod:`engine.models.attend`), the same code the capture runs.

α multiplies the attention logits' scale c before any soft-cap (transformers patched with
``query *= α`` computes the same): α = √d_k undoes a model's 1/√d_k ("no scaling"). A
replacement rule computes the chosen heads' logits as the explorer does
(:class:`engine.core.scaling.Rule`) from the model's own q and k (after its rotary embedding
and QK-norm), α then multiplying them too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.core.precision import numpy_dtype
from engine.core.scaling import Rule
from engine.models.attend import LayerChange
from engine.models.weights import ModelError

__all__ = ["DEFAULT_ALPHAS", "PRECISIONS", "SOFTMAX_FORMS", "Intervention", "alpha_grid",
           "alpha_text"]


def alpha_grid(low: float, high: float, points: int) -> tuple[float, ...]:
    """``points`` values of α from ``low`` to ``high``, evenly spaced in log₂ (exact powers of
    two where the ends allow), with the model's own α = 1 always among them (sorted; fewer
    values when ``high`` ≤ ``low`` or ``points`` < 2)."""
    if points < 2 or high <= low:
        values = {low}
    else:
        start, step = math.log2(low), (math.log2(high) - math.log2(low)) / (points - 1)
        values = {2.0 ** (start + index * step) for index in range(points)}
    values = {1.0 if abs(v - 1.0) < 1e-9 else v for v in values} | {1.0}
    return tuple(sorted(values))


#: The default α grid: 2^(k/2) for k = −6 … 6, 1/8 … 8, the model's own α = 1 at index 6.
DEFAULT_ALPHAS: tuple[float, ...] = alpha_grid(1 / 8, 8.0, 13)
#: The formats the attention may be rounded to ("float32": no rounding).
PRECISIONS = ("float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")
#: How the rounded softmax is taken: the row maximum subtracted first, or not.
SOFTMAX_FORMS = ("stable", "naive")
#: The most layers or heads an intervention may list (a hostile list is refused before it
#: is sorted).
MAX_INDICES = 1 << 16


def _dtype(precision: str) -> np.dtype:
    if precision == "float8_e5m2":
        import ml_dtypes

        return np.dtype(ml_dtypes.float8_e5m2)
    return numpy_dtype("float8_e4m3" if precision == "float8_e4m3fn" else precision)


def alpha_text(alpha: float) -> str:
    """α as a label shows it: ``8``, ``1/8``, ``1.414``."""
    if alpha < 1 and abs(1 / alpha - round(1 / alpha)) < 1e-9:
        return f"1/{round(1 / alpha)}"
    return f"{alpha:.4g}"


def _indices(values: object, what: str) -> tuple[int, ...] | None:
    if values is None:
        return None
    try:
        items = list(values)  # type: ignore[call-overload]
    except TypeError:
        raise ModelError(f"{what}s: expected a list of {what} numbers, got "
                         f"{type(values).__name__}") from None
    if len(items) > MAX_INDICES:
        raise ModelError(f"{what}s: {len(items):,} numbers, more than {MAX_INDICES:,}")
    out = set()
    for item in items:
        if isinstance(item, bool) or not isinstance(item, int | np.integer):
            raise ModelError(f"{what}s: {item!r} is not a {what} number")
        out.add(int(item))
    if not out:
        raise ModelError(f"{what}s: none given (leave it out for every {what})")
    return tuple(sorted(out))


def _rule_label(rule: Rule) -> str:
    kind = rule.kind.value
    if kind == "temperature":
        return f"1/T (T = {rule.temperature:g})" if rule.temperature else "1/T"
    if kind == "softcap":
        return f"soft-cap {rule.cap:g}"
    if kind == "qk_norm" and rule.gain is not None:
        return f"QK-norm (g = {rule.gain:g})"
    return "no scaling (c = 1)" if kind == "none" else rule.kind.label


@dataclass(frozen=True)
class Intervention:
    """A change to the attention logits of a model's layers (see the module docstring).

    Attributes
    ----------
    alpha
        Multiplies the chosen heads' logit scale (finite, > 0; 1: unchanged).
    rule
        None keeps the model's own c and soft-cap; a :class:`~engine.core.scaling.Rule`
        replaces them (its soft-cap with its cap, QK-norm with its gain, log n …).
    layers
        The layers changed (None: every layer).
    heads
        The query heads changed in those layers (None: every head).
    precision
        ``"float32"`` (no rounding) or the format the chosen heads' logits and softmax are
        rounded to: ``"float16"``, ``"bfloat16"``, ``"float8_e4m3fn"``, ``"float8_e5m2"``.
    softmax
        ``"stable"`` or ``"naive"``: whether the rounded softmax subtracts the row maximum.
    """

    alpha: float = 1.0
    rule: Rule | None = None
    layers: tuple[int, ...] | None = None
    heads: tuple[int, ...] | None = None
    precision: str = "float32"
    softmax: str = "stable"

    def __post_init__(self) -> None:
        alpha = self.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating):
            raise ModelError(f"α must be a number, got {type(alpha).__name__}")
        if not (math.isfinite(alpha) and alpha > 0):
            raise ModelError(f"α must be a finite number > 0, got {alpha!r}")
        object.__setattr__(self, "alpha", float(alpha))
        if self.rule is not None and not isinstance(self.rule, Rule):
            raise ModelError(f"rule must be an engine.core.scaling.Rule, got "
                             f"{type(self.rule).__name__}")
        if self.precision not in PRECISIONS:
            raise ModelError(f"precision must be one of {', '.join(PRECISIONS)}; got "
                             f"{self.precision!r}")
        if self.softmax not in SOFTMAX_FORMS:
            raise ModelError(f"softmax must be one of {', '.join(SOFTMAX_FORMS)}; got "
                             f"{self.softmax!r}")
        object.__setattr__(self, "layers", _indices(self.layers, "layer"))
        object.__setattr__(self, "heads", _indices(self.heads, "head"))

    @property
    def is_identity(self) -> bool:
        """α = 1, no rule, no rounding: the model itself."""
        return self.alpha == 1.0 and self.rule is None and self.precision == "float32"

    def label(self) -> str:
        """What the intervention does, in English: ``α = 8 · all layers``."""
        if self.is_identity:
            return "the model's own scale"
        parts = []
        if self.rule is not None:
            parts.append(_rule_label(self.rule))
        if self.alpha != 1.0 or self.rule is None:
            parts.append(f"α = {alpha_text(self.alpha)}")
        where = ("all layers" if self.layers is None else
                 f"layer {self.layers[0]}" if len(self.layers) == 1 else
                 "layers " + ", ".join(map(str, self.layers)))
        if self.heads is not None:
            where += (f", head {self.heads[0]}" if len(self.heads) == 1 else
                      ", heads " + ", ".join(map(str, self.heads)))
        parts.append(where)
        if self.precision != "float32":
            parts.append(f"{self.precision} ({self.softmax} softmax)")
        return " · ".join(parts)

    def check(self, layers: int, heads: int) -> None:
        """Refuse a layer or head the model (``layers`` layers × ``heads`` query heads)
        does not have, in one line naming it.

        Raises
        ------
        ModelError
            For the first such layer or head.
        """
        for chosen, count, what in ((self.layers, layers, "layer"), (self.heads, heads, "head")):
            bad = [i for i in chosen or () if not 0 <= i < count]
            if bad:
                raise ModelError(f"{what} {bad[0]} does not exist: the model has {what}s "
                                 f"0–{count - 1}")

    def first_layer(self, layers: int) -> int:
        """The first layer the intervention changes (``layers`` when it changes none)."""
        if self.is_identity:
            return layers
        return 0 if self.layers is None else self.layers[0]

    def change_at(self, layer: int) -> LayerChange | None:
        """What the attention of ``layer`` does differently (None: nothing)."""
        if self.is_identity or (self.layers is not None and layer not in self.layers):
            return None
        dtype = None if self.precision == "float32" else _dtype(self.precision)
        return LayerChange(heads=self.heads, alpha=self.alpha, rule=self.rule, dtype=dtype,
                           stable=self.softmax == "stable")
