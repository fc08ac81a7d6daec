"""The Model tab's engine work in a child process: the window never shares its interpreter lock.

A real model's forward pass is numpy, but between its matrix products it runs Python (the
blocks, the top-k tokens, the sweeps' bookkeeping); on a thread of the window's process every
paint then waited for the interpreter lock, and on a loaded two-core machine the window paused
for 100 ms and more while a sweep streamed in (benchmarks/bench_model_gui.py). As the Train tab
does for training (docs/design-notes.md), :class:`SweepProcess` runs :func:`~gui.model.task.
run_task` in a child started on first use ("spawn": forking a process that runs Qt's threads is
unsafe) and kept, with its open model, for the next tasks. The child imports no Qt.

Each message travels as ``(request_id, kind, payload)``: ``item`` (a message of the task),
``end`` (it ran to its end or was cancelled), ``error`` (a one-line message the user can act
on) or ``bug`` (an unexpected exception, with its type). Cancelling sets a shared number, the
highest cancelled request id, which the child polls through the engine's ``cancelled``
callbacks: the relay returns at once and reads the cancelled task's end before the next task.

The child is niced from its first line (:func:`lower_priority`, before its imports): when the
window and the child want the same core, the window gets it.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections.abc import Callable, Iterator
from multiprocessing import get_context, parent_process
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["CHILD_NICENESS", "POLL_S", "SweepProcess", "lower_priority"]

#: How often the relay looks for a message, a cancel or a dead child (seconds).
POLL_S = 0.01
#: How long :meth:`SweepProcess.close` waits for the child before it kills it (seconds).
CLOSE_WAIT_S = 2.0

#: How much lower the child's scheduling priority is than the window's.
CHILD_NICENESS = 5

_CONTEXT = get_context("spawn")


class ModelProcessError(RuntimeError):
    """The child process ended without answering (killed, out of memory)."""


class SweepProcess:
    """The child process that runs :class:`~gui.model.task.ModelTask` objects (relay side).

    Used from one thread at a time (the Model tab's worker thread); :meth:`close` from the GUI
    thread once that thread has ended.
    """

    def __init__(self) -> None:
        self._process: Any = None
        self._conn: Connection | None = None
        self._cancelled_upto = _CONTEXT.Value("q", 0, lock=False)
        self._unfinished: int | None = None  # a cancelled task whose end was not read yet

    def run(self, request_id: int, task: Any, cancelled: Callable[[], bool]) -> Iterator[Any]:
        """Yield the messages of ``task`` (request ids must increase); return at its end, or
        within :data:`POLL_S` once ``cancelled()`` is true.

        Raises
        ------
        ValueError
            The task failed on input the user can fix (its one-line message).
        ModelProcessError
            The child died, or failed on something unexpected (named with its type).
        """
        conn = self._start()
        if not self._finish_unfinished(cancelled):
            return
        conn.send((request_id, task))
        self._unfinished = request_id
        while True:
            if cancelled():
                self._cancelled_upto.value = request_id
                return
            if not conn.poll(POLL_S):
                if not self._process.is_alive():
                    self._unfinished = None
                    raise ModelProcessError(f"the model's process ended unexpectedly (exit "
                                            f"code {self._process.exitcode})")
                continue
            answered, kind, payload = conn.recv()
            if answered != request_id:
                continue
            if kind == "item":
                yield payload
                continue
            self._unfinished = None
            if kind == "error":
                raise ValueError(payload)
            if kind == "bug":
                raise ModelProcessError(payload)
            return

    def child_pid(self) -> int | None:
        """The child's process id while it runs (None before the first task or once ended)."""
        process = self._process
        return process.pid if process is not None and process.is_alive() else None

    def close(self) -> None:
        """End the child: closing its pipe ends its loop; killed if it is still busy after
        :data:`CLOSE_WAIT_S` (one engine step of a large model can take that long)."""
        self._cancelled_upto.value = 1 << 62
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        process, self._process = self._process, None
        if process is not None:
            process.join(CLOSE_WAIT_S)
            if process.is_alive():
                process.kill()
                process.join()

    def _start(self) -> Connection:
        if self._process is None or not self._process.is_alive():
            ours, theirs = _CONTEXT.Pipe()
            process = _CONTEXT.Process(target=_serve, args=(theirs, self._cancelled_upto),
                                       name="model-sweep", daemon=True)
            try:
                process.start()
            finally:
                theirs.close()
            self._process, self._conn, self._unfinished = process, ours, None
        assert self._conn is not None
        return self._conn

    def _finish_unfinished(self, cancelled: Callable[[], bool]) -> bool:
        """Read the rest of a cancelled task (it ends within one engine step); False when
        ``cancelled()`` turned true meanwhile."""
        conn = self._conn
        assert conn is not None
        while self._unfinished is not None:
            if cancelled():
                return False
            if not conn.poll(POLL_S):
                if not self._process.is_alive():
                    self._unfinished = None
                continue
            answered, kind, _payload = conn.recv()
            if answered == self._unfinished and kind != "item":
                self._unfinished = None
        return True


def _serve(conn: Connection, cancelled_upto: Any) -> None:
    """The child's loop: run each task received, send its messages; end with the pipe or when
    the window's process is gone."""
    lower_priority()  # before the imports: they take a core for a second too
    from engine.models import CaptureCancelled
    from gui.kit.opened_model import OpenedModel
    from gui.model.task import run_task

    opened = OpenedModel()
    parent = parent_process()
    while True:
        try:
            if not conn.poll(0.5):
                if parent is not None and not parent.is_alive():
                    return
                continue
            request_id, task = conn.recv()
        except (EOFError, OSError):
            return

        def cancelled(request_id: int = request_id) -> bool:
            return cancelled_upto.value >= request_id

        try:
            for message in run_task(opened, task, cancelled):
                conn.send((request_id, "item", message))
            answer: tuple[int, str, object] = (request_id, "end", None)
        except CaptureCancelled:
            answer = (request_id, "end", None)
        except ValueError as exc:  # ModelError, MemoryBudgetError: the user can act on it
            answer = (request_id, "error", str(exc))
        except Exception as exc:  # a bug: reported by type, the child goes on serving
            traceback.print_exc()
            answer = (request_id, "bug", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(answer)
        except (BrokenPipeError, OSError):
            return


def lower_priority() -> None:
    """Put this process (the child) behind the window when both want a core: niced by
    :data:`CHILD_NICENESS` (no privilege needed; where refused, the child runs as before).

    Niceness orders the two processes; it does not put the window ahead of other programs. On
    Linux with autogroup scheduling (on in most desktop kernels) the cores are first shared
    between sessions, and a loaded machine's other sessions made the window wait 50-150 ms for
    a core now and then (``benchmarks/bench_model_gui.py`` names these pauses "waiting for a
    core"). A session of its own for the child (``os.setsid``) changed nothing measurable there
    (3 interleaved pairs of runs), so the child stays in the window's session.
    """
    with contextlib.suppress(AttributeError, OSError):
        os.nice(CHILD_NICENESS)
