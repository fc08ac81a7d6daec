"""Training jobs in a child process, so that a GUI and the trainer never share one interpreter lock.

:class:`TrainingProcess` starts its child on first use ("spawn": forking a process that runs Qt's
threads is unsafe) and keeps it for the next jobs, so that an export reads the last trained
session. A job is a tuple (:func:`train_job`, :func:`lr_sweep_job`, :func:`export_job`); the
child answers with its items, then ``("done", None)`` or ``("error", exception)``. Stop and
Pause are bytes in shared memory, polled every :data:`POLL_S`. The child exits when its pipe
closes or its parent is gone (it is a daemon). Rationale: docs/design-notes.md.
"""

from __future__ import annotations

import copyreg
import ctypes
import io
import pickle
import signal
import threading
import time
import traceback
import types
from collections.abc import Iterator
from multiprocessing import get_context, parent_process
from typing import Any

__all__ = [
    "POLL_S",
    "TrainingProcess",
    "export_job",
    "lr_sweep_job",
    "train_job",
]

#: How often :meth:`TrainingProcess.run` passes Stop and Pause on while it waits, and a paused
#: child looks whether it may go on (seconds).
POLL_S = 0.01
#: How long :meth:`TrainingProcess.close` waits for the child before it kills it (seconds).
CLOSE_WAIT_S = 2.0

_CONTEXT = get_context("spawn")


def train_job(config: Any) -> tuple[str, tuple[Any, ...]]:
    """Train ``config`` (a :class:`~engine.config.train.TrainConfig`); items: snapshots."""
    return ("train", (config,))


def lr_sweep_job(config: Any, lrs: tuple[float, ...], seeds: int) -> tuple[str, tuple[Any, ...]]:
    """Sweep learning rates (:func:`~engine.training.lr_sweep.iter_lr_sweep`)."""
    return ("lr_sweep", (config, tuple(lrs), seeds))


def export_job(path: str, command: str) -> tuple[str, tuple[Any, ...]]:
    """Write the last trained session's tensors to ``path``; the one item is the path written.

    Raises LookupError (from :meth:`TrainingProcess.run`) when the child trained nothing yet.
    """
    return ("export", (path, command))


# Snapshots hold read-only mappings (types.MappingProxyType), which pickle cannot take.
def _mapping_proxy(items: dict[Any, Any]) -> types.MappingProxyType[Any, Any]:
    return types.MappingProxyType(items)


def _reduce_mapping_proxy(proxy: types.MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return _mapping_proxy, (dict(proxy),)


class _Flag:
    """A byte of shared memory with ``is_set()``, as the engine's ``cancel`` arguments need."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def is_set(self) -> bool:
        return bool(self._value.value)


_DISPATCH = copyreg.dispatch_table.copy()
_DISPATCH[types.MappingProxyType] = _reduce_mapping_proxy


def _dumps(message: object) -> bytes:
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(message)
    return buffer.getvalue()


def _exit_text(code: int | None) -> str:
    """Why the child ended, in words: a signal's name (SIGKILL: often the system out of
    memory) or its exit code."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        cause = ", often the system running out of memory" if -code == signal.SIGKILL else ""
        return f"the training process was ended by {name}{cause}"
    return f"the training process ended unexpectedly (exit code {code})"


class TrainingProcess:
    """One child process that runs training jobs one at a time (use from one thread).

    :meth:`run` starts the child if needed; :meth:`close` ends it. Not thread-safe: the
    caller's worker thread runs the jobs, and closes it after its last job.
    """

    def __init__(self) -> None:
        self._process: Any = None
        self._conn: Any = None
        self._cancel: Any = None  # shared flags (ctypes bools) of the current child
        self._paused: Any = None

    def is_alive(self) -> bool:
        """Whether the child process runs."""
        return self._process is not None and self._process.is_alive()

    @property
    def pid(self) -> int | None:
        """The child's process id, or None before the first job and after :meth:`close`."""
        return None if self._process is None else self._process.pid

    def run(
        self, job: tuple[str, tuple[Any, ...]], cancel: threading.Event,
        running: threading.Event,
    ) -> Iterator[object]:
        """Run ``job`` (:func:`train_job`, :func:`lr_sweep_job`, :func:`export_job`) in the
        child and yield its items as they come. Setting ``cancel`` stops the child after its
        current step (the generator then ends); clearing ``running`` pauses it after its
        current item, setting it again goes on.

        Raises
        ------
        Exception
            The exception the job raised in the child (its class and message).
        ChildProcessError
            If the child process ended before the job did.
        """
        self._start()
        self._cancel.value = False
        self._paused.value = False
        paused = False
        ended = False
        try:
            self._conn.send_bytes(_dumps(job))
            while True:
                if cancel.is_set():
                    self._cancel.value = True
                elif paused != (not running.is_set()):
                    paused = not paused
                    self._paused.value = paused
                if not self._conn.poll(POLL_S):
                    if not self._process.is_alive():
                        raise EOFError
                    continue
                tag, payload = pickle.loads(self._conn.recv_bytes())
                if tag == "item":
                    yield payload
                    continue
                ended = True
                if tag == "error":
                    raise payload
                return
        except (EOFError, OSError) as exc:
            if ended:
                raise  # the job's own OSError (e.g. a file it could not write)
            ended = True
            self._process.join(CLOSE_WAIT_S)  # for its exit code
            code = self._process.exitcode
            self.close()
            raise ChildProcessError(_exit_text(code)) from exc
        finally:
            if not ended:
                # The caller stopped reading: stop the job and wait for its end, so that the
                # next job's replies are not mixed with this one's.
                self._drain()

    def close(self) -> None:
        """End the child (waiting at most :data:`CLOSE_WAIT_S`, then killing it)."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if process is None:
            return
        self._cancel.value = True
        try:
            conn.send_bytes(_dumps(("quit", ())))
        except OSError:
            pass  # it has gone already
        conn.close()
        process.join(CLOSE_WAIT_S)
        if process.is_alive():
            process.kill()
            process.join()
        process.close()

    def _start(self) -> None:
        if self._process is not None and self._process.is_alive():
            return
        if self._process is not None:
            self.close()
        parent, child = _CONTEXT.Pipe()
        self._cancel = _CONTEXT.RawValue(ctypes.c_bool, False)
        self._paused = _CONTEXT.RawValue(ctypes.c_bool, False)
        process = _CONTEXT.Process(
            target=_serve, args=(child, self._cancel, self._paused),
            name="attention-training", daemon=True,
        )
        process.start()
        child.close()
        self._process, self._conn = process, parent

    def _drain(self) -> None:
        self._cancel.value = True
        try:
            while self._conn.poll(CLOSE_WAIT_S):
                tag, _ = pickle.loads(self._conn.recv_bytes())
                if tag != "item":
                    return
        except (EOFError, OSError):
            pass
        self.close()  # no end within the wait: a fresh child for the next job


def _serve(conn: Any, cancel_value: Any, paused: Any) -> None:
    """The child's loop: one job at a time, until "quit" or the pipe closes."""
    from engine.core.memory import tune_allocator

    tune_allocator()
    cancel = _Flag(cancel_value)
    parent = parent_process()
    session: Any = None
    while True:
        try:
            kind, args = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if kind == "quit":
            return
        try:
            if kind == "train":
                session = None  # freed before the new one is allocated
            items, session = _job_items(kind, args, cancel, session)
            try:
                for item in items:
                    conn.send_bytes(_dumps(("item", item)))
                    # Paused, the generator suspended; a parent that died meanwhile (killed,
                    # say) ends the wait, and the next send ends this process.
                    while paused.value and not cancel.is_set() and parent.is_alive():
                        time.sleep(POLL_S)
                    if cancel.is_set():
                        break
            finally:
                items.close()
            reply: tuple[str, object] = ("done", None)
        except (BrokenPipeError, EOFError):
            return  # the parent has gone
        except Exception as exc:
            if not isinstance(exc, (ValueError, OSError, LookupError)):
                traceback.print_exc()  # a bug: its traceback goes to the parent's stderr
            reply = ("error", exc)
        try:
            data = _dumps(reply)
        except Exception:  # an exception that does not pickle: keep its class name and text
            error = reply[1]
            data = _dumps(("error", RuntimeError(f"{type(error).__name__}: {error}")))
        try:
            conn.send_bytes(data)
        except OSError:
            return


def _job_items(kind: str, args: tuple[Any, ...], cancel: Any, session: Any) -> tuple[Any, Any]:
    """The generator of one job, and the session to keep for the next."""
    if kind == "train":
        from engine.training.session import TrainingSession
        from engine.training.trainer import blas_threads, iter_training

        (config,) = args
        with blas_threads(config):
            session = TrainingSession(config)
        return iter_training(config, cancel, session=session), session
    if kind == "lr_sweep":
        from engine.training.lr_sweep import iter_lr_sweep

        config, lrs, seeds = args
        return iter_lr_sweep(config, lrs, seeds, cancel), session
    if kind == "export":
        from engine.training.export_qk import write_trained_tensors

        if session is None:
            raise LookupError("no training run to export")
        path, command = args
        written = str(write_trained_tensors(path, session, command=command))
        return (item for item in (written,)), session
    raise ValueError(f"unknown training job {kind!r}")
