"""The Heads view's worker: opens a tensor file, diagnoses its heads, replays one head.

Jobs and messages are immutable. A :class:`ScanJob` opens the file (unless it is already open)
and streams its heads' diagnostics in batches (at most every :data:`BATCH_SECONDS`, so the GUI
thread handles a few messages per second instead of one per head); a :class:`ReplayJob`
re-applies every scaling rule to one head. Both check their cancel event between heads
(rules), which the engine reaches within a few milliseconds at n = 512.
"""

from __future__ import annotations

import dataclasses
import threading
import time

from PySide6.QtCore import Signal

from engine.analysis.head_scan import (
    HeadRecord,
    RuleReplay,
    every_rule,
    iter_file_diagnostics,
    replay_file_head,
)
from engine.config import ScalingRule
from engine.core.scaling import Rule
from engine.core.threads import limit_blas_threads
from engine.io.tensors import TensorFile, load_tensors
from gui.kit.job_worker import JobWorker

__all__ = [
    "BATCH_SECONDS",
    "FileOpened",
    "HeadsWorker",
    "Logits",
    "RecordsReady",
    "ReplayJob",
    "ReplayReady",
    "ScanJob",
]

#: Longest time between two streamed batches of head diagnostics.
BATCH_SECONDS = 0.1
#: Time left to the GUI thread to show a file before its scan starts.
FIRST_PAINT_S = 0.08
#: The parameters of a new tab's replay: T = 8, gain √d_k, cap 50.
_DEFAULT_RULE = Rule(ScalingRule.SQRT, temperature=8.0)


@dataclasses.dataclass(frozen=True)
class Logits:
    """The logits of the diagnostics: each layer's own scale and cap (``own_scale``), or
    ``rule`` re-applied to every head. The replay applies every rule with ``rule``'s
    parameters either way (its kind matters only without ``own_scale``)."""

    rule: Rule = _DEFAULT_RULE
    own_scale: bool = True


@dataclasses.dataclass(frozen=True)
class ScanJob:
    """Open ``path`` (or re-use ``tensor_file``) and diagnose every head under ``logits``."""

    request_id: int
    path: str
    tensor_file: TensorFile | None
    logits: Logits
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)

    def stop(self) -> None:
        """Cancel the job (it ends before the next head)."""
        self.cancel.set()


@dataclasses.dataclass(frozen=True)
class ReplayJob:
    """Re-apply every rule to (layer, head) of ``tensor_file``; weights of ``batch_entry``."""

    request_id: int
    tensor_file: TensorFile
    layer: int
    head: int
    batch_entry: int
    logits: Logits
    cancel: threading.Event = dataclasses.field(default_factory=threading.Event, compare=False)

    def stop(self) -> None:
        """Cancel the job (it ends before the next rule)."""
        self.cancel.set()


@dataclasses.dataclass(frozen=True)
class FileOpened:
    """The scan's file is open and checked."""

    request_id: int
    tensor_file: TensorFile
    logits: Logits


@dataclasses.dataclass(frozen=True)
class RecordsReady:
    """Diagnostics of the next heads of the scan (in file order)."""

    request_id: int
    records: tuple[HeadRecord, ...]


@dataclasses.dataclass(frozen=True)
class ReplayReady:
    """Every rule re-applied to one head."""

    request_id: int
    tensor_file: TensorFile
    layer: int
    head: int
    batch_entry: int
    replays: tuple[RuleReplay, ...]


class HeadsWorker(JobWorker):
    """Runs :class:`ScanJob` and :class:`ReplayJob` objects in the thread it was moved to."""

    opened = Signal(object)  # FileOpened
    recordsReady = Signal(object)  # RecordsReady
    replayReady = Signal(object)  # ReplayReady

    def execute(self, job: ScanJob | ReplayJob) -> None:
        """Run ``job``, emitting its messages as they are ready."""
        # One BLAS thread: the GUI thread keeps a core of its own on a two-core machine.
        with limit_blas_threads(1):
            if isinstance(job, ReplayJob):
                self._replay(job)
            else:
                self._scan(job)

    def _scan(self, job: ScanJob) -> None:
        tensor_file = job.tensor_file or load_tensors(job.path)
        if job.cancel.is_set():
            return
        self.opened.emit(FileOpened(job.request_id, tensor_file, job.logits))
        # A scan started at once would compete for the interpreter with the window's first
        # paint of the new file (benchmarks/bench_heads_gui.py): it starts a moment later.
        job.cancel.wait(FIRST_PAINT_S)
        rule = None if job.logits.own_scale else job.logits.rule
        batch: list[HeadRecord] = []
        last = time.perf_counter()
        for record in iter_file_diagnostics(tensor_file, rule=rule, cancel=job.cancel):
            batch.append(record)
            now = time.perf_counter()
            if now - last >= BATCH_SECONDS:
                self.recordsReady.emit(RecordsReady(job.request_id, tuple(batch)))
                batch, last = [], now
        if batch and not job.cancel.is_set():
            self.recordsReady.emit(RecordsReady(job.request_id, tuple(batch)))

    def _replay(self, job: ReplayJob) -> None:
        tf = job.tensor_file
        replays = replay_file_head(tf, job.layer, job.head, rules=every_rule(job.logits.rule),
                                   batch_entry=job.batch_entry, cancel=job.cancel)
        if not job.cancel.is_set():
            self.replayReady.emit(ReplayReady(job.request_id, tf, job.layer, job.head,
                                              job.batch_entry, replays))
