"""The tour's numbers from the precision and length labs, read off the labs' own engine code.

* Number formats: :func:`format_value_of` gives the largest finite value of a format
  (:func:`~engine.core.precision.largest_value`: 65504 for float16, 448 for float8 e4m3) or its
  natural logarithm, beyond which the naive softmax's ``exp`` overflows. The overflow share and
  weight error themselves are the d_k sweep's precision columns (:mod:`engine.tour.evaluate`).
* Length: :func:`length_value` is the point at n of the length view's n sweep
  (:func:`~engine.analysis.length.length_sweep_config`, n one of its values: the same rows,
  sample cap and logit budget, so the value is the one the view plots) for one rule;
  :func:`toy_value` is SSMax's toy (all logits −2 except one +3) at n,
  and :func:`yarn_value` YaRN's logit multiplier for the config's context-extension factor.

Nothing is recomputed here: every value comes from the function the labs' views and the sweep
CLI use.
"""

from __future__ import annotations

import math
from typing import Any

from engine.config import AttentionConfig, MaskKind, Precision, ScalingRule

__all__ = [
    "LENGTH_FIELDS",
    "format_value_of",
    "length_sweep",
    "length_value",
    "require_iid_draws",
    "toy_value",
    "yarn_value",
]

#: Length quantity -> the :class:`~engine.analysis.sweep.SweepPoint` attribute it reads.
LENGTH_FIELDS: dict[str, str] = {
    "length_entropy_mean": "entropy_mean",
    "length_p_max_mean": "p_max_mean",
    "length_entropy_ratio": "entropy_ratio",
}


def require_iid_draws(quantity: str, config: AttentionConfig) -> None:
    """Raise unless ``config`` is what the sweeps draw: iid unit-variance q, k, no mask.

    The sweeps (d_k, logit std, n) ignore the projections, the init std and the mask, so a
    claim on another configuration would state numbers of an experiment it does not show.
    """
    if config.use_projection or config.init_std != 1.0 or config.mask is not MaskKind.NONE:
        raise ValueError(
            f"{quantity} comes from a sweep, which draws iid unit-variance q, k without a "
            "mask: it needs init_std = 1, use_projection = false and mask = none"
        )


def format_value_of(quantity: str, dtype: str) -> float:
    """``dtype_largest``: the format's largest finite value; ``dtype_exp_limit``: its ln."""
    from engine.core.precision import largest_value

    top = largest_value(Precision(dtype))
    return math.log(top) if quantity == "dtype_exp_limit" else top


def length_sweep(config: AttentionConfig, rule: ScalingRule) -> Any:
    """The length view's sweep for ``rule`` only.

    A point's rows depend on its position in the sweep's values but not on which rules are
    swept, so its points are the ones the length view plots (tests check this).
    """
    from engine.analysis.length import length_sweep_config

    return length_sweep_config(config).replace(rules=(rule,))


def length_value(quantity: str, config: AttentionConfig, rule: ScalingRule, n: int,
                 cache: dict[Any, Any]) -> float:
    """Entropy, p_max or entropy / ln n of the length sweep's point at n.

    The sweep runs lazily up to n and no further (the points before it are smaller, so this
    costs at most a few times the point itself); ``cache`` keeps the running sweep, so the
    claims of one step share it.
    """
    from engine.analysis.length import LENGTH_VALUES
    from engine.analysis.sweep import iter_sweep

    require_iid_draws(quantity, config)
    if n not in LENGTH_VALUES:  # validate_claim refuses these; the loop below would not end
        raise ValueError(f"{quantity}: n must be one of the length view's n, got {n}")
    sweep = length_sweep(config, rule)
    entry = cache.get(sweep)
    if entry is None:
        entry = cache[sweep] = (iter_sweep(sweep), {})
    points, seen = entry
    while n not in seen:
        point = next(points)
        seen[int(point.value)] = point
    return float(getattr(seen[n], LENGTH_FIELDS[quantity]))


def toy_value(quantity: str, config: AttentionConfig, n: int) -> float:
    """The weight of the +3 logit among n − 1 logits −2, under softmax or SSMax (s of config)."""
    from engine.analysis.length import ssmax_toy

    toy = ssmax_toy([n], s=config.ssmax_s)
    values = toy.p_max_ssmax if quantity == "ssmax_toy_ssmax" else toy.p_max_softmax
    return float(values[0])


def yarn_value(config: AttentionConfig) -> float:
    """YaRN's logit multiplier (0.1·ln f + 1)² for the config's ``yarn_factor`` f."""
    from engine.core.scaling import yarn_temperature_factor

    return float(yarn_temperature_factor(config.yarn_factor))
