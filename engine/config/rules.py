"""The scaling rules, each declared once: one :class:`RuleSpec` row per :class:`ScalingRule`.

A row holds what every other place derives: the rule's label and menu text, its parameters
(declared with their ranges and defaults in :data:`RULE_FIELDS` and :class:`RuleParameters`),
the function giving its factor c, its traits (one c for all rows, c per row from the keys n a
row sees, whether a replay from weights needs d_k, whether it is a multiple of the logits at
all), the Train tab's tip, its colour and marker in plots, and the docs' formula and source.
:class:`~engine.core.scaling.Rule`, the configs, the trainer, the tour, the heads, the panels,
the command line and the rule table of docs/numerics.md follow from :data:`RULES`; a new rule
is one enum member and one row here (a parameter: one field of each table too).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from enum import StrEnum

import numpy as np

from engine.config.base import QT_TRANSLATE_NOOP, Cli, FieldSpec, Gui, Label, Msg, check_enum

__all__ = [
    "RULES",
    "RULE_DEFAULTS",
    "RULE_FIELDS",
    "RULE_PARAMETERS",
    "RuleParameters",
    "RuleSpec",
    "ScalingRule",
    "parse_rule",
    "rules_where",
    "yarn_temperature_factor",
]


class ScalingRule(StrEnum):
    """How raw dot products ``q·k`` become logits before the softmax (one :data:`RULES` row
    each)."""

    NONE = "none"
    SQRT = "sqrt"
    LINEAR = "linear"
    TEMPERATURE = "temperature"
    QK_NORM = "qk_norm"
    SOFTCAP = "softcap"
    LOG_N = "log_n"
    SSMAX = "ssmax"
    YARN = "yarn"
    LLAMA4 = "llama4"

    @property
    def spec(self) -> RuleSpec:
        """The rule's declaration."""
        return RULES[self]

    @property
    def length_dependent(self) -> bool:
        """Whether c depends on the number n of keys a row sees."""
        return RULES[self].per_row

    @property
    def label(self) -> str:
        """Short human-readable name used in legends (translated there) and CSV files."""
        return RULES[self].name


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RuleParameters:
    """The scaling rules' parameters, each used by its own rule only.

    Declared once for :class:`~engine.core.scaling.Rule` and for the configs that set them;
    :data:`RULE_FIELDS` gives their ranges, panel rows and ``main.py sweep`` options.
    ``temperature=None`` means T = √d_k and ``gain=None`` the QK-norm gain √d_k.
    """

    temperature: float | None = None
    gain: float | None = None
    cap: float = 50.0
    ssmax_s: float = 0.43
    yarn_factor: float = 4.0
    llama4_beta: float = 0.1
    llama4_floor: float = 8192.0


#: The names of the :class:`RuleParameters`, in order.
RULE_PARAMETERS = tuple(field.name for field in dataclasses.fields(RuleParameters))
#: Each rule parameter's default.
RULE_DEFAULTS = {field.name: field.default for field in dataclasses.fields(RuleParameters)}

_POSITIVE = {"low": 0.0, "high": None, "closed": "neither"}

#: Range, panel row (``None`` gain: a "default" check box above the slider) and sweep option of
#: every rule parameter. The range is the rule's own (any T > 0 is a temperature); the panel's
#: sliders cover a narrower, useful one.
RULE_FIELDS: dict[str, FieldSpec] = {
    "temperature": FieldSpec(**_POSITIVE, gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "temperature T"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "logits = q·k / T; T = √d_k reproduces 1/√d_k, "
            "Var(logit) = d_k·σ⁴ / T²."),
        "slider", low=0.01, high=1000.0, log=True,
        visible_when=("rule", ScalingRule.TEMPERATURE)),
        cli=Cli(("--temperature",), "temperature for the temperature rule (default √d_k)")),
    "gain": FieldSpec(**_POSITIVE, gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "gain g"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel", "QK-norm: logits = g·cos(q, k) ∈ [−g, g]; Var ≈ g²/d_k."),
        "slider", low=0.01, high=1000.0, log=True,
        default_text=QT_TRANSLATE_NOOP("ParameterPanel", "default g = √d_k"),
        default_tooltip=QT_TRANSLATE_NOOP(
            "ParameterPanel", "Use the default QK-norm gain g = √d_k."),
        visible_when=("rule", ScalingRule.QK_NORM)),
        cli=Cli(("--gain",), "QK-norm gain (default √d_k)")),
    "cap": FieldSpec(**_POSITIVE, gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "cap"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel", "Soft-cap: logits = cap·tanh((q·k/√d_k)/cap), bounded by ±cap."),
        "slider", low=0.1, high=1000.0, log=True, decimals=2,
        visible_when=("rule", ScalingRule.SOFTCAP)), cli=Cli(("--cap",), "soft-cap value")),
    "ssmax_s": FieldSpec(**_POSITIVE, gui=Gui(
        "SSMax s",  # a method's name and a symbol
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Scalable-Softmax (Nakanishi 2025): logits = s·ln n·q·k/√d_k, n the keys the row "
            "sees (under a causal mask row i sees i + 1); s = 0.43 in the paper's toy."),
        "slider", low=0.01, high=10.0, log=True, decimals=3,
        visible_when=("rule", ScalingRule.SSMAX)),
        cli=Cli(("--ssmax-s",), "Scalable-Softmax s for the ssmax rule (c = s·ln n/√d_k)")),
    # f < 1 would shrink the context: YaRN defines no such factor.
    "yarn_factor": FieldSpec(1.0, None, gui=Gui(
        QT_TRANSLATE_NOOP("ParameterPanel", "YaRN factor f"),
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "YaRN context-extension factor f: logits = q·k/(t·√d_k) with "
            "√(1/t) = 0.1·ln f + 1, i.e. c = (0.1·ln f + 1)²/√d_k (f = 1 gives 1/√d_k)."),
        "slider", low=1.0, high=1024.0, log=True, decimals=2,
        visible_when=("rule", ScalingRule.YARN)),
        cli=Cli(("--yarn-factor",), "YaRN context-extension factor f for the yarn rule "
                "(c = (0.1·ln f + 1)²/√d_k)")),
    "llama4_beta": FieldSpec(0.0, None, gui=Gui(
        "Llama 4 β",  # a model's name and a symbol
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Llama 4's attn_scale β: c = (1 + β·ln(1 + ⌊n/L⌋))/√d_k, n the keys the row sees "
            "(its position + 1 under a causal mask); β = 0 gives 1/√d_k."),
        "slider", low=0.0, high=1.0, decimals=3, visible_when=("rule", ScalingRule.LLAMA4)),
        cli=Cli(("--llama4-beta",), "Llama 4 attn_scale β for the llama4 rule")),
    "llama4_floor": FieldSpec(1.0, None, gui=Gui(
        "Llama 4 L",
        QT_TRANSLATE_NOOP(
            "ParameterPanel",
            "Llama 4's floor_scale L: c rises by β·ln 2 once a row sees L keys, by β·ln 3 at "
            "2L, …"),
        "slider", low=1.0, high=1e6, log=True, decimals=0,
        visible_when=("rule", ScalingRule.LLAMA4)),
        cli=Cli(("--llama4-floor",), "Llama 4 floor_scale L for the llama4 rule")),
}

#: c of a rule from its parameters, d_k and, for a per-row rule, the keys each row sees
#: (float64, >= 1); a float for the other rules.
ScaleFunction = Callable[[RuleParameters, int, "np.ndarray | None"], "float | np.ndarray"]


@dataclasses.dataclass(frozen=True, slots=True)
class RuleSpec:
    """One scaling rule, declared once.

    Parameters
    ----------
    label
        Legends (translated when a word: marked), CSV files and the command line's tables.
    menu
        The rule's item in the explorer's rule menu.
    tip
        What the rule does, as the Train tab trains it; ``{0}``, ``{1}``… are the defaults of
        ``parameters`` (parameters without a number as default are described in words).
    formula, source
        c as the docs' rule table writes it (the table adds the parameters and their
        defaults), and where the rule comes from.
    scale
        The function giving c (see :data:`ScaleFunction`).
    parameters
        The :class:`RuleParameters` the rule uses, each with the symbol captions show.
    per_row
        c depends on the number n of keys a row sees (each row of a causal mask its own).
    multiplicative
        The logits are c·q·k (with a c per row when ``per_row``): a replay from attention
        weights can rescale them. QK-norm and soft-cap are not.
    needs_d_k
        c·√d_k involves d_k, so a replay from weights of a file that does not give d_k cannot
        compute c'/c.
    in_length_view
        The rule is one of the Length view's curves (it addresses long contexts).
    color, marker, dash
        The rule's plot colour, pyqtgraph marker symbol and line dash (``""``, ``"dash"``,
        ``"dot"``, ``"dashdot"``: a dash keeps apart curves that coincide at a default).
    """

    label: Label
    menu: Label
    tip: Msg
    formula: str
    source: str
    scale: ScaleFunction
    parameters: tuple[tuple[str, str], ...] = ()
    per_row: bool = False
    multiplicative: bool = True
    needs_d_k: bool = True
    in_length_view: bool = False
    color: str = "#000000"
    marker: str = "o"
    dash: str = ""

    @property
    def name(self) -> str:
        """The label's English text."""
        return self.label if isinstance(self.label, str) else self.label.text

    @property
    def scalar(self) -> bool:
        """One c multiplies every logit c·q·k: the trainer's factored backward and the tour's
        backward-pass formula ∂L/∂Q = c·(J·g)·K hold."""
        return self.multiplicative and not self.per_row


def yarn_temperature_factor(factor: float) -> float:
    """YaRN's logit multiplier 1/t = (0.1·ln f + 1)² for a context-extension factor f ≥ 1.

    YaRN (Peng et al. 2023) defines softmax(q·k/(t·√d_k)) with √(1/t) = 0.1·ln f + 1 and
    applies √(1/t) to both q and k, so the logits are multiplied by its square.
    """
    from engine.config.base import check_number

    f = check_number("yarn_factor", factor, RULE_FIELDS["yarn_factor"].interval)
    return (0.1 * math.log(f) + 1.0) ** 2


def _temperature(p: RuleParameters, d_k: int, n: np.ndarray | None) -> float:
    return 1.0 / (math.sqrt(d_k) if p.temperature is None else p.temperature)


def _log_n(p: RuleParameters, d_k: int, n: np.ndarray | None) -> np.ndarray:
    return np.log(n) / math.sqrt(d_k)


def _ssmax(p: RuleParameters, d_k: int, n: np.ndarray | None) -> np.ndarray:
    return p.ssmax_s * np.log(n) / math.sqrt(d_k)


def _llama4(p: RuleParameters, d_k: int, n: np.ndarray | None) -> np.ndarray:
    return (1.0 + p.llama4_beta * np.log1p(np.floor(n / p.llama4_floor))) / math.sqrt(d_k)


def _sqrt(p: RuleParameters, d_k: int, n: np.ndarray | None) -> float:
    return 1.0 / math.sqrt(d_k)


#: Every rule, in the menus' order (the enum's).
RULES: dict[ScalingRule, RuleSpec] = {
    ScalingRule.NONE: RuleSpec(
        QT_TRANSLATE_NOOP("ScalingRule", "none"),
        QT_TRANSLATE_NOOP("ParameterPanel", "none (c = 1)"),
        QT_TRANSLATE_NOOP("TrainPanel", "No scaling: logits q·k with variance ≈ d_k at init."),
        "1", "no scaling", lambda p, d_k, n: 1.0,
        color="#D55E00", marker="o"),  # vermillion: the "bad" default stands out
    ScalingRule.SQRT: RuleSpec(
        "1/√d_k", "1/√d_k",  # math: the same in every language
        QT_TRANSLATE_NOOP("TrainPanel", "Divide the logits by √d_k (the Transformer rule)."),
        "1/√d_k", "Vaswani et al. 2017: unit-variance logits at init", _sqrt,
        needs_d_k=False, in_length_view=True, color="#0072B2", marker="s"),
    ScalingRule.LINEAR: RuleSpec(
        "1/d_k", "1/d_k",
        QT_TRANSLATE_NOOP("TrainPanel", "Divide the logits by d_k (μP)."),
        "1/d_k", "μP, Yang et al. 2022: right once q and k are correlated",
        lambda p, d_k, n: 1.0 / d_k, color="#009E73", marker="t"),
    ScalingRule.TEMPERATURE: RuleSpec(
        "1/T", QT_TRANSLATE_NOOP("ParameterPanel", "temperature 1/T"),
        QT_TRANSLATE_NOOP(
            "TrainPanel", "Divide the logits by a temperature T (here T = √d_k: the same "
            "model as 1/√d_k)."),
        "1/T", "a knob turned at inference; T = √d_k is `sqrt`",
        _temperature, (("temperature", "T"),), color="#E69F00", marker="d", dash="dash"),
    ScalingRule.QK_NORM: RuleSpec(
        QT_TRANSLATE_NOOP("ScalingRule", "QK-norm"), QT_TRANSLATE_NOOP("ParameterPanel", "QK-norm"),
        QT_TRANSLATE_NOOP(
            "TrainPanel", "Normalise q and k to unit length, times a gain (default √d_k)."),
        "g·q̂·k̂ (q̂, k̂ the ℓ₂-normalised q and k; c = 1)",
        "Henry et al. 2020; Dehghani et al. 2023 (ViT-22B)", lambda p, d_k, n: 1.0,
        (("gain", "g"),),
        multiplicative=False, color="#CC79A7", marker="x"),
    ScalingRule.SOFTCAP: RuleSpec(
        QT_TRANSLATE_NOOP("ScalingRule", "soft-cap"),
        QT_TRANSLATE_NOOP("ParameterPanel", "soft-cap"),
        QT_TRANSLATE_NOOP("TrainPanel", "1/√d_k, then cap·tanh(s/cap) with cap = {0}."),
        "1/√d_k, then cap·tanh(s/cap)", "Gemma 2 (Gemma Team 2024)", _sqrt,
        (("cap", "cap"),), multiplicative=False, color="#56B4E9", marker="star",
        dash="dashdot"),
    # The length rules: the Okabe-Ito palette's black, then Paul Tol's wine and olive (also
    # colour-blind safe, distinct from the seven above).
    ScalingRule.LOG_N: RuleSpec(
        QT_TRANSLATE_NOOP("ScalingRule", "ln n/√d_k"), "ln n/√d_k",
        QT_TRANSLATE_NOOP(
            "TrainPanel", "Multiply the 1/√d_k logits by ln n, n the keys a row sees."),
        "ln n/√d_k", "Chiang & Cholak 2022, \"Overcoming a theoretical limitation of "
        "self-attention\": the usual logits multiplied by log n", _log_n, per_row=True,
        needs_d_k=False, in_length_view=True, color="#000000", marker="t1"),
    ScalingRule.SSMAX: RuleSpec(
        QT_TRANSLATE_NOOP("ScalingRule", "SSMax"),
        "SSMax s·ln n/√d_k",  # a method's name and math
        QT_TRANSLATE_NOOP(
            "TrainPanel", "Scalable-Softmax: the 1/√d_k logits times s·ln n (s = {0})."),
        "s·ln n/√d_k", "Scalable-Softmax, Nakanishi 2025: softmax of "
        "z becomes n^(s·z_i)/Σ_j n^(s·z_j) = softmax(s·ln n·z)", _ssmax,
        (("ssmax_s", "s"),), per_row=True, needs_d_k=False, in_length_view=True,
        color="#882255", marker="p", dash="dash"),
    ScalingRule.YARN: RuleSpec(
        "YaRN", QT_TRANSLATE_NOOP("ParameterPanel", "YaRN temperature"),
        QT_TRANSLATE_NOOP(
            "TrainPanel",
            "YaRN's temperature: the 1/√d_k logits times (0.1·ln f + 1)² (f = {0})."),
        "(0.1·ln f + 1)²/√d_k", "YaRN, Peng et al. 2023: "
        "softmax(q·k/(t·√d_k)) with √(1/t) = 0.1·ln f + 1 for a context-extension factor f; "
        "implementations multiply both q and k by √(1/t), hence the square",
        lambda p, d_k, n: yarn_temperature_factor(p.yarn_factor) / math.sqrt(d_k),
        (("yarn_factor", "f"),), needs_d_k=False, in_length_view=True, color="#999933",
        marker="h", dash="dot"),
    # Paul Tol's indigo, distinct from the nine above.
    ScalingRule.LLAMA4: RuleSpec(
        QT_TRANSLATE_NOOP("ScalingRule", "Llama 4"),
        "Llama 4 (1 + β·ln(1 + ⌊n/L⌋))/√d_k",  # a model's name and math
        QT_TRANSLATE_NOOP(
            "TrainPanel", "Llama 4's position temperature: the 1/√d_k logits times "
            "1 + β·ln(1 + ⌊n/L⌋), n the keys a row sees (β = {0}, L = {1})."),
        "(1 + β·ln(1 + ⌊n/L⌋))/√d_k", "Llama 4's attn_temperature_tuning (transformers' "
        "Llama4TextAttention): queries at position i times 1 + β·ln(1 + ⌊(i + 1)/L⌋) "
        "(β = attn_scale, L = floor_scale), i + 1 the keys row i sees under the causal mask",
        _llama4, (("llama4_beta", "β"), ("llama4_floor", "L")), per_row=True, needs_d_k=False,
        in_length_view=True, color="#332288", marker="t2", dash="dashdot"),
}


_BY_NAME: dict[str, ScalingRule] = {rule.value: rule for rule in ScalingRule}


def parse_rule(rule: object, name: str = "rule") -> ScalingRule:
    """``ScalingRule(rule)``, or a ``ValueError`` naming ``name`` and listing the rules: the one
    rule-name parser (configs, the engine's calls, claims, sessions, the command line)."""
    # A dictionary lookup first: every attention call parses its rule, and the enum's
    # constructor is a visible part of a small call's cost.
    found = _BY_NAME.get(rule) if isinstance(rule, str) else None
    return found if found is not None else check_enum(name, ScalingRule, rule)


def rules_where(trait: str) -> tuple[ScalingRule, ...]:
    """The rules whose declaration has ``trait`` (``"scalar"``, ``"per_row"``,
    ``"multiplicative"``, ``"needs_d_k"``, ``"in_length_view"``) true, in the enum's order."""
    return tuple(rule for rule, spec in RULES.items() if getattr(spec, trait))
