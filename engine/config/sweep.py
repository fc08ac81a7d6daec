"""The sweep configuration: one parameter over values, for several scaling rules.

:data:`SWEEP_FIELDS` declares each field of :class:`SweepConfig` once: its range (shared with
:data:`~engine.config.attention.ATTENTION_FIELDS` where the quantity is the same) and its
``main.py sweep`` option, which ``engine.cli.options`` generates the parser from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, ClassVar

from engine.config.attention import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    RULE_FIELDS,
    RULE_PARAMETERS,
    AttentionConfig,
    RuleParameters,
    ScalingRule,
    shared_field,
)
from engine.config.base import (
    Cli,
    FieldSpec,
    Interval,
    JsonConfig,
    check_int,
    check_value,
    validate_fields,
)
from engine.config.precision import Precision, Rounding, SoftmaxForm
from engine.config.rules import parse_rule

__all__ = ["RULES_HELP", "SWEEP_FIELDS", "SWEPT_N_MAX", "SweepConfig", "SweepParam",
           "swept_value_range"]

#: Largest swept n. Sweep rows are streamed chunk by chunk, so n is bounded by one row's
#: working memory (~160 B per key: 2^22 keys ≈ 0.7 GB), not by an n×n matrix as in the
#: explorer (whose n_tokens range also bounds a sweep's fixed --n).
SWEPT_N_MAX = 1 << 22

#: Help of every ``--rules`` option.
RULES_HELP = "comma-separated scaling rules: " + ", ".join(rule.value for rule in ScalingRule)


class SweepParam(StrEnum):
    """The quantity a sweep varies."""

    D_K = "d_k"
    S = "s"
    RHO = "rho"
    N = "n"


#: Every field of :class:`SweepConfig`, in the order of the ``sweep`` command's options.
SWEEP_FIELDS: dict[str, FieldSpec] = {
    "param": FieldSpec(cli=Cli(("--param",), "quantity to sweep (s = std of the unscaled logits)",
                               choices=True)),
    "values": FieldSpec(cli=Cli(
        ("--values",), "comma-separated values, e.g. 1,2,4,8 (or a:b for powers of two "
        "2^a..2^b; a may be negative: --values -3:1)", required=True)),
    "rules": FieldSpec(cli=Cli(("--rules",), RULES_HELP)),
    "n_tokens": shared_field("n_tokens", cli=Cli(("--n",), "tokens per row when n is not swept")),
    "d_k": shared_field("d_k", cli=Cli(("--d-k", "--dk"), "head dimension when d_k is not swept")),
    "rho": shared_field("rho", cli=Cli(("--rho",), "q-k correlation when not swept")),
    # The std of the unscaled logits has no row in the explorer: its range is declared here.
    "logit_std": FieldSpec(0.0, 1e6),
    "samples": shared_field("samples", cli=Cli(("--samples",), "query rows per point")),
    "seed": shared_field("seed", cli=Cli(("--seed",), "seed of the random q and k (a seed "
                                         "gives the same CSV on every run)")),
    **{name: spec.but(gui=None) for name, spec in RULE_FIELDS.items()},
    "max_logits": FieldSpec(1, 1 << 40, "logits", cli=Cli(
        ("--max-logits",), "largest rows × n per point: a point with more uses "
        "max(64, max_logits // n) rows (long contexts)")),
    # Rows a capped point keeps at least (the CLI's 64; the GUI's length view uses fewer).
    "min_rows": FieldSpec(2, 10_000_000, "query rows"),
    "memory_budget_bytes": FieldSpec(1, None, "bytes"),
    # The precision lab: the format and softmax form of the overflow / weight-error columns.
    "dtype": FieldSpec(cli=Cli(("--dtype",), "format of the logits and softmax for the columns "
                               "overflow_share and weight_err_mean", choices=True)),
    "softmax": FieldSpec(cli=Cli(("--softmax",), "softmax form for those columns: max-subtracted "
                                 "(stable) or not (naive)", choices=True)),
    "rounding": FieldSpec(cli=Cli(("--rounding",), "round the logits, exponentials, row sum and "
                                  "weights to the format (all) or only the logits", choices=True)),
    # The explorer's precision view: every format × softmax form × rounding for none and sqrt.
    "precision_grid": FieldSpec(),
}


def swept_value_range(param: SweepParam | str) -> tuple[type, float, float]:
    """The type (int or float) and inclusive range of every swept value of ``param``.

    The command line states it when ``--values`` leaves it; :class:`SweepConfig` enforces it.
    """
    param = SweepParam(param)
    if param is SweepParam.N:
        return int, 1, SWEPT_N_MAX
    # s is the std of the unscaled logits, whose range is declared as logit_std's.
    spec = SWEEP_FIELDS["logit_std" if param is SweepParam.S else param.value]
    assert spec.low is not None and spec.high is not None
    return (int if param is SweepParam.D_K else float), spec.low, spec.high


@dataclasses.dataclass(frozen=True, slots=True)
class SweepConfig(RuleParameters, JsonConfig):
    """A sweep of one parameter over values, for several scaling rules.

    The rules' parameters are the :class:`RuleParameters` (``temperature=None``: √d_k).

    Parameters
    ----------
    param, values
        The swept quantity (``d_k``, ``s`` the std of the unscaled logits, ``rho`` or ``n``) and its
        values (integers for ``d_k`` and ``n``).
    rules
        The scaling rules evaluated at every value.
    n_tokens, d_k, rho, logit_std
        The fixed values of the quantities not swept (``logit_std=None``: √d_k).
    samples, seed
        Query rows per point; seed of the whole sweep (every point derives its own stream).
    max_logits, min_rows
        A point of more than ``max_logits`` logits uses ``min(samples, max(min_rows,
        max_logits // n))`` rows; ``min_rows`` ≥ 2, so that standard errors exist.
    memory_budget_bytes
        Largest working set one chunk may allocate.
    dtype, softmax, rounding
        Format, softmax form and rounding of ``overflow_share`` and ``weight_err_mean``.
    precision_grid
        Also compute every format × softmax × rounding for rules none and sqrt.
    """

    kind: ClassVar[str] = "sweep"
    FIELDS: ClassVar[dict[str, FieldSpec]] = SWEEP_FIELDS

    param: SweepParam = SweepParam.D_K
    values: tuple[float, ...] = tuple(2.0**i for i in range(13))
    rules: tuple[ScalingRule, ...] = (ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR)
    n_tokens: int = 64
    d_k: int = 64
    rho: float = 0.0
    logit_std: float | None = None
    samples: int = 20_000
    seed: int = 0
    max_logits: int = 1 << 22
    min_rows: int = 64
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES
    dtype: Precision = Precision.FLOAT64
    softmax: SoftmaxForm = SoftmaxForm.STABLE
    rounding: Rounding = Rounding.ALL
    precision_grid: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        # values, rules and the budget have checks of their own below.
        validate_fields(self, skip=lambda name: name == "memory_budget_bytes")
        rules = tuple(self.rules) if not isinstance(self.rules, str) else (self.rules,)
        if not rules:
            raise ValueError("rules must name at least one scaling rule")
        set_(self, "rules", tuple(parse_rule(r, "rules") for r in rules))
        values = tuple(self.values) if not isinstance(self.values, int | float) else (self.values,)
        if not values:
            raise ValueError("values must hold at least one value")
        kind, low, high = swept_value_range(self.param)
        # Named like the field a swept value stands for, as the explorer's messages name it.
        name = {SweepParam.D_K: "d_k", SweepParam.N: "n_tokens",
                SweepParam.RHO: "rho"}.get(self.param, "values for s")
        checked = [check_value(name, kind, value, Interval(low, high)) for value in values]
        set_(self, "values", tuple(checked))
        set_(self, "memory_budget_bytes", check_int(
            "memory_budget_bytes", self.memory_budget_bytes, integral_floats=False))

    @classmethod
    def following(cls, attention: AttentionConfig, *, param: SweepParam,
                  values: Sequence[float], rules: Sequence[ScalingRule], samples_cap: int,
                  **options: Any) -> SweepConfig:
        """The sweep a view shows for the explorer's ``attention`` settings.

        It carries over ρ, the seed and every rule parameter, adds ``attention.rule`` to
        ``rules`` when it is another one, and takes at most ``samples_cap`` of its sample rows;
        ``options`` sets further fields (the fixed n or d_k, caps, the precision grid).
        """
        rules = tuple(rules)
        if attention.rule not in rules:
            rules += (attention.rule,)
        return cls(param=param, values=tuple(values), rules=rules, rho=attention.rho,
                   samples=min(attention.samples, samples_cap), seed=attention.seed,
                   **{name: getattr(attention, name) for name in RULE_PARAMETERS}, **options)
