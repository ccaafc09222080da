"""Hand-written C++ kernels (SPEC §10; docs/tools.md "External C++ kernels").

A kernel declared with `@pl.function(type=AIV|AIC, external_source=...)` or `@pl.jit.extern(...)`
passes through the compiler untouched and is submitted like any kernel; on the simulator it runs
for real: `build` compiles its source against the shipped `pypto/include/pypto_kernel.h` with the
host C++ compiler into a cached shared library, `abi` loads it with `ctypes` and calls
`kernel_entry(int64_t* args)` with the task's DDR tensors, and `executor` gives the simulator its
task executor and simulated time.
"""

from __future__ import annotations

from .abi import KernelLibrary, TensorDesc, load_library
from .build import (
    ExternalCompileError,
    ExternalToolchainError,
    build_library,
    cache_dir,
    content_fingerprint,
    find_compiler,
    include_dir,
    local_headers,
)
from .executor import ExternalExecutor, kernel_cycles

__all__ = ["ExternalCompileError", "ExternalToolchainError", "ExternalExecutor", "KernelLibrary",
           "TensorDesc", "build_library", "cache_dir", "content_fingerprint", "find_compiler",
           "include_dir", "kernel_cycles", "load_library", "local_headers"]
