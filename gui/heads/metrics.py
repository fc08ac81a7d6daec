"""The diagnostics the Heads view can colour its grid by, and the table's columns."""

from __future__ import annotations

import dataclasses
import math

from engine.analysis.heads import HeadDiagnostics
from gui.kit.i18n import QT_TRANSLATE_NOOP, translate

__all__ = ["FLAG_TEXT", "METRICS", "Metric", "flag_text", "metric_by_key"]


@dataclasses.dataclass(frozen=True)
class Metric:
    """One diagnostic: its attribute of :class:`HeadDiagnostics`, its label (marked for
    translation in the ``HeadsView`` context) and its colour range (None: the data's range)."""

    key: str
    label: str
    tooltip: str
    levels: tuple[float, float] | None

    def value(self, diagnostics: HeadDiagnostics) -> float:
        """The metric of one head (NaN when the engine has none)."""
        value = float(getattr(diagnostics, self.key))
        return value if math.isfinite(value) else math.nan

    def text(self) -> str:
        """The label in the current language."""
        return translate("HeadsView", self.label)

    def tooltip_text(self) -> str:
        """The tooltip in the current language."""
        return translate("HeadsView", self.tooltip)


METRICS: tuple[Metric, ...] = (
    Metric("logit_std_ratio", QT_TRANSLATE_NOOP("HeadsView", "logit std ÷ √d_k law"),
           QT_TRANSLATE_NOOP("HeadsView", "std of c·q·k over the unmasked logits, divided by "
                             "the law's √d_k·σ(c·q)·σ(k); 1 means the head follows the law"),
           None),
    Metric("max_abs_logit", QT_TRANSLATE_NOOP("HeadsView", "max |logit|"),
           QT_TRANSLATE_NOOP("HeadsView", "largest unmasked |c·q·k| over all rows and batch "
                             "entries"), None),
    Metric("entropy_fraction", QT_TRANSLATE_NOOP("HeadsView", "entropy ÷ ln n"),
           QT_TRANSLATE_NOOP("HeadsView", "mean row entropy divided by ln n: 0 one-hot, "
                             "1 uniform"), (0.0, 1.0)),
    Metric("entropy_above_zhai", QT_TRANSLATE_NOOP("HeadsView", "entropy − Zhai bound"),
           QT_TRANSLATE_NOOP("HeadsView", "mean row entropy minus the least entropy a row "
                             "with the same logit norm ‖z − z̄‖ can have (Zhai et al. 2023), "
                             "in nats; 0: rows as peaked as their logits allow"), None),
    Metric("p_max_mean", QT_TRANSLATE_NOOP("HeadsView", "mean p_max"),
           QT_TRANSLATE_NOOP("HeadsView", "mean over query rows of the largest weight"),
           (0.0, 1.0)),
    Metric("saturated_share", QT_TRANSLATE_NOOP("HeadsView", "saturated share"),
           QT_TRANSLATE_NOOP("HeadsView", "share of query rows with p_max > 0.99"),
           (0.0, 1.0)),
    Metric("sink_mass", QT_TRANSLATE_NOOP("HeadsView", "sink mass"),
           QT_TRANSLATE_NOOP("HeadsView", "mean weight on token 0"), (0.0, 1.0)),
    Metric("rho", QT_TRANSLATE_NOOP("HeadsView", "ρ(q, k)"),
           QT_TRANSLATE_NOOP("HeadsView", "correlation of matching q and k components, "
                             "estimated from the data"), (-1.0, 1.0)),
)

#: Flag -> its name in the table (marked for translation).
FLAG_TEXT: dict[str, str] = {
    "saturated": QT_TRANSLATE_NOOP("HeadsView", "saturated"),
    "sink": QT_TRANSLATE_NOOP("HeadsView", "sink"),
    "near-uniform": QT_TRANSLATE_NOOP("HeadsView", "near-uniform"),
}


def flag_text(flags: tuple[str, ...]) -> str:
    """The flags of a head, translated and joined."""
    return ", ".join(translate("HeadsView", FLAG_TEXT.get(flag, flag)) for flag in flags)


def metric_by_key(key: str) -> Metric:
    """The metric named ``key``."""
    for metric in METRICS:
        if metric.key == key:
            return metric
    raise KeyError(key)
