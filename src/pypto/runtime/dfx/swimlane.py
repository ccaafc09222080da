"""Swimlane: the simulated schedule as Chrome / Perfetto trace-event JSON (SPEC §7 runtime DFX).

One process for the chip with one track (thread) per AI core — AIC0..AICn, then AIV0..AIVm, all of
the chip's cores even when idle — and one process for the AICPU orchestrator. Every task is a
complete event ("ph": "X") on its core's track, named by its kernel, with `ts` / `dur` in
microseconds of simulated time and the task id, cycles, cycles per pipe (`pipe_cycles`: totals
from the cost model, which serialises a core's pipes and does not place them in time), dependencies
and scope in `args` (for the kernels of a Group call also the group's first task id and the cycles
it stalled on its pipes). Each submission is a slice on the orchestrator track. Level 1 is that
much; level 2 adds a flow arrow per dependency edge, from the producer's end to the consumer's
start (`RunConfig` accepts levels 0..2).

Open the file at https://ui.perfetto.dev or chrome://tracing.
"""

from __future__ import annotations

from typing import Any

from ..sim.cost_model import const, cycles_to_us
from ..sim.record import RunRecord

__all__ = ["swimlane_events", "core_tid"]

CHIP_PID, ORCH_PID = 1, 0


def core_tid(record: RunRecord, core_type: str, index: int) -> int:
    """Track id of a core: AIC cores first, then AIV cores."""
    return index if core_type == "AIC" else record.num_aic + index


def _meta(pid: int, tid: int | None, kind: str, name: str) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "M", "pid": pid, "name": kind, "args": {"name": name}}
    if tid is not None:
        e["tid"] = tid
    return e


def swimlane_events(record: RunRecord, level: int = 1) -> dict[str, Any]:
    """The trace-event document (a JSON-ready dict) of `record` at swimlane `level` (1 or 2)."""
    ev: list[dict[str, Any]] = [
        _meta(CHIP_PID, None, "process_name", f"{record.backend} AI cores"),
        _meta(ORCH_PID, None, "process_name", "AICPU"),
        _meta(ORCH_PID, 0, "thread_name", "orchestrator"),
    ]
    for core_type, n in (("AIC", record.num_aic), ("AIV", record.num_aiv)):
        for i in range(n):
            tid = core_tid(record, core_type, i)
            ev.append(_meta(CHIP_PID, tid, "thread_name", f"{core_type}{i}"))
            ev.append({"ph": "M", "pid": CHIP_PID, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid}})
    submit = const("orch_submit")
    scopes = record.scopes
    for t in record.tasks:
        ev.append({"ph": "X", "pid": ORCH_PID, "tid": 0, "name": f"submit {t.kernel}", "cat": "submit",
                   "ts": cycles_to_us(t.submit_cycle - submit), "dur": cycles_to_us(submit),
                   "args": {"task_id": t.task_id}})
        if t.start_cycle is None or t.core_index is None:
            continue
        args: dict[str, Any] = {"task_id": t.task_id, "cycles": t.cycles, "core": t.core,
                                "deps": sorted(t.deps)}
        if t.cost is not None:
            args["pipe_cycles"] = {p: c for p, c in t.cost.pipe_cycles.items() if c}
        if t.ddr_wait_cycles:   # cycles the chip's shared DDR bandwidth added (bandwidth.DdrChannel)
            args["ddr_wait_cycles"] = t.ddr_wait_cycles
        if t.scope:
            args["scope"] = scopes[t.scope[-1]].path(scopes)
        if t.group is not None:   # a kernel of a Group call (mixed kernel) on its cluster
            args.update(group=t.group, stall_cycles=t.stall_cycles)
        ev.append({"ph": "X", "pid": CHIP_PID, "tid": core_tid(record, t.core_type, t.core_index),
                   "name": t.kernel, "cat": "task", "ts": cycles_to_us(t.start_cycle),
                   "dur": cycles_to_us(t.cycles), "args": args})
    if level >= 2:
        ev.extend(_flows(record))
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"program": record.program, "entry": record.entry, "chip": record.backend,
                          "clock_ghz": const("clock_ghz"), "makespan_cycles": record.makespan_cycles,
                          "makespan_us": cycles_to_us(record.makespan_cycles)}}


def _flows(record: RunRecord) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    tasks = record.tasks
    flow = 0
    for t in tasks:
        if t.start_cycle is None:
            continue
        for d in sorted(t.deps):
            src = tasks[d]
            if src.end_cycle is None or src.core_index is None:
                continue
            flow += 1
            out.append({"ph": "s", "id": flow, "pid": CHIP_PID, "name": "dep", "cat": "dep",
                        "tid": core_tid(record, src.core_type, src.core_index),
                        "ts": cycles_to_us(src.end_cycle) - 1e-3})
            out.append({"ph": "f", "bp": "e", "id": flow, "pid": CHIP_PID, "name": "dep", "cat": "dep",
                        "tid": core_tid(record, t.core_type, t.core_index),  # type: ignore[arg-type]
                        "ts": cycles_to_us(t.start_cycle)})
    return out
