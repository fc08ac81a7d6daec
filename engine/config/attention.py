"""The explorer's configuration: one attention experiment, with every field declared once.

:class:`AttentionConfig` is a frozen dataclass that checks its fields on construction and
raises a ``ValueError`` naming the field and the allowed range. :data:`ATTENTION_FIELDS`, next
to it, declares each field's range, unit, panel row (label, tooltip formula, widget, scale) and
is what the explorer's parameter panel is generated from; the sweep and training configs reuse
its ranges. The scaling rules and their parameters are declared in :mod:`engine.config.rules`
(re-exported here).
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from typing import ClassVar

from engine.config.base import (
    QT_TRANSLATE_NOOP,
    Cli,
    FieldSpec,
    Gui,
    JsonConfig,
    validate_fields,
)
from engine.config.rules import (
    RULE_FIELDS,
    RULE_PARAMETERS,
    RULES,
    RuleParameters,
    ScalingRule,
)

__all__ = [
    "ATTENTION_FIELDS",
    "DEFAULT_MEMORY_BUDGET_BYTES",
    "RULE_FIELDS",
    "RULE_PARAMETERS",
    "AttentionConfig",
    "MaskKind",
    "RuleParameters",
    "ScalingRule",
    "shared_field",
]

#: Largest attention-matrix footprint a single request may allocate unless told otherwise.
DEFAULT_MEMORY_BUDGET_BYTES = 1 << 30


class MaskKind(StrEnum):
    """Which keys a query may attend to."""

    NONE = "none"
    CAUSAL = "causal"


#: Every field of :class:`AttentionConfig`, in the parameter panel's row order. The ranges are
#: the engine's; ``Gui.low/high`` narrow a row where a larger value only makes a request fail
#: the memory budget or take minutes (the CLI and saved sessions still get the full range).
ATTENTION_FIELDS: dict[str, FieldSpec] = {
    # The GUI's 2048 is the largest n whose snapshot (all rules, one head) fits the default
    # 1 GiB memory budget; with more heads the panel explains the limit in its inline message.
    "n_tokens": FieldSpec(1, 8192, "tokens", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "tokens n"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Number of tokens n (keys per softmax row). Uniform attention has "
            "entropy ln n; the largest of n Gaussian logits of std s is ≈ s·√(2 ln n)."),
        "slider", high=2048, log=True)),
    "d_k": FieldSpec(1, 8192, "dimensions", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "head dim d_k"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Head dimension d_k. Raw scores: Var(q·k) = d_k·σ⁴ for iid q, k; "
            "1/√d_k scaling gives Var = σ⁴, 1/d_k gives σ⁴/d_k."),
        "slider", log=True, enabled_when=("link_heads", False))),
    "heads": FieldSpec(1, 64, "heads", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "heads h"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Number of heads h; d_model must be divisible by h. "
            "With the link, d_k = d_model / h."))),
    "d_model": FieldSpec(1, 16384, "dimensions", Gui(
        "d_model",
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Model width d_model (divisible by h). With projections "
            "Var(q_j) = d_model·s²."))),
    "link_heads": FieldSpec(gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "link d_k = d_model / h"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel", "Derive d_k = d_model / h instead of setting d_k directly."),
        "check")),
    "init_std": FieldSpec(1e-6, 1e3, "", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "init std σ"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel", "Std σ of every component of q and k: Var(q·k) = d_k·σ⁴."),
        "slider", low=0.01, high=10.0, log=True, enabled_when=("use_projection", False))),
    "use_projection": FieldSpec(gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "use projections W_Q, W_K"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Draw x ~ N(0, I_d_model) and q = x·W_Q, k = x·W_K with "
            "W ~ N(0, s²): Var(q_j) = d_model·s², Var(q·k) = d_k·(d_model·s²)²."),
        "check")),
    "projection_std": FieldSpec(1e-6, 1e3, "", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "projection std s"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Projection init std s: Var(q_j) = d_model·s² "
            "(s = 1/√d_model keeps unit variance)."),
        "slider", low=0.001, high=10.0, log=True, decimals=4,
        enabled_when=("use_projection", True))),
    "rule": FieldSpec(gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "scaling rule"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "How raw scores q·k become logits: each rule's factor c is in its menu item; "
            "formulas and sources in docs/numerics.md, “Scaling rules”."),
        "combo", choices={rule: spec.menu for rule, spec in RULES.items()})),
    **RULE_FIELDS,
    "rho": FieldSpec(-1.0, 1.0, "", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "q–k correlation ρ"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "q–k correlation: k = ρ·q + √(1−ρ²)·ξ, so E[q·k] = ρ·d_k·σ² "
            "(grows like d_k: the case for 1/d_k)."),
        "slider")),
    "mask": FieldSpec(gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "mask"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel", "causal: query i attends only to keys j ≤ i (masked logits = −∞)."),
        "combo", choices={
            MaskKind.NONE: QT_TRANSLATE_NOOP("ParameterPanel", "none"),
            MaskKind.CAUSAL: QT_TRANSLATE_NOOP("ParameterPanel", "causal"),
        })),
    # The range [0, n_tokens - 1] depends on n_tokens: checked in __post_init__, followed by
    # the panel.
    "query_row": FieldSpec(0, 8191, "", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "query row"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Row i of the attention matrix shown in the softmax view "
            "(with a causal mask it sees i + 1 keys)."),
        "slider")),
    "seed": FieldSpec(0, 2**32 - 1, "", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "seed"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel", "Seed of every random draw (same seed, same numbers)."),
        high=2**31 - 1)),  # QSpinBox holds a C int
    "samples": FieldSpec(1, 10_000_000, "query rows", Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "samples"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Independent query rows used for the statistics "
            "(standard errors shrink like 1/√samples)."),
        high=100_000, step=500)),
}


def shared_field(name: str, gui: Gui | None = None, cli: Cli | None = None) -> FieldSpec:
    """The explorer's range of ``name`` (declared once above), with another config's row/option."""
    return ATTENTION_FIELDS[name].but(gui=gui, cli=cli)


@dataclasses.dataclass(frozen=True, slots=True)
class AttentionConfig(RuleParameters, JsonConfig):
    """One attention experiment: random q, k (optionally through projections), one rule.

    Parameters
    ----------
    n_tokens, d_k, heads, d_model
        Tokens n (queries and keys), head dimension, heads h and model width (divisible by h).
    link_heads
        Derive ``d_k = d_model // heads`` instead of using ``d_k`` as given.
    init_std
        Standard deviation σ of the iid components of q and k (when not projecting).
    use_projection, projection_std
        Draw x ~ N(0, I_{d_model}) and q = x W_Q, k = x W_K with W ~ N(0, s²), s = projection_std.
    rule
        The scaling rule; its parameters are the :class:`RuleParameters` (T = 8 here).
    rho
        Correlation between q and k: k = ρ·q + √(1−ρ²)·ξ.
    mask
        ``"none"`` or ``"causal"``.
    query_row
        The query whose softmax distribution is inspected.
    seed, samples
        Seed of every random draw; independent query rows used for statistics.
    """

    kind: ClassVar[str] = "attention"
    FIELDS: ClassVar[dict[str, FieldSpec]] = ATTENTION_FIELDS

    n_tokens: int = 64
    d_k: int = 64
    heads: int = 1
    d_model: int = 64
    link_heads: bool = False
    init_std: float = 1.0
    use_projection: bool = False
    projection_std: float = 0.125
    rule: ScalingRule = ScalingRule.SQRT
    temperature: float = dataclasses.field(default=8.0, kw_only=True)
    rho: float = 0.0
    mask: MaskKind = MaskKind.NONE
    query_row: int = 0
    seed: int = 0
    samples: int = 2000

    def __post_init__(self) -> None:
        # query_row's range follows n_tokens: checked below, with its own message.
        validate_fields(self, skip=lambda name: name == "query_row")
        if self.d_model % self.heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by heads ({self.heads})"
            )
        if self.link_heads:
            object.__setattr__(self, "d_k", self.d_model // self.heads)
        if isinstance(self.query_row, bool) or not isinstance(self.query_row, int):
            raise ValueError(f"query_row must be an integer, got {self.query_row!r}")
        if not 0 <= self.query_row < self.n_tokens:
            raise ValueError(
                f"query_row must be in [0, {self.n_tokens - 1}] (n_tokens - 1), "
                f"got {self.query_row}"
            )
