"""The scaling rules: the factor c each rule multiplies q·k by, and the logits it produces.

``none`` c = 1; ``sqrt`` c = 1/√d_k; ``linear`` c = 1/d_k; ``temperature`` c = 1/T;
``qk_norm``: ℓ₂-normalised q and k times ``gain`` (default √d_k); ``softcap``: c = 1/√d_k, then
``cap·tanh(s/cap)`` (default cap 50); ``log_n`` c = ln n/√d_k; ``ssmax`` c = s·ln n/√d_k
(default s 0.43); ``yarn`` c = (0.1·ln f + 1)²/√d_k (default f 4). For ``log_n`` and ``ssmax``
n is the number of keys a row sees (i + 1 for query i under a causal mask). Sources and
details: docs/numerics.md, "Scaling rules". :class:`Rule` holds a rule and its parameters,
:func:`rule_operands` folds c into the n×d operands and :func:`write_logits` turns a block of
query rows into logits.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import RuleParameters, ScalingRule
from engine.core.checks import check_dim, check_positive

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

_ALLOWED_RULES = ", ".join(rule.value for rule in ScalingRule)
# A dictionary lookup instead of the enum's constructor: every attention call parses its rule,
# and the constructor's two Python-level calls are a visible part of a small call's cost.
_RULES: dict[str, ScalingRule] = {rule.value: rule for rule in ScalingRule}


def parse_rule(rule: Any) -> ScalingRule:
    """``ScalingRule(rule)``, with a message listing the allowed rules."""
    found = _RULES.get(rule) if isinstance(rule, str) else None
    if found is None:
        raise ValueError(f"rule must be one of {_ALLOWED_RULES}; got {rule!r}")
    return found


def qk_norm_gain(d_k: int, gain: float | None = None) -> float:
    """The gain g of QK-norm logits g·q̂·k̂: ``gain``, or √d_k when it is ``None``.

    With g = √d_k the normalised logits have the spread that 1/√d_k gives unit-variance q and
    k, so the two rules can be compared at the same d_k.
    """
    return math.sqrt(d_k) if gain is None else float(gain)


def yarn_temperature_factor(factor: float) -> float:
    """YaRN's logit multiplier 1/t = (0.1·ln f + 1)² for a context-extension factor f ≥ 1.

    YaRN (Peng et al. 2023) defines softmax(q·k/(t·√d_k)) with √(1/t) = 0.1·ln f + 1 and
    applies √(1/t) to both q and k, so the logits are multiplied by its square.
    """
    f = check_positive("yarn_factor", factor)
    if f < 1.0:
        raise ValueError(f"yarn_factor must be >= 1 (a context extension), got {f}")
    return (0.1 * math.log(f) + 1.0) ** 2


def scale_factor(rule: ScalingRule | str, d_k: int, *, n: int | None = None,
                 **rule_parameters: float | None) -> float:
    """The factor c multiplying q·k under ``rule`` and its parameters: :meth:`Rule.scale`."""
    return Rule.from_keywords(rule, **rule_parameters).scale(d_k, n)


#: Every rule parameter and its default.
_DEFAULTS = {field.name: field.default for field in dataclasses.fields(RuleParameters)}


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
                object.__setattr__(self, name, check_positive(name, value))
        if self.yarn_factor is not _DEFAULTS["yarn_factor"]:
            yarn_temperature_factor(self.yarn_factor)  # f >= 1, with its message

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
        kind = self.kind
        if kind is ScalingRule.NONE or kind is ScalingRule.QK_NORM:
            return 1.0
        if kind is ScalingRule.SQRT or kind is ScalingRule.SOFTCAP:
            return 1.0 / math.sqrt(d_k)
        if kind is ScalingRule.LINEAR:
            return 1.0 / d_k
        if kind is ScalingRule.YARN:
            return yarn_temperature_factor(self.yarn_factor) / math.sqrt(d_k)
        if kind.length_dependent:
            if n is None:
                raise ValueError(f"n (keys per row) is required for rule {kind.value!r}")
            return float(self.row_scales(d_k, np.array([check_dim("n", n)]))[0])
        return 1.0 / self.temperature_at(d_k)

    def temperature_at(self, d_k: int) -> float:
        """The temperature T at ``d_k``: the given one, or √d_k."""
        if self.temperature is None:
            return math.sqrt(check_dim("d_k", d_k))
        return self.temperature

    def row_scales(self, d_k: int, keys: np.ndarray) -> np.ndarray:
        """c of every row of a ``log_n`` / ``ssmax`` softmax from the keys each row sees, float64.

        ``log_n``: ln n/√d_k; ``ssmax``: s·ln n/√d_k. Rows that see no key get c = 0 (they are
        fully masked, c is never used).
        """
        s = self.ssmax_s if self.kind is ScalingRule.SSMAX else 1.0
        n = np.maximum(np.asarray(keys, dtype=np.float64), 1.0)
        return s * np.log(n) / math.sqrt(d_k)

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
