"""Control panels that edit immutable configurations and emit one change signal."""

from gui.panels.parameters import LinkedSlider, ParameterPanel

__all__ = ["LinkedSlider", "ParameterPanel"]
