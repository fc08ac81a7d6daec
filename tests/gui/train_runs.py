"""What the Train tab tests share: a small configuration that trains in moments, and readers."""

from __future__ import annotations

import numpy as np

from engine.config.train import TrainConfig

SMALL = TrainConfig(rules=("none", "sqrt"), d_k=16, d_model=32, n=8, vocab=16, batch=32,
                    steps=80, lr=0.01, eval_size=64)


def curve_y(curve) -> np.ndarray:
    """The y values a curve was given (empty when it has none)."""
    y = curve.getOriginalDataset()[1]
    return np.zeros(0) if y is None else np.asarray(y, dtype=float)


def shown_step(tab) -> int:
    """The step of the tab's latest snapshot (-1 before the first)."""
    snap = tab.controller.results().snapshot
    return -1 if snap is None else snap.step
