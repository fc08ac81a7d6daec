"""Trailing means of a training curve: the per-step loss is noisy over decades at small batches."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from engine.config.base import check_int

__all__ = ["trailing_mean"]


def trailing_mean(values: ArrayLike, window: int) -> np.ndarray:
    """Mean of the finite values among each step's last ``window`` steps.

    Parameters
    ----------
    values
        One value per step (1-D); NaN and ±inf (a diverged step) are left out of the means.
    window
        How many steps each mean looks back over, the current one included (≥ 1).

    Returns
    -------
    numpy.ndarray
        float64 of ``values``' length; NaN where no value of the window is finite.

    Raises
    ------
    ValueError
        If ``values`` is not 1-D or ``window`` < 1.

    Examples
    --------
    >>> trailing_mean([4.0, 2.0, float("nan"), 0.0], 2).tolist()
    [4.0, 3.0, 2.0, 0.0]
    """
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {a.shape}")
    window = check_int("window", window)
    finite = np.isfinite(a)
    sums = _window_sums(np.where(finite, a, 0.0), window)
    counts = _window_sums(finite.astype(np.float64), window)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    mean[counts == 0] = np.nan
    return mean


def _window_sums(values: np.ndarray, window: int) -> np.ndarray:
    """Sum of ``values[max(0, t - window + 1) : t + 1]`` for every t, in O(n).

    Blocks of ``window`` steps: each window is the tail of one block plus the head of the next,
    and both partial sums add only values inside the window, so a huge loss before it (a spike
    the run recovered from) cannot cancel away its small values as a running total would.
    """
    n = values.size
    if n == 0:
        return values.copy()
    blocks = -(-n // window)
    padded = np.zeros(blocks * window)
    padded[:n] = values
    grid = padded.reshape(blocks, window)
    head = np.cumsum(grid, axis=1).ravel()  # block start … t
    tail = np.cumsum(grid[:, ::-1], axis=1)[:, ::-1].ravel()  # s … block end
    t = np.arange(n)
    s = t - window + 1
    out = head[t].copy()
    # s < 0: the window is the first block's head; s on a block start: the whole block, = head.
    straddles = (s > 0) & (s % window != 0)
    out[straddles] += tail[s[straddles]]
    return out
