"""Run configuration (SPEC §7): `RunConfig` and the platform table.

Platforms: `a2a3` / `a5` are real Ascend NPUs (Ascend910B / Ascend950) and need the vendor
toolkit; `a2a3sim` / `a5sim` run on this package's simulator. The default is `a2a3sim`.
"""

from __future__ import annotations

import difflib
import functools
import numbers
from dataclasses import dataclass, field, fields
from typing import Any

from ..backend.soc import BackendType
from ..core.errors import ArgumentTypeError, ArgumentValueError, PyPTOError, user_call_span, user_facing
from .sim.rings import RingSizes, check_ring, ring_sizes

__all__ = ["RunConfig", "DistributedConfig", "PLATFORMS", "SIM_PLATFORMS", "backend_for_platform", "check_platform",
           "is_simulator", "DFX_LEVELS", "COMPILE_TIME_FIELDS", "check_run_config"]

#  platform     target chip               simulated
_PLATFORMS: dict[str, tuple[BackendType, bool]] = {
    "a2a3sim": (BackendType.Ascend910B, True),
    "a2a3": (BackendType.Ascend910B, False),
    "a5sim": (BackendType.Ascend950, True),
    "a5": (BackendType.Ascend950, False),
}
PLATFORMS: tuple[str, ...] = tuple(_PLATFORMS)
SIM_PLATFORMS: tuple[str, ...] = tuple(p for p, (_, sim) in _PLATFORMS.items() if sim)


#  field                   level: what it writes under <output_dir>/dfx_outputs/ (see pypto.runtime.dfx)
DFX_LEVELS: dict[str, dict[int, str]] = {
    "enable_chip_swimlane": {0: "off",
                             1: "swimlane.json, one slice per task on its core's track",
                             2: "level 1 plus dispatch / finish events per task, a flow arrow per task dependency, "
                                "and under each busy core one track per pipe with its ops placed in time",
                             3: "level 2 plus scheduler phases (resolve deps, ready queue) and ready / in-flight "
                                "counters",
                             4: "level 3 plus orchestrator phases (runtime scopes, waits for tasks)"},
    "enable_dump_args": {0: "off",
                         1: "args_dump/, the arguments of tasks that touch a tensor tagged with pl.dump_tag",
                         2: "args_dump/, every tensor argument of every task"},
    "enable_pmu": {0: "off",
                   1: "pmu.csv, counters per core",
                   2: "level 1 plus pmu_tasks.csv, counters per task"},
}

_COMPILE = ("pass it to ir.compile(..., {f}=...) or JITFunction.compile(..., config=RunConfig({f}=...)) "
            "(a @pl.jit kernel call compiles with its config)")
#  RunConfig fields that only compiling reads: a CompiledProgram that is already built ignores them
#  when it runs.   field: (default, where it applies)
COMPILE_TIME_FIELDS: dict[str, tuple[Any, str]] = {
    "strategy": (None, _COMPILE.format(f="strategy")),
    "dump_passes": (False, _COMPILE.format(f="dump_passes")),
    "save_kernels": (False, "every build keeps its kernels under <output_dir>/kernels/ anyway"),
}


def _nearest(name: str, names: tuple[str, ...]) -> str:
    """"; did you mean 'x'?" for the entry of `names` closest to `name` (difflib), else ""."""
    near = difflib.get_close_matches(name, names, n=1) if isinstance(name, str) else []
    return f"; did you mean {near[0]!r}?" if near else ""


def check_platform(platform: str) -> str:
    """Return `platform` if known.

    Raises:
        ArgumentValueError (a ValueError): naming the value, the nearest platform and every valid one.
    """
    if not isinstance(platform, str) or platform not in _PLATFORMS:
        raise ArgumentValueError(f"unknown platform {platform!r}{_nearest(platform, PLATFORMS)} (valid "
                                 f"platforms are {', '.join(repr(p) for p in PLATFORMS)})")
    return platform


def _checked_at_call(cls: type) -> type:
    """Class decorator for a configuration dataclass: constructing it with a keyword that is not one
    of its fields raises ArgumentTypeError naming the keyword and the nearest field, and a bad value
    (a ValueError of its checks) raises ArgumentValueError; both located at the user's call, whose
    traceback ends there (`user_facing`)."""
    init = cls.__init__   # type: ignore[misc]
    names = tuple(f.name for f in fields(cls))

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            for key in kwargs:
                if key not in names:
                    raise ArgumentTypeError(f"{cls.__name__} has no field {key!r}{_nearest(key, names)} "
                                            f"(its fields: {', '.join(names)})")
            try:
                init(self, *args, **kwargs)
            except ValueError as e:   # a check of another module (rings, diagnostics): a bad value
                if isinstance(e, PyPTOError):
                    raise
                raise ArgumentValueError(str(e)) from None
        except PyPTOError as e:
            if e.span is None:
                e.span = user_call_span()
            raise

    cls.__init__ = user_facing(__init__)   # type: ignore[misc]
    return cls


def backend_for_platform(platform: str) -> BackendType:
    """The chip a platform targets (a2a3* → Ascend910B, a5* → Ascend950). Raises ValueError."""
    return _PLATFORMS[check_platform(platform)][0]


def is_simulator(platform: str) -> bool:
    """True for the simulator platforms (`a2a3sim`, `a5sim`). Raises ValueError if unknown."""
    return _PLATFORMS[check_platform(platform)][1]


@_checked_at_call
@dataclass
class DistributedConfig:
    """How a distributed program runs (SPEC §8 "Running"; `pypto.runtime.dist`).

    Attributes:
        device_ids: one physical device per logical rank: rank r runs on `device_ids[r]`; the
            world size is their count (1..64, distinct, each >= 0).
        num_sub_workers: host threads that run SubWorker callbacks; 0 runs each callback inline
            in the host driver.
        deadlock_timeout: seconds every busy rank may stay blocked in a `pld.system.wait` with
            nothing changing before the run ends with a `DistributedDeadlockError` (> 0).
        start_method: how rank processes start: "fork", "spawn" or "forkserver"; None takes
            "fork" where available (fastest), else "spawn".
        visibility: "sc" (default: a remote write is visible as soon as it returns) or "weak": a
            remote write lands only at the writer's next fence / notify or host sync, and every
            window access is checked for a happens-before order at the end of the call
            (`pypto.runtime.dist.visibility`; raises `DistributedVisibilityError`).
        end_of_call_checks: after every call, check that credit signals are back to zero and that
            every rank ran the same collectives (`pypto.runtime.dist.checks`; default on).

    Raises:
        ArgumentValueError (a ValueError): a field out of range (the message names it).
        ArgumentTypeError (a TypeError): a keyword that is no field (the message names the nearest).
        Both are located at the call that built the config.
    """

    device_ids: list[int] = field(default_factory=lambda: [0])
    num_sub_workers: int = 0
    deadlock_timeout: float = 10.0
    start_method: str | None = None
    visibility: str = "sc"
    end_of_call_checks: bool = True

    def __post_init__(self) -> None:
        ids = list(self.device_ids)
        if not 1 <= len(ids) <= 64 or any(not isinstance(d, numbers.Integral) or isinstance(d, bool)
                                           or d < 0 for d in ids) or len(set(ids)) != len(ids):
            raise ValueError(f"DistributedConfig.device_ids must be 1 to 64 distinct ints >= 0, got {self.device_ids!r}")
        self.device_ids = [int(d) for d in ids]
        if not isinstance(self.num_sub_workers, numbers.Integral) or self.num_sub_workers < 0:
            raise ValueError(f"DistributedConfig.num_sub_workers must be an int >= 0, got {self.num_sub_workers!r}")
        if not isinstance(self.deadlock_timeout, numbers.Real) or not self.deadlock_timeout > 0:
            raise ValueError(f"DistributedConfig.deadlock_timeout must be > 0 seconds, got {self.deadlock_timeout!r}")
        if self.start_method not in (None, "fork", "spawn", "forkserver"):
            raise ValueError(f"DistributedConfig.start_method must be None, 'fork', 'spawn' or 'forkserver', "
                             f"got {self.start_method!r}")
        if self.visibility not in ("sc", "weak"):
            raise ValueError(f"DistributedConfig.visibility must be 'sc' or 'weak', got {self.visibility!r}")
        if not isinstance(self.end_of_call_checks, bool):
            raise ValueError(f"DistributedConfig.end_of_call_checks must be True or False, "
                             f"got {self.end_of_call_checks!r}")

    @property
    def world_size(self) -> int:
        """Number of ranks."""
        return len(self.device_ids)


@_checked_at_call
@dataclass
class RunConfig:
    """How to compile and dispatch a program (SPEC §7).

    Attributes:
        platform: "a2a3sim" (default), "a5sim", or the real NPUs "a2a3", "a5".
        device_id: NPU index (>= 0); the simulator has one device per process and ignores it.
        rtol / atol: tolerances harnesses use when comparing against a reference (>= 0).
        strategy: optimisation strategy forwarded to `ir.compile`; None means Default.
        backend_type: target chip (a `BackendType` or its name, "Ascend910B"); None derives it from
            `platform`. Giving one that the platform does not target raises ValueError.
        codegen_only: a CompiledProgram called with it checks its arguments but does not execute.
        enable_chip_swimlane: swimlane level (`DFX_LEVELS`): 0 off; 1 writes `swimlane.json`, one
            slice per task on its core's track; 2 adds dispatch / finish events per task, a flow
            arrow per task dependency and, under each busy core, one track per pipe with its ops
            placed in time; 3 adds scheduler phases and ready / in-flight counters; 4 adds
            orchestrator phases (runtime scopes, waits for tasks).
        enable_dump_args: 0 off; 1 dumps the tensor arguments of the tasks that touch a tensor
            tagged with `pl.dump_tag(t)`; 2 dumps every tensor argument of every task, into
            `args_dump/args_dump.json` plus one binary file per tensor (before / after the task).
        ring_task_window / ring_heap / ring_dep_pool: runtime ring sizes (SPEC §12, `rings.py`):
            in-flight task slots (a power of 2, >= 4), bytes of orchestration-created tensors in
            flight (a power of 2, >= 1024) and dependency entries in flight (>= 4); each an int or
            a list of 4 (one per scope depth). None takes the environment variable
            PTO2_RING_TASK_WINDOW / PTO2_RING_HEAP / PTO2_RING_DEP_POOL, else the default (16384,
            256 MiB, 16384). The simulator stalls the orchestrator when a ring is full.
        enable_pmu: PMU level: 0 off; 1 writes `pmu.csv` (counters per core); 2 adds
            `pmu_tasks.csv` (counters per task).
        enable_dep_gen / enable_scope_stats: write the task graph (`task_graph.dot` / `.json`,
            `deps.json`) and the scope statistics (`scope_stats.json`, `scope_stats.jsonl`). All DFX outputs go under `<output_dir>/dfx_outputs/` after each run;
            each run removes the DFX files of earlier runs that it does not write again (a run with
            every switch off removes them all), so the folder always describes the last run.
        dump_passes / save_kernels / strategy are compile-time only (`COMPILE_TIME_FIELDS`): they
            act through `ir.compile` / `JITFunction.compile` (a `@pl.jit` call compiles with its
            config); running an already compiled program with them set warns once per field
            and program.
        sanitize: run kernels under the simulator sanitizer: uninitialised on-chip reads, live
            buffers that overlap, DDR accesses out of bounds and conflicting tasks that nothing
            orders raise a `SanitizerError` listing each finding (kernel, op, source line).
        auto_deps: derive task dependencies from overlapping DDR regions (the default, as the
            runtime's tensor map does). With False only explicit dependencies order tasks (as
            when the compiler supplies them); the sanitizer then checks that every conflicting
            pair of tasks is ordered.
        diagnostic_phase / disabled_diagnostics: which diagnostics run (`pypto.core.diagnostics`;
            None keeps the build's): forwarded to `ir.compile` by a `@pl.jit` call and
            `JITFunction.compile`; when running, they choose the run-time hints
            (`report/perf_hints_run.log`). Unknown values raise ValueError.
        distributed_config: the ranks of a distributed program (`DistributedConfig`, SPEC §8);
            None runs it on one rank.
        sim_replay: let the simulator replay the recorded schedule of an earlier run of the same
            program with arguments of the same shapes, dtypes, strides and scalar values
            (`runtime/sim/replay.py`; results and run records are bit-identical to a full
            simulation). False (or the environment variable PYPTO_SIM_REPLAY=0) always simulates
            in full, for debugging the simulator.

    Raises:
        ArgumentValueError (a ValueError): unknown platform, platform/backend mismatch, negative
            device_id or tolerance, a DFX level that is not an int in `DFX_LEVELS` (True counts as
            1), a bool field (`sanitize`, `sim_replay`, `enable_dep_gen`, ...) that is not True or
            False (or 0 / 1), a bad ring size; the message names the field and the allowed values.
        ArgumentTypeError (a TypeError): a keyword that is not a field (`sim_replya=`); the message
            names the nearest field.
        Both are located at the call that built the config, and their traceback ends there.
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
    # --- runtime DFX: argument dumps and ring sizing (SPEC §12) ---
    enable_dump_args: int = 0
    ring_task_window: int | list[int] | None = None
    ring_heap: int | list[int] | None = None
    ring_dep_pool: int | list[int] | None = None
    diagnostic_phase: str | None = None     # diagnostics (core.diagnostics): None keeps the build's
    disabled_diagnostics: Any = None
    distributed_config: DistributedConfig | None = None   # multi-rank runs (SPEC §8, runtime.dist)
    sim_replay: bool = True   # replayed runs (runtime/sim/replay.py)

    def __post_init__(self) -> None:
        from ..core.diagnostics import diagnostic_options

        diagnostic_options(self.diagnostic_phase, self.disabled_diagnostics)   # ValueError if unknown
        derived = backend_for_platform(self.platform)
        if self.strategy is not None:
            from ..passes.pipeline import OptimizationStrategy

            self.strategy = OptimizationStrategy.of(self.strategy)   # a member or its name
        if self.backend_type is not None:
            self.backend_type = BackendType.of(self.backend_type)   # a member or its name
        if self.backend_type is None:
            self.backend_type = derived
        elif self.backend_type is not derived:
            raise ArgumentValueError(f"platform {self.platform!r} targets {derived.name}, but backend_type is "
                                     f"{self.backend_type.name}")
        if not _is_number(self.device_id, numbers.Integral) or self.device_id < 0:
            raise ArgumentValueError(f"RunConfig.device_id must be an int >= 0, got {self.device_id!r}")
        if not (_is_number(self.rtol, numbers.Real) and _is_number(self.atol, numbers.Real)
                and self.rtol >= 0 and self.atol >= 0):
            raise ArgumentValueError(f"RunConfig.rtol and RunConfig.atol must be numbers >= 0, got "
                                     f"rtol={self.rtol!r}, atol={self.atol!r}")
        for name, levels in DFX_LEVELS.items():
            setattr(self, name, _check_level(name, getattr(self, name), levels))
        for name in _BOOL_FIELDS:
            v = getattr(self, name)
            if not isinstance(v, bool) and not (_is_number(v, numbers.Integral) and v in (0, 1)):
                raise ArgumentValueError(f"RunConfig.{name} must be True or False, got {v!r}")
            setattr(self, name, bool(v))
        for name in ("ring_task_window", "ring_heap", "ring_dep_pool"):
            setattr(self, name, check_ring(name, getattr(self, name), f"RunConfig.{name}"))
        if self.distributed_config is not None and not isinstance(self.distributed_config, DistributedConfig):
            raise ArgumentValueError(f"RunConfig.distributed_config must be a DistributedConfig, got "
                                     f"{type(self.distributed_config).__name__}")

    @property
    def is_simulator(self) -> bool:
        return is_simulator(self.platform)

    def rings(self) -> RingSizes:
        """The ring sizes a run uses: these fields, else the PTO2_RING_* environment variables, else
        the defaults (`rings.ring_sizes`). Raises ValueError for a bad environment value."""
        return ring_sizes(self.ring_task_window, self.ring_heap, self.ring_dep_pool)

    def compile_time_settings(self) -> list[str]:
        """Names of the compile-time-only fields (`COMPILE_TIME_FIELDS`) set away from their default."""
        return [f for f, (default, _) in COMPILE_TIME_FIELDS.items() if getattr(self, f) != default]


#  the bool fields (sanitize, sim_replay, enable_dep_gen, ...): True / False, or 0 / 1
_BOOL_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RunConfig) if f.type == "bool")


def _is_number(value: Any, kind: type) -> bool:
    """`value` is a number of `kind` (numbers.Integral / numbers.Real) and not a bool."""
    return isinstance(value, kind) and not isinstance(value, bool)


def _check_level(name: str, value: Any, levels: dict[int, str]) -> int:
    ok = isinstance(value, numbers.Integral) and value in levels   # bool is one: True is level 1
    if not ok:
        allowed = "; ".join(f"{k} = {v}" for k, v in levels.items())
        raise ArgumentValueError(f"RunConfig.{name} must be an int level in {min(levels)}..{max(levels)} "
                                 f"({allowed}), got {value!r}")
    return int(value)


def check_run_config(config: Any) -> RunConfig | None:
    """`config` if it is None or a RunConfig. Raises ArgumentTypeError (a TypeError) otherwise."""
    if config is None or isinstance(config, RunConfig):
        return config
    raise ArgumentTypeError(f"config= expects a pypto.runtime.RunConfig, got {type(config).__name__} "
                            f"(a kernel parameter named 'config' must be passed positionally)")
