"""Task schedulers of the simulated device.

A scheduler receives every `Task` from `SimDevice.submit` and decides when and on which core it
runs; `drain()` runs whatever is still pending (the device calls it at the end of a run).
`InOrderScheduler` runs each task immediately, in submission order, on the next core of its type
(round-robin over `soc.num_aic` / `soc.num_aiv` cores). Sequential submission order is always a
legal schedule, since the orchestration only orders tasks through dependencies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.errors import RuntimeSimError

if TYPE_CHECKING:
    from .device import SimDevice
    from .task import Task

__all__ = ["InOrderScheduler", "run_task"]


def run_task(device: SimDevice, task: Task) -> None:
    """Execute `task` on its assigned core; errors name the task, kernel and core."""
    arena = device.arena(task.core_type, task.core_index)  # type: ignore[arg-type]
    try:
        task.executor.run(task.args, arena)
    except RuntimeSimError as err:
        raise RuntimeSimError(f"task {task.task_id} (kernel '{task.kernel}' on {task.core}): "
                              f"{err.message}", err.span) from err


class InOrderScheduler:
    """Runs each task at submission, round-robin over the cores of its type."""

    def __init__(self, device: SimDevice) -> None:
        self.device = device
        self._next: dict[str, int] = {}

    def reset(self) -> None:
        """Forget placement state (start of a run)."""
        self._next = {}

    def submit(self, task: Task) -> None:
        n = self.device.num_cores(task.core_type)
        i = self._next.get(task.core_type, 0)
        self._next[task.core_type] = (i + 1) % n
        task.core_index = i
        run_task(self.device, task)

    def drain(self) -> None:
        """Nothing is ever pending: tasks ran at submission."""
