"""Discrete-event task scheduler of the simulated chip (DESIGN idea 5).

Tasks arrive from the orchestrator with a submission time and their dependencies, either alone or
as the tasks of one Group call (a mixed kernel's AIC and AIV halves, see `cluster.py`). The schedule
is simulated incrementally: `advance(until)` / `advance_to(cycle)` process instants in time order
(the device asks when the orchestrator must wait for a ring slot), `drain()` until every submitted
task has finished. The result equals simulating everything at once, because the orchestrator only
submits at or after the last processed instant:

- a *unit* (one task, or the tasks of one group) becomes *ready* when the orchestrator has
  submitted it and every task it depends on has finished: ready time = max(submit cycle, end
  cycles of its dependencies);
- ready single tasks wait in one queue per core type (AIC, AIV), ordered by (ready time, task id);
  whenever a core of the right type is idle, the first one starts on it; among idle cores the one
  idle the longest is chosen (ties: the lowest index), which spreads work over the chip;
- a ready group needs a whole cluster — cube core c with vector cores 2c and 2c+1 (SPEC §6: a
  cluster is 1 AIC + 2 AIV) — all idle; among such clusters the one whose cores have been idle the
  longest is chosen (ties: the lowest c). Groups are dispatched before single tasks at the same
  instant; a single task may still take a core of a cluster a waiting group needs (backfilling);
- the blocks of an SPMD launch with `sync_start=True` (a *gang*) start at the same cycle, once
  as many cores of their type as there are blocks are idle (gangs go after groups, before singles);
- a task lasts `task.cycles` (see `cost_model`; for a group task its own work plus its pipe
  stalls, starting `offset_cycles` after the group), so independent tasks on different cores
  overlap. A group holds its three cores until its last task has finished; tasks that depend on
  one of its tasks may start when that task ends;
- the chip's DDR bandwidth is shared (`bandwidth.DdrChannel`): each task, as it starts, is granted
  its HBM traffic (the lines of its reads the L2 cache does not hold, and its stores:
  `l2cache.L2Cache`) from what the tasks started before it left free, and runs longer by its
  `ddr_wait_cycles` when that is not enough.

Tasks *execute* (their numbers are computed, on the chosen core's arena) at the moment they start
in simulated time; a group executes all its kernels then, interleaved on their pipes. A task starts
only after everything it depends on has finished, so conflicting tasks always run in submission
order; independent tasks may run in another order, as on the hardware.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.errors import InternalError, RuntimeSimError
from .bandwidth import DdrChannel
from .l2cache import L2Cache

if TYPE_CHECKING:
    from .device import SimDevice
    from .task import Task

__all__ = ["EventScheduler", "run_task", "named_error"]

_DONE, _FREE, _READY = 0, 1, 2


def run_task(device: SimDevice, task: Task) -> None:
    """Execute `task` on its assigned core; errors name the task, kernel and core, and stop the
    run's schedule (`SimDevice.task_failed`)."""
    try:
        device.execute(task)
    except RuntimeSimError as err:
        device.task_failed()
        raise named_error(err, task) from err


def named_error(err: RuntimeSimError, task: Task) -> RuntimeSimError:
    """`err` prefixed with the task, kernel and core it happened in, the line of the
    orchestration that called the kernel and the call's scalar arguments (`Task.call_site`:
    `task 3 (kernel 'k' on AIV3, called at prog.py:22 with i=48, n=16): ...`; the error's own
    location is the kernel's line); sanitizer reports, and errors already named — a deferred
    task's, raised while another task starts — as they are."""
    if getattr(err, "findings", None) or getattr(err, "task_named", False):
        return err
    called = task.call_site()
    called = f", {called}" if called else ""
    named = RuntimeSimError(f"task {task.task_id} (kernel '{task.kernel}' on {task.core}{called}): {err.message}",
                            err.span)
    named.task_named = True  # type: ignore[attr-defined]
    return named


class _Cores:
    """Idle bookkeeping of one core type: when each core became idle (None while busy), and a heap
    of (idle since, index, version) entries — an entry is stale once its core's version moved on."""

    def __init__(self, n: int) -> None:
        self.since: list[int | None] = [0] * n
        self.version = [0] * n
        self.heap = [(0, i, 0) for i in range(n)]

    def take_longest_idle(self) -> int | None:
        heap = self.heap
        while heap:
            since, i, ver = heapq.heappop(heap)
            if ver == self.version[i] and self.since[i] is not None:
                self.busy(i)
                return i
        return None

    def busy(self, i: int) -> None:
        self.since[i] = None
        self.version[i] += 1

    def free(self, i: int, now: int) -> None:
        self.since[i] = now
        self.version[i] += 1
        heapq.heappush(self.heap, (now, i, self.version[i]))


class EventScheduler:
    """Discrete-event list scheduler over the AIC and AIV cores of `device` (module docstring).

    Attributes:
        makespan: end cycle of the last task finished in this run.
    """

    def __init__(self, device: SimDevice) -> None:
        self.device = device
        self._l2_memo: dict = {}     # the L2 caches' rectangles of regions, shared by runs (l2cache.py)
        self.reset()

    def reset(self, on_finish: Callable[[Task, int], None] | None = None) -> None:
        """Start of a run: every core idle since cycle 0, nothing pending. `on_finish(task, cycle)`
        is called as each task finishes (the device's ring bookkeeping)."""
        self.makespan = 0
        self.now = 0
        self._cores: dict[str, _Cores] = {}
        self._on_finish = on_finish
        self._events: list[tuple[int, int, int, Any]] = []
        self._waiting: dict[int, int] = {}
        self._dependents: dict[int, list[list[Task]]] = {}
        self._singles: dict[str, list[tuple[int, int, Task]]] = {}
        self._groups: list[tuple[int, int, list[Task]]] = []
        self._gangs: list[tuple[int, int, list[Task]]] = []
        self._done: set[int] = set()
        self._submitted = 0
        self.ddr = DdrChannel()
        soc = self.device.soc
        self.l2 = L2Cache(soc.l2_bytes, soc.ddr_access_granularity, memo=self._l2_memo)

    def drop_pending(self) -> None:
        """A run failed: forget the tasks still queued (they hold their arguments, the caller's
        tensors); the times reached (`now`, `makespan`) stay readable until the next `reset`."""
        self._events, self._waiting, self._dependents = [], {}, {}
        self._singles, self._groups, self._gangs = {}, [], []
        self._on_finish = None

    def _share_ddr(self, t: Task) -> int:
        """Grant `t` (started, run) its HBM traffic (what the L2 cache does not serve,
        `l2cache.L2Cache`); sets its `hbm_bytes` and `ddr_wait_cycles`. Returns its cycles
        (`Task.cycles`, the DDR wait included)."""
        cost = t.cost
        if cost is None:
            t.ddr_wait_cycles = 0
            return 0
        own = cost.cycles + t.stall_cycles
        hbm = t.hbm_bytes = self.l2.hbm_bytes(t)
        if hbm <= 0:
            t.ddr_wait_cycles = 0
            return own
        ddr = self.ddr
        ddr.forget_before(self.now)     # no task starts before the current instant again
        wait = t.ddr_wait_cycles = ddr.reserve(t.start_cycle, own, hbm)  # type: ignore[arg-type]
        return own + wait

    def _of(self, core_type: str) -> _Cores:
        c = self._cores.get(core_type)
        if c is None:
            c = self._cores[core_type] = _Cores(self.device.num_cores(core_type))
        return c

    def submit(self, task: Task) -> None:
        """Queue `task` (already numbered, with its deps and submit cycle)."""
        self._add([task])

    def submit_gang(self, tasks: list[Task]) -> None:
        """Queue the blocks of one SPMD launch with `sync_start=True`: they start at the same
        cycle, each on its own core of their type, once that many cores are idle (SPEC §13)."""
        self._add(list(tasks))

    def submit_group(self, tasks: list[Task]) -> None:
        """Queue the tasks of one Group call; they start together on one cluster."""
        self._add(list(tasks))

    def _add(self, unit: list[Task]) -> None:
        n = 0
        for t in unit:
            for d in t.deps:
                if d not in self._done:
                    n += 1
                    self._dependents.setdefault(d, []).append(unit)
        uid = unit[0].task_id
        self._waiting[uid] = n
        self._submitted += len(unit)
        if n == 0:
            heapq.heappush(self._events, (self._ready_time(unit), _READY, uid, unit))

    def finished(self, task_id: int) -> bool:
        """Whether task `task_id` has finished in the simulated time processed so far."""
        return task_id in self._done

    def advance(self, until: Callable[[], bool]) -> bool:
        """Simulate, one instant at a time, until `until()` holds; returns whether it does (False:
        every queued task has finished first). Only instants no later submission can precede are
        processed: the caller submits later tasks at or after `now`."""
        while not until():
            if not self._events:
                return False
            self._step()
        return True

    def advance_to(self, cycle: int) -> None:
        """Simulate every instant up to and including `cycle`."""
        while self._events and self._events[0][0] <= cycle:
            self._step()

    def drain(self) -> int:
        """Simulate until every queued task has finished; returns `makespan` (cycles)."""
        while self._events:
            self._step()
        if len(self._done) != self._submitted:
            raise InternalError(f"scheduler finished {len(self._done)} of {self._submitted} tasks "
                                f"(dependency cycle)")
        return self.makespan

    def _step(self) -> None:
        """Process every event of the earliest instant, then start what can start then."""
        events = self._events
        now = self.now = events[0][0]
        heappop, heappush = heapq.heappop, heapq.heappush
        while events and events[0][0] == now:
            _, kind, _, x = heappop(events)
            if kind == _DONE:
                tid = x.task_id
                self._done.add(tid)
                if now > self.makespan:
                    self.makespan = now
                if x.group is None:
                    (self._cores.get(x.core_type) or self._of(x.core_type)).free(x.core_index, now)
                units = self._dependents.pop(tid, None)
                if units is not None:
                    waiting = self._waiting
                    for unit in units:
                        uid = unit[0].task_id
                        waiting[uid] -= 1
                        if waiting[uid] == 0:
                            heappush(events, (self._ready_time(unit), _READY, uid, unit))
                if self._on_finish is not None:
                    self._on_finish(x, now)
            elif kind == _FREE:
                for core_type, i in x:
                    self._of(core_type).free(i, now)
            else:
                for t in x:
                    t.ready_cycle = now
                if len(x) == 1 and x[0].group is None:
                    t = x[0]
                    queue = self._singles.get(t.core_type)
                    if queue is None:
                        queue = self._singles[t.core_type] = []
                    heappush(queue, (now, t.task_id, t))
                elif x[0].group is None:  # an SPMD launch with sync_start: its blocks start together
                    heapq.heappush(self._gangs, (now, x[0].task_id, x))
                else:
                    heapq.heappush(self._groups, (now, x[0].task_id, x))
        if self._groups:
            self._start_groups(self._groups, now, events)
        if self._gangs:
            self._start_gangs(self._gangs, now, events)
        for core_type, queue in self._singles.items():
            if not queue:
                continue
            cores = self._of(core_type)
            device = self.device
            while queue:
                i = cores.take_longest_idle()
                if i is None:
                    break
                _, _, t = heappop(queue)
                t.core_index, t.start_cycle = i, now
                run_task(device, t)
                end = t.end_cycle = now + self._share_ddr(t)
                heappush(events, (end, _DONE, t.task_id, t))

    def _start_groups(self, queue: list[tuple[int, int, list[Task]]], now: int,
                      events: list[tuple[int, int, int, Any]]) -> None:
        """Start every queued group (in queue order) for which a whole cluster is idle."""
        while queue:
            c = self._idle_cluster()
            if c is None:
                return
            unit = heapq.heappop(queue)[2]
            cores = self._take_cluster(c)
            for t in unit:
                t.core_index = c if t.core_type == "AIC" else 2 * c + (t.subblock or 0)
            try:
                self.device.execute_group(unit)   # its errors name the group's kernels
            except RuntimeSimError:
                self.device.task_failed()
                raise
            end = now
            for t in unit:
                t.start_cycle = now + t.offset_cycles
                t.end_cycle = t.start_cycle + self._share_ddr(t)
                end = max(end, t.end_cycle)
                heapq.heappush(events, (t.end_cycle, _DONE, t.task_id, t))
            heapq.heappush(events, (end, _FREE, unit[0].task_id, cores))

    def _start_gangs(self, queue: list[tuple[int, int, list[Task]]], now: int,
                     events: list[tuple[int, int, int, Any]]) -> None:
        """Start every queued SPMD gang (in queue order) while enough cores of its type are idle."""
        while queue:
            unit = queue[0][2]
            cores = self._of(unit[0].core_type)
            if sum(s is not None for s in cores.since) < len(unit):
                return
            heapq.heappop(queue)
            for t in unit:
                t.core_index, t.start_cycle = cores.take_longest_idle(), now
                run_task(self.device, t)
                t.end_cycle = now + self._share_ddr(t)
                heapq.heappush(events, (t.end_cycle, _DONE, t.task_id, t))

    def _cluster_cores(self, c: int) -> list[tuple[str, int]]:
        n_aiv = self.device.num_cores("AIV")
        return [("AIC", c)] + [("AIV", i) for i in (2 * c, 2 * c + 1) if i < n_aiv]

    def _idle_cluster(self) -> int | None:
        best: tuple[int, int] | None = None
        aic, aiv = self._of("AIC"), self._of("AIV")
        for c in range(self.device.num_cores("AIC")):
            since = [(aic if ct == "AIC" else aiv).since[i] for ct, i in self._cluster_cores(c)]
            if None in since:
                continue
            key = (max(since), c)  # type: ignore[type-var]
            if best is None or key < best:
                best = key  # type: ignore[assignment]
        return None if best is None else best[1]

    def _take_cluster(self, c: int) -> list[tuple[str, int]]:
        cores = self._cluster_cores(c)
        for core_type, i in cores:
            self._of(core_type).busy(i)
        return cores

    def _ready_time(self, unit: list[Task]) -> int:
        tasks = self.device.tasks
        r = unit[0].submit_cycle if len(unit) == 1 else max(t.submit_cycle for t in unit)
        for t in unit:
            for d in t.deps:
                end = tasks[d].end_cycle
                if end is not None and end > r:
                    r = end
        return r
