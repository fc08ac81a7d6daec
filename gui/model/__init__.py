"""The Model tab: a real model's next-token loss as its attention scale α changes (issue P).

Importing the package imports no Qt (its child process imports :mod:`gui.model.task`);
``ModelView`` is loaded on first use.
"""

from typing import Any

__all__ = ["ModelView"]


def __getattr__(name: str) -> Any:
    if name == "ModelView":
        from gui.model.view import ModelView

        return ModelView
    raise AttributeError(f"module 'gui.model' has no attribute {name!r}")
