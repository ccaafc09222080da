"""Runtime DFX outputs (SPEC §7; User Manual "Runtime DFX"): written under `<output_dir>/dfx_outputs/`.

| RunConfig switch          | files                                                        |
|---------------------------|--------------------------------------------------------------|
| `enable_chip_swimlane=N`  | `swimlane.json` (Perfetto / Chrome trace events; N >= 2 adds dependency arrows) |
| `enable_dep_gen=True`     | `task_graph.dot`, `task_graph.json`                           |
| `enable_scope_stats=True` | `scope_stats.json`                                            |
| `enable_pmu=N`            | `pmu.csv` (per core; N >= 2 adds `pmu_tasks.csv`, per task)   |

Each run overwrites the files of the previous run in the same folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..sim.record import RunRecord
from .depgraph import task_graph_dot, task_graph_json
from .pmu import pmu_csv, pmu_rows, pmu_task_csv
from .scope_stats import scope_stats
from .swimlane import swimlane_events

__all__ = ["write_dfx", "wants_dfx", "DFX_DIR", "swimlane_events", "task_graph_json", "task_graph_dot",
           "scope_stats", "pmu_rows", "pmu_csv", "pmu_task_csv"]

DFX_DIR = "dfx_outputs"


def wants_dfx(config: Any) -> bool:
    """True when any DFX switch of `config` (a RunConfig) is on."""
    return bool(config is not None and (config.enable_chip_swimlane or config.enable_dep_gen
                                        or config.enable_scope_stats or config.enable_pmu))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_dfx(record: RunRecord, config: Any, output_dir: str | os.PathLike) -> list[Path]:
    """Write the outputs `config` asks for about `record` into `<output_dir>/dfx_outputs/`.

    Returns the paths written (none when every switch is off).
    """
    if not wants_dfx(config):
        return []
    out = Path(output_dir or ".") / DFX_DIR
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def emit(name: str, text: str) -> None:
        _write(out / name, text)
        written.append(out / name)

    if config.enable_chip_swimlane:
        emit("swimlane.json", json.dumps(swimlane_events(record, int(config.enable_chip_swimlane))))
    if config.enable_dep_gen:
        emit("task_graph.dot", task_graph_dot(record))
        emit("task_graph.json", json.dumps(task_graph_json(record), indent=1))
    if config.enable_scope_stats:
        emit("scope_stats.json", json.dumps(scope_stats(record), indent=1))
    if config.enable_pmu:
        emit("pmu.csv", pmu_csv(record))
        if int(config.enable_pmu) >= 2:
            emit("pmu_tasks.csv", pmu_task_csv(record))
    return written
