"""Run-time performance hints: what the simulator measured in a run, against the cost model (SPEC §12;
User Manual "Diagnostics"). Written after every simulator run to `report/perf_hints_run.log` of the
build (replaced by each run, so it describes the last one) when the run phase of the diagnostics is
on (`diagnostic_phase="run"` or `"all"`, the default); `CompiledProgram.run_hints` holds them too.

| code  | what it finds (numbers from `RunRecord` tasks and `cost_model.CONSTANTS`) |
|-------|----------------------------------------------------------------------------|
| PH004 | a kernel whose tasks (2 or more in the run) do less work on average than one task launch
|       | costs (`task_launch`); work = a task's cycles minus the launch, pipe stalls excluded |
| PH005 | the compute pipe of a kernel's core — cube on AIC, vector on AIV — busy less than
|       | `PIPE_BUSY_BELOW` (25 %) of the kernel's work cycles (per-pipe cycles of the cost model) |
| PH006 | a DDR load / store whose rows are narrower than the DDR access granule
|       | (`SoCModel.ddr_access_granularity`), executed in the run: bytes per transfer, bytes charged
|       | in whole granules, efficiency and the MTE cycles lost |
| PH007 | a cross-core pipe ring of fewer slots than the default one-way depth (`SLOTS_ONE_WAY`, 8:
|       | `pl.cross_core_slot(slot_num=N)` or 4 each with both directions live) that filled up while
|       | the producing kernel waited on its pipes |
| PH010 | the orchestrator's task submissions (`orch_submit` per task, `RunRecord.orchestrator_cycles`)
|       | take `ORCH_BOUND_SHARE` (50 %) or more of the makespan, with 2 or more tasks per core used
|       | on average: the cores wait for tasks to be submitted |

Each hint is located at the user's line: the kernel call in the orchestration (PH004, PH005,
PH007; PH010: the call of the kernel submitted most often) or the load / store (PH006).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..backend import get_soc
from ..backend.soc import BackendType
from ..core.diagnostics import Diagnostic, DiagnosticOptions, render_diagnostics
from ..core.enums import MemorySpace
from ..core.span import Span
from ..ops.system import SLOTS_ONE_WAY
from .sim.cost_model import const
from .sim.record import RunRecord
from .sim.task import Task

__all__ = ["run_hints", "render_run_hints", "update_run_hints", "RUN_HINT_CODES", "RUN_HINTS_FILE",
           "PIPE_BUSY_BELOW", "ORCH_BOUND_SHARE"]

RUN_HINT_CODES = ("PH004", "PH005", "PH006", "PH007", "PH010")
RUN_HINTS_FILE = "perf_hints_run.log"
PIPE_BUSY_BELOW = 0.25   # PH005: compute pipe busy below this share of the kernel's work cycles
ORCH_BOUND_SHARE = 0.5   # PH010: submissions take at least this share of the makespan
_COMPUTE_PIPE = {"AIC": "cube", "AIV": "vector"}
_PRODUCER = {"AIC->AIV": "AIC", "AIV->AIC": "AIV"}


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "0%"


def _by_kernel(tasks: list[Task]) -> dict[str, list[Task]]:
    out: dict[str, list[Task]] = {}
    for t in tasks:
        if t.cost is not None:
            out.setdefault(t.kernel, []).append(t)
    return out


def _where(ts: list[Task]) -> Span:
    """The user's line for a kernel's tasks: its call in the orchestration, else the kernel."""
    for t in ts:
        if t.span is not None and t.span.is_known():
            return t.span
    func = getattr(ts[0].executor, "func", None)
    return func.span if func is not None else Span.unknown()


def _small_tasks(kernel: str, ts: list[Task], costs: list[tuple[Any, int]]) -> Iterator[Diagnostic]:
    launch, submit = int(const("task_launch")), int(const("orch_submit"))
    if len(ts) < 2:
        return
    total = sum(cost.cycles * n for cost, n in costs)
    avg = (total - launch * len(ts)) / len(ts)
    if avg >= launch:
        return
    work = [cost.cycles - launch for cost, _ in costs]
    yield Diagnostic("PH004", kernel,
                     f"{len(ts)} tasks of '{kernel}' do {avg:.0f} cycles of work each on average (min "
                     f"{min(work)}, max {max(work)}) against {launch} cycles of launch per task (cost model "
                     f"'task_launch') plus {submit} cycles of orchestrator submission: launch is "
                     f"{_pct(launch * len(ts), total)} of their {total} cycles. Give each task more work "
                     f"(larger tiles, or a loop over several blocks per task) so fewer tasks are launched",
                     _where(ts))


def _distinct_costs(ts: list[Task]) -> list[tuple[Any, int]]:
    """(TaskCost, how many of `ts` have it) per distinct cost object: a kernel without control flow
    gives every task the same one, so the sums below take one step per kernel, not per task."""
    seen: dict[int, list] = {}
    for t in ts:
        e = seen.get(id(t.cost))
        if e is None:
            seen[id(t.cost)] = [t.cost, 1]
        else:
            e[1] += 1
    return [(c, n) for c, n in seen.values()]


def _idle_pipe(kernel: str, ts: list[Task], costs: list[tuple[Any, int]]) -> Iterator[Diagnostic]:
    pipe = _COMPUTE_PIPE.get(ts[0].core_type)
    launch = int(const("task_launch"))
    work = sum((cost.cycles - launch) * n for cost, n in costs)
    if pipe is None or work <= 0:
        return
    pipes: dict[str, int] = {}
    for cost, n in costs:
        for p, c in cost.pipe_cycles.items():
            pipes[p] = pipes.get(p, 0) + c * n
    busy = pipes.get(pipe, 0)
    if busy >= PIPE_BUSY_BELOW * work:
        return
    top = ", ".join(f"{p} {_pct(c, work)}" for p, c in sorted(pipes.items(), key=lambda x: -x[1]) if p != pipe)
    advice = ("the kernel mostly moves data: give the cube more work per loaded operand (reuse a tile in "
              "Mat / Left / Right across several matmuls, larger K per matmul)" if pipe == "cube" else
              "the kernel mostly moves data: fuse it with the elementwise work around it so each loaded "
              "tile is used for more, or move fewer bytes (narrower dtypes)")
    # the pipes run concurrently (double buffering overlaps loads, compute and stores): each share is
    # of the same work cycles, so they can add up to more than 100 % and are not a split of the rest
    others = (f"the other pipes are busy {top} of those cycles (cost model cycles per pipe; the pipes run "
              f"in parallel, so the shares need not add up to 100%)" if top else "no other pipe is busy")
    yield Diagnostic("PH005", kernel,
                     f"the {pipe} pipe of '{kernel}' ({ts[0].core_type}) is busy {busy} of its {work} cycles "
                     f"of work ({_pct(busy, work)}, below {PIPE_BUSY_BELOW:.0%}) over {len(ts)} task(s); "
                     f"{others}; {advice}", _where(ts))


def _narrow_transfers(kernel: str, ts: list[Task], costs: list[tuple[Any, int]], granule: int) -> Iterator[Diagnostic]:
    ex = ts[0].executor
    sites, spans = getattr(ex, "sites", ()), getattr(ex, "site_spans", ())
    runs = [0] * len(sites)
    per_counts: Counter = Counter()
    for cost, n in costs:
        per_counts[cost.counts] += n
    for counts, n in per_counts.items():
        for i in range(len(sites)):
            runs[i] += n * (counts[i] if counts is not None and i < len(counts) else 1)
    for i, (c, span) in enumerate(zip(sites, spans)):
        if not c.rows or not runs[i] or c.path is None or MemorySpace.DDR not in c.path:
            continue
        row = c.nbytes / c.rows
        if row >= granule:
            continue
        n = runs[i]
        bw = const("mte2_bytes_per_cycle" if c.path[0] is MemorySpace.DDR else "mte3_bytes_per_cycle")
        lost = n * (int(-(-c.ddr_bytes // bw)) - int(-(-c.nbytes // bw)))
        kind = f"load from DDR into {c.path[1].name}" if c.path[0] is MemorySpace.DDR else \
            f"store from {c.path[0].name} to DDR"
        yield Diagnostic("PH006", kernel,
                         f"this {kind} ran {n} time(s) in {len(ts)} task(s), {c.nbytes} B per transfer in "
                         f"{c.rows} rows of {row:.0f} B; DDR is accessed in {granule} B granules, so each "
                         f"row costs a whole granule: {n * c.ddr_bytes} B charged for {n * c.nbytes} B of "
                         f"data ({_pct(c.nbytes, c.ddr_bytes)} efficiency), {lost} {c.pipe} cycles lost. "
                         f"Make the innermost tile dimension at least {granule} B wide",
                         span if span is not None and span.is_known() else _where(ts))


def _shallow_rings(tasks: list[Task], program: Any) -> Iterator[Diagnostic]:
    calls: dict[tuple[str, str], list[tuple[Any, list[Task]]]] = {}
    groups: dict[int, list[Task]] = {}
    for t in tasks:
        if t.group is not None and t.pipes is not None and t.cost is not None:
            groups.setdefault(t.group, []).append(t)
    for ts in groups.values():
        stats = ts[0].pipes
        for d, depth in stats.depth.items():
            occ = max((n for (dd, _), n in stats.max_occupancy.items() if dd == d), default=0)
            if depth < SLOTS_ONE_WAY and occ >= depth:
                calls.setdefault((stats.group, d), []).append((stats, ts))
    for (group, d), found in calls.items():
        prod = [t for _, ts in found for t in ts if t.core_type == _PRODUCER.get(d)]
        stall = sum(t.stall_cycles for t in prod)
        if not stall:
            continue
        cycles = sum(t.cycles for t in prod)
        depth = found[0][0].depth[d]
        func = program.get_function(group) if program is not None else None
        opts = dict(func.optimizations) if func is not None else {}
        why = (f"pl.cross_core_slot(slot_num={depth})" if "cross_core_slot" in opts else
               f"both pipe directions are live, {depth} slots each")
        tiles = sum(n for stats, _ in found for (dd, _), n in stats.transfers.items() if dd == d)
        yield Diagnostic("PH007", group,
                         f"the {d} pipe ring of '{group}' has {depth} slot{'s' if depth != 1 else ''}, fewer than the default {SLOTS_ONE_WAY} "
                         f"({why}); in this run it filled up ({depth} of {depth} slots held at once, {tiles} "
                         f"tiles over {len(found)} call(s)) and the producing {_PRODUCER.get(d)} kernel waited "
                         f"{stall} cycles on its pipes ({_pct(stall, cycles)} of its {cycles} cycles). A deeper "
                         f"ring lets the producer run further ahead: raise slot_num where the consumer's memory "
                         f"has room (AllocateMemoryAddr says when it has not), or shrink the tiles in flight",
                         _where([t for _, ts in found for t in ts]))


def _orchestration_bound(record: RunRecord) -> Iterator[Diagnostic]:
    """PH010: submitting the tasks, one after another on the orchestrator, takes most of the run."""
    orch, span = record.orchestrator_cycles, record.makespan_cycles
    if not span or orch < ORCH_BOUND_SHARE * span:
        return
    done = [t for t in record.tasks if t.cost is not None and t.start_cycle is not None]
    cores = len({(t.core_type, t.core_index) for t in done})
    if len(done) < 2 * cores:
        return   # a core that runs one task waits for no second submission
    submit = int(const("orch_submit"))
    work = sum(t.cycles for t in done)
    busiest: dict[tuple[str, int], int] = {}    # per core (type, index)
    for t in done:
        core = (t.core_type, t.core_index)
        busiest[core] = busiest.get(core, 0) + t.cycles   # type: ignore[index]
    kernel = max(_by_kernel(done).items(), key=lambda kv: len(kv[1]))
    fewer = max(1, work // max(1, cores * submit))
    yield Diagnostic("PH010", kernel[0],
                     f"the orchestrator spent {orch} of the run's {span} cycles ({_pct(orch, span)}) submitting "
                     f"{orch // submit} tasks, one after another at {submit} cycles each (cost model "
                     f"'orch_submit'), while the tasks averaged {work // len(done)} cycles each over {cores} "
                     f"core(s) (the busiest core worked {max(busiest.values())} cycles, "
                     f"{_pct(max(busiest.values()), span)} of the run): the cores wait for submissions. Use fewer, "
                     f"larger tasks (more rows per task, or a loop over several blocks inside each task): with "
                     f"{work} cycles of task work on {cores} core(s), submission stays below the cores' work "
                     f"with fewer than about {fewer} tasks", _where(kernel[1]))


def run_hints(record: RunRecord, program: Any = None) -> list[Diagnostic]:
    """PH004-PH007 and PH010 of the run `record` (kernels in order of their first task); `program`
    (the lowered `ir.Program`) names why a ring is shallow."""
    granule = get_soc(BackendType[record.backend]).ddr_access_granularity
    out: list[Diagnostic] = []
    for kernel, ts in _by_kernel(record.tasks).items():
        costs = _distinct_costs(ts)
        out += [*_small_tasks(kernel, ts, costs), *_idle_pipe(kernel, ts, costs),
                *_narrow_transfers(kernel, ts, costs, granule)]
    out += _shallow_rings(record.tasks, program)
    out += _orchestration_bound(record)
    return out


def render_run_hints(hints: list[Diagnostic], record: RunRecord, options: DiagnosticOptions) -> str:
    """The text of `report/perf_hints_run.log`."""
    title = (f"Run-time performance hints for program '{record.program}' on {record.backend} "
             f"({len(record.tasks)} tasks, {record.makespan_cycles} cycles)")
    return render_diagnostics(title, hints, options, "run", RUN_HINT_CODES, "no run-time performance hints")


def update_run_hints(compiled: Any, options: DiagnosticOptions) -> list[Diagnostic]:
    """After a run of `compiled` (a CompiledProgram): its run-time hints, written to
    `<output_dir>/report/perf_hints_run.log` (atomically). With the run phase off nothing is
    computed and a log of an earlier run is removed, so the file always describes the last run.
    A folder that cannot be written is logged (logger `pypto.diagnostics`), never an error; an
    output folder that does not exist (a program built in memory) is never created."""
    record = compiled.last_run
    out = Path(compiled.output_dir) if compiled.output_dir else None
    path = out / "report" / RUN_HINTS_FILE if out is not None and out.is_dir() else None
    if record is None or not options.runs("run"):
        if path is not None:
            path.unlink(missing_ok=True)
        return []
    # a replayed run's record is like every other replay of its plan: hints and text are computed once
    key = ("run_hints", id(compiled.program), options)
    cached = record.derived.get(key) if record.derived is not None else None
    if cached is None or cached[0] is not compiled.program:
        hints = options.keep(run_hints(record, compiled.program))
        cached = (compiled.program, hints, render_run_hints(hints, record, options))
        if record.derived is not None:
            record.derived[key] = cached
    hints, text = list(cached[1]), cached[2]
    if path is not None and not _unchanged(path, text):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
            st = path.stat()
            if len(_WRITTEN) >= 256:
                _WRITTEN.clear()
            _WRITTEN[os.fspath(path)] = (text, st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError as e:   # a read-only build folder: the run itself succeeded
            logging.getLogger("pypto.diagnostics").warning("could not write %s: %s", os.fspath(path), e)
    return hints


_WRITTEN: dict[str, tuple[str, int, int, int]] = {}   # path -> (text, mtime_ns, size, inode) last written


def _unchanged(path: Path, text: str) -> bool:
    """Whether `path` still holds `text` as this process last wrote it (same text, and the file's
    modification time, size and inode unchanged since): a replayed run then skips rewriting it."""
    last = _WRITTEN.get(os.fspath(path))
    if last is None or last[0] != text:
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    return (st.st_mtime_ns, st.st_size, st.st_ino) == last[1:]

