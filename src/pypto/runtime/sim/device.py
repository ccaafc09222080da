"""The simulated chip: cores with their on-chip memories, prepared kernels and the task graph.

`SimDevice(backend)` models one NPU of the given SoC (`pypto.backend.get_soc`): `num_aic` cube
cores and `num_aiv` vector cores, each with a lazily created `CoreArena`. It caches one
`KernelExecutor` per kernel Function (and sanitize mode) and one `Orchestrator` per orchestration
Function, so a program run repeatedly is prepared once. Arena contents persist across runs, like
on the hardware.

`run(program, entry, args)` executes one program invocation:

1. the orchestration runs and `submit`s a Task per kernel call. Each submission costs the
   orchestrator `orch_submit` cycles; the task's dependencies are the earlier tasks whose DDR
   regions conflict with its own (`deps.DepTracker`, unless `auto_deps=False`) plus explicit ones.
   A hand-written C++ kernel (`Function.external`) runs through `extern.ExternalExecutor`; one
   declared with `core_num=N` becomes N tasks, blocks 0..N-1, in one submission.
   A call of a Group function (`submit_group`) is one submission: its kernel calls become the
   tasks of one cluster unit (the AIV kernel twice, as vector subblocks 0 and 1, under a split
   mode), which the scheduler starts together on a whole cluster and `execute_group` runs
   interleaved on a fresh `PipeChannel` (`cluster.py`);
2. `sync()` (at the end, and before any host op that reads or writes tensor data) hands the
   pending tasks to the discrete-event `EventScheduler`, which starts each on a core and executes
   it there (`execute`);
3. the result is the entry's return value; `last_run` holds the `RunRecord`.

A run like an earlier one (same program and settings, arguments of the same layout and scalar
values) replays the earlier run's schedule instead of simulating it again (`replay.py`): the same
kernels run in the same order on the same cores, and `last_run` is a copy of the recorded record.

Runtime rings (`rings.py`, SPEC §12): each submission takes a task-window slot and dependency
entries of its scope depth's ring, each created tensor heap bytes. Before taking them the device
advances the schedule to the orchestrator's clock (`EventScheduler.advance_to`); while the ring is
full it advances until enough tasks retire, and the orchestrator's clock jumps to that instant (a
"stall" `OrchEvent`). Scope begin / end records (`RunRecord.scope_events`) sample the rings the
same way. When a task fails the schedule stops: the scopes open then get their "end" records at
once and the error leaves them without simulating more (`task_failed`, `rewind.py`). With
`dump_args`, task arguments are snapshotted around each task (`argdump.py`).

With `sanitize=True`, kernels run instrumented (`sanitizer.py`) and the run raises a
`SanitizerError` if anything was found.

Threads: tile ops are small (at most a few hundred KiB), so torch's intra-op threading costs more
than it gains on them — and oversubscribes the cores when several processes simulate at once. A
run therefore executes with one intra-op thread and restores the caller's setting afterwards (runs
in several Python threads at once: when the last of them ends; `ops/threads.one_torch_thread`). The
exception is a large batched GEMM or copy of a replayed run, which uses the caller's intra-op threads
while cores are idle (`ops/threads.py`, `host_cores.py`); `torch.set_num_threads(1)` before the call, or
`PYPTO_SIM_THREADS=1`, keeps a whole run on one thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import torch

from ...backend.soc import BackendType, get_soc
from ...codegen.cluster_config import ClusterConfig, cluster_config
from ...core.enums import FunctionType, ParamDirection, ScopeMode
from ...core.errors import RuntimeSimError
from ...core.span import Span
from ...ir.function import Function, Program
from ...ops.block import block_context, single_block
from ...ops.chip import chip_context
from ...ops.system import PipeChannel, pipe_context
from ...ops.threads import host_threads, one_torch_thread
from .arena import ChipMemory, CoreArena
from .argdump import ArgDumper
from .cluster import ClusterMember, ClusterRun, PipeStats
from .cost_model import const
from .deferred import Deferral, deferral_allowed
from .deps import DepTracker
from .host_cores import available_threads
from .host_gc import fewer_collections
from .kernel import KERNEL_TYPES, KernelExecutor
from .orchestrator import Orchestrator
from .record import OrchEvent, RunRecord, ScopeInfo
from .regions import region_of
from .replay import RunPlans, replay_enabled
from .rewind import close_scopes
from .rings import RING_FIELDS, RingSizes, RingTracker, ring_of, ring_sizes, ring_state
from .run_memo import ViewMemo
from .sanitizer import Sanitizer, SanitizerError, check_ordering
from .scheduler import EventScheduler, named_error
from .task import BLOCK_INDEX, Task, TaskOptions

__all__ = ["SimDevice"]

_READS = (ParamDirection.In, ParamDirection.InOut)
_WRITES = (ParamDirection.Out, ParamDirection.InOut)
_NO_OPTIONS = TaskOptions()


class SimDevice:
    """One simulated NPU. See the module docstring.

    Attributes:
        backend / soc: the chip model.
        tasks: Task records of the current (or last) run, in submission order.
        scheduler: the `EventScheduler`.
        last_run: `RunRecord` of the last run (None before the first).
        pipe_timeline: keep each task's ops placed on its pipes (`Task.pipe_ops`, for the swimlane's
            pipe tracks); off by default.
        run_plans: the recorded schedules replayed by later runs (`replay.RunPlans`; its `replays`
            counts the replayed runs).
    """

    def __init__(self, backend: BackendType) -> None:
        self.backend = backend
        self.soc = get_soc(backend)
        self.pipe_timeline = False
        self.tasks: list[Task] = []
        self.scheduler = EventScheduler(self)
        self.last_run: RunRecord | None = None
        self._arenas: dict[tuple[str, int], CoreArena] = {}
        self._chips: dict[str, ChipMemory] = {}    # per core type: every core's on-chip bytes (arena.py)
        self._kernels: dict[tuple[Function, bool, int | None], KernelExecutor] = {}
        self._clusters: dict[Function, ClusterConfig] = {}
        self._collect: list[tuple[Function, tuple, Span | None]] | None = None
        self._orchestrators: dict[Function, Orchestrator] = {}
        self._tracker = DepTracker()
        self._region_cache: dict[tuple, Any] = {}     # regions of views seen (regions.region_of)
        self.view_memo = ViewMemo()  # the orchestrator's views and their regions (run_memo.py)
        self._last_tasks: list[Task] = []   # the previous run's, while a run is in progress
        self.run_serial = 0          # counts runs (begin_run), for `view_memo`
        self._flags: dict[Function, tuple[tuple[int, bool, bool, bool], ...]] = {}
        self._auto_deps = True
        self._sanitize = False
        self._sanitizer: list[Sanitizer | None] = [None]
        self._scope_stack: list[int] = []
        self._scope_ids: tuple[int, ...] = ()   # the stack as a tuple (`Task.scope`) and its ring,
        self._scope_ring = ring_of(-1)           # kept by `_scopes_moved` (shared by the tasks)
        self._modes: list[ScopeMode] = []
        self._spmd: list[tuple[int, bool]] = []
        self._scopes: list[ScopeInfo] = []
        self._clock = 0
        self._rings = RingTracker(ring_sizes())
        self._scope_heap: dict[int, int] = {}
        self._dumper: ArgDumper | None = None
        self._orch_submit = int(const("orch_submit"))
        self._observer: Any = None    # a replay._Recorder while a run is recorded for replay
        self._deferred: Deferral | None = None   # a full simulation's deferred tasks (deferred.py)
        self._failed = False     # a task of the run failed: its schedule has stopped (`task_failed`)
        self.run_plans = RunPlans()

    def __repr__(self) -> str:
        return f"SimDevice({self.backend.name})"

    def num_cores(self, core_type: str) -> int:
        """Cores of `core_type` ("AIC" or "AIV") on this chip."""
        return self.soc.num_aic if core_type == "AIC" else self.soc.num_aiv

    def arena(self, core_type: str, index: int) -> CoreArena:
        """The on-chip memories of core `index` of `core_type` (created on first use)."""
        key = (core_type, index)
        a = self._arenas.get(key)
        if a is None:
            if not 0 <= index < self.num_cores(core_type):
                raise IndexError(f"{self.backend.name} has no core {core_type}{index}")
            chip = self._chips.get(core_type)
            if chip is None:
                chip = self._chips[core_type] = ChipMemory(self.soc, self.num_cores(core_type))
            a = self._arenas[key] = CoreArena(self.soc, core_type, index, chip)
        return a

    def kernel(self, func: Function, member: int | None = None) -> KernelExecutor:
        """The prepared executor of kernel `func` for the current mode (prepared on first use).

        `member` (0 or 1) asks for the executor of a Group call's kernel instance: one per vector
        subblock, counting its ops so its clock can be read while it runs.
        """
        key = (func, self._sanitize, member)
        ex = self._kernels.get(key)
        if ex is None:
            if func.external is not None:  # a hand-written C++ kernel: its library runs the task
                from ..extern.executor import ExternalExecutor

                ex = self._kernels[key] = ExternalExecutor(func)  # type: ignore[assignment]
            else:
                ex = self._kernels[key] = KernelExecutor(func, self.soc,
                                                         self._sanitizer if self._sanitize else None,
                                                         count=member is not None)
        return ex

    def cluster_config(self, program: Program, group: Function) -> ClusterConfig:
        """The split mode and pipe rings of Group function `group` (computed on first use)."""
        cfg = self._clusters.get(group)
        if cfg is None:
            cfg = self._clusters[group] = cluster_config(group, program, self.soc)
        return cfg

    def orchestrator(self, program: Program, func: Function) -> Orchestrator:
        """The compiled orchestration `func` of `program` (compiled on first use)."""
        o = self._orchestrators.get(func)
        if o is None:
            o = self._orchestrators[func] = Orchestrator(func, program, self)
        return o

    # ---- submission ----------------------------------------------------------------------------
    def submit(self, func: Function, args: Sequence[Any], deps: Iterable[int] = (),
               span: Span | None = None, options: TaskOptions | None = None) -> Task:
        """Record a call of kernel `func` with `args` as a Task and queue it.

        Args:
            deps: ids of earlier tasks of this run it must wait for, besides those found from
                overlapping DDR regions (none are found in a MANUAL runtime scope, SPEC §13).
            span: source location of the call (named by diagnostics).
            options: `pl.submit` / `pl.at` task options (no_dep_args, name_hint,
                allow_early_resolve) and the SPMD launch (`blocks` tasks, one per block; an
                argument equal to `BLOCK_INDEX` becomes the block's index). Inside a `pl.spmd`
                scope the launch comes from the scope.

        Returns the (first) Task; an SPMD launch numbers its blocks' tasks consecutively.
        Inside `submit_group` the call is only collected (None is returned).

        Raises:
            ValueError: a dependency on a task id that is not an earlier task of this run.
            RuntimeSimError: an SPMD launch with sync_start needs more cores than the chip has.
        """
        if self._collect is not None:
            self._collect.append((func, tuple(args), span))
            return None  # type: ignore[return-value]
        opts = options or _NO_OPTIONS
        blocks, sync_start = opts.blocks, opts.sync_start
        if self._spmd and blocks == 1:
            blocks, sync_start = self._spmd[-1]
        ex = self._kernels.get((func, self._sanitize, None))
        if ex is None:
            ex = self.kernel(func)
        first = len(self.tasks)
        if deps:
            deps = tuple(deps)
            for d in deps:
                if not isinstance(d, int) or not 0 <= d < first:
                    raise ValueError(f"task {first} ('{func.name}'): dependency {d!r} is not an earlier task "
                                     f"of this run")
        if sync_start and blocks > self.num_cores(ex.core_type):
            raise RuntimeSimError(f"SPMD launch of '{func.name}' with sync_start=True needs {blocks} "
                                  f"{ex.core_type} cores at once; {self.backend.name} has "
                                  f"{self.num_cores(ex.core_type)}", span)
        manual = bool(self._modes) and self._modes[-1] is ScopeMode.MANUAL
        # an external kernel declared with core_num=N launches N blocks, like pl.spmd(core_num=N)
        ext_blocks = 1 if type(ex) is KernelExecutor else getattr(ex, "core_num", 1)
        if ext_blocks > 1 and blocks == 1:
            blocks = ext_blocks
        derive = self._auto_deps and not manual
        no_dep = opts.no_dep
        parts = []
        n_deps = 0
        for b in range(blocks):
            if blocks == 1 and single_block():
                bargs = tuple([0 if a is BLOCK_INDEX else a for a in args])
                accesses = self._accesses(ex, func, bargs)
                bex = ex
            else:
                bargs = tuple(b if a is BLOCK_INDEX else a for a in args)
                bex = ex.instance(b) if ext_blocks > 1 else ex  # type: ignore[attr-defined]
                with block_context(b, blocks):
                    accesses = self._accesses(bex, func, bargs)
            tracked = [(r, rd, wr) for i, r, rd, wr in accesses if i not in no_dep] if no_dep else \
                [(r, rd, wr) for _, r, rd, wr in accesses]
            found = self._tracker.add(first + b, tracked, since=first, derive=derive)
            if deps:
                _add_explicit(found, deps)
            n_deps += len(found)
            parts.append((bargs, bex, accesses, found))
        ring = self._ring()
        self._acquire(ring, blocks, n_deps, lambda: f"task {first} ('{func.name}')" if blocks == 1 else
                      f"tasks {first}-{first + blocks - 1} ('{func.name}', {blocks} blocks)", first, span)
        self._clock += self._orch_submit
        launch: list[Task] = []
        scope = self._scope_ids
        directions, name, core_type, clock = func.param_directions, func.name, ex.core_type, self._clock
        launch_id = first if blocks > 1 else None
        # the fields a plain submission leaves at their defaults are set only when one differs
        # (each keyword argument of Task costs per task)
        special = blocks > 1 or manual or sync_start or no_dep or opts.name_hint is not None \
            or opts.allow_early_resolve is not None
        for b, (bargs, bex, accesses, found) in enumerate(parts):
            task = Task(first + b, name, core_type, bargs, directions, None, bex, span, scope, found, accesses,
                        clock, ring=ring)
            if special:
                task.manual, task.name_hint, task.allow_early_resolve = manual, opts.name_hint, opts.allow_early_resolve
                task.block_idx, task.block_num, task.launch = b, blocks, launch_id
                task.sync_start, task.untracked = sync_start, no_dep
            self.tasks.append(task)
            self._rings.alloc_task(task, ring, len(found))
            if self._dumper is not None:
                self._dumper.submitted(task)
            launch.append(task)
        if sync_start and blocks > 1:
            self.scheduler.submit_gang(launch)
        else:
            for task in launch:
                self.scheduler.submit(task)
        return launch[0]

    def push_spmd(self, core_num: int, sync_start: bool, span: Span | None = None) -> None:
        """Enter a `pl.spmd` scope: every kernel submitted until `pop_spmd` launches `core_num`
        blocks (SPEC §13). Raises RuntimeSimError for a nested SPMD scope."""
        if self._spmd:
            raise RuntimeSimError("pl.spmd scopes do not nest", span)
        self._spmd.append((core_num, sync_start))

    def spmd_active(self) -> bool:
        """Whether submissions are inside a `pl.spmd` scope."""
        return bool(self._spmd)

    def pop_spmd(self) -> None:
        """Leave the innermost `pl.spmd` scope."""
        self._spmd.pop()

    # ---- runtime rings (rings.py) --------------------------------------------------------------
    def _ring(self) -> int:
        return self._scope_ring

    def _scopes_moved(self) -> None:
        """The scope stack changed: update its tuple and ring (`_scope_ids`, `_scope_ring`)."""
        self._scope_ids = tuple(self._scope_stack)
        self._scope_ring = ring_of(len(self._scope_stack) - 1)

    def _acquire(self, ring: int, tasks: int, dep_entries: int, what: Callable[[], str],
                 task_id: int | None, span: Span | None, heap: int = 0) -> None:
        """Wait (in simulated time) until `ring` can take `tasks` task-window slots, `dep_entries`
        dependency entries and `heap` bytes; the wait is an orchestrator stall recorded in the run's
        `orch_events`. `what()` names the requester in messages.

        Raises:
            RuntimeSimError: a need larger than the ring, or heap that only open scopes hold.
        """
        tr = self._rings
        used, sizes = tr.used, tr.sizes
        # the usual case: it fits now, so it fits after advancing (finishing tasks only frees)
        if (not tasks or used["task_window"][ring] + tasks <= sizes.task_window[ring]) and \
                (not dep_entries or used["dep_pool"][ring] + dep_entries <= sizes.dep_pool[ring]) and \
                (not heap or used["heap"][ring] + heap <= sizes.heap[ring]):
            self.scheduler.advance_to(self._clock)   # occupancy as of now, not as of the last sync
            return
        needs = (("task_window", tasks, used["task_window"], sizes.task_window),
                 ("dep_pool", dep_entries, used["dep_pool"], sizes.dep_pool),
                 ("heap", heap, used["heap"], sizes.heap))
        for kind, need, _, cap in needs:
            if need > cap[ring]:
                field, _, _, _, _, holds = RING_FIELDS[kind]
                raise RuntimeSimError(f"{what()} needs {need} {holds} on the ring of scope depth {ring}, but "
                                      f"RunConfig.{field} gives it {cap[ring]}; raise {field}", span)

        def fits() -> bool:
            for _, need, u, cap in needs:
                if need and u[ring] + need > cap[ring]:
                    return False
            return True

        self.scheduler.advance_to(self._clock)   # occupancy as of now, not as of the last sync
        if fits():
            return
        start = self._clock
        full = [k for k, n, u, cap in needs if n and u[ring] + n > cap[ring]]
        if not self.scheduler.advance(fits):
            kind, need = next((k, n) for k, n, u, cap in needs if n and u[ring] + n > cap[ring])
            field, _, _, _, _, holds = RING_FIELDS[kind]
            raise RuntimeSimError(f"{what()} needs {need} {holds} on the ring of scope depth {ring}, "
                                  f"but {tr.used[kind][ring]} of its {tr.sizes.capacity(kind, ring)} are held "
                                  f"by scopes still open (RunConfig.{field}); raise {field} or create the "
                                  f"tensors inside a pl.scope() that ends earlier", span)
        self._clock = max(self._clock, self.scheduler.now)
        if self._clock > start:
            self.last_run.orch_events.append(  # type: ignore[union-attr]
                OrchEvent("stall", f"stall: {' + '.join(k.replace('_', ' ') for k in full)} full", start,
                          self._clock, {"ring": ring, "full": full, "task_id": task_id, "waiting_for": what()}))

    def created(self, tensor: torch.Tensor, span: Span | None = None) -> None:
        """Orchestration created DDR tensor `tensor` (`tensor.create`): it takes heap on the ring of
        the current scope until the scope ends and the tasks submitted before that have finished."""
        nbytes = tensor.numel() * tensor.element_size()
        ring = self._ring()
        where = f" at line {span.begin_line}" if span is not None and span.is_known() else ""
        self._acquire(ring, 0, 0, lambda: f"tensor {list(tensor.shape)} created{where}", None, span, heap=nbytes)
        self._rings.alloc_heap(ring, nbytes)
        if self._observer is not None:
            self._observer.created_tensor(tensor)
        sid = self._scope_stack[-1] if self._scope_stack else -1
        self._scope_heap[sid] = self._scope_heap.get(sid, 0) + nbytes
        self.last_run.created.append((region_of(tensor).key, nbytes, span))  # type: ignore[union-attr]

    def dump_tag(self, tensor: Any, span: Span | None = None) -> None:
        """`pl.dump_tag(tensor)`: with `enable_dump_args=1`, later tasks touching it are dumped."""
        if not isinstance(tensor, torch.Tensor):
            raise RuntimeSimError(f"pl.dump_tag expects a DDR tensor, got {type(tensor).__name__}", span)
        if self._dumper is not None:
            self._dumper.tag(region_of(tensor))

    def _scope_record(self, event: str, sid: int, depth: int, peaks: dict[str, int] | None = None) -> None:
        """A `scope_stats.jsonl` record: the ring of scope `sid` (at `depth`) at the current cycle."""
        self.scheduler.advance_to(self._clock)
        ring, rings = ring_of(depth), self._rings
        rec: dict[str, Any] = {"event": event, "scope_id": sid, "scope": self._scopes[sid].path(self._scopes),
                               "depth": depth, "ring": ring, "cycle": self._clock, "tasks_submitted": len(self.tasks),
                               "tasks_retired": rings.retired}
        rec.update(ring_state([u[ring] for u in rings.used.values()], rings.sizes, ring,
                              None if peaks is None else tuple(peaks.values())))
        self.last_run.scope_events.append(rec)  # type: ignore[union-attr]

    def task_failed(self) -> None:
        """A task (or Group call) failed when the scheduler started it: the run's schedule stops
        here. The scopes open now get their "end" records (`rewind.close_scopes`); the error then
        leaves them without recording or simulating more. Nothing to do when the failure was a
        deferred task's, whose record `rewind` has already cut back and closed."""
        if not self._failed:
            close_scopes(self, self._scope_ids, self._clock, len(self.tasks), self._rings.figures())

    def _accesses(self, ex: KernelExecutor, func: Function, args: Sequence[Any]) -> tuple:
        """(argument index, Region, reads, writes) per tensor argument of a call of `func`: the
        region is the part of the argument the kernel loads or stores (`ex.access`), or all of it."""
        plan = self._flags.get(func)
        if plan is None:    # per parameter: (index, reads, writes, narrowed by the access summary)
            narrowed = ex.access.narrowed
            plan = self._flags[func] = tuple((i, d in _READS, d in _WRITES, i in narrowed)
                                             for i, d in enumerate(func.param_directions))
        cache, narrow = self._region_cache, ex.access.region_arg
        region, serial = self.view_memo.region, self.run_serial
        find = partial(region_of, cache=cache)
        if len(args) < len(plan):
            plan = plan[:len(args)]
        out = []
        for i, rd, wr, nar in plan:
            a = args[i]
            if isinstance(a, torch.Tensor):   # (the orchestrator's views: their regions once, run_memo.py)
                out.append((i, find(narrow(i, args)) if nar else region(a, serial, find), rd, wr))
        return tuple(out)

    def submit_group(self, program: Program, group: Function, args: Sequence[Any],
                     span: Span | None = None, deps: Iterable[int] = ()) -> tuple | None:
        """Record a call of Group function `group` with `args` as one cluster unit and queue it.

        The group's body runs like an orchestration function, except that its kernel calls are
        collected: they become the unit's tasks (the AIV kernel once per vector core the split
        uses), with dependencies on earlier tasks found per task but none between each other.
        `deps`: ids of earlier tasks every task of the unit waits for (explicit dependencies).
        Returns the group's return values (tuple), like a nested orchestration function.

        Raises:
            RuntimeSimError: the group calls another group, or more than one kernel per core kind.
            ValueError: a dependency on a task id that is not an earlier task of this run.
        """
        if self._collect is not None:
            raise RuntimeSimError(f"Group function '{group.name}' is called inside another Group function; "
                                  f"a cluster runs one group at a time", span)
        self._collect = []
        try:
            result = self.orchestrator(program, group).run(args)
        finally:
            calls, self._collect = self._collect, None
        if calls:
            self._queue_group(program, group, calls, span, tuple(deps))
        return result

    def _queue_group(self, program: Program, group: Function, calls: list[tuple[Function, tuple, Span | None]],
                     span: Span | None, deps: tuple[int, ...] = ()) -> None:
        cfg = self.cluster_config(program, group)
        kinds: dict[str, list[str]] = {}
        for func, _, _ in calls:
            kinds.setdefault(self.kernel(func).core_type, []).append(func.name)
        for core, names in kinds.items():
            if len(names) > 1:
                raise RuntimeSimError(f"Group function '{group.name}' calls {len(names)} {core} kernels "
                                      f"({', '.join(names)}); a cluster runs one AIC and one AIV kernel",
                                      span or group.span)
        gid = len(self.tasks)
        for d in deps:
            if not isinstance(d, int) or not 0 <= d < gid:
                raise ValueError(f"group '{group.name}': dependency {d!r} is not an earlier task of this run")
        stats = PipeStats(group.name, cfg.split, dict(cfg.depth), dict(cfg.route))
        manual = bool(self._modes) and self._modes[-1] is ScopeMode.MANUAL
        parts = []
        for func, args, cspan in calls:
            core = self.kernel(func).core_type
            for sub in (range(cfg.vector_cores) if core == "AIV" else (None,)):
                ex = self.kernel(func, member=sub or 0)
                tid = gid + len(parts)
                accesses = self._accesses(ex, func, args)
                found = self._tracker.add(tid, [(r, rd, wr) for _, r, rd, wr in accesses], since=gid,
                                          derive=self._auto_deps and not manual)
                _add_explicit(found, deps)
                parts.append((func, args, cspan, core, sub, ex, accesses, found))
        ring = self._ring()
        self._acquire(ring, len(parts), sum(len(p[7]) for p in parts),
                      lambda: f"group '{group.name}' (tasks {gid}-{gid + len(parts) - 1})", gid, span)
        self._clock += self._orch_submit
        tasks: list[Task] = []
        for func, args, cspan, core, sub, ex, accesses, found in parts:
            task = Task(len(self.tasks), func.name, core, args, func.param_directions, executor=ex,
                        span=cspan or span, scope=self._scope_ids, deps=found, accesses=accesses,
                        submit_cycle=self._clock, group=gid, subblock=sub, pipes=stats, ring=ring, manual=manual)
            self.tasks.append(task)
            self._rings.alloc_task(task, ring, len(found))
            if self._dumper is not None:
                self._dumper.submitted(task)
            tasks.append(task)
        self.scheduler.submit_group(tasks)

    def execute_group(self, tasks: list[Task]) -> None:
        """Run the tasks of one Group call on their cluster now (called by the scheduler): the
        kernels interleave on a fresh PipeChannel (`cluster.ClusterRun`); a kernel that conflicts
        on DDR with one before it in the group starts after that one. Sets each task's `cost`,
        `stall_cycles` and `offset_cycles`, and the group's `PipeStats`.

        Raises:
            RuntimeSimError: a kernel failed (named with its task), the kernels deadlocked, or a
                tile pushed into a pipe was never popped.
        """
        if self._observer is not None:
            self._observer.executed(tasks)
        if self._deferred is not None:
            self._deferred.flush()
        stats: PipeStats = tasks[0].pipes
        members: list[ClusterMember] = []
        runner = ClusterRun(stats.group, members)
        channel = PipeChannel(stats.depth, runner)
        nsub = 1 + max((t.subblock or 0 for t in tasks), default=0)
        for k, t in enumerate(tasks):
            members.append(self._member(t, tasks[:k], channel, nsub))
        dumper = self._dumper
        snaps = [dumper.before(t) for t in tasks] if dumper is not None else []
        try:
            runner.run()
        except RuntimeSimError as err:
            failed = next((t for t, m in zip(tasks, members) if m.error is err), None)
            if failed is not None:
                raise named_error(err, failed) from err
            where = ", ".join(t.core for t in tasks)
            raise RuntimeSimError(f"group '{stats.group}' (tasks {tasks[0].task_id}-{tasks[-1].task_id} on "
                                  f"{where}): {err.message}", err.span) from err
        for t, m in zip(tasks, members):
            t.cost, t.stall_cycles, t.offset_cycles = m.cost, m.stall, m.start
        for t, snap in zip(tasks, snaps):
            dumper.after(t, snap)  # type: ignore[union-attr]
        stats.max_occupancy, stats.transfers = channel.max_occupancy(), channel.transfers()
        left = channel.pending()
        if left:
            rings = ", ".join(f"{n} in {d} (vector core {s})" for (d, s), n in sorted(left.items()))
            raise RuntimeSimError(f"group '{stats.group}' finished with tiles pushed but never popped: {rings}",
                                  tasks[0].span)

    def _member(self, t: Task, before: list[Task], channel: PipeChannel, nsub: int) -> ClusterMember:
        arena = self.arena(t.core_type, t.core_index)  # type: ignore[arg-type]
        ex, san = t.executor, self._sanitizer[0]
        sub = t.subblock or 0

        def run() -> Any:
            with pipe_context(channel), block_context(0, 1, sub, nsub):
                return ex.run(t.args, arena)

        state: list[Any] = [None]

        def enter() -> None:
            if san is not None:
                if state[0] is None:
                    san.begin_task(t, arena)
                else:
                    san.restore(state[0])

        def leave() -> None:
            if san is not None:
                state[0] = san.save()

        after = tuple(j for j, u in enumerate(before) if u.kernel != t.kernel and _conflict(u, t))
        name = f"'{t.kernel}'" + (f" (vector core {t.subblock})" if t.subblock is not None else "")
        return ClusterMember(name, run, ex.cycles_so_far, after, enter, leave)

    def push_scope(self, name: str, span: Span | None = None, mode: ScopeMode | None = None) -> int:
        """Enter a runtime scope; later submissions belong to it (and to the ring of its depth).
        Records a scope-begin event with the ring's occupancy. Returns its id.

        `mode` (SPEC §13): AUTO derives task order from overlapping regions, MANUAL derives none;
        None (the body of a called orchestration function) keeps the enclosing scope's mode.
        """
        parent = self._scope_stack[-1] if self._scope_stack else None
        sid = len(self._scopes)
        inherited = self._modes[-1] if self._modes else ScopeMode.AUTO
        self._scopes.append(ScopeInfo(sid, name, parent, span, mode or inherited))
        self._scope_stack.append(sid)
        self._scopes_moved()
        self._modes.append(mode or inherited)
        self._rings.open_mark(sid, self._ring())
        self._scope_record("begin", sid, len(self._scope_stack) - 1)
        return sid

    def pop_scope(self) -> None:
        """Leave the innermost runtime scope: its tensors' heap is freed once the tasks submitted
        so far have finished. Records a scope-end event (occupancy and peaks while it was open),
        except after a task failed (`task_failed`: its end is recorded already)."""
        depth = len(self._scope_stack) - 1
        sid = self._scope_stack.pop()
        self._scopes_moved()
        self._modes.pop()
        if self._failed:
            return
        self._rings.scope_end(ring_of(depth), self._scope_heap.pop(sid, 0), len(self.tasks) - 1)
        self._scope_record("end", sid, depth, self._rings.close_mark(sid))

    def sync(self, reason: str = "host op reads task data") -> int:
        """Run every pending task to completion; the orchestrator waits for them (an orchestrator
        `wait` event when it had to). Returns the current orchestrator cycle."""
        start = self._clock
        end = self.scheduler.drain()
        if self._deferred is not None:
            self._deferred.flush()
        self._clock = max(self._clock, end)
        if self._clock > start and self.last_run is not None:
            self.last_run.orch_events.append(OrchEvent("wait", f"wait: {reason}", start, self._clock, {}))
        return self._clock

    def execute(self, task: Task) -> None:
        """Run `task` on its assigned core now (called by the scheduler), or defer its tile ops
        when its cost is known without them (`deferred.py`); sets `task.cost`."""
        if self._observer is not None:
            self._observer.executed((task,))
        deferred = self._deferred
        if deferred is not None:
            if deferred.take(task):
                return
            deferred.flush()
        arena = self.arena(task.core_type, task.core_index)  # type: ignore[arg-type]
        san = self._sanitizer[0]
        if san is not None:
            san.begin_task(task, arena)
        dumper = self._dumper
        snap = dumper.before(task) if dumper is not None else None
        with block_context(task.block_idx, task.block_num):
            task.cost = task.executor.run(task.args, arena)
        if self.pipe_timeline:
            timeline = getattr(task.executor, "pipe_timeline", None)
            task.pipe_ops = timeline() if timeline is not None else None
        if dumper is not None:
            dumper.after(task, snap)
        if deferred is not None:
            deferred.learn(task)

    # ---- a whole run ---------------------------------------------------------------------------
    def begin_run(self, program: str = "", entry: str = "", *, sanitize: bool = False,
                  auto_deps: bool = True, rings: RingSizes | None = None, dump_args: int = 0) -> RunRecord:
        """Start a run: forget the previous tasks, reset the clock and the cores' schedule.

        `rings`: the ring sizes (None: environment variables, else defaults; `rings.py`).
        `dump_args`: 0, or 1 / 2 to record task arguments (`argdump.py`).
        `submit` / `sync` then add tasks to it and `end_run` finishes it (`run` does all three for
        a program).
        """
        # the last run's tasks stay referenced until this run ends (`end_run`): the orchestrator
        # finds the views they hold again (`view_memo`, run_memo.py) instead of making new ones
        self._last_tasks, self.tasks = self.tasks, []
        self.run_serial += 1
        for ex in self._kernels.values():
            if hasattr(ex, "refresh"):  # external kernels: an edited source is rebuilt
                ex.refresh()
        self._rings = RingTracker(rings if rings is not None else ring_sizes())
        self._scope_heap = {}
        self.scheduler.reset(self._rings.finished)
        self._tracker.reset()
        self._auto_deps, self._sanitize = auto_deps, sanitize
        self._orch_submit = int(const("orch_submit"))
        self._sanitizer[0] = Sanitizer() if sanitize else None
        self._scope_stack, self._scopes, self._clock = [], [], 0
        self._scopes_moved()
        self._failed = False
        self._modes, self._spmd = [], []
        self.last_run = RunRecord(program, entry, self.backend.name, self.soc.num_aic, self.soc.num_aiv,
                                  auto_deps=auto_deps, sanitize=sanitize, tasks=self.tasks,
                                  scopes=self._scopes, rings=self._rings.sizes)
        self._dumper = ArgDumper(dump_args, self.last_run.arg_dumps) if dump_args else None
        return self.last_run

    def end_run(self) -> RunRecord:
        """Finish the run: every task runs to completion, the record gets its times, and a
        sanitizing run raises `SanitizerError` listing what it found."""
        rec = self.last_run
        assert rec is not None, "end_run without begin_run"
        san = self._sanitizer[0]
        try:
            while self._scope_stack:     # the entry's scope (and any an error left open)
                self.pop_scope()
            submitted = self._clock
            self.sync("end of run: the last tasks finish")
            rec.orchestrator_cycles = submitted
            rec.makespan_cycles = self._clock
            rec.ring_peaks = {k: list(v) for k, v in self._rings.peak.items()}
            if san is not None and (not self._auto_deps or any(not t.derived_all for t in self.tasks)):
                check_ordering(san, self.tasks)
        finally:
            self._sanitizer[0] = None
            self._dumper = None
            self._last_tasks = []
            # the dependency index is done with: freed now rather than at the next run, so Python's
            # collection at the end of the run (host_gc.py) scans only what the run leaves behind
            self._tracker.reset()
            if san is not None:
                rec.findings = list(san.findings)
        if rec.findings:
            raise SanitizerError(rec.findings)
        return rec

    def run(self, program: Program, entry: Function, args: Sequence[Any], *, sanitize: bool = False,
            auto_deps: bool = True, rings: RingSizes | None = None, dump_args: int = 0,
            replay: bool = True) -> tuple | None:
        """Run `entry` with device-side `args`; returns its ReturnStmt values (tuple) or None.

        A kernel entry runs as one task and returns its Out/InOut arguments (like a kernel call in
        an orchestration function). `rings` / `dump_args`: see `begin_run`. `replay`: a run like
        an earlier one may replay its schedule (`replay.py`; bit-identical results and records).

        Raises:
            RuntimeSimError: the simulator found an error; SanitizerError (a subclass) when
                sanitizing found problems.
        """
        with one_torch_thread() as threads, chip_context(self.soc.num_aiv, self.soc.num_aic), \
                host_threads(available_threads(threads)), fewer_collections():  # gc: host_gc.py
            try:
                if not sanitize and not dump_args and replay_enabled(replay):
                    return self.run_plans.run(self, program, entry, args, auto_deps, rings)
                return self._run(program, entry, args, sanitize, auto_deps, rings, dump_args)
            except BaseException:
                self._drop_run_state()
                raise
            finally:
                self._last_tasks = []   # (a run that failed before end_run)

    def _drop_run_state(self) -> None:
        """A run failed before `end_run`: its scheduler queues, ring bookkeeping and dependency
        index, which hold its tasks (and through their arguments the caller's tensors), are dropped
        now, not when the next run starts; its record (`tasks`, `last_run`) stays for the caller
        to read, and so do the scheduler's times (a distributed rank's clock reads them)."""
        self.scheduler.drop_pending()
        self._tracker.reset()
        self._rings = RingTracker(self._rings.sizes)
        self._scope_heap = {}

    def _run(self, program: Program, entry: Function, args: Sequence[Any], sanitize: bool,
             auto_deps: bool, rings: RingSizes | None, dump_args: int) -> tuple | None:
        self.begin_run(program.name, entry.name, sanitize=sanitize, auto_deps=auto_deps, rings=rings,
                       dump_args=dump_args)
        self._deferred = Deferral(self) if deferral_allowed(self, sanitize, dump_args) else None
        try:
            self.last_run.inputs = [(p.name, region_of(a).key) for p, a in zip(entry.params, args)  # type: ignore[union-attr]
                                    if isinstance(a, torch.Tensor)]
            self.push_scope(entry.name, entry.span)
            if entry.func_type in KERNEL_TYPES:
                self.submit(entry, args, span=entry.span)
                result = tuple(a for a, d in zip(args, entry.param_directions) if d in _WRITES) or None
            elif entry.func_type is FunctionType.Group:
                result = self.submit_group(program, entry, args, entry.span)
            else:
                result = self.orchestrator(program, entry).run(args)
                # (views the orchestrator keeps for the next run are not handed to the caller)
                result = self.view_memo.handed_out(result, args)
        except Exception as failure:
            self._fail_deferred(failure)
            self._forget_sanitizer()
            raise
        except BaseException:
            self._deferred = None
            self._forget_sanitizer()
            raise
        try:
            self.end_run()
        finally:
            self._deferred = None
        return result

    def _forget_sanitizer(self) -> None:
        san = self._sanitizer[0]
        self._sanitizer[0] = None
        if san is not None:
            self.last_run.findings = list(san.findings)  # type: ignore[union-attr]

    def _fail_deferred(self, failure: Exception) -> None:
        """A run failed with `failure`: its deferred tasks run first (a one-at-a-time run had run
        them before it failed); a kernel error among them is raised instead (it came first)."""
        deferred, self._deferred = self._deferred, None
        if deferred is None or isinstance(failure, RuntimeSimError) and getattr(failure, "task_named", False):
            return   # (a task's own error: the tasks deferred before it have run already)
        try:
            deferred.flush()
        except RuntimeSimError as err:
            raise err from failure


def _add_explicit(found: dict[int, str], deps: Iterable[int]) -> None:
    """Record the explicit dependencies `deps` in `found` (task id -> kind): "explicit", or
    "<kind>+explicit" for a task the regions already ordered this one after."""
    for d in deps:
        k = found.get(d)
        found[d] = "explicit" if k is None else k if k.endswith("explicit") else f"{k}+explicit"


def _conflict(a: Task, b: Task) -> bool:
    """Whether two tasks touch overlapping DDR regions, at least one of them writing."""
    return any((x[3] or y[3]) and x[1].overlaps(y[1]) for x in a.accesses for y in b.accesses)
