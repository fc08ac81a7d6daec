"""What the guided tour needs of the window it steers (the main window provides it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from engine.config import AttentionConfig
    from engine.config.train import TrainConfig

__all__ = ["TourHost"]


class TourHost(Protocol):
    """The narrow interface between the tour and the main window.

    A step applies its explorer and training settings, brings a view forward and frames it;
    the tour reads nothing else of the window but the Train tab's settings, to put them back
    when the tour moves on.
    """

    def apply_explorer_config(self, config: AttentionConfig,
                              temperature: float | None = None) -> None:
        """Show ``config`` in the parameter panel and compute it; set the temperature view's T
        first when ``temperature`` is given."""

    def apply_train_settings(self, config: TrainConfig | None,
                             lr_sweep: tuple[tuple[float, ...], int] | None = None) -> None:
        """Put a training configuration and a learning-rate sweep ``(lrs, seeds)`` into the
        Train tab (``None``: leave that part as it is)."""

    def train_settings(self) -> tuple[TrainConfig | None, tuple[tuple[float, ...], int] | None]:
        """The Train tab's configuration and learning-rate sweep, as
        :meth:`apply_train_settings` takes them back (``None`` for a part whose input is
        invalid now: it cannot be put back)."""

    def start_training(self) -> bool:
        """Start a run of the Train tab's configuration, as its Start button does (off the GUI
        thread, with its progress bar and Stop); False when a run or sweep is going already."""

    def stop_training(self) -> None:
        """Stop the Train tab's run, as its Stop button does (nothing when none runs)."""

    def run_sample_model(self) -> str:
        """Run the Model tab's sweep on an installed sample model (SmolLM2), as its Run button
        does; "" when it runs, else the message naming the pip command that installs one."""

    def show_view(self, key: str) -> bool:
        """Bring the view ``key`` to the front; False when there is no such view."""

    def current_view(self) -> object:
        """The view in front (a widget to frame)."""
