"""Per-scope statistics of a run (SPEC §12 runtime DFX, `enable_scope_stats`): `scope_stats.json`
(a summary row per scope) and `scope_stats.jsonl` (one record per scope begin / end).

Scopes are the runtime scopes the orchestration opened (`ScopeInfo`): the entry function, nested
orchestration calls and `pl.scope()` blocks. Instances of the same scope (same path, e.g. a scope
inside a loop) are aggregated into one row:

- `instances`: how many times the scope was entered;
- `tasks`: tasks submitted inside it, nested scopes included; `direct_tasks`: not in a nested scope;
- `busy_cycles`: the sum of those tasks' durations (core time);
- `span_cycles`: summed over instances, last task end minus first task start (wall time on chip);
- `first_start_cycle` / `last_end_cycle`: over all instances; `*_us`: the same in microseconds;
- `ring`: the runtime ring of the scope's depth; `peak_task_window` / `peak_heap` /
  `peak_dep_pool`: the highest occupancy of that ring while an instance was open, over all
  instances (compare them with the ring sizes, `rings.py`).

`scope_stats.jsonl` has one JSON object per line, in orchestrator order, for every scope begin and
end: `event` ("begin" | "end"), `scope_id` (the instance), `scope` (path), `depth`, `ring`, `cycle`
(orchestrator time), `tasks_submitted` / `tasks_retired` (whole run so far), and `task_window`,
`heap`, `dep_pool`, each `{"used", "capacity"}` for the scope's ring at that moment (used: task
slots, bytes, dependency entries in flight), plus `"peak"` (highest while the scope was open) in
"end" records. A run that failed in a task stopped there: the scopes open at that moment end with
its figures (`runtime/sim/rewind.py`), in every simulation mode; the entry's scope has no "end"
record then (its row has no `ring` / `peak_*`).
"""

from __future__ import annotations

import json
from typing import Any

from ..sim.cost_model import cycles_to_us
from ..sim.record import RunRecord

__all__ = ["scope_stats", "scope_stats_jsonl"]

_KINDS = ("task_window", "heap", "dep_pool")


def scope_stats_jsonl(record: RunRecord) -> str:
    """The scope begin / end records of `record`, one JSON object per line."""
    return "".join(json.dumps(r) + "\n" for r in record.scope_events)


def scope_stats(record: RunRecord) -> list[dict[str, Any]]:
    """One dict per scope path, in order of first entry."""
    scopes = record.scopes
    per_instance: dict[int, list[Any]] = {s.scope_id: [0, 0, 0, None, None] for s in scopes}
    for t in record.tasks:
        for k, sid in enumerate(t.scope):
            row = per_instance[sid]
            row[0] += 1
            row[1] += k == len(t.scope) - 1
            row[2] += t.cycles
            if t.start_cycle is not None and t.end_cycle is not None:   # not a failed task
                row[3] = t.start_cycle if row[3] is None else min(row[3], t.start_cycle)
                row[4] = t.end_cycle if row[4] is None else max(row[4], t.end_cycle)
    ends: dict[int, list[dict[str, Any]]] = {}
    for r in record.scope_events:
        if r["event"] == "end":
            ends.setdefault(r["scope_id"], []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for s in scopes:
        tasks, direct, busy, first, last = per_instance[s.scope_id]
        path = s.path(scopes)
        row = out.get(path)
        if row is None:
            row = out[path] = {"scope": path, "name": s.name,
                               "line": s.span.begin_line if s.span is not None and s.span.is_known() else None,
                               "instances": 0, "tasks": 0, "direct_tasks": 0, "busy_cycles": 0,
                               "span_cycles": 0, "first_start_cycle": None, "last_end_cycle": None}
        row["instances"] += 1
        for r in ends.get(s.scope_id, ()):
            row["ring"] = r["ring"]
            for k in _KINDS:
                row[f"peak_{k}"] = max(row.get(f"peak_{k}", 0), r[k]["peak"])
        row["tasks"] += tasks
        row["direct_tasks"] += direct
        row["busy_cycles"] += busy
        if first is not None:
            row["span_cycles"] += last - first
            row["first_start_cycle"] = first if row["first_start_cycle"] is None else min(row["first_start_cycle"], first)
            row["last_end_cycle"] = last if row["last_end_cycle"] is None else max(row["last_end_cycle"], last)
    for row in out.values():
        row["busy_us"] = cycles_to_us(row["busy_cycles"])
        row["span_us"] = cycles_to_us(row["span_cycles"])
    return list(out.values())
