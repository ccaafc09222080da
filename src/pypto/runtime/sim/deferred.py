"""Deferred numbers: a full simulation runs the tile ops of tasks whose cost it knows later, in batches.

A full simulation (the first call of a program, or `sim_replay=False`) executes each task when the
scheduler starts it, because the task's cost — its cycles, pipes and DDR bytes, which the schedule
needs at once — is formed by running the kernel. For most kernels the cost does not need the
numbers:

- a kernel without control flow has one static cost (`KernelExecutor.static_cost`);
- a kernel with control flow whose scalars never come from tile or tensor data
  (`replay.kernel_cost_is_static`) runs the same ops for arguments of the same layout and scalar
  values, so the cost (and the swimlane's pipe timeline) of its first task with a layout holds for
  every later one (`_layout`). Scalars that cannot change which ops run (`_off_path`: they set no
  loop bound and steer no branch, like the block offsets of a tensor-level kernel) are left out
  of the layout: each op site has a static cost.

Such a task is *deferred*: it gets its cost now, the scheduler goes on, and its tile ops run
later, when something needs the numbers — before a task that cannot be deferred runs (a first task
of a layout, a Group call, an SPMD block), when the orchestration reads or writes tensor data
(`SimDevice.sync`), at the end of the run, and when the run fails. They run in start order, so
every task still sees exactly the bytes it sees in a one-at-a-time run; consecutive deferred tasks
of one kernel that could run together in a replayed run (`batch.py`: independent, on cores evenly
spaced in start order, the same layout and scalars but lane scalars) run as one batch, with the
host's threads for large ops (`ops/threads.py`) — the speed-up of replayed runs, for the first run.

Results are those of running each task when it starts: outputs, on-chip memories, records and
every simulated cycle (`tests/runtime/test_rt_deferred.py` compares with `PYPTO_SIM_BATCH=0`, which
turns deferral off with batching). A failing batch runs its tasks again one at a time and reports
the error of the first that fails, as a one-at-a-time run would; when the run fails for another
reason, the deferred tasks run first, and a kernel error among them is the one reported (it
happened earlier in simulated time). Batches form only with derived dependencies (with
`auto_deps=False` nothing but their start orders tasks: they are deferred, not batched). A failing
batch first
puts back the DDR bytes it wrote (`replay.run_batch`). The record of a run that fails in a deferred
task is cut back to the moment that task started (`rewind.py`), and the runtime scopes open then end
with the rings of that moment, as in a one-at-a-time run, whose schedule stops at the failed task.
Not deferred: runs with the sanitizer or argument dumps, a device that observes task
execution (a rank of a distributed run), hand-written C++ kernels, SPMD blocks, Group calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from ...core.errors import RuntimeSimError
from ...ir.types import ScalarType
from ...ops.block import block_context
from ...ops.threads import wide_threads
from .batch import NotBatchable, batch_kernel, batching_enabled, lane_scalars, lane_tainted
from .kernel import KernelExecutor
from .replay import kernel_cost_is_static, reads_block, run_batch, scalar_key
from .rewind import Mark, mark, rewind
from .scheduler import named_error

if TYPE_CHECKING:
    from .device import SimDevice
    from .task import Task

__all__ = ["Deferral", "deferral_allowed"]

_NO = object()


def deferral_allowed(device: SimDevice, sanitize: bool, dump_args: int) -> bool:
    """Whether a full simulation on `device` may defer tasks (module docstring): batching on
    (`PYPTO_SIM_BATCH`), no sanitizer, no argument dump, and a device that does not hook task
    execution."""
    from .device import SimDevice

    cls = type(device)
    return (not sanitize and not dump_args and batching_enabled()
            and all(getattr(cls, m) is getattr(SimDevice, m) for m in ("execute", "execute_group", "kernel")))


def _layout(args: tuple, free: frozenset[int] = frozenset()) -> tuple | None:
    """The key of a task's arguments that fixes a data-independent kernel's executed ops: each
    tensor's shape, strides and dtype, each scalar bit for bit — but the lane scalars `free`, left
    out (they may differ within a batch); None for any other argument."""
    out: list[Any] = []
    for j, a in enumerate(args):
        if j in free:
            out.append(None)
        elif isinstance(a, torch.Tensor):
            out.append((a.shape, a.stride(), a.dtype))
        else:
            k = scalar_key(a)
            if k is None:
                return None
            out.append(k)
    return tuple(out)


class _Kernel:
    """What deferral needs to know of one kernel executor, computed once (kept on the executor)."""

    __slots__ = ("ok", "static", "reads_block", "costs", "free")

    def __init__(self, ex: KernelExecutor) -> None:
        self.ok = kernel_cost_is_static(ex)
        self.static = ex.static_cost
        self.reads_block = self.ok and reads_block(ex)
        self.costs: dict[tuple, tuple[Any, Any]] = {}     # layout -> (TaskCost, pipe timeline)
        self.free = _off_path(ex) if self.ok and self.static is None else frozenset()


def _off_path(ex: KernelExecutor) -> frozenset[int]:
    """The scalar parameters of `ex` that cannot change which ops it executes: neither they nor a
    scalar computed from them sets a loop's bounds or carried scalars or steers a branch
    (`batch.lane_tainted` with `path_only`). A kernel's cost is a function of the ops it executes (`KernelExecutor._exec`: each op
    site has a static cost), so the cost learnt for one task holds for a task whose arguments
    differ from its only in these — the block offsets a tensor-level kernel gets, say."""
    out = []
    for i, p in enumerate(ex.func.params):
        if isinstance(p.type, ScalarType):
            try:
                lane_tainted(ex.func, frozenset({i}), path_only=True)
            except NotBatchable:
                continue
            out.append(i)
    return frozenset(out)


def _kernel(ex: Any) -> _Kernel | None:
    if type(ex) is not KernelExecutor:
        return None
    k = ex.__dict__.get("_deferral")
    if k is None:
        k = ex.__dict__["_deferral"] = _Kernel(ex)
    return k


def _candidate(task: Task) -> _Kernel | None:
    """What deferral knows of `task`'s kernel when the task may be deferred at all (a lone task,
    not an SPMD block or a Group member, of a kernel whose cost does not follow the data)."""
    if task.block_num != 1 or task.group is not None:
        return None
    k = _kernel(task.executor)
    return k if k is not None and k.ok else None


class Deferral:
    """The deferred tasks of one full simulation on `device` (module docstring)."""

    def __init__(self, device: SimDevice) -> None:
        self.device = device
        self.pending: list[Task] = []
        # per deferred task, the lengths of the run's lists when it started (`rewind.py`)
        self.marks: list[Mark] = []

    def take(self, task: Task) -> bool:
        """Defer `task` if its cost is known without running it: sets `task.cost` (and its pipe
        timeline when the swimlane asks for pipes) and returns True; else False (run it now, then
        `learn` from it)."""
        k = _candidate(task)
        if k is None:
            return False
        if k.static is not None:
            cost, timeline = k.static, _NO
        else:
            hit = k.costs.get(_layout(task.args, k.free))  # type: ignore[arg-type]
            if hit is None:
                return False
            cost, timeline = hit
        task.cost = cost
        dev = self.device
        if dev.pipe_timeline:
            task.pipe_ops = task.executor.pipe_timeline() if timeline is _NO else list(timeline)
        self.pending.append(task)
        self.marks.append(mark(dev))
        return True

    def learn(self, task: Task) -> None:
        """After `task` ran now: remember its cost for later tasks of its kernel and layout."""
        k = _candidate(task)
        if k is None or k.static is not None:
            return
        key = _layout(task.args, k.free)
        if key is not None and key not in k.costs:
            if len(k.costs) >= 256:
                k.costs.clear()
            timeline = task.pipe_ops if task.pipe_ops is not None else task.executor.pipe_timeline()
            k.costs[key] = (task.cost, tuple(timeline) if timeline is not None else None)

    def flush(self) -> None:
        """Run every deferred task's tile ops, in start order, in batches where they form.

        Raises:
            RuntimeSimError: the first deferred task that fails, named like a one-at-a-time run's;
                the run's record is first rewound to the moment that task started (`rewind.py`).
        """
        pending, marks = self.pending, self.marks
        self.pending, self.marks = [], []
        i, n = 0, len(pending)
        while i < n:
            run = self._batch_at(pending, i)
            if run is None:
                self._one(pending, marks, i)
                i += 1
                continue
            tasks, cores, free = run
            try:
                run_batch(self.device, tasks, cores, None, {}, free)
            except RuntimeSimError:
                for j in range(i, i + len(tasks)):   # one at a time, in order: the first failing task's own error
                    self._one(pending, marks, j)
            i += len(tasks)

    def _one(self, pending: list[Task], marks: list[Mark], j: int) -> None:
        t = pending[j]
        arena = self.device.arena(t.core_type, t.core_index)  # type: ignore[arg-type]
        try:
            with block_context(t.block_idx, t.block_num):
                t.executor.run(t.args, arena, False)
        except RuntimeSimError as err:
            rewind(self.device, pending[j:], marks[j])
            raise named_error(err, t) from err

    def _batch_at(self, pending: list[Task], i: int) -> tuple[list[Task], range, frozenset[int]] | None:
        """The batch starting at `pending[i]`: the longest run of following tasks of its kernel that
        a replay would batch (module docstring), at least two; or None."""
        t0 = pending[i]
        ex = t0.executor
        k = _kernel(ex)
        if k is None or k.reads_block or not t0.derived_all or i + 1 >= len(pending) \
                or not self.device._auto_deps:    # without derived dependencies nothing orders tasks
            return None
        t1 = pending[i + 1]
        if t1.executor is not ex:
            return None
        bk = batch_kernel(ex)
        if bk is None:
            return None
        free = lane_scalars(ex)
        key0 = _layout(t0.args, free)
        if key0 is None:
            return None
        limit, ct, step = bk.lanes_for(wide_threads(), self.device.num_cores(t0.core_type)), t0.core_type, None
        run = [t0]
        for t in pending[i + 1:]:
            if len(run) >= limit or t.executor is not ex or t.core_type != ct or not t.derived_all:
                break
            d = t.core_index - run[-1].core_index  # type: ignore[operator]
            if d <= 0 or (step is not None and d != step):
                break
            if t.deps and any(r.task_id in t.deps for r in run) or _layout(t.args, free) != key0:
                break
            step = d
            run.append(t)
        if len(run) < 2:
            return None
        varying = frozenset(j for j in free if any(scalar_key(t.args[j]) != scalar_key(t0.args[j]) for t in run))
        if batch_kernel(ex, varying) is None:
            return None
        return run, range(t0.core_index, run[-1].core_index + step, step), varying  # type: ignore[operator]
