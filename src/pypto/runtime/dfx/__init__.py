"""Runtime DFX outputs (SPEC §12; User Manual "Runtime DFX"): written under `<output_dir>/dfx_outputs/`.

| RunConfig switch          | files                                                                 |
|---------------------------|-----------------------------------------------------------------------|
| `enable_chip_swimlane=1..4` | `swimlane.json` (Perfetto / Chrome trace events; levels in `swimlane.py`) |
| `enable_dep_gen=True`     | `task_graph.dot`, `task_graph.json`, `deps.json` (`deps.py`)          |
| `enable_scope_stats=True` | `scope_stats.json` (summary per scope), `scope_stats.jsonl` (a record per scope begin / end with ring occupancy) |
| `enable_pmu=1`            | `pmu.csv` (counters per core)                                         |
| `enable_pmu=2`            | `pmu.csv` and `pmu_tasks.csv` (counters per task)                     |
| `enable_dump_args=1 / 2`  | `args_dump/` (`args_dump.json` + one binary file per tensor, `argdump.py`) |

Levels are checked by `RunConfig` (`config.DFX_LEVELS`). From level 2 the swimlane draws, under
each busy core, one track per pipe with its ops where the pipes model placed them
(`sim.pipes.PipeSchedule.timeline`); each task slice's `args` also hold its cycles per pipe
(`pipe_cycles`).

The folder always describes the last run of the build (`update_dfx`): a run writes the files its
switches ask for and removes the DFX files of earlier runs that it does not write again; a run with
every switch off removes them all (and the folder, when nothing else is in it). Every run also
removes `swimlane.html`, the page `python -m pypto.tools.swimlane` renders into the folder: it
describes an earlier run. Only these names are touched.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..sim.record import RunRecord

# The writers load when a run first asks for their output (or on `dfx.<name>`), so a run with
# every switch off never imports them (docs/performance.md "Import time").
_LAZY = {"swimlane_events": "swimlane", "task_graph_json": "depgraph", "task_graph_dot": "depgraph",
         "deps_json": "deps", "scope_stats": "scope_stats", "scope_stats_jsonl": "scope_stats",
         "pmu_rows": "pmu", "pmu_csv": "pmu", "pmu_task_csv": "pmu", "write_args_dump": "argdump"}
ARGS_DUMP_DIR = "args_dump"  # the folder `argdump.write_args_dump` fills (it imports this name)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _writer(name: str) -> Callable[..., Any]:
    """The DFX function `name` (one of `_LAZY`), imported on first use."""
    return __getattr__(name)  # type: ignore[no-any-return]


__all__ = ["update_dfx", "wants_dfx", "dfx_files", "DFX_DIR", "DFX_FILES", "DERIVED_FILES", "swimlane_events",
           "task_graph_json", "task_graph_dot", "deps_json", "scope_stats", "scope_stats_jsonl", "pmu_rows",
           "pmu_csv", "pmu_task_csv", "write_args_dump"]

DFX_DIR = "dfx_outputs"

#  file                written when (config)                  text (record, config)
_OUTPUTS: tuple[tuple[str, Callable[[Any], bool], Callable[[RunRecord, Any], str]], ...] = (
    ("swimlane.json", lambda c: c.enable_chip_swimlane >= 1,
     lambda r, c: json.dumps(_writer("swimlane_events")(r, int(c.enable_chip_swimlane)))),
    ("task_graph.dot", lambda c: bool(c.enable_dep_gen), lambda r, c: _writer("task_graph_dot")(r)),
    ("task_graph.json", lambda c: bool(c.enable_dep_gen), lambda r, c: json.dumps(_writer("task_graph_json")(r), indent=1)),
    ("deps.json", lambda c: bool(c.enable_dep_gen), lambda r, c: json.dumps(_writer("deps_json")(r), indent=1)),
    ("scope_stats.json", lambda c: bool(c.enable_scope_stats), lambda r, c: json.dumps(_writer("scope_stats")(r), indent=1)),
    ("scope_stats.jsonl", lambda c: bool(c.enable_scope_stats), lambda r, c: _writer("scope_stats_jsonl")(r)),
    ("pmu.csv", lambda c: c.enable_pmu >= 1, lambda r, c: _writer("pmu_csv")(r)),
    ("pmu_tasks.csv", lambda c: c.enable_pmu >= 2, lambda r, c: _writer("pmu_task_csv")(r)),
)
DFX_FILES: tuple[str, ...] = (*(name for name, _, _ in _OUTPUTS), ARGS_DUMP_DIR)
#  files that tools derive from a run's outputs into the folder (`python -m pypto.tools.swimlane`
#  writes swimlane.html next to swimlane.json): no run writes them, and every run removes them, as
#  they describe an earlier run
DERIVED_FILES: tuple[str, ...] = ("swimlane.html",)


def dfx_files(config: Any) -> list[str]:
    """Names of the files a run with `config` (a RunConfig, or None) writes, in `DFX_FILES` order."""
    if config is None:
        return []
    names = [name for name, wanted, _ in _OUTPUTS if wanted(config)]
    return names + [ARGS_DUMP_DIR] if getattr(config, "enable_dump_args", 0) else names


def wants_dfx(config: Any) -> bool:
    """True when any DFX switch of `config` (a RunConfig) is on."""
    return bool(dfx_files(config))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def update_dfx(record: RunRecord, config: Any, output_dir: str | os.PathLike) -> list[Path]:
    """Make `<output_dir>/dfx_outputs/` describe the run `record`: write the outputs `config` asks
    for (each file atomically), then remove every other DFX file (`DFX_FILES`) an earlier run left
    and the files tools derived from an earlier run (`DERIVED_FILES`: the swimlane's HTML page).

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
        if ARGS_DUMP_DIR in names:
            written.append(_writer("write_args_dump")(record, config.enable_dump_args, out).parent)
    for name in DERIVED_FILES:
        (out / name).unlink(missing_ok=True)
    for name in DFX_FILES:
        if name not in names:
            if name == ARGS_DUMP_DIR:
                shutil.rmtree(out / name, ignore_errors=True)
            else:
                (out / name).unlink(missing_ok=True)
    if not names and not any(out.iterdir()):
        out.rmdir()
    return written
