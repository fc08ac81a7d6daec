"""The y ranges of the training curves: they move in coarse steps, not with every push."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pyqtgraph as pg

__all__ = ["MANAGED_Y", "SteppedYRanges"]

#: Plots whose y range the view sets itself, in steps (see :class:`SteppedYRanges`).
MANAGED_Y = ("loss", "grad_norm", "entropy")


def _nice_range(lo: float, hi: float, step: float) -> tuple[float, float]:
    """``[lo, hi]`` widened to multiples of ``step`` (at least one step wide)."""
    a, b = math.floor(lo / step) * step, math.ceil(hi / step) * step
    return (a, b) if b > a else (a, a + step)


def _padded(fitted: tuple[float, float]) -> tuple[float, float]:
    """The view range pyqtgraph shows for ``setYRange(*fitted, padding=0.02)``."""
    pad = 0.02 * (fitted[1] - fitted[0])
    return fitted[0] - pad, fitted[1] + pad


class SteppedYRanges:
    """Y ranges of the loss, gradient-norm and entropy plots, moved in coarse steps.

    Half decades on the log plots, tenths of ln n on the entropy plot, instead of pyqtgraph's
    auto-range: that recomputed every curve's bounds and re-generated the axes on almost every
    push (a third of a push's time on the GUI thread, and its worst stalls). A plot zoomed or
    panned by hand is left alone until :meth:`reset`.

    Parameters
    ----------
    plots
        Name in :data:`MANAGED_Y` -> plot.
    """

    def __init__(self, plots: Mapping[str, pg.PlotItem]) -> None:
        self._plots = dict(plots)
        # name -> range last set; None: fit at the next push; "user": zoomed by hand.
        self._fitted: dict[str, tuple[float, float] | str | None] = {}
        self._log_y = {name: name != "entropy" for name in self._plots}
        self.reset()

    def set_log_y(self, name: str, log_y: bool) -> None:
        """Fit plot ``name`` as a log (half decades) or linear y axis from the next push on."""
        self._log_y[name] = log_y
        self._plots[name].enableAutoRange(y=False)
        self._fitted[name] = None

    def reset(self) -> None:
        """Turn the plots' y auto-range off and fit every range again at the next push."""
        for name, plot in self._plots.items():
            plot.enableAutoRange(y=False)
            self._fitted[name] = None

    def fit(self, snap: object, training_losses: Sequence[np.ndarray]) -> None:
        """Set the managed y ranges when the data left them (not after a manual zoom).

        ``training_losses`` are the training-loss curves as drawn (per step or trailing
        means, one per rule), so that the range fits what is on screen.
        """
        rules = snap.rules.values()  # type: ignore[attr-defined]
        series = {
            "loss": [*training_losses, *(st.eval_loss_history for st in rules)],
            "grad_norm": [st.grad_norm_history for st in rules],
            "entropy": [np.asarray(st.entropy_history, dtype=np.float64) for st in rules],
        }
        for name, plot in self._plots.items():
            fitted = self._fitted[name]
            shown = tuple(plot.getViewBox().viewRange()[1])
            if fitted == "user":
                continue
            if fitted is not None and not np.allclose(shown, _padded(fitted)):  # type: ignore[arg-type]
                self._fitted[name] = "user"  # zoomed or panned by hand: leave it alone
                continue
            log_y = self._log_y[name]
            lo, hi = math.inf, -math.inf
            for values in series[name]:
                a = np.asarray(values, dtype=np.float64)
                a = a[np.isfinite(a) & (a > 0)] if log_y else a[np.isfinite(a)]
                if a.size:
                    lo, hi = min(lo, float(a.min())), max(hi, float(a.max()))
            if lo > hi:
                continue
            if log_y:
                wanted = _nice_range(math.log10(lo), math.log10(hi), 0.5)
            elif name != "entropy":
                # A linear loss or gradient norm: from 0, in steps of half its leading digit's
                # decade, so the axis does not move with every small change of the top.
                step = 0.5 * 10.0 ** math.floor(math.log10(hi)) if hi > 0 else 1.0
                wanted = _nice_range(min(lo, 0.0), hi, step)
            else:
                n = int(snap.config.n)  # type: ignore[attr-defined]
                wanted = _nice_range(lo, hi, 0.1 * math.log(max(n, 2)))
            if wanted != fitted:
                plot.setYRange(*wanted, padding=0.02)
                self._fitted[name] = wanted
