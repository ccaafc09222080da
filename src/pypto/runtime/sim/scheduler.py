"""Discrete-event task scheduler of the simulated chip (DESIGN idea 5).

Tasks arrive from the orchestrator with a submission time and their dependencies. `drain()`
simulates the chip until every submitted task has finished:

- a task becomes *ready* when the orchestrator has submitted it and every task it depends on has
  finished: ready time = max(submit cycle, end cycles of its dependencies);
- ready tasks wait in one queue per core type (AIC, AIV), ordered by (ready time, task id);
- whenever a core of the right type is idle, the first ready task starts on it; among idle cores
  the one idle the longest is chosen (ties: the lowest index), which spreads work over the chip;
- a task lasts `cost.cycles` (see `cost_model`), so independent tasks on different cores overlap.

Tasks *execute* (their numbers are computed, on the chosen core's arena) at the moment they start
in simulated time. A task starts only after everything it depends on has finished, so conflicting
tasks always run in submission order; independent tasks may run in another order, as on the
hardware.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from ...core.errors import InternalError, RuntimeSimError

if TYPE_CHECKING:
    from .device import SimDevice
    from .task import Task

__all__ = ["EventScheduler", "run_task"]

_DONE, _READY = 0, 1


def run_task(device: SimDevice, task: Task) -> None:
    """Execute `task` on its assigned core; errors name the task, kernel and core."""
    try:
        device.execute(task)
    except RuntimeSimError as err:
        if getattr(err, "findings", None):   # sanitizer reports keep their own text
            raise
        raise RuntimeSimError(f"task {task.task_id} (kernel '{task.kernel}' on {task.core}): "
                              f"{err.message}", err.span) from err


class EventScheduler:
    """Discrete-event list scheduler over the AIC and AIV cores of `device` (module docstring).

    Attributes:
        makespan: end cycle of the last task finished in this run.
    """

    def __init__(self, device: SimDevice) -> None:
        self.device = device
        self.reset()

    def reset(self) -> None:
        """Start of a run: every core idle since cycle 0, nothing pending."""
        self.pending: list[Task] = []
        self.makespan = 0
        self._idle: dict[str, list[tuple[int, int]]] = {}

    def _idle_cores(self, core_type: str) -> list[tuple[int, int]]:
        heap = self._idle.get(core_type)
        if heap is None:
            heap = self._idle[core_type] = [(0, i) for i in range(self.device.num_cores(core_type))]
        return heap

    def submit(self, task: Task) -> None:
        """Queue `task` (already numbered, with its deps and submit cycle) for the next drain."""
        self.pending.append(task)

    def drain(self) -> int:
        """Simulate until every pending task has finished; returns `makespan` (cycles)."""
        pending, self.pending = self.pending, []
        if not pending:
            return self.makespan
        tasks = self.device.tasks
        waiting: dict[int, int] = {}
        dependents: dict[int, list[Task]] = {}
        events: list[tuple[int, int, int, Task]] = []
        for t in pending:
            n = 0
            for d in t.deps:
                if tasks[d].end_cycle is None:
                    n += 1
                    dependents.setdefault(d, []).append(t)
            waiting[t.task_id] = n
            if n == 0:
                events.append((self._ready_time(t), _READY, t.task_id, t))
        heapq.heapify(events)
        ready: dict[str, list[tuple[int, int, Task]]] = {}
        done = 0
        while events:
            now = events[0][0]
            while events and events[0][0] == now:
                _, kind, _, t = heapq.heappop(events)
                if kind == _DONE:
                    done += 1
                    heapq.heappush(self._idle[t.core_type], (now, t.core_index))  # type: ignore[arg-type]
                    for d in dependents.pop(t.task_id, ()):
                        waiting[d.task_id] -= 1
                        if waiting[d.task_id] == 0:
                            heapq.heappush(events, (self._ready_time(d), _READY, d.task_id, d))
                else:
                    heapq.heappush(ready.setdefault(t.core_type, []), (now, t.task_id, t))
            for core_type, queue in ready.items():
                idle = self._idle_cores(core_type)
                while queue and idle:
                    _, _, t = heapq.heappop(queue)
                    _, t.core_index = heapq.heappop(idle)
                    t.start_cycle = now
                    run_task(self.device, t)
                    t.end_cycle = now + t.cycles
                    heapq.heappush(events, (t.end_cycle, _DONE, t.task_id, t))
        if done != len(pending):
            raise InternalError(f"scheduler finished {done} of {len(pending)} tasks (dependency cycle)")
        self.makespan = max(self.makespan, max(t.end_cycle for t in pending))  # type: ignore[type-var]
        return self.makespan

    def _ready_time(self, t: Task) -> int:
        tasks = self.device.tasks
        r = t.submit_cycle
        for d in t.deps:
            end = tasks[d].end_cycle
            if end is not None and end > r:
                r = end
        return r
