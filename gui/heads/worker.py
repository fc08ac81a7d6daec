"""The Heads view's worker: opens a tensor file, diagnoses its heads, replays one head.

Tasks and messages are immutable; each task runs as a kit :class:`~gui.kit.jobs.Job`. A
:class:`ScanTask` opens the file (unless it is already open) and streams its heads' diagnostics
in batches (at most every :data:`BATCH_SECONDS`, so the GUI thread handles a few messages per
second instead of one per head); a :class:`ReplayTask` re-applies every scaling rule to one
head. Both check the job's cancel event between heads (rules), which the engine reaches within
a few milliseconds at n = 512.
"""

from __future__ import annotations

import dataclasses
import threading
import time

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
from gui.kit.jobs import Job

__all__ = [
    "BATCH_SECONDS",
    "FileOpened",
    "HeadsWorker",
    "Logits",
    "RecordsReady",
    "ReplayReady",
    "ReplayTask",
    "ScanTask",
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
class ScanTask:
    """Open ``path`` (or re-use ``tensor_file``) and diagnose every head under ``logits``."""

    path: str
    tensor_file: TensorFile | None
    logits: Logits


@dataclasses.dataclass(frozen=True)
class ReplayTask:
    """Re-apply every rule to (layer, head) of ``tensor_file``; weights of ``batch_entry``."""

    tensor_file: TensorFile
    layer: int
    head: int
    batch_entry: int
    logits: Logits


@dataclasses.dataclass(frozen=True)
class FileOpened:
    """The scan's file is open and checked."""

    tensor_file: TensorFile
    logits: Logits


@dataclasses.dataclass(frozen=True)
class RecordsReady:
    """Diagnostics of the next heads of the scan (in file order)."""

    records: tuple[HeadRecord, ...]


@dataclasses.dataclass(frozen=True)
class ReplayReady:
    """Every rule re-applied to one head."""

    tensor_file: TensorFile
    layer: int
    head: int
    batch_entry: int
    replays: tuple[RuleReplay, ...]


class HeadsWorker(JobWorker):
    """Runs :class:`ScanTask` and :class:`ReplayTask` jobs in the thread it was moved to."""

    def execute(self, job: Job[ScanTask | ReplayTask]) -> None:
        """Run ``job``, reporting its messages as they are ready."""
        # One BLAS thread: the GUI thread keeps a core of its own on a two-core machine.
        with limit_blas_threads(1):
            if isinstance(job.task, ReplayTask):
                self._replay(job.task, job.cancel)
            else:
                self._scan(job.task, job.cancel)

    def _scan(self, task: ScanTask, cancel: threading.Event) -> None:
        tensor_file = task.tensor_file or load_tensors(task.path)
        if cancel.is_set():
            return
        self.report(FileOpened(tensor_file, task.logits))
        # A scan started at once would compete for the interpreter with the window's first
        # paint of the new file (benchmarks/bench_heads_gui.py): it starts a moment later.
        cancel.wait(FIRST_PAINT_S)
        rule = None if task.logits.own_scale else task.logits.rule
        batch: list[HeadRecord] = []
        last = time.perf_counter()
        for record in iter_file_diagnostics(tensor_file, rule=rule, cancel=cancel):
            batch.append(record)
            now = time.perf_counter()
            if now - last >= BATCH_SECONDS:
                self.report(RecordsReady(tuple(batch)))
                batch, last = [], now
        if batch and not cancel.is_set():
            self.report(RecordsReady(tuple(batch)))

    def _replay(self, task: ReplayTask, cancel: threading.Event) -> None:
        tf = task.tensor_file
        replays = replay_file_head(tf, task.layer, task.head, rules=every_rule(task.logits.rule),
                                   batch_entry=task.batch_entry, cancel=cancel)
        if not cancel.is_set():
            self.report(ReplayReady(tf, task.layer, task.head, task.batch_entry, replays))
