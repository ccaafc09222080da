"""Replayed runs: a program run again with arguments of the same layout reuses its first schedule.

The schedule of a run — the tasks, their dependencies, cores, start / end cycles, ring stalls and
DDR sharing — follows from the program, the run settings and the *layout* of the arguments (shapes,
dtypes, strides, which of them share memory) and the values of scalar arguments, not from tensor
data, as long as

1. the orchestration never reads or writes tensor data itself (no host op that
   `orchestrator.touches_data`: its control flow then only sees scalars and shapes);
2. every kernel's cost is fixed by its arguments' layout and scalars: a kernel without control
   flow has a static cost; one with control flow must not compute a scalar from tile or tensor
   data (its loop counts and branches could then follow the data);
3. nothing else observes the run: no sanitizer, no argument dump, no hand-written C++ kernel, no
   device subclass that hooks task execution (a rank of a distributed program), and every tensor
   a task receives is an entry argument, a view of one, or a tensor the orchestration created.

For such a program the first run with a given key (program, entry, dependency mode, ring sizes,
swimlane pipe detail, cost-model constants, argument layout and scalars) is a full simulation,
observed by a `_Recorder`: which tasks executed in which order (groups as one unit), and every
tensor the orchestration created (a copy of its contents unless they are all zero bytes). From the
run's record it keeps a `RunPlan`: each task's record with its tensor arguments and DDR regions
expressed against the run's *roots* (the entry arguments' base tensors and the created tensors) —
root index, storage offset, sizes and strides.

A later run with the same key *replays* the plan: it recreates the created tensors, rebinds every
task's arguments as views of the new roots, and runs each kernel's numbers in the recorded order
on the recorded core's arena — the same torch operations on the same values as a full simulation,
so outputs (and the on-chip memories left behind) are bit-identical. The run's `RunRecord` is a
fresh copy of the recorded one with the new tensors and regions: DFX outputs, the swimlane and run
hints come out as after a full simulation. A run that cannot be planned falls back to the full
simulation silently; a run that fails leaves no plan, and a replay that fails drops its plan.

Switches: `RunConfig(sim_replay=False)` or the environment variable `PYPTO_SIM_REPLAY=0` always
simulate in full (for debugging the simulator; the results are the same).
"""

from __future__ import annotations

import os
import struct
import weakref
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch

from ...core.enums import FunctionType
from ...core.errors import RuntimeSimError
from ...ir.expr import Call, GlobalVar
from ...ir.function import Function, Program
from ...ir.types import ScalarType, TensorType, TileType
from ...ir.visitor import IRVisitor
from ...ops.block import block_context
from ...ops.registry import get_op
from ...ops.threads import wide_threads
from .batch import batch_kernel, batching_enabled, lane_scalars
from .cost_model import CONSTANTS
from .kernel import KERNEL_TYPES, KernelExecutor
from .orchestrator import touches_data
from .regions import Region
from .rewind import Mark, mark, rewind
from .rings import RingSizes, ring_sizes
from .scheduler import named_error
from .task import Task

if TYPE_CHECKING:
    from .device import SimDevice

__all__ = ["RunPlans", "RunPlan", "ENV_VAR", "replay_enabled"]

ENV_VAR = "PYPTO_SIM_REPLAY"
MAX_PLANS = 8          # plans kept per device (the oldest is dropped first)
_OFF = frozenset({"0", "false", "off", "no"})


def replay_enabled(flag: bool = True) -> bool:
    """Whether runs may be replayed: `flag` (`RunConfig.sim_replay`) and `PYPTO_SIM_REPLAY` not 0."""
    return flag and os.environ.get(ENV_VAR, "1").strip().lower() not in _OFF


def _base(t: torch.Tensor) -> torch.Tensor:
    b = t._base
    return t if b is None else b


# ---- static checks ---------------------------------------------------------------------------------
class _Calls(IRVisitor):
    """Every Call of one function body."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def visit_Call(self, e: Call) -> None:
        self.calls.append(e)
        super().visit_Call(e)


def _calls(func: Function) -> list[Call]:
    v = _Calls()
    v.visit_stmt(func.body)
    return v.calls


def orchestration_reads_data(program: Program, entry: Function) -> str | None:
    """Why the orchestration reachable from `entry` may depend on tensor data (None: it cannot):
    the first host op that reads or writes tensor data (`orchestrator.touches_data`)."""
    seen: set[str] = set()
    todo = [entry]
    while todo:
        f = todo.pop()
        if f.name in seen or f.func_type in KERNEL_TYPES:
            continue
        seen.add(f.name)
        for c in _calls(f):
            if isinstance(c.op, GlobalVar):
                callee = program.get_function(c.op.name)
                if callee is not None:
                    todo.append(callee)
                continue
            try:
                spec = get_op(c.op)  # type: ignore[arg-type]
            except KeyError:
                return f"unknown op {c.op}"
            if touches_data(spec, c):
                return f"'{f.name}' runs host op {spec.name} on tensor data"
    return None


def kernel_cost_is_static(ex: Any) -> bool:
    """Whether every run of kernel executor `ex` with arguments of one layout has the same cost:
    a `KernelExecutor` without control flow, or one whose scalars never come from tile or tensor
    data (condition 2 of the module docstring). Hand-written C++ kernels are not replayed."""
    if type(ex) is not KernelExecutor:
        return False
    if not ex.dynamic:
        return True
    for c in _calls(ex.func):
        if isinstance(c.op, GlobalVar) or not isinstance(c.result_type, ScalarType):
            continue
        spec = get_op(c.op)  # type: ignore[arg-type]
        if any(i < len(c.args) and isinstance(c.args[i].type, (TileType, TensorType)) for i in spec.reads):
            return False
    return True


def reads_block(ex: KernelExecutor) -> bool:
    """Whether kernel `ex` reads its block / subblock index (an op with the "block" trait, or a
    cross-core pipe op): only then does a replayed task run inside its `block_context`."""
    return any(not isinstance(c.op, GlobalVar) and ((spec := get_op(c.op)).namespace == "system"  # type: ignore[arg-type]
                                                    or spec.has_trait("block")) for c in _calls(ex.func))


def scalar_key(v: Any) -> tuple | None:
    """A key equal for two scalars exactly when they are the same value bit for bit (a float by
    its bits: 0.0 and -0.0 differ, a NaN equals itself); None for a value that is not a scalar."""
    if isinstance(v, float):
        return (float, struct.pack("<d", v))
    if v is None or isinstance(v, (bool, int, str)):
        return (type(v), v)
    return None


def _args_key(args: Sequence[Any]) -> tuple | None:
    """The layout of the entry arguments (module docstring), or None when one cannot be replayed."""
    bases: dict[int, int] = {}
    storages: dict[int, int] = {}
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            if type(a) is not torch.Tensor:   # a subclass may observe accesses
                return None
            b = _base(a)
            ptr = b.untyped_storage().data_ptr()
            out.append((a.dtype, tuple(a.shape), a.stride(), a.storage_offset(),
                        bases.setdefault(id(b), len(bases)), storages.setdefault(ptr, len(storages)),
                        tuple(b.shape), b.stride(), b.storage_offset(), b.is_contiguous()))
        else:
            k = scalar_key(a)
            if k is None:
                return None
            out.append(k)
    return tuple(out)


# ---- recording -------------------------------------------------------------------------------------
class _Recorder:
    """Watches a full simulation (`SimDevice._observer`): the order tasks executed in, and the
    tensors the orchestration created with their initial contents."""

    def __init__(self, device: SimDevice) -> None:
        self.device = device
        self.units: list[tuple[int, ...]] = []
        self.marks: list[Mark] = []     # per unit, the run record's lengths when it started
        self.created: list[tuple[torch.Tensor, torch.Tensor | None]] = []
        self.problem: str | None = None

    def executed(self, tasks: Sequence[Task]) -> None:
        self.units.append(tuple(t.task_id for t in tasks))
        self.marks.append(mark(self.device))

    def created_tensor(self, t: torch.Tensor) -> None:
        if type(t) is not torch.Tensor or t._base is not None or not t.is_contiguous() or t.storage_offset():
            self.problem = "a created tensor is not a fresh contiguous buffer"
            return
        raw = t.reshape(-1).view(torch.uint8) if t.numel() else t
        self.created.append((t, t.detach().clone() if t.numel() and bool(raw.any()) else None))


class _Unplannable(Exception):
    pass


class _Roots:
    """The roots of a run: the entry arguments' base tensors, then the created tensors."""

    def __init__(self, args: Sequence[Any], created: Sequence[torch.Tensor]) -> None:
        self.params = list(args)
        self.tensors: list[torch.Tensor] = []
        self.index: dict[int, int] = {}
        for a in args:
            if isinstance(a, torch.Tensor):
                self._add(_base(a))
        for t in created:
            self._add(t)
        self.ptr_root: dict[int, int] = {}
        for i, t in enumerate(self.tensors):
            self.ptr_root.setdefault(t.untyped_storage().data_ptr(), i)

    def _add(self, t: torch.Tensor) -> None:
        if id(t) not in self.index:
            self.index[id(t)] = len(self.tensors)
            self.tensors.append(t)

    def spec(self, v: Any) -> tuple:
        """How to rebuild value `v` from the roots of another run (see `_bind`)."""
        if isinstance(v, torch.Tensor):
            for i, p in enumerate(self.params):
                if v is p:
                    return ("param", i)
            r = self.index.get(id(_base(v)))
            if r is None or type(v) is not torch.Tensor or v.dtype != self.tensors[r].dtype:
                raise _Unplannable("a task argument is not a view (of the same dtype) of an entry argument "
                                   "or created tensor")
            if v is self.tensors[r]:
                return ("root", r)
            return ("view", r, tuple(v.shape), v.stride(), v.storage_offset())
        if isinstance(v, tuple):
            return ("tuple", tuple(self.spec(x) for x in v))
        if scalar_key(v) is None:
            raise _Unplannable(f"a value of type {type(v).__name__}")
        return ("value", v)

    def root_of_key(self, key: int) -> int:
        r = self.ptr_root.get(key)
        if r is None:
            raise _Unplannable("a DDR region of an unknown buffer")
        return r


def _bind(spec: tuple, params: Sequence[Any], roots: list[torch.Tensor]) -> Any:
    kind = spec[0]
    if kind == "view":
        return torch.as_strided(roots[spec[1]], spec[2], spec[3], spec[4])
    if kind == "value":
        return spec[1]
    if kind == "param":
        return params[spec[1]]
    if kind == "root":
        return roots[spec[1]]
    return tuple(_bind(s, params, roots) for s in spec[1])


# ---- the plan --------------------------------------------------------------------------------------
class RunPlan:
    """What replaying one recorded run needs (module docstring). Holds no tensor of the recorded
    run except the initial contents of created tensors that were not all zero."""

    def __init__(self, program: Program, entry: Function, device: SimDevice, args: Sequence[Any],
                 rec: _Recorder, result: Any) -> None:
        run = device.last_run
        assert run is not None
        self.program, self.entry = program, entry
        roots = _Roots(args, [t for t, _ in rec.created])
        self.created = [(tuple(t.shape), t.dtype, snap) for t, snap in rec.created]
        self.units = list(rec.units)
        self.marks = list(rec.marks)
        self.unit_of = {i: n for n, u in enumerate(self.units) for i in u}
        self.groups = {u[0] for u in self.units if len(u) > 1 or device.tasks[u[0]].group is not None}
        if sorted(i for u in self.units for i in u) != list(range(len(device.tasks))):
            raise _Unplannable("not every task executed exactly once")
        self.tasks: list[Task] = []
        self.arg_specs: list[tuple[tuple, ...]] = []
        self.access_specs: list[tuple] = []
        self.task_roots: list[tuple[int, ...]] = []   # the roots each task's arguments and regions use
        blocks: dict[int, bool] = {}
        for t in device.tasks:
            if not kernel_cost_is_static(t.executor):
                raise _Unplannable(f"kernel '{t.kernel}' may have a data-dependent cost")
            if id(t.executor) not in blocks:
                blocks[id(t.executor)] = reads_block(t.executor)
            self.arg_specs.append(tuple(roots.spec(a) for a in t.args))
            self.access_specs.append(tuple((i, roots.root_of_key(r.key), r.lo, r.hi, r.box, r.strides, rd, wr)
                                           for i, r, rd, wr in t.accesses))
            self.task_roots.append(tuple(sorted({s[1] for s in _flat(self.arg_specs[-1]) if s[0] in ("view", "root")}
                                                | {a[1] for a in self.access_specs[-1]})))
            tmpl = object.__new__(Task)        # dataclasses.replace, without its __init__ call
            tmpl.__dict__.update(t.__dict__)
            tmpl.args, tmpl.accesses, tmpl.deps = (), (), dict(t.deps)
            if t.pipe_ops is not None:
                tmpl.pipe_ops = list(t.pipe_ops)
            self.tasks.append(tmpl)
        self.in_block = [blocks[id(t.executor)] for t in device.tasks]
        self.unbatched: list[tuple[tuple[int, ...], range | None]] = [(u, None) for u in self.units]
        self.lane_params: dict[tuple[int, ...], frozenset[int]] = {}   # per batch: its lane scalars
        self.lane_order: dict[tuple[int, ...], tuple[int, ...]] = {}   # per batch: its tasks in run order
        self.steps = _batches(self, device)
        # the last replay, weakly (a plan keeps no tensor alive): its roots, their buffers, its record
        self._last: tuple[list[weakref.ref], list[int], weakref.ref] | None = None
        self.result = None if result is None else roots.spec(tuple(result))
        self.inputs = [(name, roots.root_of_key(key)) for name, key in run.inputs]
        self.created_keys = [(roots.root_of_key(key), n, span) for key, n, span in run.created]
        self.scopes = list(run.scopes)
        self.makespan, self.orch_cycles = run.makespan_cycles, run.orchestrator_cycles
        self.ring_peaks = {k: list(v) for k, v in run.ring_peaks.items()}
        self.orch_events = list(run.orch_events)
        self.scope_events = [_copy_event(e) for e in run.scope_events]
        self.derived: dict[Any, Any] = {}   # shared by the records of its replays (RunRecord.derived)

    def replay(self, device: SimDevice, args: Sequence[Any], auto_deps: bool, rings: RingSizes) -> tuple | None:
        """Run the plan on `args` (module docstring); returns the entry's result."""
        device.begin_run(self.program.name, self.entry.name, auto_deps=auto_deps, rings=rings)
        run = device.last_run
        assert run is not None
        roots: list[torch.Tensor] = []
        seen: set[int] = set()
        for a in args:
            if isinstance(a, torch.Tensor):
                b = _base(a)
                if id(b) not in seen:
                    seen.add(id(b))
                    roots.append(b)
        for shape, dtype, snap in self.created:
            roots.append(torch.zeros(shape, dtype=dtype) if snap is None else snap.clone())
        ptrs = [r.untyped_storage().data_ptr() for r in roots]
        tasks = device.tasks
        pipes: dict[int, Any] = {}
        # a root that is the very tensor (same buffer) of the last replay: its views can be reused
        last = self._last
        old_run = last[2]() if last is not None else None
        old_tasks = old_run.tasks if old_run is not None and len(old_run.tasks) == len(self.tasks) else None
        same = [old_tasks is not None and k < len(last[0]) and r is last[0][k]() and p == last[1][k]  # type: ignore[index]
                for k, (r, p) in enumerate(zip(roots, ptrs))]
        all_same = old_tasks is not None and all(same)
        for k, (tmpl, aspec, acc) in enumerate(zip(self.tasks, self.arg_specs, self.access_specs)):
            t = object.__new__(Task)
            t.__dict__.update(tmpl.__dict__)
            if all_same or (old_tasks is not None and all(same[r] for r in self.task_roots[k])):
                old = old_tasks[k]
                t.args, t.accesses = old.args, old.accesses
            else:
                t.args = tuple([_bind(s, args, roots) for s in aspec])
                t.accesses = tuple([(i, Region(ptrs[r], lo, hi, box, st), rd, wr)
                                    for i, r, lo, hi, box, st, rd, wr in acc])
            t.deps = dict(tmpl.deps)
            if tmpl.pipe_ops is not None:
                t.pipe_ops = list(tmpl.pipe_ops)
            if tmpl.pipes is not None:   # the PipeStats of a group, shared by its tasks
                p = pipes.get(tmpl.group)  # type: ignore[arg-type]
                if p is None:
                    p = pipes[tmpl.group] = replace(tmpl.pipes, max_occupancy=dict(tmpl.pipes.max_occupancy),  # type: ignore[index]
                                                    transfers=dict(tmpl.pipes.transfers))
                t.pipes = p
            tasks.append(t)
        run.inputs = [(name, ptrs[r]) for name, r in self.inputs]
        run.created = [(ptrs[r], n, span) for r, n, span in self.created_keys]
        run.scopes.extend(self.scopes)
        run.makespan_cycles, run.orchestrator_cycles = self.makespan, self.orch_cycles
        run.ring_peaks = {k: list(v) for k, v in self.ring_peaks.items()}
        run.orch_events = list(self.orch_events)
        run.scope_events = [_copy_event(e) for e in self.scope_events]
        run.derived = self.derived
        run.replayed = True
        # a task whose arguments are the very objects of the last replay runs its bound kernel
        # environment again (`KernelExecutor.bind`): same arguments, same core, same arena views
        old_envs = old_run.kernel_envs if old_tasks is not None else None
        envs: list[Any] = [None] * len(tasks)
        run.kernel_envs = envs
        arena, in_block, groups = device.arena, self.in_block, self.groups
        try:
            for unit, cores in (self.steps if batching_enabled() else self.unbatched):
                k = unit[0]
                t = tasks[k]
                if cores is not None:
                    try:
                        run_batch(device, [tasks[i] for i in unit], cores, old_envs, envs, self.lane_params[unit],
                                  boxes_checked=True)
                    except RuntimeSimError:   # run its tasks one at a time, in their order: the error of the
                        for i in self.lane_order[unit]:     # first failing one, as a one-at-a-time run gives it
                            t = tasks[i]
                            try:
                                t.executor.run(t.args, arena(t.core_type, t.core_index), False)
                            except RuntimeSimError as err:
                                raise named_error(err, t) from err
                    continue      # (none failed alone: their one-at-a-time results stand)
                if k in groups:
                    device.execute_group([tasks[i] for i in unit])
                    continue
                try:
                    ex = t.executor
                    e = old_envs[k] if old_envs is not None else None
                    if e is None or e[0] is not t.args:
                        e = (t.args, ex.bind(t.args, arena(t.core_type, t.core_index)))
                    envs[k] = e
                    if in_block[k]:
                        with block_context(t.block_idx, t.block_num):
                            ex.run_bound(e[1], False)
                    else:
                        ex.run_bound(e[1], False)
                except RuntimeSimError as err:
                    raise named_error(err, t) from err
        except RuntimeSimError:
            self._failed(device, t)   # the task (or the Group call's first task) that failed
            raise
        self._last = ([weakref.ref(r) for r in roots], ptrs, weakref.ref(run))
        return None if self.result is None else _bind(self.result, args, roots)


    def _failed(self, device: SimDevice, x: Task) -> None:
        """Replayed task `x` (or the Group call it belongs to) failed: rewind the run's record to
        the moment it started, as a full simulation that stops there leaves it (`rewind.py`)."""
        n = self.unit_of[x.task_id]
        units, tasks = self.units, device.tasks
        rewind(device, [tasks[i] for u in units[n:] for i in u], self.marks[n], len(units[n]))


def _batches(plan: RunPlan, device: SimDevice) -> list[tuple[tuple[int, ...], range | None]]:
    """The plan's units as steps: (a unit, None) runs as recorded; (task ids, cores) runs those
    tasks of one kernel as one batch on `cores` (`batch.py`: consecutive, independent tasks with
    derived dependencies on distinct cores of one type, with the same scalars and tensor shapes,
    not reading their block index; lanes ordered by core, the cores an arithmetic progression)."""
    auto, threads = device._auto_deps, wide_threads()
    steps: list[tuple[tuple[int, ...], range | None]] = []
    run: list[int] = []

    def spec_key(s: tuple) -> Any:   # a value by its bits, a tensor view by its shape
        if s[0] == "value":
            return scalar_key(s[1])
        if s[0] == "tuple":
            return ("tuple", tuple(spec_key(x) for x in s[1]))
        return s if s[0] in ("param", "root") else (s[0], s[2])

    def shape_key(k: int) -> tuple:   # lane scalars (`batch.lane_scalars`) may differ
        free = lane_scalars(plan.tasks[k].executor)
        return tuple(None if i in free else spec_key(s) for i, s in enumerate(plan.arg_specs[k]))

    def varying(lanes: Sequence[int]) -> frozenset[int]:
        first = plan.arg_specs[lanes[0]]
        return frozenset(i for i in lane_scalars(plan.tasks[lanes[0]].executor)
                         if any(scalar_key(plan.arg_specs[k][i][1]) != scalar_key(first[i][1]) for k in lanes))

    limits: dict[int, int] = {}

    def lane_limit(ex: Any) -> int:   # the most lanes of a batch of `ex` (once per kernel)
        n = limits.get(id(ex))
        if n is None:
            n = limits[id(ex)] = batch_kernel(ex).lanes_for(threads, device.num_cores(ex.core_type))  # type: ignore[union-attr]
        return n

    def breaks_progression(core: int) -> bool:
        """Whether the run's cores, so far evenly spaced in submission order, would not be with
        `core` next (the scheduler wrapped around to core 0, say): cutting the run there keeps
        batches whole instead of splitting the wrapped run into uneven pieces."""
        if len(run) < 2:
            return False
        cores = [plan.tasks[j].core_index for j in run]
        step = cores[1] - cores[0]  # type: ignore[operator]
        return all(b - a == step for a, b in zip(cores, cores[1:])) and core - cores[-1] != step  # type: ignore[operator]

    def close() -> None:
        order = {k: n for n, k in enumerate(run)}
        lanes = sorted(run, key=lambda k: plan.tasks[k].core_index)  # type: ignore[arg-type, return-value]
        while lanes:     # pieces whose cores are evenly spaced, each one batch (or a lone task)
            n = 2
            if len(lanes) > 1:
                step = plan.tasks[lanes[1]].core_index - plan.tasks[lanes[0]].core_index  # type: ignore[operator]
                while n < len(lanes) and plan.tasks[lanes[n]].core_index - plan.tasks[lanes[n - 1]].core_index == step:  # type: ignore[operator]
                    n += 1
            piece, lanes = lanes[:n], lanes[n:]
            free = varying(piece) if len(piece) > 1 else frozenset()
            if len(piece) > 1 and batch_kernel(plan.tasks[piece[0]].executor, free) is not None:
                c0, c1 = plan.tasks[piece[0]].core_index, plan.tasks[piece[-1]].core_index
                key = tuple(piece)
                steps.append((key, range(c0, c1 + 1, step)))  # type: ignore[arg-type, operator]
                plan.lane_params[key] = free
                plan.lane_order[key] = tuple(sorted(piece, key=order.__getitem__))
            else:
                steps.extend(((k,), None) for k in sorted(piece, key=order.__getitem__))
        run.clear()

    for unit in plan.units:
        k = unit[0]
        t = plan.tasks[k]
        ok = (len(unit) == 1 and k not in plan.groups and auto and t.derived_all and not plan.in_block[k]
              and t.core_index is not None and batch_kernel(t.executor) is not None)
        if run and ok:
            first = plan.tasks[run[0]]
            ok_here = (t.executor is first.executor and t.core_type == first.core_type
                       and len(run) < lane_limit(t.executor)
                       and all(plan.tasks[j].core_index != t.core_index for j in run)
                       and not breaks_progression(t.core_index)
                       and not any(j in t.deps for j in run) and shape_key(k) == shape_key(run[0]))
            if not ok_here:
                close()
        elif run:
            close()
        if ok:
            run.append(k)
        else:
            steps.append((unit, None))
    close()
    return steps


def run_batch(device: SimDevice, tasks: list[Task], cores: range, old_envs: list | None, envs: Any,
              lane_params: frozenset[int], boxes_checked: bool = False) -> None:
    """Run `tasks` (one kernel, lanes in core order) as one batch (`batch.py`) whose scalar
    parameters `lane_params` differ between lanes; a task's bound environment is reused from the
    last replay like a single task's (`RunPlan.replay`), and stored in `envs[task_id]`.

    A batch that may fail first saves the DDR bytes it will write (`_written`) and the on-chip
    bytes of its lanes' cores (`BatchKernel.save_lanes`); `boxes_checked` (a replay: every load and
    store box is the recorded run's, which fitted), or every task's boxes proven inside its tensors
    (`AccessSummary.in_bounds`), leaves out the failures of boxes out of bounds
    (`BatchKernel.may_fail_on_data`).

    Raises:
        RuntimeSimError: a lane failed, named with its task (the caller reruns the tasks one at a
            time for the error a one-at-a-time run gives)."""
    bk = batch_kernel(tasks[0].executor, lane_params)
    assert bk is not None
    k0 = tasks[0].task_id
    old = old_envs[k0] if old_envs is not None else None
    # a box out of bounds is what may fail, unless the boxes fitted (a replay's are the recorded
    # run's) or the access summary proves them inside for every task of the batch
    may_fail = bk.may_fail_on_data or bk.may_fail and not boxes_checked and \
        not all(t.executor.access.in_bounds(t.args) for t in tasks)
    saved = _written(tasks) if may_fail else []
    try:
        if old is not None and len(old) == 4 and all(a is t.args for a, t in zip(old[0], tasks)):
            e = old
        else:
            lanes = [bk.bind(t.args, device.arena(t.core_type, t.core_index)) for t in tasks]  # type: ignore[arg-type]
            # (a full simulation's views are the orchestrator's, found again by later runs; a
            # replay makes new ones each time: no use remembering their lane runs)
            e = ([t.args for t in tasks], None, lanes,
                 bk.batch_env(lanes, device.arena(tasks[0].core_type, cores[0]).chip, cores,  # type: ignore[arg-type]
                              None if boxes_checked else device.view_memo, device.run_serial))
        for t in tasks:
            envs[t.task_id] = e
        if may_fail:    # (after `bind`: each core's memory is initialised by its first use)
            saved += bk.save_lanes(device.arena(tasks[0].core_type, cores[0]).chip, cores)  # type: ignore[arg-type]
        bk.run_lanes(e[3], e[2])
    except RuntimeSimError as err:
        for view, before in saved:    # undo the batch's DDR and on-chip writes: the caller reruns the tasks
            view.copy_(before)
        raise named_error(err, tasks[getattr(err, "lane", 0)]) from err


def _written(tasks: list[Task]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(view, copy) of the DDR bytes each task may write (its written arguments, narrowed to the
    box its kernel stores to): a failing batch puts them back before its tasks run again one at a
    time, so no update is applied twice and no task after the failing one has written anything."""
    out = []
    for t in tasks:
        access = t.executor.access
        for i, _, _, wr in t.accesses:
            if wr:
                v = access.region_arg(i, t.args)
                out.append((v, v.clone()))
    return out


def _flat(specs: Sequence[tuple]) -> list[tuple]:
    out: list[tuple] = []
    for s in specs:
        out.extend(_flat(s[1]) if s[0] == "tuple" else (s,))
    return out


def _copy_event(e: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in e.items()}


class RunPlans:
    """The run plans of one `SimDevice`, by key (module docstring), at most `MAX_PLANS`."""

    def __init__(self) -> None:
        self._plans: dict[tuple, RunPlan] = {}
        self._orch: dict[tuple[int, int], tuple[Program, Function, str | None]] = {}
        self.replays = 0    # runs replayed so far (tests, benchmarks)

    def __len__(self) -> int:
        return len(self._plans)

    def _key(self, device: SimDevice, program: Program, entry: Function, args: Sequence[Any],
             auto_deps: bool, rings: RingSizes) -> tuple | None:
        from .device import SimDevice

        cls = type(device)
        if any(getattr(cls, m) is not getattr(SimDevice, m) for m in ("execute", "execute_group", "kernel")):
            return None   # a device that observes task execution (a distributed rank)
        if entry.func_type not in KERNEL_TYPES and entry.func_type is not FunctionType.Group:
            ok = self._orch.get((id(program), id(entry)))
            if ok is None or ok[0] is not program or ok[1] is not entry:
                if len(self._orch) >= 4 * MAX_PLANS:
                    self._orch.clear()
                ok = self._orch[(id(program), id(entry))] = (program, entry, orchestration_reads_data(program, entry))
            if ok[2] is not None:
                return None
        layout = _args_key(args)
        if layout is None:
            return None
        return (id(program), id(entry), auto_deps, rings, device.pipe_timeline,
                tuple(c.value for c in CONSTANTS.values()), layout)

    def run(self, device: SimDevice, program: Program, entry: Function, args: Sequence[Any],
            auto_deps: bool, rings: RingSizes | None) -> tuple | None:
        """Run `entry` on `device`: replay its plan when there is one for this key, else simulate
        in full (recording a plan when the run can be replayed). Raises what the run raises."""
        rings = rings if rings is not None else ring_sizes()
        key = self._key(device, program, entry, args, auto_deps, rings)
        if key is None:
            return device._run(program, entry, args, False, auto_deps, rings, 0)
        plan = self._plans.get(key)
        if plan is not None and plan.program is program and plan.entry is entry:
            self.replays += 1
            try:
                return plan.replay(device, args, auto_deps, rings)
            except BaseException:
                self._plans.pop(key, None)
                raise
        rec = _Recorder(device)
        device._observer = rec
        try:
            result = device._run(program, entry, args, False, auto_deps, rings, 0)
        finally:
            device._observer = None
        if rec.problem is None:
            try:
                plan = RunPlan(program, entry, device, args, rec, result)
            except _Unplannable:
                plan = None
            if plan is not None:
                self._plans.pop(key, None)
                while len(self._plans) >= MAX_PLANS:
                    self._plans.pop(next(iter(self._plans)))
                self._plans[key] = plan
        return result
