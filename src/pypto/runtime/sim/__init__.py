"""The NPU simulator (DESIGN idea 5): per-core memories, kernel executor, orchestrator, tasks."""

from .arena import CoreArena, tile_nbytes
from .device import SimDevice
from .kernel import KernelExecutor
from .orchestrator import Orchestrator
from .record import RunRecord, ScopeInfo
from .sanitizer import Finding, SanitizerError
from .scheduler import EventScheduler
from .task import Task

__all__ = ["CoreArena", "tile_nbytes", "SimDevice", "KernelExecutor", "Orchestrator",
           "EventScheduler", "Task", "RunRecord", "ScopeInfo", "Finding", "SanitizerError"]
