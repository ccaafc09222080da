"""The record of a run whose task failed after the schedule went on without it.

A full simulation that runs each task when it starts stops at the first task that fails: its run
record then holds the tasks submitted up to that moment, the failed task started but not finished,
no later task started, and no later orchestrator or ring record. Its schedule stops there too: the
runtime scopes open at that moment get their "end" records at once (`close_scopes`, called by the
scheduler through `SimDevice.task_failed`), with the orchestrator's cycle, the tasks submitted and
retired and the rings' occupancy and peaks of that moment, innermost first; the error then leaves
those scopes without recording or simulating anything more. The entry's scope gets no "end" record
(a run's error does not leave it), nor does a scope whose "begin" record was not written yet (a task
that fails while it is being entered: the error is raised before the scope's body starts).

Deferred tasks (`deferred.py`) and replayed runs (`replay.py`) know the schedule beyond that moment
when a task fails. `mark` notes, when a task starts, how long the record's lists are, the
orchestrator's cycle and open scopes and, when a scope besides the entry's is open, the rings'
figures (`RingTracker.figures`: cached until the rings change, so a mark costs little); `rewind`
cuts the record back to that mark when the task fails and closes the scopes open then from those
figures, so that the record is the one-at-a-time run's, scope records included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .rings import RING_DEPTHS, RingFigures, ring_of, ring_state

if TYPE_CHECKING:
    from .device import SimDevice
    from .task import Task

__all__ = ["Mark", "close_scopes", "mark", "rewind"]

Mark = tuple[int, int, int, int, int, int, tuple[int, ...], Any]
"""Lengths of the run's tasks, orchestrator events, scope events, scopes and created tensors; the
orchestrator's cycle; its open scopes (ids, outermost first); the rings' `RingFigures` when a scope
besides the entry's is open, else None."""


def mark(device: SimDevice) -> Mark:
    """`device`'s current run record at the moment a task starts (`Mark`)."""
    rec = device.last_run
    stack = device._scope_ids
    return (len(device.tasks), len(rec.orch_events), len(rec.scope_events), len(rec.scopes),  # type: ignore[union-attr]
            len(rec.created), device._clock, stack,  # type: ignore[union-attr]
            device._rings.figures() if len(stack) > 1 else None)


def close_scopes(device: SimDevice, stack: tuple[int, ...], cycle: int, submitted: int,
                 figures: RingFigures | None) -> None:
    """A task failed while the scopes `stack` (ids, outermost first) were open, at orchestrator
    cycle `cycle`, with `submitted` tasks submitted and the rings at `figures`: append to the run
    record the "end" records a one-at-a-time run writes then (module docstring), innermost first —
    not for the entry's scope (`stack[0]`), nor for a scope without a "begin" record — and stop
    the run's schedule (`SimDevice.pop_scope` then records nothing)."""
    device._failed = True
    rec = device.last_run
    assert rec is not None
    if figures is None or len(stack) < 2:
        return
    used, open_peaks, retired = figures
    peaks = {p[0]: p[1:] for p in open_peaks}
    begun = {e["scope_id"] for e in rec.scope_events if e["event"] == "begin"}
    for depth in range(len(stack) - 1, 0, -1):
        sid = stack[depth]
        if sid not in begun:
            continue
        ring = ring_of(depth)
        r: dict[str, Any] = {"event": "end", "scope_id": sid, "scope": rec.scopes[sid].path(rec.scopes),
                             "depth": depth, "ring": ring, "cycle": cycle, "tasks_submitted": submitted,
                             "tasks_retired": retired}
        r.update(ring_state(used[ring::RING_DEPTHS], rec.rings, ring, peaks[sid]))  # type: ignore[arg-type]
        rec.scope_events.append(r)


def rewind(device: SimDevice, failed: Sequence[Task], at: Mark, started: int = 1) -> None:
    """`failed[:started]` (a task, or the tasks of one Group call) failed when they started, at
    mark `at`; `failed[started:]` are the tasks that started after them. Leave `device`'s run
    record as a run that executed each task when it started would have left it: no task submitted
    after that moment, nothing started after it, no later orchestrator, ring or scope record but
    the "end" records of the scopes open then (`close_scopes`), the failed task started but not
    finished (a failed Group call's tasks: placed on their cores, not started), and no end-of-run
    figures."""
    rec = device.last_run
    assert rec is not None
    n_tasks, n_orch, n_scope_ev, n_scopes, n_created, cycle, stack, figures = at
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
    close_scopes(device, stack, cycle, n_tasks, figures)
