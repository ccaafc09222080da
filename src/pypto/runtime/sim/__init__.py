"""The NPU simulator (DESIGN idea 5): per-core memories, kernel executor, orchestrator, tasks."""

from .arena import CoreArena, tile_nbytes
from .device import SimDevice
from .kernel import KernelExecutor
from .orchestrator import Orchestrator
from .scheduler import InOrderScheduler
from .task import Task

__all__ = ["CoreArena", "tile_nbytes", "SimDevice", "KernelExecutor", "Orchestrator",
           "InOrderScheduler", "Task"]
