"""The record of a run whose task failed after the schedule went on without it.

A full simulation that runs each task when it starts stops at the first task that fails: its run
record then holds the tasks submitted up to that moment, the failed task started but not finished,
no later task started, and no later orchestrator, scope or ring record. Deferred tasks
(`deferred.py`) and replayed runs (`replay.py`) know the schedule beyond that moment when a task
fails; `mark` notes, when a task starts, how long the record's lists are, and `rewind` cuts the
record back to that mark when the task fails, so that the record is the one-at-a-time run's.

One difference remains: a runtime scope open when the task failed has no "end" record (a
one-at-a-time run's error leaves the scope, which records its end with the rings of that moment).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .device import SimDevice
    from .task import Task

__all__ = ["Mark", "mark", "rewind"]

Mark = tuple[int, int, int, int, int]
"""Lengths of the run's tasks, orchestrator events, scope events, scopes and created tensors."""


def mark(device: SimDevice) -> Mark:
    """The lengths of `device`'s current run record lists (`Mark`), taken when a task starts."""
    rec = device.last_run
    return (len(device.tasks), len(rec.orch_events), len(rec.scope_events), len(rec.scopes),  # type: ignore[union-attr]
            len(rec.created))  # type: ignore[union-attr]


def rewind(device: SimDevice, failed: Sequence[Task], at: Mark, started: int = 1) -> None:
    """`failed[:started]` (a task, or the tasks of one Group call) failed when they started, at
    mark `at`; `failed[started:]` are the tasks that started after them. Leave `device`'s run
    record as a run that executed each task when it started would have left it: no task submitted
    after that moment, nothing started after it, no later orchestrator, ring or scope record, the
    failed task started but not finished (a failed Group call's tasks: placed on their cores, not
    started), and no end-of-run figures."""
    rec = device.last_run
    assert rec is not None
    n_tasks, n_orch, n_scope_ev, n_scopes, n_created = at
    del device.tasks[n_tasks:]
    del rec.orch_events[n_orch:]
    del rec.scope_events[n_scope_ev:]
    del rec.scopes[n_scopes:]
    del rec.created[n_created:]
    rec.makespan_cycles = rec.orchestrator_cycles = 0
    rec.ring_peaks = {}
    rec.derived = rec.kernel_envs = None
    now = failed[0].start_cycle
    for t in device.tasks:
        if t.ready_cycle is not None and t.ready_cycle > now:  # type: ignore[operator]
            t.ready_cycle = None
        if t.retire_cycle is not None and t.retire_cycle > now:  # type: ignore[operator]
            t.retire_cycle = None
    for k, t in enumerate(failed):
        if k >= started:
            t.core_index = t.start_cycle = None
        elif t.group is not None:   # a Group call's tasks get their start once the call has run
            t.start_cycle = None
        t.end_cycle, t.cost, t.pipe_ops = None, None, None
        t.ddr_wait_cycles = t.hbm_bytes = t.stall_cycles = t.offset_cycles = 0
        if t.pipes is not None:   # a Group call's PipeStats (a replay's own copy)
            t.pipes.max_occupancy, t.pipes.transfers = {}, {}
