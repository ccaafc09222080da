"""The simulated chip: cores with their on-chip memories, prepared kernels and the task graph.

`SimDevice(backend)` models one NPU of the given SoC (`pypto.backend.get_soc`): `num_aic` cube
cores and `num_aiv` vector cores, each with a lazily created `CoreArena`. It caches one
`KernelExecutor` per kernel Function (and sanitize mode) and one `Orchestrator` per orchestration
Function, so a program run repeatedly is prepared once. Arena contents persist across runs, like
on the hardware.

`run(program, entry, args)` executes one program invocation:

1. the orchestration runs and `submit`s a Task per kernel call. Each submission costs the
   orchestrator `orch_submit` cycles; the task's dependencies are the earlier tasks whose DDR
   regions conflict with its own (`deps.DepTracker`, unless `auto_deps=False`) plus explicit ones;
2. `sync()` (at the end, and before any host op that reads or writes tensor data) hands the
   pending tasks to the discrete-event `EventScheduler`, which starts each on a core and executes
   it there (`execute`);
3. the result is the entry's return value; `last_run` holds the `RunRecord`.

With `sanitize=True`, kernels run instrumented (`sanitizer.py`) and the run raises a
`SanitizerError` if anything was found.

Threads: tile ops are small (at most a few hundred KiB), so torch's intra-op threading costs more
than it gains on them — and oversubscribes the cores when several processes simulate at once. A
run therefore executes with one intra-op thread and restores the caller's setting afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from ...backend.soc import BackendType, get_soc
from ...core.enums import ParamDirection
from ...core.span import Span
from ...ir.function import Function, Program
from .arena import CoreArena
from .cost_model import const
from .deps import DepTracker
from .kernel import KERNEL_TYPES, KernelExecutor
from .orchestrator import Orchestrator
from .record import RunRecord, ScopeInfo
from .regions import region_of
from .sanitizer import Sanitizer, SanitizerError, check_ordering
from .scheduler import EventScheduler
from .task import Task

__all__ = ["SimDevice"]

_READS = (ParamDirection.In, ParamDirection.InOut)
_WRITES = (ParamDirection.Out, ParamDirection.InOut)


class SimDevice:
    """One simulated NPU. See the module docstring.

    Attributes:
        backend / soc: the chip model.
        tasks: Task records of the current (or last) run, in submission order.
        scheduler: the `EventScheduler`.
        last_run: `RunRecord` of the last run (None before the first).
    """

    def __init__(self, backend: BackendType) -> None:
        self.backend = backend
        self.soc = get_soc(backend)
        self.tasks: list[Task] = []
        self.scheduler = EventScheduler(self)
        self.last_run: RunRecord | None = None
        self._arenas: dict[tuple[str, int], CoreArena] = {}
        self._kernels: dict[tuple[Function, bool], KernelExecutor] = {}
        self._orchestrators: dict[Function, Orchestrator] = {}
        self._tracker = DepTracker()
        self._region_cache: dict[int, Any] = {}
        self._auto_deps = True
        self._sanitize = False
        self._sanitizer: list[Sanitizer | None] = [None]
        self._scope_stack: list[int] = []
        self._scopes: list[ScopeInfo] = []
        self._clock = 0

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
            a = self._arenas[key] = CoreArena(self.soc, core_type, index)
        return a

    def kernel(self, func: Function) -> KernelExecutor:
        """The prepared executor of kernel `func` for the current mode (prepared on first use)."""
        key = (func, self._sanitize)
        ex = self._kernels.get(key)
        if ex is None:
            ex = self._kernels[key] = KernelExecutor(func, self.soc, self._sanitizer if self._sanitize else None)
        return ex

    def orchestrator(self, program: Program, func: Function) -> Orchestrator:
        """The compiled orchestration `func` of `program` (compiled on first use)."""
        o = self._orchestrators.get(func)
        if o is None:
            o = self._orchestrators[func] = Orchestrator(func, program, self)
        return o

    # ---- submission ----------------------------------------------------------------------------
    def submit(self, func: Function, args: Sequence[Any], deps: Iterable[int] = (),
               span: Span | None = None) -> Task:
        """Record a call of kernel `func` with `args` as a Task and queue it.

        Args:
            deps: ids of earlier tasks of this run it must wait for, besides those found from
                overlapping DDR regions.
            span: source location of the call (named by diagnostics).

        Raises:
            ValueError: a dependency on a task id that is not an earlier task of this run.
        """
        ex = self.kernel(func)
        tid = len(self.tasks)
        deps = tuple(deps)
        for d in deps:
            if not isinstance(d, int) or not 0 <= d < tid:
                raise ValueError(f"task {tid} ('{func.name}'): dependency {d!r} is not an earlier task "
                                 f"of this run")
        cache = self._region_cache
        accesses = tuple((i, region_of(a, cache), d in _READS, d in _WRITES)
                         for i, (a, d) in enumerate(zip(args, func.param_directions))
                         if isinstance(a, torch.Tensor))
        found = self._tracker.add(tid, [(r, rd, wr) for _, r, rd, wr in accesses]) \
            if self._auto_deps else {}
        for d in deps:
            found.setdefault(d, "explicit")
        self._clock += int(const("orch_submit"))
        task = Task(tid, func.name, ex.core_type, tuple(args), func.param_directions, executor=ex,
                    span=span, scope=tuple(self._scope_stack), deps=found, accesses=accesses,
                    submit_cycle=self._clock)
        self.tasks.append(task)
        self.scheduler.submit(task)
        return task

    def push_scope(self, name: str, span: Span | None = None) -> int:
        """Enter a runtime scope; later submissions belong to it. Returns its id."""
        parent = self._scope_stack[-1] if self._scope_stack else None
        sid = len(self._scopes)
        self._scopes.append(ScopeInfo(sid, name, parent, span))
        self._scope_stack.append(sid)
        return sid

    def pop_scope(self) -> None:
        """Leave the innermost runtime scope."""
        self._scope_stack.pop()

    def sync(self) -> int:
        """Run every pending task to completion; the orchestrator waits for them. Returns the
        current orchestrator cycle."""
        end = self.scheduler.drain()
        self._clock = max(self._clock, end)
        return self._clock

    def execute(self, task: Task) -> None:
        """Run `task` on its assigned core now (called by the scheduler); sets `task.cost`."""
        arena = self.arena(task.core_type, task.core_index)  # type: ignore[arg-type]
        san = self._sanitizer[0]
        if san is not None:
            san.begin_task(task, arena)
        task.cost = task.executor.run(task.args, arena)

    # ---- a whole run ---------------------------------------------------------------------------
    def begin_run(self, program: str = "", entry: str = "", *, sanitize: bool = False,
                  auto_deps: bool = True) -> RunRecord:
        """Start a run: forget the previous tasks, reset the clock and the cores' schedule.

        `submit` / `sync` then add tasks to it and `end_run` finishes it (`run` does all three for
        a program).
        """
        self.tasks = []
        self.scheduler.reset()
        self._tracker.reset()
        self._region_cache = {}
        self._auto_deps, self._sanitize = auto_deps, sanitize
        self._sanitizer[0] = Sanitizer() if sanitize else None
        self._scope_stack, self._scopes, self._clock = [], [], 0
        self.last_run = RunRecord(program, entry, self.backend.name, self.soc.num_aic, self.soc.num_aiv,
                                  auto_deps=auto_deps, sanitize=sanitize, tasks=self.tasks,
                                  scopes=self._scopes)
        return self.last_run

    def end_run(self) -> RunRecord:
        """Finish the run: every task runs to completion, the record gets its times, and a
        sanitizing run raises `SanitizerError` listing what it found."""
        rec = self.last_run
        assert rec is not None, "end_run without begin_run"
        san = self._sanitizer[0]
        try:
            submitted = self._clock
            self.sync()
            rec.orchestrator_cycles = submitted
            rec.makespan_cycles = self._clock
            if san is not None and not self._auto_deps:
                check_ordering(san, self.tasks)
        finally:
            self._sanitizer[0] = None
            if san is not None:
                rec.findings = list(san.findings)
        if rec.findings:
            raise SanitizerError(rec.findings)
        return rec

    def run(self, program: Program, entry: Function, args: Sequence[Any], *, sanitize: bool = False,
            auto_deps: bool = True) -> tuple | None:
        """Run `entry` with device-side `args`; returns its ReturnStmt values (tuple) or None.

        A kernel entry runs as one task and returns its Out/InOut arguments (like a kernel call in
        an orchestration function).

        Raises:
            RuntimeSimError: the simulator found an error; SanitizerError (a subclass) when
                sanitizing found problems.
        """
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._run(program, entry, args, sanitize, auto_deps)
        finally:
            torch.set_num_threads(threads)

    def _run(self, program: Program, entry: Function, args: Sequence[Any], sanitize: bool,
             auto_deps: bool) -> tuple | None:
        self.begin_run(program.name, entry.name, sanitize=sanitize, auto_deps=auto_deps)
        try:
            self.push_scope(entry.name, entry.span)
            if entry.func_type in KERNEL_TYPES:
                self.submit(entry, args, span=entry.span)
                result = tuple(a for a, d in zip(args, entry.param_directions) if d in _WRITES) or None
            else:
                result = self.orchestrator(program, entry).run(args)
        except BaseException:
            san = self._sanitizer[0]
            self._sanitizer[0] = None
            if san is not None:
                self.last_run.findings = list(san.findings)  # type: ignore[union-attr]
            raise
        self.end_run()
        return result
