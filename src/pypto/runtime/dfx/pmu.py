"""PMU-style counters per core, as CSV (SPEC §7 runtime DFX).

`pmu.csv` has one row per AI core of the chip (idle cores included) with: core, core_type, tasks,
busy_cycles, idle_cycles (makespan minus busy), utilization (busy / makespan), cycles per pipe
(`<pipe>_cycles` for every pipe of `cost_model.PIPES`) and bytes moved per memory path
(`bytes_<SRC>_to_<DST>`, e.g. `bytes_DDR_to_Vec`, for every path the SoC allows plus any other a
task used). With level >= 2, `pmu_tasks.csv` has the same counters per task.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from ...backend.soc import BackendType, get_soc
from ...core.enums import MemorySpace
from ..sim.cost_model import PIPES
from ..sim.record import RunRecord

__all__ = ["pmu_rows", "pmu_csv", "pmu_task_csv"]


def _paths(record: RunRecord) -> list[tuple[MemorySpace, MemorySpace]]:
    paths = set(get_soc(BackendType[record.backend]).allowed_moves)
    for t in record.tasks:
        if t.cost is not None:
            paths.update(t.cost.path_bytes)
    order = list(MemorySpace)
    return sorted(paths, key=lambda p: (order.index(p[0]), order.index(p[1])))


def _col(path: tuple[MemorySpace, MemorySpace]) -> str:
    return f"bytes_{path[0].name}_to_{path[1].name}"


def pmu_rows(record: RunRecord) -> tuple[list[str], list[dict[str, Any]]]:
    """(header, one row per core) of the per-core counters."""
    paths = _paths(record)
    header = ["core", "core_type", "tasks", "busy_cycles", "idle_cycles", "utilization",
              *(f"{p}_cycles" for p in PIPES), *(_col(p) for p in paths)]
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for core_type, n in (("AIC", record.num_aic), ("AIV", record.num_aiv)):
        for i in range(n):
            row = dict.fromkeys(header, 0)
            row.update(core=f"{core_type}{i}", core_type=core_type)
            rows[(core_type, i)] = row
    for t in record.tasks:
        if t.cost is None or t.core_index is None:
            continue
        row = rows[(t.core_type, t.core_index)]
        row["tasks"] += 1
        row["busy_cycles"] += t.cost.cycles
        for pipe, c in t.cost.pipe_cycles.items():
            row[f"{pipe}_cycles"] += c
        for path, b in t.cost.path_bytes.items():
            row[_col(path)] += b
    span = record.makespan_cycles
    for row in rows.values():
        row["idle_cycles"] = max(0, span - row["busy_cycles"])
        row["utilization"] = round(row["busy_cycles"] / span, 6) if span else 0.0
    return header, list(rows.values())


def _csv(header: list[str], rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def pmu_csv(record: RunRecord) -> str:
    """The per-core counters as CSV text."""
    return _csv(*pmu_rows(record))


def pmu_task_csv(record: RunRecord) -> str:
    """Per-task counters as CSV text: task, kernel, core, start/end cycles, pipes, bytes."""
    paths = _paths(record)
    header = ["task_id", "kernel", "core", "start_cycle", "end_cycle", "cycles",
              *(f"{p}_cycles" for p in PIPES), *(_col(p) for p in paths)]
    rows = []
    for t in record.tasks:
        row: dict[str, Any] = dict.fromkeys(header, 0)
        row.update(task_id=t.task_id, kernel=t.kernel, core=t.core, start_cycle=t.start_cycle,
                   end_cycle=t.end_cycle, cycles=t.cycles)
        if t.cost is not None:
            for pipe, c in t.cost.pipe_cycles.items():
                row[f"{pipe}_cycles"] = c
            for path, b in t.cost.path_bytes.items():
                row[_col(path)] = b
        rows.append(row)
    return _csv(header, rows)
