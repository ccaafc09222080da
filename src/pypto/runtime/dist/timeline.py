"""The merged swimlane of a distributed call: every rank on one simulated timeline (issue 10 item 4).

`merged_swimlane(records, device_ids)` turns the `DispatchRecord`s of a call (each rank's tasks and
cross-rank events, on the world clock) into Chrome / Perfetto trace-event JSON:

- one process per rank (`rank r (device d)`, pid r), one track per core that ran a task (AIC before
  AIV, by index); a complete event ("X", cat "task") per task, named by its kernel, with the chip
  program, task id and stall cycles in `args`;
- an instant event per notify (cat "notify", at its issue time) and per wait (cat "wait", at its
  release) on the core of the task that did it, and a slice per wait that stalled (cat "stall",
  from the wait's start to its release);
- a flow arrow (cat "signal") from each notify to the wait it released (the latest-arriving notify
  of the waited cell), so a late rank is visible as the arrow into another rank's stall.

Times are microseconds of simulated time (`cost_model.cycles_to_us`). A call writes it to
`<build>/dfx_outputs/swimlane_merged.json` when `RunConfig.enable_chip_swimlane` >= 1.
"""

from __future__ import annotations

from typing import Any

from ..sim.cost_model import cycles_to_us
from .world import DispatchRecord

__all__ = ["merged_swimlane", "MERGED_SWIMLANE"]

MERGED_SWIMLANE = "swimlane_merged.json"


def _core_key(core: str) -> tuple[int, int]:
    kind = 0 if core.startswith("AIC") else 1
    digits = core.lstrip("ACIV")
    return kind, int(digits) if digits.isdigit() else 0


def merged_swimlane(records: list[DispatchRecord], device_ids: list[int]) -> dict[str, Any]:
    """The trace-event document (a JSON-ready dict) of one call's `records`."""
    ev: list[dict[str, Any]] = []
    tids: dict[tuple[int, str], int] = {}
    for rank, dev in enumerate(device_ids):
        ev.append({"ph": "M", "pid": rank, "name": "process_name", "args": {"name": f"rank {rank} (device {dev})"}})
        ev.append({"ph": "M", "pid": rank, "name": "process_sort_index", "args": {"sort_index": rank}})
        cores = sorted({t.core for r in records if r.rank == rank for t in r.tasks if t.core}, key=_core_key)
        for i, core in enumerate(cores):
            tids[(rank, core)] = i
            ev.append({"ph": "M", "pid": rank, "tid": i, "name": "thread_name", "args": {"name": core}})
    for rec in records:
        for t in rec.tasks:
            ev.append({"ph": "X", "cat": "task", "name": t.kernel, "pid": rec.rank, "tid": tids.get((rec.rank, t.core), 0),
                       "ts": cycles_to_us(t.start), "dur": cycles_to_us(t.end - t.start),
                       "args": {"program": rec.program, "task": t.task_id, "stall_cycles": t.stall}})
    sends = {}
    for rec in records:
        for e in rec.events:
            tid = tids.get((rec.rank, e.core), 0)
            if e.kind == "notify":
                sends[e.eid] = (rec.rank, tid, e)
                ev.append({"ph": "i", "s": "t", "cat": "notify", "name": f"notify -> rank {e.peer}", "pid": rec.rank,
                           "tid": tid, "ts": cycles_to_us(e.time), "args": {"value": e.value, "arrival": e.arrival}})
            elif e.kind == "wait":
                if e.arrival > e.time:
                    ev.append({"ph": "X", "cat": "stall", "name": "wait", "pid": rec.rank, "tid": tid,
                               "ts": cycles_to_us(e.time), "dur": cycles_to_us(e.arrival - e.time)})
                ev.append({"ph": "i", "s": "t", "cat": "wait", "name": "wait released", "pid": rec.rank, "tid": tid,
                           "ts": cycles_to_us(e.arrival), "args": {"expected": e.value}})
    for rec in records:
        for e in rec.events:
            if e.kind != "wait" or e.cause not in sends:
                continue
            src_rank, src_tid, n = sends[e.cause]
            fid = f"{e.cause}-{e.eid}"
            ev.append({"ph": "s", "cat": "signal", "name": "notify", "id": fid, "pid": src_rank, "tid": src_tid,
                       "ts": cycles_to_us(n.time)})
            ev.append({"ph": "f", "bp": "e", "cat": "signal", "name": "notify", "id": fid, "pid": rec.rank,
                       "tid": tids.get((rec.rank, e.core), 0), "ts": cycles_to_us(e.arrival)})
    return {"traceEvents": ev, "displayTimeUnit": "ns"}
