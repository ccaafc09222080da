"""Code generation (SPEC §5): PTO MLIR per kernel, host orchestration C++, the kernel table.

`generate(program)` returns the text of every code artifact of a lowered program, keyed by its
path relative to the build folder:

    kernels/aiv/<kernel>.pto, kernels/aic/<kernel>.pto   one per InCore/AIC/AIV function
    orchestration/<orch>.cpp                              one per Orchestration function (and
                                                          for a host entry of another type)

`kernel_config.py` is written by the compile driver once ptoas has run (`render_kernel_config`).
"""

from __future__ import annotations

from ..backend import BackendType
from ..ir.function import Program
from .common import CodegenError, is_kernel, kernel_core_type
from .kernel_config import (
    KernelEntry,
    OrchestrationEntry,
    kernel_table,
    orchestration_table,
    render_kernel_config,
    runtime_settings,
)
from .orchestration import emit_orchestration
from .pto import emit_kernel

__all__ = ["generate", "CodegenError", "kernel_core_type", "is_kernel", "emit_kernel",
           "emit_orchestration", "KernelEntry", "OrchestrationEntry", "kernel_table",
           "orchestration_table", "render_kernel_config", "runtime_settings"]


def generate(program: Program, entry: str | None = None,
             backend: BackendType = BackendType.Ascend910B, pipe_of=None) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Relative path → text of every `.pto` and orchestration `.cpp` of `program` (lowered);
    `entry` names the entry function (it gets host code even when it is not an Orchestration one);
    `backend` is the target chip (it routes the cross-core pipes of mixed kernels); `pipe_of(spec,
    call)`, the pipe each op runs on, adds the set_flag / wait_flag pairs to the kernels (`pto.sync`).

    Raises:
        CodegenError: naming the op or construct that has no PTO / host-code form, at its line.
    """
    files: dict[str, str] = {}
    kernels = kernel_table(program)
    for k in kernels:
        if not k.external:  # a hand-written kernel brings its own C++ (SPEC §10)
            files[k.pto] = emit_kernel(program.get_function(k.name), program, pipe_of)  # type: ignore[arg-type,index]
    ids = {k.name: k.func_id for k in kernels}
    for o in orchestration_table(program, entry):
        files[o.source] = emit_orchestration(program.get_function(o.name), program, ids, backend)  # type: ignore[arg-type]
    return files
