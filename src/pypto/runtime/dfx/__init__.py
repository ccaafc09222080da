"""Runtime DFX outputs (SPEC §7; User Manual "Runtime DFX"): written under `<output_dir>/dfx_outputs/`.

| RunConfig switch          | files                                                                 |
|---------------------------|-----------------------------------------------------------------------|
| `enable_chip_swimlane=1`  | `swimlane.json` (Perfetto / Chrome trace events, a slice per task)    |
| `enable_chip_swimlane=2`  | the same plus a flow arrow per task dependency                        |
| `enable_dep_gen=True`     | `task_graph.dot`, `task_graph.json`                                   |
| `enable_scope_stats=True` | `scope_stats.json`                                                    |
| `enable_pmu=1`            | `pmu.csv` (counters per core)                                         |
| `enable_pmu=2`            | `pmu.csv` and `pmu_tasks.csv` (counters per task)                     |

Levels are checked by `RunConfig` (`config.DFX_LEVELS`). Higher swimlane levels would need to know
when each pipe of a core was busy inside a task; the cost model only knows each pipe's total cycles
per task (it serialises a core's pipes), so those totals go into each task slice's `args`
(`pipe_cycles`) instead of being drawn as invented per-pipe slices.

The folder always describes the last run of the build (`update_dfx`): a run writes the files its
switches ask for and removes the DFX files of earlier runs that it does not write again; a run with
every switch off removes them all (and the folder, when nothing else is in it). Only the file names
above are touched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..sim.record import RunRecord
from .depgraph import task_graph_dot, task_graph_json
from .pmu import pmu_csv, pmu_rows, pmu_task_csv
from .scope_stats import scope_stats
from .swimlane import swimlane_events

__all__ = ["update_dfx", "wants_dfx", "dfx_files", "DFX_DIR", "DFX_FILES", "swimlane_events",
           "task_graph_json", "task_graph_dot", "scope_stats", "pmu_rows", "pmu_csv", "pmu_task_csv"]

DFX_DIR = "dfx_outputs"

#  file                written when (config)                  text (record, config)
_OUTPUTS: tuple[tuple[str, Callable[[Any], bool], Callable[[RunRecord, Any], str]], ...] = (
    ("swimlane.json", lambda c: c.enable_chip_swimlane >= 1,
     lambda r, c: json.dumps(swimlane_events(r, int(c.enable_chip_swimlane)))),
    ("task_graph.dot", lambda c: bool(c.enable_dep_gen), lambda r, c: task_graph_dot(r)),
    ("task_graph.json", lambda c: bool(c.enable_dep_gen), lambda r, c: json.dumps(task_graph_json(r), indent=1)),
    ("scope_stats.json", lambda c: bool(c.enable_scope_stats), lambda r, c: json.dumps(scope_stats(r), indent=1)),
    ("pmu.csv", lambda c: c.enable_pmu >= 1, lambda r, c: pmu_csv(r)),
    ("pmu_tasks.csv", lambda c: c.enable_pmu >= 2, lambda r, c: pmu_task_csv(r)),
)
DFX_FILES: tuple[str, ...] = tuple(name for name, _, _ in _OUTPUTS)


def dfx_files(config: Any) -> list[str]:
    """Names of the files a run with `config` (a RunConfig, or None) writes, in `DFX_FILES` order."""
    if config is None:
        return []
    return [name for name, wanted, _ in _OUTPUTS if wanted(config)]


def wants_dfx(config: Any) -> bool:
    """True when any DFX switch of `config` (a RunConfig) is on."""
    return bool(dfx_files(config))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def update_dfx(record: RunRecord, config: Any, output_dir: str | os.PathLike) -> list[Path]:
    """Make `<output_dir>/dfx_outputs/` describe the run `record`: write the outputs `config` asks
    for (each file atomically), then remove every other DFX file (`DFX_FILES`) an earlier run left.

    With every switch off the DFX files are removed and the folder too when it is left empty. A
    program without an output folder (`output_dir` empty) writes into `./dfx_outputs/` when asked
    and otherwise leaves the working directory alone.

    Returns the paths written (none when every switch is off).
    """
    names = dfx_files(config)
    if not names and not output_dir:
        return []
    out = Path(output_dir or ".") / DFX_DIR
    if not names and not out.is_dir():
        return []
    written: list[Path] = []
    if names:
        out.mkdir(parents=True, exist_ok=True)
        for name, _, text in _OUTPUTS:
            if name in names:
                _write(out / name, text(record, config))
                written.append(out / name)
    for name in DFX_FILES:
        if name not in names:
            (out / name).unlink(missing_ok=True)
    if not names and not any(out.iterdir()):
        out.rmdir()
    return written
