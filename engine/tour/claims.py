"""Machine-checkable claims of the guided tour: the number each tour step states, recomputed.

Every step of the guided tour (``resources/tour/tour.json``) sets an
:class:`~engine.config.AttentionConfig` and makes one or more quantitative claims about it, e.g.
"without scaling the logit variance is ≈ d_k = 64". A claim is a plain dictionary::

    {"quantity": "logit_var", "rule": "none", "approx": 64, "rel_tol": 0.1}
    {"quantity": "sweep_p_max_mean", "rule": "none", "greater_than": 0.7}
    {"quantity": "sweep_jac_fro_median", "rule": "none", "at": {"d_k": 1024},
     "less_than": 0.001}

Keys
----
quantity
    One of :data:`QUANTITIES` (the table below says which engine function computes it).
rule
    The scaling rule the quantity is measured under (default: the config's rule).
at
    Optional :class:`AttentionConfig` field overrides for this claim only (e.g. a larger d_k).
approx + rel_tol / abs_tol
    ``|value − approx| <= max(rel_tol·|approx|, abs_tol)`` (tolerances default to 0).
greater_than, less_than
    Strict bounds; may be combined with each other (an interval) but not with ``approx``.
lr, train
    ``train_final_loss`` only: the learning rate and :class:`~engine.config.train.TrainConfig`
    field overrides (everything else is the TrainConfig default with the config's d_k and seed).

Quantities and their source
---------------------------
========================== ===================================================================
``logit_var``              :func:`~engine.analysis.experiment.run_experiment`: empirical variance of
                           the logits over independent pairs i ≠ j (the histogram view)
``logit_var_theory``       the same snapshot's closed form
``max_abs_logit``          largest finite ``|logit|`` of the snapshot
``p_max_mean``             mean largest weight over the snapshot's rows (all heads)
``entropy_mean``           mean row entropy (nats) over the snapshot's rows
``sweep_logit_var``        :func:`~engine.analysis.sweep.run_sweep` at the config's d_k with
``sweep_p_max_mean``       ``config.samples`` rows (the laws and gradient views): pooled logit
``sweep_entropy_mean``     variance, mean p_max, mean entropy, median ‖J‖_F = ‖∂p/∂s‖_F,
``sweep_jac_fro_median``   median ‖∂p/∂S_raw‖_F = c·‖J‖_F, share of rows with p_max > 0.99.
``sweep_jac_raw_median``   The sweep draws iid unit-variance q, k, so these require
``sweep_saturated_share``  ``init_std = 1``, no projections and no mask.
``temperature_max_diff``   :func:`~engine.analysis.experiment.temperature_comparison`: max |p_T −
                           p_√d| of the query row, T from the claim's ``temperature`` (default: the
                           config's temperature)
``temperature_grad_max_diff`` max |∇_{q,k,v}| difference of the backward pass of rule
                           ``temperature`` (T as above) against ``sqrt``, on head 0 of the
                           config's q, k with seeded v and upstream gradient
``correlation_rms``        :func:`~engine.analysis.correlation.correlation_rms`: RMS of c·q·k at the
                           config's d_k and ρ (rules none, sqrt, linear)
``train_final_loss``       :func:`~engine.training.lr_sweep.run_lr_sweep`: mean final held-out
                           loss of
                           one rule trained at ``lr`` (one seed; a few hundred ms per rule)
========================== ===================================================================

Everything here is pure numpy and stdlib: the tour test and the GUI evaluate the same claims.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.config import AttentionConfig, MaskKind, ScalingRule

__all__ = [
    "QUANTITIES",
    "UI_REF",
    "ClaimResult",
    "check_value",
    "claim_numbers",
    "describe_target",
    "evaluate_claim",
    "evaluate_claims",
    "evaluate_quantity",
    "expand_ui_refs",
    "format_value",
    "number_pattern",
    "step_config",
    "validate_claim",
    "validate_tour",
]

#: Quantity name -> short English description (the GUI shows translated labels instead).
QUANTITIES: dict[str, str] = {
    "logit_var": "empirical logit variance (snapshot, pairs i ≠ j)",
    "logit_var_theory": "closed-form logit variance (snapshot)",
    "max_abs_logit": "largest |logit| (snapshot)",
    "p_max_mean": "mean p_max (snapshot rows)",
    "entropy_mean": "mean row entropy in nats (snapshot rows)",
    "sweep_logit_var": "pooled logit variance (sweep)",
    "sweep_p_max_mean": "mean p_max (sweep)",
    "sweep_entropy_mean": "mean row entropy in nats (sweep)",
    "sweep_jac_fro_median": "median ‖∂p/∂s‖_F (sweep)",
    "sweep_jac_raw_median": "median ‖∂p/∂S_raw‖_F (sweep)",
    "sweep_saturated_share": "share of rows with p_max > 0.99 (sweep)",
    "temperature_max_diff": "max |softmax(z/T) − softmax(z/√d_k)|",
    "temperature_grad_max_diff": "max |gradient difference| between 1/T and 1/√d_k",
    "correlation_rms": "RMS of c·q·k for correlated q, k",
    "train_final_loss": "final held-out training loss",
}

_SNAPSHOT = {"logit_var", "logit_var_theory", "max_abs_logit", "p_max_mean", "entropy_mean"}
_SWEEP_FIELDS = {
    "sweep_logit_var": "logit_var",
    "sweep_p_max_mean": "p_max_mean",
    "sweep_entropy_mean": "entropy_mean",
    "sweep_jac_fro_median": "jac_fro_median",
    "sweep_jac_raw_median": "jac_raw_median",
    "sweep_saturated_share": "saturated_share",
}
_CLAIM_KEYS = {"quantity", "rule", "at", "approx", "rel_tol", "abs_tol", "greater_than",
               "less_than", "temperature", "lr", "train"}


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


def _number(claim: Mapping[str, Any], key: str) -> float | None:
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
        try:
            ScalingRule(claim["rule"])
        except ValueError:
            allowed = ", ".join(r.value for r in ScalingRule)
            raise ValueError(
                f"claim rule must be one of {allowed}; got {claim['rule']!r}"
            ) from None
    if "at" in claim and not isinstance(claim["at"], Mapping):
        raise ValueError("claim field 'at' must be an object of AttentionConfig fields")
    for key in ("approx", "rel_tol", "abs_tol", "greater_than", "less_than", "temperature", "lr"):
        _number(claim, key)
    bounds = [k for k in ("greater_than", "less_than") if k in claim]
    if ("approx" in claim) == bool(bounds):
        raise ValueError("a claim needs either 'approx' or 'greater_than'/'less_than' (not both)")
    if any(k in claim for k in ("rel_tol", "abs_tol")) and "approx" not in claim:
        raise ValueError("'rel_tol'/'abs_tol' only go with 'approx'")
    if (_number(claim, "rel_tol") or 0.0) < 0 or (_number(claim, "abs_tol") or 0.0) < 0:
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


def check_value(claim: Mapping[str, Any], value: float) -> bool:
    """Return whether ``value`` satisfies ``claim`` (NaN never does)."""
    if not math.isfinite(value):
        return False
    approx = _number(claim, "approx")
    if approx is not None:
        tol = max((_number(claim, "rel_tol") or 0.0) * abs(approx),
                  _number(claim, "abs_tol") or 0.0)
        return abs(value - approx) <= tol
    low = _number(claim, "greater_than")
    high = _number(claim, "less_than")
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


def number_pattern(value: float) -> re.Pattern[str]:
    """A regex matching ``value`` written as a stand-alone decimal (e.g. ``64``, ``0.0156``).

    The number must not be part of a longer number: ``64`` matches in "variance ≈ 64." but not
    in "0.64" or "640".
    """
    text = f"{value:.10f}".rstrip("0").rstrip(".")
    if text in ("", "-"):
        text = "0"
    return re.compile(rf"(?<![\d.]){re.escape(text)}(?!\d|\.\d)")


def describe_target(claim: Mapping[str, Any]) -> str:
    """Language-neutral summary of the claim's target, e.g. ``≈ 64 ± 10 %`` or ``< 0.001``."""
    parts = []
    approx = _number(claim, "approx")
    if approx is not None:
        text = f"≈ {format_value(approx)}"
        rel = _number(claim, "rel_tol") or 0.0
        abs_tol = _number(claim, "abs_tol")
        if rel > 0:
            text += f" ± {rel * 100:g} %"
        elif abs_tol:
            text += f" ± {format_value(abs_tol)}"
        parts.append(text)
    if "greater_than" in claim:
        parts.append(f"> {format_value(float(claim['greater_than']))}")
    if "less_than" in claim:
        parts.append(f"< {format_value(float(claim['less_than']))}")
    return ", ".join(parts)


#: ``{ui:Context|English text}`` in a tour text names a UI element (tab, control, button) by
#: its translatable source string, so the GUI can show it exactly as the UI currently labels it.
UI_REF = re.compile(r"\{ui:([^|{}]+)\|([^{}]+)\}")


def expand_ui_refs(text: str, translate: Callable[[str, str], str] | None = None) -> str:
    """Replace every ``{ui:Context|Text}`` in ``text`` by ``translate(Context, Text)``.

    Without ``translate`` the English ``Text`` is used (tests and the headless checks).
    """
    if translate is None:
        return UI_REF.sub(lambda m: m.group(2), text)
    return UI_REF.sub(lambda m: translate(m.group(1), m.group(2)), text)


def step_config(settings: Mapping[str, Any]) -> AttentionConfig:
    """Build the step's configuration: ``settings`` applied to the default AttentionConfig.

    Every step starts from the defaults (not from whatever the user set before), so a step
    always shows the same experiment and its claims can be checked once and for all.
    """
    if not isinstance(settings, Mapping):
        raise ValueError(f"step settings must be an object, got {type(settings).__name__}")
    return AttentionConfig.from_dict(dict(settings))


def _claim_config(claim: Mapping[str, Any], config: AttentionConfig) -> AttentionConfig:
    at = claim.get("at")
    return config.replace(**dict(at)) if at else config


def _claim_rule(claim: Mapping[str, Any], config: AttentionConfig) -> ScalingRule:
    return ScalingRule(claim.get("rule", config.rule))


class _Cache:
    """Engine results shared by the claims of one evaluation (same config, same draw)."""

    def __init__(self) -> None:
        self.snapshots: dict[tuple[AttentionConfig, ScalingRule], Any] = {}
        self.sweeps: dict[tuple[AttentionConfig, ScalingRule], Any] = {}


def _snapshot_value(quantity: str, config: AttentionConfig, rule: ScalingRule,
                    cache: _Cache) -> float:
    from engine.analysis.experiment import run_experiment

    key = (config, rule)
    snap = cache.snapshots.get(key)
    if snap is None:
        snap = cache.snapshots[key] = run_experiment(config, rules=[rule])
    view = snap.rules[rule]
    if quantity == "logit_var":
        return float(view.logit_var_empirical)
    if quantity == "logit_var_theory":
        return float(view.logit_var_theory)
    if quantity == "max_abs_logit":
        finite = view.logits[np.isfinite(view.logits)]
        return float(np.max(np.abs(finite)))
    if quantity == "p_max_mean":
        return float(np.mean(view.p_max))
    return float(np.mean(view.entropy))


def _sweep_value(quantity: str, config: AttentionConfig, rule: ScalingRule,
                 cache: _Cache) -> float:
    from engine.analysis.sweep import run_sweep
    from engine.config import SweepConfig, SweepParam

    if config.use_projection or config.init_std != 1.0 or config.mask is not MaskKind.NONE:
        raise ValueError(
            f"{quantity} comes from the d_k sweep, which draws iid unit-variance q, k without "
            "a mask: it needs init_std = 1, use_projection = false and mask = none"
        )
    key = (config, rule)
    point = cache.sweeps.get(key)
    if point is None:
        sweep = SweepConfig(
            param=SweepParam.D_K, values=(config.d_k,), rules=(rule,),
            n_tokens=config.n_tokens, rho=config.rho, samples=config.samples, seed=config.seed,
            temperature=config.temperature, gain=config.gain, cap=config.cap,
        )
        point = cache.sweeps[key] = run_sweep(sweep)[0]
    return float(getattr(point, _SWEEP_FIELDS[quantity]))


def _temperature_grad_diff(config: AttentionConfig, temperature: float) -> float:
    from engine.analysis.sampling import draw_qk
    from engine.core.attention import scaled_dot_product_attention_backward

    q, k = draw_qk(config)
    q, k = q[0], k[0]
    rng = np.random.default_rng(config.seed)
    v = rng.standard_normal(q.shape)
    upstream = rng.standard_normal(q.shape)
    mask = "causal" if config.mask is MaskKind.CAUSAL else None
    grads_t = scaled_dot_product_attention_backward(
        q, k, v, upstream, rule=ScalingRule.TEMPERATURE, temperature=temperature, mask=mask)
    grads_s = scaled_dot_product_attention_backward(q, k, v, upstream, rule=ScalingRule.SQRT,
                                                    mask=mask)
    return max(float(np.max(np.abs(a - b))) for a, b in zip(grads_t, grads_s, strict=True))


def _train_final_loss(claim: Mapping[str, Any], config: AttentionConfig, rule: ScalingRule,
                      cancel: threading.Event | None) -> float:
    from engine.config.train import TrainConfig
    from engine.training.lr_sweep import run_lr_sweep

    fields = {"d_k": config.d_k, "seed": config.seed, **dict(claim.get("train", {}))}
    train = TrainConfig(rules=(rule,), **fields)
    lr = float(claim["lr"])
    try:
        result = run_lr_sweep(train, [lr], [train.seed], cancel)
    except RuntimeError:  # cancelled
        return math.nan
    return float(result.row(rule, lr).final_loss_mean)


def evaluate_quantity(
    claim: Mapping[str, Any],
    config: AttentionConfig,
    *,
    cancel: threading.Event | None = None,
    _cache: _Cache | None = None,
) -> float:
    """Compute the engine value of ``claim``'s quantity for ``config``.

    Parameters
    ----------
    claim
        A claim (see the module docstring); validated first.
    config
        The step's configuration (the claim's ``at`` overrides are applied to it).
    cancel
        Stops a ``train_final_loss`` computation early (the value is then NaN).

    Returns
    -------
    float
        The value (NaN when cancelled).
    """
    validate_claim(claim)
    cache = _cache or _Cache()
    quantity = str(claim["quantity"])
    cfg = _claim_config(claim, config)
    rule = _claim_rule(claim, cfg)
    if quantity in _SNAPSHOT:
        return _snapshot_value(quantity, cfg, rule, cache)
    if quantity in _SWEEP_FIELDS:
        return _sweep_value(quantity, cfg, rule, cache)
    if quantity == "temperature_max_diff":
        from engine.analysis.experiment import temperature_comparison

        temperature = _number(claim, "temperature") or cfg.temperature
        return float(temperature_comparison(cfg, temperature)[2])
    if quantity == "temperature_grad_max_diff":
        return _temperature_grad_diff(cfg, _number(claim, "temperature") or cfg.temperature)
    if quantity == "correlation_rms":
        from engine.analysis.correlation import correlation_rms

        result = correlation_rms([cfg.d_k], cfg.rho, max(cfg.samples, 2), cfg.seed)
        return float(result[f"rms_{rule.value}"][0])
    return _train_final_loss(claim, cfg, rule, cancel)


def evaluate_claim(claim: Mapping[str, Any], config: AttentionConfig, *,
                   cancel: threading.Event | None = None) -> ClaimResult:
    """Evaluate one claim: the engine value and whether it satisfies the claim."""
    value = evaluate_quantity(claim, config, cancel=cancel)
    return ClaimResult(claim=claim, value=value, passed=check_value(claim, value))


def evaluate_claims(
    claims: Iterable[Mapping[str, Any]],
    config: AttentionConfig,
    *,
    cancel: threading.Event | None = None,
) -> list[ClaimResult]:
    """Evaluate several claims on one configuration, sharing snapshots and sweep points.

    Stops early (remaining values NaN) when ``cancel`` is set between claims.
    """
    cache = _Cache()
    out = []
    for claim in claims:
        if cancel is not None and cancel.is_set():
            value = math.nan
        else:
            value = evaluate_quantity(claim, config, cancel=cancel, _cache=cache)
        out.append(ClaimResult(claim=claim, value=value, passed=check_value(claim, value)))
    return out


def validate_tour(tour: Mapping[str, Any], views: Sequence[str] | None = None) -> None:
    """Check the structure of a parsed ``tour.json`` (steps, settings, claims).

    Parameters
    ----------
    tour
        The parsed JSON object ``{"version": 1, "steps": [...]}``.
    views
        Allowed view keys (``None``: not checked).
    """
    steps = tour.get("steps") if isinstance(tour, Mapping) else None
    if not isinstance(steps, list) or not steps:
        raise ValueError("tour must have a non-empty 'steps' list")
    seen: set[str] = set()
    for index, step in enumerate(steps):
        if not isinstance(step, Mapping):
            raise ValueError(f"step {index} must be an object")
        step_id = step.get("id")
        if not isinstance(step_id, str) or not step_id:
            raise ValueError(f"step {index} needs a non-empty string 'id'")
        if step_id in seen:
            raise ValueError(f"duplicate step id {step_id!r}")
        seen.add(step_id)
        # "view" may name a tab that only some builds have (e.g. the Train tab); then
        # "fallback_view" must be one of the always-present views.
        view = step.get("fallback_view", step.get("view"))
        if not isinstance(step.get("view"), str) or not isinstance(view, str) or (
            views is not None and view not in views
        ):
            raise ValueError(f"step {step_id!r}: view (or fallback_view) must be one of "
                             f"{views}, got {view!r}")
        step_config(step.get("settings", {}))
        temperature = step.get("view_temperature")
        if temperature is not None and (
            isinstance(temperature, bool) or not isinstance(temperature, int | float)
            or not temperature > 0
        ):
            raise ValueError(f"step {step_id!r}: view_temperature must be a positive number")
        claims = step.get("claims")
        if not isinstance(claims, list) or not claims:
            raise ValueError(f"step {step_id!r} needs a non-empty 'claims' list")
        for claim in claims:
            validate_claim(claim)

