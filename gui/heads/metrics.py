"""The diagnostics the Heads view can colour its grid by, and the table's columns."""

from __future__ import annotations

import dataclasses
import math

from engine.analysis.heads import HeadDiagnostics
from gui.kit.i18n import QT_TRANSLATE_NOOP, translate

__all__ = ["FLAG_TEXT", "METRICS", "Metric", "flag_text", "metric_by_key", "ratio_text"]


@dataclasses.dataclass(frozen=True)
class Metric:
    """One diagnostic: its attribute of :class:`HeadDiagnostics`, its label (marked for
    translation in the ``HeadsView`` context) and its colour range (None: from 0, or the
    data's least value if negative, to the data's largest)."""

    key: str
    label: str
    tooltip: str
    levels: tuple[float, float] | None

    def value(self, diagnostics: HeadDiagnostics) -> float:
        """The metric of one head (NaN when the engine has none)."""
        value = float(getattr(diagnostics, self.key))
        return value if math.isfinite(value) else math.nan

    def format(self, value: float) -> str:
        """``value`` as the table shows it: ratios and shares (the metrics with a fixed colour
        range) with three decimals, and "< 0.001" rather than 1.655e-38 for what rounds to
        zero; other quantities with three significant digits (whole numbers up to 10⁵)."""
        if self.levels is not None:
            return ratio_text(value)
        return f"{value:.0f}" if 1000 <= abs(value) < 1e5 else f"{value:.3g}"

    def text(self) -> str:
        """The label in the current language."""
        return translate("HeadsView", self.label)

    def tooltip_text(self) -> str:
        """The tooltip in the current language."""
        return translate("HeadsView", self.tooltip)


#: The first is the grid's default colour: every flag shows in it (saturated and sharp heads
#: near 0, near-uniform ones near 1, a sink pulls a head's entropy down).
METRICS: tuple[Metric, ...] = (
    Metric("entropy_fraction", QT_TRANSLATE_NOOP("HeadsView", "entropy ÷ uniform"),
           QT_TRANSLATE_NOOP("HeadsView", "mean row entropy divided by that of uniform weights "
                             "over the keys each row sees (ln n without a mask; row i of a "
                             "causal head sees i + 1 keys): 0 one-hot, 1 uniform"), (0.0, 1.0)),
    Metric("logit_std", QT_TRANSLATE_NOOP("HeadsView", "logit std"),
           QT_TRANSLATE_NOOP("HeadsView", "std of the unmasked logits at the model's own scale "
                             "(about 1 for a healthy head at 1/√d_k; a grown q or k shows "
                             "here)"), None),
    Metric("max_abs_logit", QT_TRANSLATE_NOOP("HeadsView", "max |logit|"),
           QT_TRANSLATE_NOOP("HeadsView", "largest unmasked |c·q·k| over all rows and batch "
                             "entries"), None),
    Metric("p_max_mean", QT_TRANSLATE_NOOP("HeadsView", "mean p_max"),
           QT_TRANSLATE_NOOP("HeadsView", "mean over query rows of the largest weight"),
           (0.0, 1.0)),
    Metric("saturated_share", QT_TRANSLATE_NOOP("HeadsView", "saturated share"),
           QT_TRANSLATE_NOOP("HeadsView", "share of the query rows that see two or more keys "
                             "with p_max > 0.99"), (0.0, 1.0)),
    Metric("sink_mass", QT_TRANSLATE_NOOP("HeadsView", "sink mass"),
           QT_TRANSLATE_NOOP("HeadsView", "mean weight on token 0"), (0.0, 1.0)),
    Metric("logit_std_ratio", QT_TRANSLATE_NOOP("HeadsView", "logit std ÷ √d_k law"),
           QT_TRANSLATE_NOOP("HeadsView", "std of c·q·k over the unmasked logits, divided by "
                             "the law's √d_k·σ(c·q)·σ(k) from the head's own spread of q and "
                             "k: tests whether the logits are sums of independent products "
                             "(1: they are), not whether they are large: a grown q or k grows "
                             "the law too"), (0.0, 2.0)),
    Metric("entropy_above_floor", QT_TRANSLATE_NOOP("HeadsView", "entropy − floor at norm"),
           QT_TRANSLATE_NOOP("HeadsView", "mean row entropy minus the least entropy a row "
                             "with the same logit norm ‖z − z̄‖ can have (the extremal bound "
                             "of Zhai et al. 2023), in nats; 0: rows as peaked as their "
                             "logits allow"), None),
    Metric("rho", QT_TRANSLATE_NOOP("HeadsView", "ρ(q, k)"),
           QT_TRANSLATE_NOOP("HeadsView", "correlation of matching q and k components, each "
                             "centred over the tokens first (the explorer's ρ)"), (-1.0, 1.0)),
)

#: Flag -> its name in the table (marked for translation).
FLAG_TEXT: dict[str, str] = {
    "saturated": QT_TRANSLATE_NOOP("HeadsView", "saturated"),
    "sharp": QT_TRANSLATE_NOOP("HeadsView", "sharp"),
    "sink": QT_TRANSLATE_NOOP("HeadsView", "sink"),
    "near-uniform": QT_TRANSLATE_NOOP("HeadsView", "near-uniform"),
}


def ratio_text(value: float) -> str:
    """A ratio or share with three decimals; a value that would print as ±0.000 but is not 0
    says how small it is ("< 0.001", "> −0.001")."""
    if value != 0 and abs(value) < 0.0005:
        return "< 0.001" if value > 0 else "> −0.001"
    return f"{value:.3f}".replace("-", "−")


def flag_text(flags: tuple[str, ...]) -> str:
    """The flags of a head, translated and joined."""
    return ", ".join(translate("HeadsView", FLAG_TEXT.get(flag, flag)) for flag in flags)


def metric_by_key(key: str) -> Metric:
    """The metric named ``key``."""
    for metric in METRICS:
        if metric.key == key:
            return metric
    raise KeyError(key)
