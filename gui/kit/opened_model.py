"""The model a worker keeps open between requests.

Opening a model reads its weights' headers (and a GGUF file's vocabulary): a second request on
the same file must not pay that again. The model is kept while its path and modification time
stay the same; a changed file is opened anew.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from engine.models import Model, open_model
from engine.models.capture import UNFORESEEN_ERRORS, unforeseen

__all__ = ["OpenedModel"]


class OpenedModel:
    """The last model a worker opened, re-used while its file is unchanged (worker thread only)."""

    def __init__(self) -> None:
        self._model: Model | None = None
        self._key: tuple[str, int] | None = None

    def open(self, path: str, cancelled: Callable[[], bool]) -> Model:
        """The model at ``path``, opened now or kept from the last call.

        Raises
        ------
        ModelError
            The file cannot be opened (an error the checks did not foresee becomes one line).
        CaptureCancelled
            ``cancelled()`` returned True while the model was being opened.
        """
        try:
            key = (os.path.realpath(path), os.stat(path).st_mtime_ns)
        except (OSError, ValueError):
            key = None
        if key is None or key != self._key:
            self._model, self._key = None, None  # release the old model's mappings first
            try:
                self._model = open_model(path, cancelled=cancelled)
            except UNFORESEEN_ERRORS as exc:
                raise unforeseen(path, exc) from exc
            self._key = key
        assert self._model is not None
        return self._model
