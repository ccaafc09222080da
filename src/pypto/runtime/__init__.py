"""Running compiled programs (SPEC §7): `RunConfig`, `CompiledProgram`, and the simulator (`sim`)."""

from .compiled import CompiledProgram, select_entry
from .config import PLATFORMS, SIM_PLATFORMS, RunConfig, backend_for_platform
from .sim import SimDevice, Task
from .toolchain import find_ptoas

__all__ = ["RunConfig", "CompiledProgram", "select_entry", "PLATFORMS", "SIM_PLATFORMS",
           "backend_for_platform", "SimDevice", "Task", "find_ptoas"]
