"""Evaluate the tour's claims: the engine value of each claim's quantity, and whether it holds.

Each quantity is computed by the engine function named in :mod:`engine.tour.claims`. The claims
of one step share their snapshots and sweep points (same configuration, same draw).

The precision and length labs' numbers are read off the labs' own engine code, nothing
recomputed: a format's largest finite value (:func:`~engine.core.precision.largest_value`:
65504 for float16, 448 for float8 e4m3) or its natural logarithm, beyond which the naive
softmax's ``exp`` overflows (the overflow share and weight error themselves are the d_k sweep's
precision columns); the point at n of the length view's n sweep
(:func:`~engine.analysis.length.length_sweep_config`, n one of its values: the same rows, sample
cap and logit budget, so the value is the one the view plots) for one rule; SSMax's toy (all
logits −2 except one +3) at n; and YaRN's logit multiplier for the config's context-extension
factor.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from engine.config import AttentionConfig, MaskKind, Precision, ScalingRule
from engine.tour.claims import ClaimResult, check_value, claim_number, validate_claim

__all__ = ["evaluate_claims", "evaluate_quantity"]

_SNAPSHOT = {"logit_var", "logit_var_theory", "max_abs_logit", "p_max_mean", "entropy_mean",
             "matched_gap_mean"}
_SWEEP_FIELDS = {
    "sweep_logit_var": "logit_var",
    "sweep_p_max_mean": "p_max_mean",
    "sweep_entropy_mean": "entropy_mean",
    "sweep_jac_fro_median": "jac_fro_median",
    "sweep_jac_raw_median": "jac_raw_median",
    "sweep_saturated_share": "saturated_share",
    "sweep_max_logit_mean": "logit_absmax_mean",
    # The precision columns, in the claim's dtype / softmax / rounding (main.py sweep --dtype).
    "sweep_overflow_share": "overflow_share",
    "sweep_weight_err_mean": "weight_err_mean",
}
#: Length quantity -> the :class:`~engine.analysis.sweep.SweepPoint` attribute it reads.
_LENGTH_FIELDS = {
    "length_entropy_mean": "entropy_mean",
    "length_p_max_mean": "p_max_mean",
    "length_entropy_ratio": "entropy_ratio",
}


def _claim_config(claim: Mapping[str, Any], config: AttentionConfig) -> AttentionConfig:
    at = claim.get("at")
    return config.replace(**dict(at)) if at else config


def _claim_rule(claim: Mapping[str, Any], config: AttentionConfig) -> ScalingRule:
    return ScalingRule(claim.get("rule", config.rule))


class _Cache:
    """Engine results shared by the claims of one evaluation (same config, same draw)."""

    def __init__(self) -> None:
        self.snapshots: dict[tuple[AttentionConfig, ScalingRule], Any] = {}
        self.sweeps: dict[Any, Any] = {}  # SweepConfig -> its one SweepPoint
        self.lengths: dict[Any, Any] = {}  # the length view's one-point sweeps


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
    if quantity == "matched_gap_mean":
        return _matched_gap(config, view.logits)
    return float(np.mean(view.entropy))


def _matched_gap(config: AttentionConfig, logits: np.ndarray) -> float:
    """Mean over rows of the diagonal logit minus the mean of the row's other logits."""
    n = logits.shape[-1]
    if config.mask is not MaskKind.NONE or logits.shape[-2] != n or n < 2:
        raise ValueError("matched_gap_mean needs square logits (query i, key i) without a mask")
    diag = np.diagonal(logits, axis1=-2, axis2=-1)
    others = (np.sum(logits, axis=-1) - diag) / (n - 1)
    return float(np.mean(diag - others))


def _require_iid_draws(quantity: str, config: AttentionConfig) -> None:
    """Raise unless ``config`` is what the sweeps draw: iid unit-variance q, k, no mask.

    The sweeps (d_k, logit std, n) ignore the projections, the init std and the mask, so a
    claim on another configuration would state numbers of an experiment it does not show.
    """
    if config.use_projection or config.init_std != 1.0 or config.mask is not MaskKind.NONE:
        raise ValueError(
            f"{quantity} comes from a sweep, which draws iid unit-variance q, k without a "
            "mask: it needs init_std = 1, use_projection = false and mask = none"
        )


def _sweep_config(claim: Mapping[str, Any], config: AttentionConfig, rule: ScalingRule) -> Any:
    """The one-point sweep a sweep claim reads: over d_k, or over the logit std s."""
    from engine.config import Rounding, SoftmaxForm, SweepConfig, SweepParam

    _require_iid_draws(str(claim["quantity"]), config)
    logit_std = claim_number(claim, "logit_std")
    # The precision columns' format, softmax form and rounding (the sweep's defaults without).
    formats = {} if "dtype" not in claim else {
        "dtype": Precision(claim["dtype"]),
        "softmax": SoftmaxForm(claim.get("softmax", SoftmaxForm.STABLE)),
        "rounding": Rounding(claim.get("rounding", Rounding.ALL))}

    # The explorer's own construction (every rule parameter carried over), for this rule only;
    # a claim's point uses all its rows, however long they are.
    common = {"param": SweepParam.D_K if logit_std is None else SweepParam.S,
              "values": (config.d_k,) if logit_std is None else (logit_std,),
              "rules": (rule,), "samples_cap": config.samples, "n_tokens": config.n_tokens,
              "max_logits": config.samples * config.n_tokens, **formats}
    if logit_std is not None:
        common["d_k"] = config.d_k
    return SweepConfig.following(config.replace(rule=rule), **common)


def _p_max_share(sweep: Any, threshold: float) -> float:
    """Share of the sweep point's rows with p_max > threshold, from the sweep's own draws.

    The rows are drawn exactly as :func:`engine.analysis.sweep.iter_sweep` draws them (same
    streams, same chunks), so at threshold 0.99 this is the point's ``saturated_share``.
    """
    from engine.analysis.sweep_rows import chunk_rows, draw_rows, setting_for
    from engine.core.scaling import Rule
    from engine.core.softmax import softmax

    rule = sweep.rules[0]
    if rule.value not in ("none", "sqrt", "linear", "temperature"):
        raise ValueError("sweep_p_max_share is computed for rules with logits c·q·k only")
    st = setting_for(sweep, sweep.values[0])
    c = Rule.of(rule, sweep).scale(st.d_k)
    rows_per_chunk = chunk_rows(sweep, st.n)
    above = done = 0
    for c_index in range(-(-sweep.samples // rows_per_chunk)):
        rows = min(rows_per_chunk, sweep.samples - done)
        raw, _ = draw_rows(sweep, st, 0, c_index, rows, False)
        p_max = np.max(softmax(raw * c if c != 1.0 else raw), axis=-1)
        above += int(np.count_nonzero(p_max > threshold))
        done += rows
    return above / sweep.samples


def _sweep_value(claim: Mapping[str, Any], config: AttentionConfig, rule: ScalingRule,
                 cache: _Cache) -> float:
    from engine.analysis.sweep import run_sweep

    quantity = str(claim["quantity"])
    sweep = _sweep_config(claim, config, rule)
    if quantity == "sweep_p_max_share":
        return _p_max_share(sweep, float(claim["threshold"]))
    point = cache.sweeps.get(sweep)
    if point is None:
        point = cache.sweeps[sweep] = run_sweep(sweep)[0]
    return float(getattr(point, _SWEEP_FIELDS[quantity]))


_BACKWARD = {"backward_formula_err", "logit_step_ratio_adam", "logit_step_ratio_sgd",
             "train_grad_ratio_w_q", "train_grad_ratio_w_v", "train_grad_ratio_w_o"}


def _backward_value(quantity: str, config: AttentionConfig, rule: ScalingRule) -> float:
    from engine.tour import backward

    if quantity == "backward_formula_err":
        return backward.backward_formula_error(config, rule)
    if quantity.startswith("logit_step_ratio_"):
        return backward.logit_step_ratio(config, rule, quantity.removeprefix("logit_step_ratio_"))
    return backward.train_grad_ratio(config, rule, quantity.removeprefix("train_grad_ratio_"))


_LABS = {"dtype_largest", "dtype_exp_limit", "length_entropy_mean", "length_p_max_mean",
         "length_entropy_ratio", "ssmax_toy_softmax", "ssmax_toy_ssmax", "yarn_logit_factor"}


def _length_value(quantity: str, config: AttentionConfig, rule: ScalingRule, n: int,
                  cache: dict[Any, Any]) -> float:
    """Entropy, p_max or entropy / ln n of the length sweep's point at n.

    The sweep runs lazily up to n and no further (the points before it are smaller, so this
    costs at most a few times the point itself); ``cache`` keeps the running sweep, so the
    claims of one step share it.
    """
    from engine.analysis.length import LENGTH_VALUES, length_sweep_config
    from engine.analysis.sweep import iter_sweep

    _require_iid_draws(quantity, config)
    if n not in LENGTH_VALUES:  # validate_claim refuses these; the loop below would not end
        raise ValueError(f"{quantity}: n must be one of the length view's n, got {n}")
    # The length view's sweep for ``rule`` only: a point's rows depend on its position in the
    # sweep's values but not on which rules are swept, so its points are the ones the view plots.
    sweep = length_sweep_config(config).replace(rules=(rule,))
    entry = cache.get(sweep)
    if entry is None:
        entry = cache[sweep] = (iter_sweep(sweep), {})
    points, seen = entry
    while n not in seen:
        point = next(points)
        seen[int(point.value)] = point
    return float(getattr(seen[n], _LENGTH_FIELDS[quantity]))


def _lab_value(claim: Mapping[str, Any], config: AttentionConfig, rule: ScalingRule,
               cache: _Cache) -> float:
    quantity = str(claim["quantity"])
    if quantity.startswith("dtype_"):
        from engine.core.precision import largest_value

        # dtype_largest: the format's largest finite value; dtype_exp_limit: its ln.
        top = largest_value(Precision(str(claim["dtype"])))
        return math.log(top) if quantity == "dtype_exp_limit" else top
    if quantity.startswith("ssmax_toy_"):
        from engine.analysis.length import ssmax_toy

        # The weight of the +3 logit among n − 1 logits −2, under softmax or SSMax (s of config).
        toy = ssmax_toy([int(claim["n"])], s=config.ssmax_s)
        values = toy.p_max_ssmax if quantity == "ssmax_toy_ssmax" else toy.p_max_softmax
        return float(values[0])
    if quantity == "yarn_logit_factor":
        from engine.core.scaling import yarn_temperature_factor

        # YaRN's logit multiplier (0.1·ln f + 1)² for the config's ``yarn_factor`` f.
        return float(yarn_temperature_factor(config.yarn_factor))
    return _length_value(quantity, config, rule, int(claim["n"]), cache.lengths)


def _temperature_grad_diff(config: AttentionConfig, temperature: float) -> float:
    from engine.core.attention import scaled_dot_product_attention_backward
    from engine.tour.backward import seeded_head

    q, k, v, upstream = seeded_head(config, mask_ok=True)
    mask = "causal" if config.mask is MaskKind.CAUSAL else None
    # Seeded normals are finite by construction: the input check would only cost time.
    grads_t = scaled_dot_product_attention_backward(
        q, k, v, upstream, rule=ScalingRule.TEMPERATURE, temperature=temperature, mask=mask,
        check_finite=False)
    grads_s = scaled_dot_product_attention_backward(
        q, k, v, upstream, rule=ScalingRule.SQRT, mask=mask, check_finite=False)
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
    """The engine value of ``claim``'s quantity (the claim validated first) for the step's
    ``config`` with the claim's ``at`` overrides; NaN when ``cancel`` stopped a
    ``train_final_loss`` training."""
    validate_claim(claim)
    cache = _cache or _Cache()
    quantity = str(claim["quantity"])
    cfg = _claim_config(claim, config)
    rule = _claim_rule(claim, cfg)
    if quantity in _SNAPSHOT:
        return _snapshot_value(quantity, cfg, rule, cache)
    if quantity in _SWEEP_FIELDS or quantity == "sweep_p_max_share":
        return _sweep_value(claim, cfg, rule, cache)
    if quantity in _BACKWARD:
        return _backward_value(quantity, cfg, rule)
    if quantity in _LABS:
        return _lab_value(claim, cfg, rule, cache)
    if quantity == "temperature_max_diff":
        from engine.analysis.experiment import temperature_comparison

        temperature = claim_number(claim, "temperature") or cfg.temperature
        return float(temperature_comparison(cfg, temperature)[2])
    if quantity == "temperature_grad_max_diff":
        return _temperature_grad_diff(cfg, claim_number(claim, "temperature") or cfg.temperature)
    if quantity == "correlation_rms":
        from engine.analysis.correlation import correlation_rms

        result = correlation_rms([cfg.d_k], cfg.rho, max(cfg.samples, 2), cfg.seed)
        return float(result[f"rms_{rule.value}"][0])
    return _train_final_loss(claim, cfg, rule, cancel)


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

