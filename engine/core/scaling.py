"""The scaling rules at work: :class:`Rule` holds a rule and its parameters, validated at the
door, and computes c with its declaration's function (:data:`engine.config.RULES`, where each
rule's formula, traits and source are; docs/numerics.md, "Scaling rules", lists them);
:func:`rule_operands` folds c into the n×d operands and :func:`write_logits` turns a block of
query rows into logits. For the per-row rules (``log_n``, ``ssmax``) n is the number of keys a
row sees (i + 1 for query i under a causal mask).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import RULE_FIELDS, RULES, RuleParameters, ScalingRule
from engine.config.base import check_number
from engine.config.rules import RULE_DEFAULTS, parse_rule, yarn_temperature_factor
from engine.core.checks import check_dim

__all__ = [
    "NORM_EPS",
    "Rule",
    "RuleOperands",
    "normalise_backward",
    "parse_rule",
    "qk_norm_gain",
    "rule_operands",
    "scale_factor",
    "write_logits",
    "yarn_temperature_factor",
]

#: Norms below this are clamped in the QK-norm rule (as torch.nn.functional.normalize does), so
#: that an all-zero q or k row maps to zero instead of 0/0.
NORM_EPS = 1e-12



def qk_norm_gain(d_k: int, gain: float | None = None) -> float:
    """The gain g of QK-norm logits g·q̂·k̂: ``gain``, or √d_k when it is ``None``.

    With g = √d_k the normalised logits have the spread that 1/√d_k gives unit-variance q and
    k, so the two rules can be compared at the same d_k.
    """
    return math.sqrt(d_k) if gain is None else float(gain)


def scale_factor(rule: ScalingRule | str, d_k: int, *, n: int | None = None,
                 **rule_parameters: float | None) -> float:
    """The factor c multiplying q·k under ``rule`` and its parameters: :meth:`Rule.scale`."""
    return Rule.from_keywords(rule, **rule_parameters).scale(d_k, n)


#: Every rule parameter and its default.
_DEFAULTS = RULE_DEFAULTS
#: The range of each (the configs' declaration).
_INTERVALS = {name: RULE_FIELDS[name].interval for name in _DEFAULTS}


@dataclass(frozen=True, slots=True)
class Rule(RuleParameters):
    """A scaling rule with its :class:`~engine.config.RuleParameters`: the one value configs,
    trainer, tour and heads pass.

    Each parameter is used only by its rule and is validated whenever it is given; the
    parameters are keywords (``Rule("softcap", cap=30.0)``).
    """

    kind: ScalingRule

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", parse_rule(self.kind))
        for name, default in _DEFAULTS.items():
            value = getattr(self, name)
            if value is not None and value is not default:  # the defaults are valid
                object.__setattr__(self, name, check_number(name, value, _INTERVALS[name]))

    @classmethod
    def of(cls, kind: ScalingRule | str, source: Any) -> Rule:
        """``kind`` with the rule parameters of ``source`` (a config, or any object with them).

        Attributes ``source`` lacks keep their defaults; ``None`` for cap, s or f means the
        default too.
        """
        found = {name: getattr(source, name) for name in _DEFAULTS
                 if getattr(source, name, None) is not None}
        return cls(kind, **found)

    @classmethod
    def from_keywords(cls, rule: Rule | ScalingRule | str, **keywords: float | None) -> Rule:
        """The rule of an engine function's ``rule`` and parameter keywords (``None``: default).

        A :class:`Rule` carries its own parameters, so none may be given beside it; the
        ``temperature`` rule needs its T here.
        """
        if keywords.keys() - _DEFAULTS.keys():
            unknown = ", ".join(sorted(keywords.keys() - _DEFAULTS.keys()))
            raise TypeError(f"unknown rule parameter(s) {unknown}; the rule parameters are "
                            f"{', '.join(_DEFAULTS)}")
        given = {name: value for name, value in keywords.items() if value is not None}
        if isinstance(rule, Rule):
            if given:
                raise ValueError(f"{', '.join(given)} given beside a Rule: set them in the Rule")
            return rule
        kind = parse_rule(rule)
        if kind is ScalingRule.TEMPERATURE and "temperature" not in given:
            raise ValueError("temperature is required for rule 'temperature' (a number > 0)")
        return cls(kind, **given) if given else _DEFAULT_RULES[kind]

    def replace(self, **changes: Any) -> Rule:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def scale(self, d_k: int, n: int | None = None) -> float:
        """The factor c multiplying q·k at head dimension ``d_k`` (the module docstring lists
        them); ``n``, the keys per row, is needed by ``log_n`` and ``ssmax`` only.

        QK-norm's c is 1: its gain multiplies the normalised vectors (see :meth:`gain_at`).
        """
        d_k = check_dim("d_k", d_k)
        spec = RULES[self.kind]
        if spec.per_row:
            if n is None:
                raise ValueError(f"n (keys per row) is required for rule {self.kind.value!r}")
            return float(self.row_scales(d_k, np.array([check_dim("n", n)]))[0])
        return spec.scale(self, d_k, None)

    def row_scales(self, d_k: int, keys: np.ndarray) -> np.ndarray:
        """c of every row of a per-row rule's softmax from the keys each row sees, float64.

        Rows that see no key are given n = 1 (they are fully masked, c is never used).
        """
        n = np.maximum(np.asarray(keys, dtype=np.float64), 1.0)
        return RULES[self.kind].scale(self, d_k, n)

    def gain_at(self, d_k: int) -> float:
        """The QK-norm gain g at ``d_k``."""
        return qk_norm_gain(d_k, self.gain)

    def logit_variance(self, d_k: int, raw_variance: float, c: float, *,
                       isotropic: bool = True) -> float:
        """Closed-form variance of the rule's logits c·q·k, given Var(q·k) = ``raw_variance``.

        Soft-cap has no closed form (NaN); QK-norm's g²/d_k holds for independent isotropic q
        and k (NaN when not ``isotropic``).
        """
        if self.kind is ScalingRule.SOFTCAP:
            return math.nan
        if self.kind is ScalingRule.QK_NORM:
            if not isotropic:
                return math.nan
            g = self.gain_at(d_k)
            return g * g / d_k
        return c * c * raw_variance


# Rules without given parameters, built once: most attention calls name a rule only.
_DEFAULT_RULES = {kind: Rule(kind) for kind in ScalingRule}


def _l2_normalise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return (x / max(‖x‖, eps), max(‖x‖, eps)) over the last axis, overflow-safe."""
    with np.errstate(over="ignore"):
        sq = np.sum(x * x, axis=-1, keepdims=True)
    if not np.isfinite(sq).all():
        # Squares overflowed: rescale by the row's largest magnitude first.
        a = np.max(np.abs(x), axis=-1, keepdims=True)
        a[a == 0] = 1.0
        norm = a * np.sqrt(np.sum((x / a) ** 2, axis=-1, keepdims=True))
    else:
        norm = np.sqrt(sq)
    norm = np.maximum(norm, NORM_EPS)
    return x / norm, norm


def normalise_backward(x_hat: np.ndarray, norm: np.ndarray, g_hat: np.ndarray) -> np.ndarray:
    """Backpropagate through x̂ = x / max(‖x‖, eps): (g − x̂(x̂·g)) / ‖x‖ (or g/eps if clamped)."""
    radial = np.sum(x_hat * g_hat, axis=-1, keepdims=True)
    clamped = norm <= NORM_EPS
    if clamped.any():
        radial[clamped] = 0.0
    return (g_hat - x_hat * radial) / norm


@dataclass(slots=True)
class RuleOperands:
    """Inputs of the n×n stage: raw logits = qs @ ks.T (softcap: tanh of it, times cap)."""

    qs: np.ndarray
    ks: np.ndarray
    cap: float | None = None  # soft-cap only
    q_hat: np.ndarray | None = None  # QK-norm only: normalised q, k and their norms
    q_norm: np.ndarray | None = None
    k_norm: np.ndarray | None = None


def rule_operands(
    rule: ScalingRule, q: np.ndarray, k: np.ndarray, *, scale: float | np.ndarray, gain: float,
    cap: float,
) -> RuleOperands:
    """Fold ``rule`` into the (..., n, d_k) q and k (already in the computation dtype).

    ``scale`` is :func:`scale_factor`'s c (for ``log_n``/``ssmax`` under a mask, an array of
    per-row c broadcasting as (..., n, 1)), ``gain`` the QK-norm gain and ``cap`` the soft-cap
    value (both validated by the caller); each is used only by its rule.
    """
    dt = q.dtype.type
    if rule is ScalingRule.QK_NORM:
        q_hat, q_norm = _l2_normalise(q)
        k_hat, k_norm = _l2_normalise(k)
        return RuleOperands(q_hat * dt(gain), k_hat, None, q_hat, q_norm, k_norm)
    # Fold the scale (and softcap's 1/cap) into Q: an n×d multiply instead of n×n.
    if rule is ScalingRule.SOFTCAP:
        return RuleOperands(q * dt(scale / cap), k, cap)
    if isinstance(scale, np.ndarray):
        return RuleOperands(q * scale.astype(q.dtype), k)
    return RuleOperands(q * dt(scale), k)


def write_logits(
    qs: np.ndarray, ks: np.ndarray, cap: float | None, out: np.ndarray, keep_tanh: bool = False
) -> np.ndarray | None:
    """Write the unmasked logits ``qs @ ks.T`` (soft-cap: ``cap·tanh`` of it) into ``out``.

    ``qs`` and ``ks`` are a block of :class:`RuleOperands`' rows, ``cap`` its soft-cap value
    (None for every other rule). With ``keep_tanh`` (soft-cap only) the tanh values are
    returned in a new buffer, for the backward pass; otherwise None.

    Call inside ``numpy.errstate(over="ignore", invalid="ignore")``: finite inputs whose
    products exceed the dtype are reported as a ValueError by
    :func:`engine.core.softmax.exp_rows`, not as a RuntimeWarning of the product (one errstate
    per block of rows instead of one per function: small calls notice each).
    """
    np.matmul(qs, ks.swapaxes(-1, -2), out=out)
    if cap is None:
        return None
    tanh = np.tanh(out, out=np.empty_like(out) if keep_tanh else out)
    np.multiply(tanh, out.dtype.type(cap), out=out)
    return tanh if keep_tanh else None
