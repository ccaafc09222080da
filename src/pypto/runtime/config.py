"""Run configuration (SPEC §7): `RunConfig` and the platform table.

Platforms: `a2a3` / `a5` are real Ascend NPUs (Ascend910B / Ascend950) and need the vendor
toolkit; `a2a3sim` / `a5sim` run on this package's simulator. The default is `a2a3sim`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backend.soc import BackendType

__all__ = ["RunConfig", "PLATFORMS", "SIM_PLATFORMS", "backend_for_platform", "check_platform",
           "is_simulator"]

#  platform     target chip               simulated
_PLATFORMS: dict[str, tuple[BackendType, bool]] = {
    "a2a3sim": (BackendType.Ascend910B, True),
    "a2a3": (BackendType.Ascend910B, False),
    "a5sim": (BackendType.Ascend950, True),
    "a5": (BackendType.Ascend950, False),
}
PLATFORMS: tuple[str, ...] = tuple(_PLATFORMS)
SIM_PLATFORMS: tuple[str, ...] = tuple(p for p, (_, sim) in _PLATFORMS.items() if sim)


def check_platform(platform: str) -> str:
    """Return `platform` if known. Raises ValueError listing the valid platforms."""
    if platform not in _PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; valid platforms are "
                         f"{', '.join(repr(p) for p in PLATFORMS)}")
    return platform


def backend_for_platform(platform: str) -> BackendType:
    """The chip a platform targets (a2a3* → Ascend910B, a5* → Ascend950). Raises ValueError."""
    return _PLATFORMS[check_platform(platform)][0]


def is_simulator(platform: str) -> bool:
    """True for the simulator platforms (`a2a3sim`, `a5sim`). Raises ValueError if unknown."""
    return _PLATFORMS[check_platform(platform)][1]


@dataclass
class RunConfig:
    """How to compile and dispatch a program (SPEC §7).

    Attributes:
        platform: "a2a3sim" (default), "a5sim", or the real NPUs "a2a3", "a5".
        device_id: NPU index (>= 0); the simulator has one device per process and ignores it.
        rtol / atol: tolerances harnesses use when comparing against a reference (>= 0).
        strategy: optimisation strategy forwarded to `ir.compile`; None means Default.
        backend_type: target chip; None derives it from `platform`. Giving one that the platform
            does not target raises ValueError.
        dump_passes / save_kernels / codegen_only: compile-side switches; with `codegen_only` a
            CompiledProgram checks its arguments but does not execute.
        enable_chip_swimlane / enable_dep_gen / enable_scope_stats / enable_pmu: runtime DFX
            outputs written under `<output_dir>/dfx_outputs/` after each run (swimlane level, task
            graph, scope statistics, PMU counter level; see `pypto.runtime.dfx`).
        sanitize: run kernels under the simulator sanitizer: uninitialised on-chip reads, live
            buffers that overlap, DDR accesses out of bounds and conflicting tasks that nothing
            orders raise a `SanitizerError` listing each finding (kernel, op, source line).
        auto_deps: derive task dependencies from overlapping DDR regions (the default, as the
            runtime's tensor map does). With False only explicit dependencies order tasks (as
            when the compiler supplies them); the sanitizer then checks that every conflicting
            pair of tasks is ordered.

    Raises:
        ValueError: unknown platform, platform/backend mismatch, negative device_id or tolerance.
    """

    platform: str = "a2a3sim"
    device_id: int = 0
    rtol: float = 1e-5
    atol: float = 1e-5
    strategy: Any = None
    backend_type: BackendType | None = None
    dump_passes: bool = False
    save_kernels: bool = False
    codegen_only: bool = False
    enable_chip_swimlane: int = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False
    enable_pmu: int = 0
    sanitize: bool = False
    auto_deps: bool = True

    def __post_init__(self) -> None:
        derived = backend_for_platform(self.platform)
        if self.backend_type is None:
            self.backend_type = derived
        elif self.backend_type is not derived:
            raise ValueError(f"platform {self.platform!r} targets {derived.name}, but backend_type is "
                             f"{self.backend_type.name}")
        if self.device_id < 0:
            raise ValueError(f"device_id must be >= 0, got {self.device_id}")
        if self.rtol < 0 or self.atol < 0:
            raise ValueError(f"rtol and atol must be >= 0, got rtol={self.rtol}, atol={self.atol}")

    @property
    def is_simulator(self) -> bool:
        return is_simulator(self.platform)
