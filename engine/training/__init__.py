"""The mini-trainer: tasks, the tiny attention model, optimisers, training loop, lr sweep.

``lr_sweep`` drives ``trainer`` (snapshots over time), which drives a ``session`` (one
side-by-side run, step by step) of the ``model`` (forward/backward, with its ``params``) on
``tasks``; ``snapshot`` and ``lr_results`` are what they report.
"""
