"""The window's part of export captions: each view's caption says what its figure shows.

Explorer views: random q, k with their settings (n, d_k, σ or the projections, ρ, mask, seed)
or the real head (file or model, layer, head), and the rule. Train views: the task, the rules,
the learning rate (or the swept ones) and the init std. Kept on every view's export widget
(:func:`gui.kit.caption.set_caption`) whenever results reach the views and when the language
changes, so every export path (File menu, Export all, ``main.py export``) draws the same line.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Slot

from engine.config import RULES, AttentionConfig, MaskKind, ScalingRule, TrainConfig
from gui.explorer.head_text import head_label
from gui.kit import style
from gui.kit.caption import set_caption
from gui.kit.i18n import translate

__all__ = ["WindowCaptions", "explorer_caption", "train_caption"]


def _number(value: float) -> str:
    return f"{value:.3g}"


def rule_text(config: Any) -> str:
    """The rule of ``config`` with the parameter it uses, e.g. "1/T (T = 8)"."""
    rule = ScalingRule(config.rule)
    name = style.rule_name(rule)
    shown = [f"{symbol} = {_number(value)}" for field, symbol in RULES[rule].parameters
             if (value := getattr(config, field, None)) is not None]
    return f"{name} ({', '.join(shown)})" if shown else name


def explorer_caption(config: AttentionConfig, head: Any) -> str:
    """The caption of an explorer figure of ``config`` (``head``: the real head shown, or
    ``None`` for random q, k)."""
    rule = translate("Caption", "rule {0}").format(rule_text(config))
    if head is not None:
        return translate("Caption", "Real q, k of {0} (n = {1}, d_k = {2}) · {3}").format(
            head_label(head), config.n_tokens, config.d_k, rule)
    if config.use_projection:
        spread = translate("Caption", "projections W_Q, W_K (d_model = {0}, s = {1})").format(
            config.d_model, _number(config.projection_std))
    else:
        spread = f"σ = {_number(config.init_std)}"
    text = translate("Caption", "Random q, k: n = {0}, d_k = {1}, {2}, ρ = {3}, seed {4}").format(
        config.n_tokens, config.d_k, spread, _number(config.rho), config.seed)
    if config.mask == MaskKind.CAUSAL:
        text += " · " + translate("Caption", "causal mask")
    return f"{text} · {rule}"


def train_caption(config: TrainConfig, lrs: tuple[float, ...] = (), seeds: int = 0) -> str:
    """The caption of a Train figure of ``config``; ``lrs`` and ``seeds`` for a sweep."""
    rules = ", ".join(style.rule_name(rule) for rule in config.rules)
    if lrs:
        rate = translate("Caption", "learning rates {0} … {1}, {2} seeds").format(
            _number(min(lrs)), _number(max(lrs)), seeds)
    else:
        rate = translate("Caption", "learning rate {0}, seed {1}").format(
            _number(config.lr), config.seed)
    return translate(
        "Caption", "Trained: n = {0}, d_k = {1}, rules {2} · {3}, init std {4}, {5} steps"
    ).format(config.n, config.d_k, rules, rate, _number(config.resolved_init_std),
             config.steps)


class WindowCaptions(QObject):
    """Keeps the captions of the window's explorer and Train views up to date.

    Parameters
    ----------
    window
        The main window (``views``, ``controller``, ``train_tab``).
    """

    def __init__(self, window: Any) -> None:
        super().__init__(window)
        self._window = window
        # Each controller's results change only its own views' captions: a training run's
        # many frames leave the explorer's alone.
        window.controller.resultsShown.connect(self.refresh_explorer)
        window.train_tab.controller.resultsShown.connect(self.refresh_train)

    @Slot()
    def refresh(self) -> None:
        """Set every view's caption from what it shows now (and in the current language)."""
        self.refresh_explorer()
        self.refresh_train()

    @Slot()
    @Slot(object)
    def refresh_explorer(self, *_args: object) -> None:
        """Set the explorer views' caption from the results they show now."""
        window = self._window
        results = window.controller.results()
        text = ""
        if results is not None:
            # The head of the results shown (a loaded RealHead keeps its HeadRef).
            snapshot = results.snapshot
            real = None if snapshot is None else snapshot.real_head
            head = window.controller.real_head() if snapshot is None else getattr(
                real, "ref", None)
            text = explorer_caption(results.config, head)
        for view in window.views:
            set_caption(view.export_item(), text)

    @Slot()
    @Slot(object)
    def refresh_train(self, *_args: object) -> None:
        """Set the Train views' captions: the sweep's on its view, the run's on the others."""
        run, sweep = self._train_texts()
        for view in self._window.train_tab.views:
            set_caption(view.export_item(), sweep if view.key == "train_lr_sweep" else run)

    def _train_texts(self) -> tuple[str, str]:
        """The caption of the last run's views and of the learning-rate sweep's view."""
        controller = self._window.train_tab.controller
        results = controller.results()
        snapshot = results.snapshot
        run = "" if snapshot is None else train_caption(snapshot.config)
        sweep = results.sweep
        done = getattr(sweep, "result", None)
        if done is not None:
            return run, train_caption(done.config, done.lrs, len(done.seeds))
        job = controller.job()
        if sweep is not None and job is not None and job.task.lrs:
            return run, train_caption(job.task.config, job.task.lrs, job.task.seeds)
        return run, ""
