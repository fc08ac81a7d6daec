"""The Model tab: a real model's next-token loss as its attention scale α changes (issue P)."""

from gui.model.view import ModelView

__all__ = ["ModelView"]
