"""Machine-checkable claims of the guided tour: the number each tour step states, recomputed.

A claim is a plain dictionary naming a quantity (:data:`QUANTITIES`), a rule and a target::

    {"quantity": "logit_var", "rule": "none", "approx": 64, "rel_tol": 0.1}

This module validates claims, checks values against their targets and formats them; the
values are computed by :mod:`engine.tour.evaluate`. Every key and quantity: docs/tour.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.config import Precision, Rounding, ScalingRule, SoftmaxForm, rules_where
from engine.config.rules import parse_rule
from engine.config.sweep import SWEPT_N_MAX

__all__ = [
    "DTYPE_QUANTITIES",
    "LENGTH_QUANTITIES",
    "PRECISION_QUANTITIES",
    "QUANTITIES",
    "RULELESS_QUANTITIES",
    "SCALAR_RULE_QUANTITIES",
    "ClaimResult",
    "check_value",
    "claim_number",
    "claim_numbers",
    "describe_target",
    "format_bound",
    "format_claim_value",
    "format_value",
    "validate_claim",
]

#: Every quantity a claim may name (docs/tour.md: what each is, which engine code computes it).
QUANTITIES: tuple[str, ...] = (
    "logit_var", "logit_var_theory", "max_abs_logit", "p_max_mean", "entropy_mean",
    "sweep_logit_var", "sweep_p_max_mean", "sweep_entropy_mean", "sweep_jac_fro_median",
    "sweep_jac_raw_median", "sweep_saturated_share", "temperature_max_diff",
    "temperature_grad_max_diff", "correlation_rms", "train_final_loss", "sweep_p_max_share",
    "matched_gap_mean", "backward_formula_err", "logit_step_ratio_adam", "logit_step_ratio_sgd",
    "train_grad_ratio_w_q", "train_grad_ratio_w_v", "train_grad_ratio_w_o", "sweep_overflow_share",
    "sweep_weight_err_mean", "sweep_max_logit_mean", "dtype_largest", "dtype_exp_limit",
    "length_entropy_mean", "length_p_max_mean", "length_entropy_ratio", "ssmax_toy_softmax",
    "ssmax_toy_ssmax", "yarn_logit_factor",
)

#: Quantities that take a number format (``dtype``); the first two also softmax and rounding.
PRECISION_QUANTITIES = frozenset({"sweep_overflow_share", "sweep_weight_err_mean"})
DTYPE_QUANTITIES = PRECISION_QUANTITIES | {"dtype_largest", "dtype_exp_limit"}
#: Quantities at a number of keys ``n``.
LENGTH_QUANTITIES = frozenset({"length_entropy_mean", "length_p_max_mean",
                               "length_entropy_ratio", "ssmax_toy_softmax", "ssmax_toy_ssmax"})
#: Quantities that do not depend on a scaling rule (a claim on them names none).
RULELESS_QUANTITIES = frozenset({"dtype_largest", "dtype_exp_limit", "ssmax_toy_softmax",
                                 "ssmax_toy_ssmax", "yarn_logit_factor"})

#: Quantities computed only for rules whose logits are c·q·k with a scalar c.
SCALAR_RULE_QUANTITIES = frozenset({
    "sweep_p_max_share", "backward_formula_err", "logit_step_ratio_adam",
    "logit_step_ratio_sgd", "train_grad_ratio_w_q", "train_grad_ratio_w_v",
    "train_grad_ratio_w_o",
})
_SCALAR_RULES = tuple(rule.value for rule in rules_where("scalar"))

_CLAIM_KEYS = {"quantity", "rule", "at", "approx", "rel_tol", "abs_tol", "greater_than",
               "less_than", "temperature", "lr", "train", "threshold", "logit_std", "dtype",
               "softmax", "rounding", "n"}


@dataclass(frozen=True, slots=True)
class ClaimResult:
    """A claim with the value the engine computed for it.

    Attributes
    ----------
    claim
        The claim dictionary.
    value
        The engine's value (NaN if it could not be computed).
    passed
        Whether ``value`` satisfies the claim.
    """

    claim: Mapping[str, Any]
    value: float
    passed: bool


def claim_number(claim: Mapping[str, Any], key: str) -> float | None:
    """The number in field ``key`` of ``claim`` (None when absent); raise unless finite."""
    if key not in claim:
        return None
    value = claim[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"claim field {key!r} must be a finite number, got {value!r}")
    return float(value)


def validate_claim(claim: Any) -> None:
    """Raise ``ValueError`` naming the problem unless ``claim`` is a well-formed claim."""
    if not isinstance(claim, Mapping):
        raise ValueError(f"a claim must be an object, got {type(claim).__name__}")
    unknown = sorted(set(claim) - _CLAIM_KEYS)
    if unknown:
        raise ValueError(f"unknown claim field(s) {', '.join(unknown)}; allowed: "
                         f"{', '.join(sorted(_CLAIM_KEYS))}")
    quantity = claim.get("quantity")
    if quantity not in QUANTITIES:
        raise ValueError(f"claim quantity must be one of {', '.join(QUANTITIES)}; "
                         f"got {quantity!r}")
    if "rule" in claim:
        parse_rule(claim["rule"], "claim rule")
    if "at" in claim and not isinstance(claim["at"], Mapping):
        raise ValueError("claim field 'at' must be an object of AttentionConfig fields")
    for key in ("approx", "rel_tol", "abs_tol", "greater_than", "less_than", "temperature", "lr",
                "threshold", "logit_std"):
        claim_number(claim, key)
    bounds = [k for k in ("greater_than", "less_than") if k in claim]
    if ("approx" in claim) == bool(bounds):
        raise ValueError("a claim needs either 'approx' or 'greater_than'/'less_than' (not both)")
    if any(k in claim for k in ("rel_tol", "abs_tol")) and "approx" not in claim:
        raise ValueError("'rel_tol'/'abs_tol' only go with 'approx'")
    if (claim_number(claim, "rel_tol") or 0.0) < 0 or (claim_number(claim, "abs_tol") or 0.0) < 0:
        raise ValueError("tolerances must be >= 0")
    if quantity == "train_final_loss":
        if "lr" not in claim:
            raise ValueError("a train_final_loss claim needs 'lr'")
        if "train" in claim and not isinstance(claim["train"], Mapping):
            raise ValueError("claim field 'train' must be an object of TrainConfig fields")
    elif "lr" in claim or "train" in claim:
        raise ValueError("'lr' and 'train' only go with the train_final_loss quantity")
    if quantity == "correlation_rms" and ScalingRule(claim.get("rule", "sqrt")) not in (
        ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR
    ):
        raise ValueError("correlation_rms is computed for rules none, sqrt and linear only")
    _validate_extras(claim, str(quantity))


def _validate_extras(claim: Mapping[str, Any], quantity: str) -> None:
    """The checks of the fields that only some quantities take."""
    if quantity in SCALAR_RULE_QUANTITIES and "rule" in claim and (
        claim["rule"] not in _SCALAR_RULES
    ):
        raise ValueError(f"{quantity} is computed for rules with logits c·q·k only "
                         f"({', '.join(_SCALAR_RULES)})")
    threshold = claim_number(claim, "threshold")
    if quantity == "sweep_p_max_share":
        if threshold is None or not 0 < threshold < 1:
            raise ValueError("a sweep_p_max_share claim needs a 'threshold' in (0, 1)")
    elif threshold is not None:
        raise ValueError("'threshold' only goes with the sweep_p_max_share quantity")
    logit_std = claim_number(claim, "logit_std")
    if logit_std is not None:
        if not quantity.startswith("sweep_"):
            raise ValueError("'logit_std' only goes with the sweep quantities")
        if logit_std <= 0:
            raise ValueError("'logit_std' must be > 0")
    if quantity in RULELESS_QUANTITIES and "rule" in claim:
        raise ValueError(f"{quantity} does not depend on a scaling rule: leave out 'rule'")
    _validate_lab_keys(claim, quantity)


def _validate_lab_keys(claim: Mapping[str, Any], quantity: str) -> None:
    """The checks of the precision and length labs' fields (dtype, softmax, rounding, n)."""
    for key, names, allowed in (("dtype", Precision, DTYPE_QUANTITIES),
                                ("softmax", SoftmaxForm, PRECISION_QUANTITIES),
                                ("rounding", Rounding, PRECISION_QUANTITIES)):
        if key not in claim:
            if key == "dtype" and quantity in allowed:
                raise ValueError(f"a {quantity} claim needs a 'dtype'")
            continue
        if quantity not in allowed:
            raise ValueError(f"{key!r} only goes with {', '.join(sorted(allowed))}")
        try:
            names(claim[key])
        except (ValueError, TypeError):
            choices = ", ".join(m.value for m in names)
            raise ValueError(f"claim {key} must be one of {choices}; got {claim[key]!r}") from None
    if quantity in LENGTH_QUANTITIES:
        n = claim.get("n")
        if isinstance(n, bool) or not isinstance(n, int) or not 2 <= n <= SWEPT_N_MAX:
            raise ValueError(f"a {quantity} claim needs an integer 'n' in [2, {SWEPT_N_MAX}], "
                             f"got {n!r}")
        if quantity.startswith("length_"):
            from engine.analysis.length import LENGTH_VALUES

            if n not in LENGTH_VALUES:  # a point the length view plots
                raise ValueError(f"{quantity}: 'n' must be one of the length view's n "
                                 f"({', '.join(map(str, LENGTH_VALUES))}), got {n}")
    elif "n" in claim:
        raise ValueError(f"'n' only goes with {', '.join(sorted(LENGTH_QUANTITIES))}")


def check_value(claim: Mapping[str, Any], value: float) -> bool:
    """Return whether ``value`` satisfies ``claim`` (NaN never does)."""
    if not math.isfinite(value):
        return False
    approx = claim_number(claim, "approx")
    if approx is not None:
        tol = max((claim_number(claim, "rel_tol") or 0.0) * abs(approx),
                  claim_number(claim, "abs_tol") or 0.0)
        return abs(value - approx) <= tol
    low = claim_number(claim, "greater_than")
    high = claim_number(claim, "less_than")
    return (low is None or value > low) and (high is None or value < high)


def claim_numbers(claim: Mapping[str, Any]) -> tuple[float, ...]:
    """The target numbers of ``claim`` (``approx`` or the bounds) that the prose must state."""
    return tuple(float(claim[k]) for k in ("approx", "greater_than", "less_than") if k in claim)


def format_value(value: float) -> str:
    """Format a number for display: three significant digits, no exponent above 1e-4."""
    if not math.isfinite(value):
        return "nan"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-4 <= magnitude < 1e5:
        digits = max(0, 2 - math.floor(math.log10(magnitude)))
        text = f"{value:.{digits}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{value:.2e}"


def format_bound(value: float) -> str:
    """A number of a claim as the tour states it (0.9999 stays 0.9999, 1e-12 stays 1e-12):
    rounding a threshold to three digits would print "> 1" for "> 0.9999"."""
    return f"{value:.12g}"


def _decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text and "e" not in text else 0


def format_claim_value(claim: Mapping[str, Any], value: float) -> str:
    """``value`` printed so that, read next to :func:`describe_target`, the comparison reads
    as the engine decided it.

    Three significant digits (:func:`format_value`), but a value compared with a threshold
    gets one decimal more than the threshold states (0.99995 against "> 0.9999", never "1"),
    and digits are added while the printed number would pass or fail where the value does not
    (0.99990001 is not "0.9999" against "> 0.9999").
    """
    text = format_value(value)
    if text == "nan" or "e" in text or value == 0:
        return text
    magnitude_digits = _decimals(text)
    thresholds = [float(claim[k]) for k in ("greater_than", "less_than") if k in claim]
    digits = max([magnitude_digits, *(_decimals(format_bound(b)) + 1 for b in thresholds)])
    stated = {key: float(format_bound(float(claim[key]))) for key in
              ("approx", "rel_tol", "abs_tol", "greater_than", "less_than") if key in claim}
    verdict = check_value(claim, value)
    while digits < 15:
        text = f"{value:.{digits}f}"
        text = text.rstrip("0").rstrip(".") if digits > magnitude_digits else text
        if check_value(stated, float(text)) == verdict:
            return text
        digits += 1
    return repr(value)


def describe_target(claim: Mapping[str, Any]) -> str:
    """Language-neutral summary of the claim's target, e.g. ``≈ 64 ± 10 %``, ``< 0.001`` or,
    for a tolerance below 0.01 %, ``≈ 64 (|Δ|/64 < 1e-09)`` (not "± 1e-07 %")."""
    parts = []
    approx = claim_number(claim, "approx")
    if approx is not None:
        text = f"≈ {format_bound(approx)}"
        rel = claim_number(claim, "rel_tol") or 0.0
        abs_tol = claim_number(claim, "abs_tol")
        if rel >= 1e-4:
            text += f" ± {format_bound(rel * 100)} %"
        elif rel > 0:
            text += f" (|Δ|/{format_bound(abs(approx))} ≤ {format_bound(rel)})"
        elif abs_tol:
            text += f" ± {format_bound(abs_tol)}"
        parts.append(text)
    if "greater_than" in claim:
        parts.append(f"> {format_bound(float(claim['greater_than']))}")
    if "less_than" in claim:
        parts.append(f"< {format_bound(float(claim['less_than']))}")
    return ", ".join(parts)
