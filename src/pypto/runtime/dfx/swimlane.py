"""Swimlane: the simulated schedule as Chrome / Perfetto trace-event JSON (SPEC §12 runtime DFX).

Two processes: the chip ("<chip> AI cores", pid 1) with one track (thread) per AI core — AIC0..AICn,
then AIV0..AIVm, all of the chip's cores even when idle, and from level 2 one track per pipe
under each busy core — and the AICPU (pid 0) with the
orchestrator track (tid 0) and, from level 3, the scheduler track (tid 1). Times (`ts`, `dur`) are
microseconds of simulated time. What each `enable_chip_swimlane` level adds:

| level | events |
|---|---|
| 1 | a complete event ("X", cat "task") per task on its core's track, named by its kernel, with the task id, cycles, cycles per pipe (`pipe_cycles`: busy cycles per pipe; from level 2 the pipe tracks place them in time), dependencies, scope and ring in `args` (for the kernels of a Group call also the group's first task id and the cycles it stalled on its pipes); on the orchestrator track a slice per submission (cat "submit") and a slice per stall on a full runtime ring (cat "stall", named e.g. `stall: task window full`) |
| 2 | per task an instant "dispatch" at its start and "finish" at its end on its core's track (cat "dispatch" / "finish"; dispatch args: ready cycle and cycles queued for a core), and a flow arrow per dependency edge, from the producer's end to the consumer's start (cat "dep"); under each core that ran tasks, one track per pipe it used (`AIV0 MTE2`, `AIV0 VECTOR`, ...) with a slice per op (cat "pipe", named by the op, args: task id, kernel, `start_after_launch` (its start in cycles counted from the task's launch, the task's start plus the `task_launch` cycles), `cycles`, source line) where the pipes model (`sim.pipes`) placed it after the task's launch — ops of different pipes overlap where their buffers allow it (a Group call's kernels run their pipes serially: no pipe tracks) |
| 3 | scheduler phases on the scheduler track: per task the async slices "resolve deps" (submitted → dependencies met) and "ready queue" (→ dispatched), cat "sched"; counters "ready tasks" (waiting for a core) and "tasks in flight" (submitted, not retired) |
| 4 | orchestrator phases on the orchestrator track: a slice per runtime scope instance (cat "scope", from its begin to its end) and each wait for submitted tasks (cat "wait": a host op reading task data, the end of the run) |

Open the file at https://ui.perfetto.dev or chrome://tracing, or turn it into a self-contained HTML
page with `python -m pypto.tools.swimlane`.
"""

from __future__ import annotations

from typing import Any

from ..sim.cost_model import const, cycles_to_us
from ..sim.record import RunRecord

__all__ = ["swimlane_events", "core_tid", "pipe_tid", "CHIP_PID", "ORCH_PID", "PIPES"]

CHIP_PID, ORCH_PID = 1, 0
ORCH_TID, SCHED_TID = 0, 1
PIPES = ("mte2", "mte1", "cube", "vector", "fixpipe", "mte3", "scalar")   # track order under a core
_PIPE_BASE, _PER_CORE = 100000, 16   # pipe track ids; sort slots per core (the core, then its pipes)


def core_tid(record: RunRecord, core_type: str, index: int) -> int:
    """Track id of a core: AIC cores first, then AIV cores."""
    return index if core_type == "AIC" else record.num_aic + index


def pipe_tid(core: int, pipe: str) -> int:
    """Track id of pipe `pipe` of the core whose track id is `core`."""
    return _PIPE_BASE + core * _PER_CORE + 1 + (PIPES.index(pipe) if pipe in PIPES else len(PIPES))


def _meta(pid: int, tid: int | None, kind: str, name: str) -> dict[str, Any]:
    e: dict[str, Any] = {"ph": "M", "pid": pid, "name": kind, "args": {"name": name}}
    if tid is not None:
        e["tid"] = tid
    return e


def swimlane_events(record: RunRecord, level: int = 1) -> dict[str, Any]:
    """The trace-event document (a JSON-ready dict) of `record` at swimlane `level` (1..4)."""
    ev: list[dict[str, Any]] = [
        _meta(CHIP_PID, None, "process_name", f"{record.backend} AI cores"),
        _meta(ORCH_PID, None, "process_name", "AICPU"),
        _meta(ORCH_PID, ORCH_TID, "thread_name", "orchestrator"),
    ]
    if level >= 3:
        ev.append(_meta(ORCH_PID, SCHED_TID, "thread_name", "scheduler"))
    for core_type, n in (("AIC", record.num_aic), ("AIV", record.num_aiv)):
        for i in range(n):
            tid = core_tid(record, core_type, i)
            ev.append(_meta(CHIP_PID, tid, "thread_name", f"{core_type}{i}"))
            ev.append({"ph": "M", "pid": CHIP_PID, "tid": tid, "name": "thread_sort_index",
                       "args": {"sort_index": tid * _PER_CORE}})
    ev.extend(_orchestrator(record, level))
    ev.extend(_tasks(record, level))
    if level >= 2:
        ev.extend(_pipe_tracks(record))
        ev.extend(_flows(record))
    if level >= 3:
        ev.extend(_scheduler(record))
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"program": record.program, "entry": record.entry, "chip": record.backend,
                          "level": level, "clock_ghz": const("clock_ghz"),
                          "makespan_cycles": record.makespan_cycles,
                          "makespan_us": cycles_to_us(record.makespan_cycles)}}


def _slice(pid: int, tid: int, name: str, cat: str, start: int, end: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "X", "pid": pid, "tid": tid, "name": name, "cat": cat, "ts": cycles_to_us(start),
            "dur": cycles_to_us(end - start), "args": args}


def _orchestrator(record: RunRecord, level: int) -> list[dict[str, Any]]:
    """Submissions and stalls (level 1), scopes and waits (level 4) on the orchestrator track."""
    submit = int(const("orch_submit"))
    out = []
    for t in record.tasks:
        if t.group is None or t.group == t.task_id:   # one submission per Group call
            out.append(_slice(ORCH_PID, ORCH_TID, f"submit {t.kernel}", "submit", t.submit_cycle - submit,
                              t.submit_cycle, {"task_id": t.task_id, "ring": t.ring}))
    for e in record.orch_events:
        if e.kind == "stall" or level >= 4:
            out.append(_slice(ORCH_PID, ORCH_TID, e.name, e.kind, e.start, e.end, dict(e.args)))
    if level >= 4:
        begins = {r["scope_id"]: r for r in record.scope_events if r["event"] == "begin"}
        for r in record.scope_events:
            b = begins.get(r["scope_id"])
            if r["event"] == "end" and b is not None:
                out.append(_slice(ORCH_PID, ORCH_TID, f"scope {r['scope']}", "scope", b["cycle"], r["cycle"],
                                  {"scope_id": r["scope_id"], "depth": r["depth"],
                                   "tasks": r["tasks_submitted"] - b["tasks_submitted"]}))
    return out


def _tasks(record: RunRecord, level: int) -> list[dict[str, Any]]:
    """Task slices (level 1) and dispatch / finish instants (level 2) on the core tracks."""
    scopes = record.scopes
    out = []
    for t in record.tasks:
        if t.start_cycle is None or t.end_cycle is None or t.core_index is None:
            continue   # not run, or failed (a failed run draws the tasks that finished)
        tid = core_tid(record, t.core_type, t.core_index)
        args: dict[str, Any] = {"task_id": t.task_id, "cycles": t.cycles, "core": t.core,
                                "deps": sorted(t.deps), "ring": t.ring}
        if t.cost is not None:
            args["pipe_cycles"] = {p: c for p, c in t.cost.pipe_cycles.items() if c}
        args["ddr_wait_cycles"] = t.ddr_wait_cycles   # cycles the chip's shared DDR bandwidth added (0: none)
        if t.scope:
            args["scope"] = scopes[t.scope[-1]].path(scopes)
        if t.group is not None:   # a kernel of a Group call (mixed kernel) on its cluster
            args.update(group=t.group, stall_cycles=t.stall_cycles)
        out.append({"ph": "X", "pid": CHIP_PID, "tid": tid, "name": t.kernel, "cat": "task",
                    "ts": cycles_to_us(t.start_cycle), "dur": cycles_to_us(t.cycles), "args": args})
        if level >= 2:
            ready = t.ready_cycle if t.ready_cycle is not None else t.start_cycle
            out.append({"ph": "i", "s": "t", "pid": CHIP_PID, "tid": tid, "name": "dispatch", "cat": "dispatch",
                        "ts": cycles_to_us(t.start_cycle),
                        "args": {"task_id": t.task_id, "ready_cycle": ready, "queued_cycles": t.start_cycle - ready}})
            out.append({"ph": "i", "s": "t", "pid": CHIP_PID, "tid": tid, "name": "finish", "cat": "finish",
                        "ts": cycles_to_us(t.end_cycle), "args": {"task_id": t.task_id}})   # type: ignore[arg-type]
    return out


def _pipe_tracks(record: RunRecord) -> list[dict[str, Any]]:
    """Level 2: each task's ops on the pipe tracks of its core (`Task.pipe_ops`), after its launch."""
    launch = int(const("task_launch"))
    meta: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    named: set[int] = set()
    for t in record.tasks:
        if not t.pipe_ops or t.start_cycle is None or t.end_cycle is None or t.core_index is None:
            continue
        core = core_tid(record, t.core_type, t.core_index)
        names = getattr(t.executor, "site_names", ())
        spans = getattr(t.executor, "site_spans", ())
        base = t.start_cycle + launch
        for op in t.pipe_ops:
            tid = pipe_tid(core, op.pipe)
            if tid not in named:
                named.add(tid)
                meta.append(_meta(CHIP_PID, tid, "thread_name", f"{t.core} {op.pipe.upper()}"))
                meta.append({"ph": "M", "pid": CHIP_PID, "tid": tid, "name": "thread_sort_index",
                             "args": {"sort_index": tid - _PIPE_BASE}})
            name = names[op.site] if op.site < len(names) else op.pipe
            args: dict[str, Any] = {"task_id": t.task_id, "kernel": t.kernel,
                                    "start_after_launch": op.start, "cycles": op.end - op.start}
            span = spans[op.site] if op.site < len(spans) else None
            if span is not None and span.is_known():
                args["line"] = f"{span.filename}:{span.begin_line}"
            out.append(_slice(CHIP_PID, tid, name, "pipe", base + op.start, base + op.end, args))
    return meta + out


def _scheduler(record: RunRecord) -> list[dict[str, Any]]:
    """Level 3: per-task scheduler phases (async slices) and the ready / in-flight counters."""
    out: list[dict[str, Any]] = []
    changes: dict[str, list[tuple[int, int]]] = {"ready tasks": [], "tasks in flight": []}
    for t in record.tasks:
        if t.start_cycle is None or t.end_cycle is None:
            continue
        ready = t.ready_cycle if t.ready_cycle is not None else t.start_cycle
        for name, a, b in (("resolve deps", t.submit_cycle, ready), ("ready queue", ready, t.start_cycle)):
            if b > a:
                common = {"pid": ORCH_PID, "tid": SCHED_TID, "cat": "sched", "name": name, "id": t.task_id}
                out.append({**common, "ph": "b", "ts": cycles_to_us(a), "args": {"task_id": t.task_id,
                                                                                 "kernel": t.kernel}})
                out.append({**common, "ph": "e", "ts": cycles_to_us(b)})
        changes["ready tasks"] += [(ready, 1), (t.start_cycle, -1)]
        retire = t.retire_cycle if t.retire_cycle is not None else t.end_cycle
        changes["tasks in flight"] += [(t.submit_cycle, 1), (retire, -1)]   # type: ignore[list-item]
    for name, deltas in changes.items():
        level = 0
        deltas.sort()
        for k, (cycle, d) in enumerate(deltas):
            level += d
            if k + 1 == len(deltas) or deltas[k + 1][0] != cycle:
                out.append({"ph": "C", "pid": ORCH_PID, "name": name, "ts": cycles_to_us(cycle),
                            "args": {"count": level}})
    return out


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
