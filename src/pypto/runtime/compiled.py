"""`CompiledProgram`: a lowered program plus where its artifacts are, callable like a function.

`ir.compile(...)` returns one (SPEC §5: `str(compiled)` is the output directory). Calling it runs the
entry function on the simulator:

1. check the arguments against the entry's parameters and copy host tensors into fresh device
   tensors (`runtime.binding`), so a failed run never modifies the caller's tensors;
2. run the entry on a `SimDevice` for the target chip (orchestration → tasks → kernels);
3. copy every Out/InOut device tensor back into the caller's tensor in place;
4. return the entry's return value(s): the caller's own tensor where a returned value is a
   parameter's device tensor, other tensors (e.g. created by `tensor.create`) as they are.

Real-NPU platforms (`a2a3`, `a5`) raise a RuntimeError naming the missing toolkit/driver.
"""

from __future__ import annotations

import os
from typing import Any

from ..backend.soc import BackendType
from ..core.enums import FunctionType, ParamDirection
from ..core.errors import user_facing
from ..ir.expr import Call, GlobalVar
from ..ir.function import Function, Program
from ..ir.visitor import IRVisitor
from .binding import bind_host_args
from .config import RunConfig, backend_for_platform, check_platform, is_simulator
from .sim.device import SimDevice
from .sim.task import Task
from .toolchain import require_npu_runtime

__all__ = ["CompiledProgram", "select_entry"]


class _Callees(IRVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            self.names.add(e.op.name)
        super().visit_Call(e)


def select_entry(program: Program, entry: str | None = None) -> Function:
    """The entry function: `entry` by name; else the unique Orchestration function; else the first
    function no other function calls.

    Raises:
        ValueError: unknown `entry` name, or a program without functions.
    """
    if entry is not None:
        f = program.get_function(entry)
        if f is None:
            raise ValueError(f"program '{program.name}' has no function {entry!r}; it has "
                             f"{', '.join(program.function_names) or 'none'}")
        return f
    if not program.functions:
        raise ValueError(f"program '{program.name}' has no functions")
    orch = [f for f in program.functions if f.func_type is FunctionType.Orchestration]
    if len(orch) == 1:
        return orch[0]
    v = _Callees()
    for f in program.functions:
        v.visit_function(f)
    roots = [f for f in program.functions if f.name not in v.names]
    for f in roots:
        if f.func_type is FunctionType.Orchestration:
            return f
    return roots[0] if roots else program.functions[0]


class CompiledProgram:
    """A compiled program (see the module docstring).

    Args:
        program: the lowered `ir.Program`.
        output_dir: artifact directory (`str(self)` and `os.fspath(self)` give it).
        backend_type: target chip; None derives it from `platform`.
        platform: default platform for calls without a RunConfig ("a2a3sim").
        entry: name of the entry function (see `select_entry`).

    Attributes:
        program, output_dir (str), platform, backend_type, entry (name), entry_function,
        output_indices: indices of the entry's Out/InOut parameters,
        tasks: Task records of the last run.

    Raises:
        ValueError: unknown platform, a platform that does not target `backend_type`, or a bad entry.
    """

    def __init__(self, program: Program, output_dir: str | os.PathLike | None,
                 backend_type: BackendType | None, platform: str = "a2a3sim",
                 entry: str | None = None) -> None:
        check_platform(platform)
        derived = backend_for_platform(platform)
        if backend_type is None:
            backend_type = derived
        elif backend_type is not derived:
            raise ValueError(f"platform {platform!r} targets {derived.name}, but the program was "
                             f"compiled for {backend_type.name}")
        self.program = program
        self.output_dir = os.fspath(output_dir) if output_dir is not None else ""
        self.platform = platform
        self.backend_type = backend_type
        self.entry_function = select_entry(program, entry)
        self.entry = self.entry_function.name
        self.output_indices = [i for i, d in enumerate(self.entry_function.param_directions)
                               if d in (ParamDirection.Out, ParamDirection.InOut)]
        self.tasks: list[Task] = []
        self._device: SimDevice | None = None

    def __str__(self) -> str:
        return self.output_dir

    def __fspath__(self) -> str:
        return self.output_dir

    def __repr__(self) -> str:
        return (f"CompiledProgram({self.program.name!r}, entry={self.entry!r}, "
                f"platform={self.platform!r}, output_dir={self.output_dir!r})")

    @property
    def device(self) -> SimDevice:
        """The simulated device this program runs on (created on first use, then reused)."""
        if self._device is None:
            self._device = SimDevice(self.backend_type)
        return self._device

    @user_facing
    def __call__(self, *args: Any, config: RunConfig | None = None) -> Any:
        """Run the entry with `args` (torch tensors and Python numbers) and return its result.

        Out/InOut tensors are updated in place. Returns None when the entry returns nothing, the
        single value when it returns one, else a tuple. With `config.codegen_only` the arguments
        are checked but nothing runs (returns None).

        Raises:
            TypeError / ValueError: arguments that do not match the entry's parameters.
            ValueError: a config whose platform targets another chip than the program.
            RuntimeError: a real-NPU platform (no toolkit/driver here).
            RuntimeSimError: the simulator found an error while running.
        """
        platform = config.platform if config is not None else self.platform
        backend = backend_for_platform(platform)
        if backend is not self.backend_type:
            raise ValueError(f"platform {platform!r} targets {backend.name}, but the program was "
                             f"compiled for {self.backend_type.name}")
        dev_args = bind_host_args(self.entry_function, args)
        if config is not None and config.codegen_only:
            return None
        if not is_simulator(platform):
            require_npu_runtime(platform)
        device = self.device
        try:
            result = device.run(self.program, self.entry_function, dev_args)
        finally:
            self.tasks = list(device.tasks)
        for i in self.output_indices:
            args[i].copy_(dev_args[i])
        if result is None or len(result) == 0:
            return None
        host = [self._to_host(v, dev_args, args) for v in result]
        return host[0] if len(host) == 1 else tuple(host)

    @staticmethod
    def _to_host(v: Any, dev_args: list[Any], args: tuple[Any, ...]) -> Any:
        if isinstance(v, tuple):
            return tuple(CompiledProgram._to_host(x, dev_args, args) for x in v)
        for d, a in zip(dev_args, args):
            if v is d:
                return a
        return v
