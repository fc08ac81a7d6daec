"""The "Train" tab: train the tiny attention model for several scaling rules side by side.

:class:`~gui.train.tab.TrainTab` holds the control panel, the live views (curves, probe
attention maps, learning-rate sweep) and the :class:`~gui.train.controller.TrainController`
that runs :func:`engine.training.trainer.iter_training` /
:func:`engine.training.lr_sweep.iter_lr_sweep` on its own worker thread.
"""

from __future__ import annotations

from gui.train.tab import TrainTab

__all__ = ["TrainTab"]
