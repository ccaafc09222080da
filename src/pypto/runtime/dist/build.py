"""`DistributedBuild`: what the compiler hands the multi-rank runtime (SPEC §8 "Build folder").

The compile side (`pypto.runtime.dist.program`) fills it from a HOST orchestrator program; the
runtime (`pypto.runtime.dist.world`, `.worker`) runs it: the host driver in the calling process, each
chip program on the simulated chip of the rank a `device=r` dispatch names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DistributedBuild", "HostParam"]


@dataclass(frozen=True)
class HostParam:
    """One parameter of the host orchestrator: `direction` is "In", "Out" or "InOut"; `type` the IR
    type (TensorType / ScalarType)."""

    name: str
    direction: str
    type: Any


@dataclass
class DistributedBuild:
    """A compiled distributed program.

    Attributes:
        name: the host orchestrator's name.
        host_fn: the host driver loaded from `orchestration/host_orch.py`: `host_fn(rt, *args)`
            where `rt` is the runtime's `HostRuntime` and `args` the host arguments in order; it
            returns what the host function returns.
        host_params: the host orchestrator's parameters.
        chip_programs: chip program name -> `CompiledProgram` (one complete chip build each,
            `next_levels/<name>/`), dispatched by `rt.dispatch(name, rank, args)`.
        sub_workers: names of the HOST SubWorker functions (bound to callbacks at run time).
        output_dir: the build folder (None when built in memory only).
        platform: "a2a3sim" / "a5sim".
        meta: the contents of `distributed_meta.json`.
    """

    name: str
    host_fn: Callable[..., Any]
    host_params: list[HostParam]
    chip_programs: dict[str, Any]
    sub_workers: list[str] = field(default_factory=list)
    output_dir: Path | None = None
    platform: str = "a2a3sim"
    meta: dict[str, Any] = field(default_factory=dict)
