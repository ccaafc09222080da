"""The simulated chip: cores with their on-chip memories, prepared kernels and the task list.

`SimDevice(backend)` models one NPU of the given SoC (`pypto.backend.get_soc`): `num_aic` cube
cores and `num_aiv` vector cores, each with a lazily created `CoreArena`. It caches one
`KernelExecutor` per kernel Function and one `Orchestrator` per orchestration Function (keyed by
the Function object), so a program run repeatedly is prepared once. Arena contents persist across
runs, like on the hardware.

`run(program, entry, args)` executes one program invocation: it clears the task list, runs the
entry (an orchestration function, or a single kernel as one task), and drains the scheduler.
Each kernel call becomes a `Task` handed to `self.scheduler` (`InOrderScheduler` by default; a
scheduler with a cost model can replace it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...backend.soc import BackendType, get_soc
from ...core.enums import ParamDirection
from ...ir.function import Function, Program
from .arena import CoreArena
from .kernel import KERNEL_TYPES, KernelExecutor
from .orchestrator import Orchestrator
from .scheduler import InOrderScheduler
from .task import Task

__all__ = ["SimDevice"]


class SimDevice:
    """One simulated NPU. See the module docstring.

    Attributes:
        backend / soc: the chip model.
        tasks: Task records of the current (or last) run, in submission order.
        scheduler: object with `submit(task)`, `drain()` and `reset()`.
    """

    def __init__(self, backend: BackendType) -> None:
        self.backend = backend
        self.soc = get_soc(backend)
        self.tasks: list[Task] = []
        self.scheduler: Any = InOrderScheduler(self)
        self._arenas: dict[tuple[str, int], CoreArena] = {}
        self._kernels: dict[Function, KernelExecutor] = {}
        self._orchestrators: dict[Function, Orchestrator] = {}

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
        """The prepared executor of kernel `func` (prepared on first use)."""
        ex = self._kernels.get(func)
        if ex is None:
            ex = self._kernels[func] = KernelExecutor(func)
        return ex

    def orchestrator(self, program: Program, func: Function) -> Orchestrator:
        """The compiled orchestration `func` of `program` (compiled on first use)."""
        o = self._orchestrators.get(func)
        if o is None:
            o = self._orchestrators[func] = Orchestrator(func, program, self)
        return o

    def submit(self, func: Function, args: Sequence[Any]) -> Task:
        """Record a call of kernel `func` with `args` as a Task and hand it to the scheduler."""
        ex = self.kernel(func)
        task = Task(len(self.tasks), func.name, ex.core_type, tuple(args), func.param_directions,
                    executor=ex)
        self.tasks.append(task)
        self.scheduler.submit(task)
        return task

    def run(self, program: Program, entry: Function, args: Sequence[Any]) -> tuple | None:
        """Run `entry` with device-side `args`; returns its ReturnStmt values (tuple) or None.

        A kernel entry runs as one task and returns its Out/InOut arguments (like a kernel call in
        an orchestration function).
        """
        self.tasks = []
        self.scheduler.reset()
        if entry.func_type in KERNEL_TYPES:
            self.submit(entry, args)
            result = tuple(a for a, d in zip(args, entry.param_directions)
                           if d in (ParamDirection.Out, ParamDirection.InOut)) or None
        else:
            result = self.orchestrator(program, entry).run(args)
        self.scheduler.drain()
        return result
