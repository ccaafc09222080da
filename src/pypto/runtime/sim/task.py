"""Task records: one per kernel call submitted by an Orchestration function (SPEC §1, §5).

A task carries what the scheduler needs (core type, dependencies, submission time), what the
simulator computed for it (core, start/end cycles, cost) and what diagnostics name (kernel, the
call's source location, the runtime scope it was submitted in).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from ...core.enums import ParamDirection
from ...core.span import Span
from .cost_model import TaskCost

__all__ = ["Task", "TaskOptions", "BLOCK_INDEX"]


class _BlockIndex:
    """The block index of the loop form of `pl.spmd` (`for b in pl.spmd(N)`) while the body is
    submitted: a kernel argument equal to it becomes each block's index."""

    def __repr__(self) -> str:
        return "BLOCK_INDEX"


BLOCK_INDEX = _BlockIndex()


CALL_ARGS = 4    # scalar arguments an error message shows (Task.call_site)
CALL_REPR = 16   # characters of each one's repr


def _cut(text: str) -> str:
    return text if len(text) <= CALL_REPR else text[:CALL_REPR - 3] + "..."


@dataclass(frozen=True)
class TaskOptions:
    """How a kernel call is submitted (SPEC §13): argument positions left out of dependency
    tracking (`no_dep`), `name_hint`, `allow_early_resolve`, and the SPMD launch (`blocks` tasks,
    started together with `sync_start`)."""

    no_dep: tuple[int, ...] = ()
    name_hint: str | None = None
    allow_early_resolve: bool | None = None
    blocks: int = 1
    sync_start: bool = False


@dataclass(eq=False)
class Task:
    """One submitted kernel invocation.

    Attributes:
        task_id: submission index within the run, from 0.
        kernel: name of the InCore/AIC/AIV function.
        core_type: "AIC" (cube core) or "AIV" (vector core).
        args: argument values: torch tensors (DDR buffers, possibly views) and Python numbers.
        directions: In/Out/InOut per argument, from the kernel's parameter directions.
        core_index: index of the core (within `core_type`) the scheduler placed it on; None until
            it is dispatched.
        executor: the prepared `KernelExecutor`.
        span: source location of the kernel call in the orchestration function (or None).
        scope: ids of the runtime scopes (outermost first) it was submitted in.
        deps: {earlier task id: kind}; kind is "RAW", "WAW", "WAR" (found from overlapping DDR
            regions), "explicit" (a `deps=` of the call), or both, e.g. "RAW+explicit".
        accesses: (argument index, Region, reads, writes) per tensor argument.
        submit_cycle / start_cycle / end_cycle: simulated times in AI-core cycles (start and end
            are None until the task has run).
        ready_cycle: when its dependencies were all met and it queued for a core (None before).
        retire_cycle: when it retired from its ring's task window: it and every earlier task of
            its ring had finished (`rings.py`; None before).
        ring: the ring (scope depth, capped at 3) whose task window and dependency pool it uses.
        cost: cycles, per-pipe cycles and bytes per memory path of the run (None until run).
        group: for a kernel run as part of a Group call (a mixed kernel's AIC or AIV half), the
            task id of the group's first task; None for a task of its own. The tasks of a group
            start together on one cluster (`cluster.py`).
        subblock: the vector core of its cluster (0 or 1) an AIV task of a group ran as.
        offset_cycles: how long after the group's start the task began (it waited for another
            kernel of its group whose DDR accesses it conflicts with).
        stall_cycles: cycles it waited on its cross-core pipes (empty on a pop, full on a push).
        ddr_wait_cycles: cycles the task ran longer than its own work because the chip's shared
            DDR bandwidth was taken by tasks that started before it (`bandwidth.DdrChannel`).
        hbm_bytes: bytes the task moved to and from HBM: its reads the chip's L2 cache missed (whole
            lines) and its stores (`l2cache.L2Cache`); set when it starts.
        pipes: for the tasks of a group, the group's `PipeStats` (shared by them).
        pipe_ops: its ops placed on the core's pipes (`pipes.PipeOp`, cycles after its launch),
            kept when the device's `pipe_timeline` is on (swimlane level >= 2); else None.
        manual: submitted in a MANUAL runtime scope: no dependency was derived from its regions
            (SPEC §13); only TaskIds and `deps=` order it.
        name_hint: the task name given by `name_hint=` (or None).
        allow_early_resolve: the `allow_early_resolve=` of its submission (None: not given).
        block_idx / block_num: its block of an SPMD launch (0 of 1 otherwise); `launch` is the
            task id of the launch's first block (None outside SPMD). The blocks of one launch do
            not depend on each other.
        sync_start: the blocks of its SPMD launch start together.
        untracked: argument positions left out of dependency tracking (`no_dep_args=`).
    """

    task_id: int
    kernel: str
    core_type: str
    args: tuple[Any, ...]
    directions: tuple[ParamDirection, ...]
    core_index: int | None = None
    executor: Any = field(default=None, repr=False)
    span: Span | None = field(default=None, repr=False)
    scope: tuple[int, ...] = ()
    deps: dict[int, str] = field(default_factory=dict)
    accesses: tuple[tuple[int, Any, bool, bool], ...] = field(default=(), repr=False)
    submit_cycle: int = 0
    start_cycle: int | None = None
    end_cycle: int | None = None
    ready_cycle: int | None = None
    retire_cycle: int | None = None
    ring: int = 0
    cost: TaskCost | None = field(default=None, repr=False)
    group: int | None = None
    subblock: int | None = None
    offset_cycles: int = 0
    stall_cycles: int = 0
    ddr_wait_cycles: int = 0
    hbm_bytes: int = 0
    pipes: Any = field(default=None, repr=False)
    pipe_ops: list | None = field(default=None, repr=False)
    manual: bool = False
    name_hint: str | None = None
    allow_early_resolve: bool | None = None
    block_idx: int = 0
    block_num: int = 1
    launch: int | None = None
    sync_start: bool = False
    untracked: tuple[int, ...] = ()

    @property
    def derived_all(self) -> bool:
        """Whether every dependency its regions imply was derived: not in a MANUAL scope, not an
        SPMD block (blocks of one launch are not ordered), no argument left out of tracking. The
        sanitizer checks the ordering of runs with any task for which this is False."""
        return not self.manual and self.launch is None and not self.untracked

    def call_site(self) -> str:
        """How the task was called, for error messages (`scheduler.named_error`, sanitizer
        findings): `called at prog.py:22 with i=384, n=128` — the file name and line of the kernel
        call in the orchestration, and the kernel's scalar arguments (ints, floats, bools; no
        tensors) by parameter name, at most `CALL_ARGS` of them (then `...`), each repr cut to
        `CALL_REPR` characters. `called with ...` when the line is unknown; "" when neither part
        is known. Error paths only (it walks the arguments)."""
        span = self.span
        where = f" at {os.path.basename(span.filename)}:{span.begin_line}" \
            if span is not None and span.is_known() else ""
        func = getattr(self.executor, "func", None)
        names = [p.name for p in func.params] if func is not None else []
        shown = [f"{names[i] if i < len(names) else f'arg{i}'}={_cut(repr(a))}"
                 for i, a in enumerate(self.args) if isinstance(a, (bool, int, float))]
        if len(shown) > CALL_ARGS:
            shown = shown[:CALL_ARGS] + ["..."]
        scalars = f" with {', '.join(shown)}" if shown else ""
        return f"called{where}{scalars}" if where or scalars else ""

    def __repr__(self) -> str:
        def brief(a: Any) -> str:
            shape = getattr(a, "shape", None)
            return f"{str(a.dtype).replace('torch.', '')}{list(shape)}" if shape is not None else repr(a)
        args = ", ".join(f"{d.name}:{brief(a)}" for a, d in zip(self.args, self.directions))
        return f"Task({self.task_id}, {self.kernel}, {self.core or self.core_type}, ({args}))"

    @property
    def core(self) -> str:
        """The core as one name, e.g. `AIV3` (empty before dispatch)."""
        return "" if self.core_index is None else f"{self.core_type}{self.core_index}"

    @property
    def cycles(self) -> int:
        """Simulated duration in cycles, pipe stalls and DDR waits included (0 before the task has
        run)."""
        return 0 if self.cost is None else self.cost.cycles + self.stall_cycles + self.ddr_wait_cycles

    def args_with(self, *directions: ParamDirection) -> tuple[Any, ...]:
        """The arguments whose direction is one of `directions`."""
        return tuple(a for a, d in zip(self.args, self.directions) if d in directions)
