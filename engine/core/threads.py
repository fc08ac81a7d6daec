"""The one place that limits how many threads BLAS (numpy's matrix products) may use.

A limit matters in three places: the explorer's worker (the GUI thread needs a core of its own
on a two-core machine), small training models (a two-thread GEMM of microseconds is slower than
one thread), and the attention row blocks (each pool worker pins BLAS to one thread so that
``workers × BLAS threads`` does not oversubscribe the cores).

The limit is process-wide: hold it only while computing, never across a ``yield`` that hands
control to other code.
"""

from __future__ import annotations

import contextlib
import threading

from threadpoolctl import ThreadpoolController

__all__ = ["limit_blas_threads"]

_controller: ThreadpoolController | None = None
_controller_lock = threading.Lock()


def _get_controller() -> ThreadpoolController:
    global _controller
    # Creating the controller scans the loaded libraries (milliseconds): do it once.
    with _controller_lock:
        if _controller is None:
            _controller = ThreadpoolController()
        return _controller


def limit_blas_threads(threads: int | None) -> contextlib.AbstractContextManager[object]:
    """Return a context manager that limits BLAS to ``threads`` (≥ 1) threads inside its
    block; ``None`` leaves BLAS as it is.

    Examples
    --------
    >>> import numpy as np
    >>> with limit_blas_threads(1):
    ...     product = np.ones((64, 64)) @ np.ones((64, 64))
    """
    if threads is None:
        return contextlib.nullcontext()
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer or None, got {threads!r}")
    return _get_controller().limit(limits=threads, user_api="blas")
