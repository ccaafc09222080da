"""Running compiled programs (SPEC §7): `RunConfig`, `CompiledProgram`, `ChipWorker` with resident
`DeviceTensor`s, the simulator (`sim`) and the DFX outputs (`dfx`)."""

from .compiled import CompiledProgram, select_entry
from .config import PLATFORMS, SIM_PLATFORMS, RunConfig, backend_for_platform
from .device_tensor import DeviceTensor
from .sim import SimDevice, Task
from .toolchain import find_ptoas
from .worker import ChipWorker, KernelHandle

__all__ = ["RunConfig", "ChipWorker", "KernelHandle", "DeviceTensor", "CompiledProgram", "select_entry", "PLATFORMS", "SIM_PLATFORMS",
           "backend_for_platform", "SimDevice", "Task", "find_ptoas"]
