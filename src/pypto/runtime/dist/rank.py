"""One rank process of a distributed world: its simulated chip and its message loop.

The host (`world.World`) starts one process per rank with `rank_main`. The process maps the world's
control block, makes its own `RankDevice` (a `SimDevice`: its own cores, memories and clock) and its
`RankComm`, then serves messages from its inbox in order:

- `("run", seq, program, args, windows, not_before, call)`: run chip program `program` with `args`
  (shared-memory torch tensors, `WindowArg`s, numbers) inside `comm_context(comm)`; tensors are
  used in place (they are the device buffers), window arguments become views of this rank's copy.
  With DFX switches on in the RunConfig, the k-th dispatch of host call `call` writes its DFX
  files into `<build>/dfx_outputs/rank<r>/d<k>/`;
- `("call", seq, fn, args, windows, not_before, call)`: run `fn(comm, *args)` with the Comm
  installed (the test entry point for the Comm itself);
- `("stop",)`: leave.

Each finished message is answered on the shared outbox with `("done", rank, seq, result, info)`
(info: the rank's clock at the end, its `CommEvent`s, the CPU seconds the message took),
`("error", rank, seq, exc, traceback)` or `("aborted", rank, seq, blocked)` (a wait stopped by the
host's abort flag; `blocked` says where it was blocked). SIGINT is ignored in rank processes: the
host handles Ctrl-C and tears the world down; a rank whose host process is gone (killed) unlinks the
segments it knows of and exits by itself.
"""

from __future__ import annotations

import os
import pickle
import queue
import shutil
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ...backend.soc import BackendType
from ...core.errors import RuntimeSimError
from ...ir.function import Function
from ...ops.dist_comm import comm_context
from ..binding import bind_host_args
from ..device_tensor import DeviceTensor
from ..dfx import DFX_DIR, update_dfx, wants_dfx
from ..sim.device import SimDevice
from ..sim.kernel import KernelExecutor
from . import checks, shm, visibility
from .comm import RankClock, RankComm, WaitAborted, WindowMap
from .control import IDLE, RUNNING, Control

__all__ = ["RankDevice", "WindowArg", "WindowSpec", "rank_main", "TaskSpan"]


@dataclass(frozen=True)
class WindowSpec:
    """A window buffer as the rank processes map it: segment `name`, `nranks` copies of `nbytes`
    bytes `stride` apart."""

    wid: int
    name: str
    nbytes: int
    stride: int
    size: int


@dataclass(frozen=True)
class WindowArg:
    """A window-bound tensor argument of a dispatch: `shape` elements of `dtype` (torch dtype) at
    byte `offset` of window buffer `wid` (contiguous); inside the rank it is a view of its copy."""

    wid: int
    offset: int
    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclass(frozen=True)
class TaskSpan:
    """One task of a rank's dispatch on the world's clock (cycles): for the merged swimlane."""

    task_id: int
    kernel: str
    core: str
    start: int
    end: int
    stall: int


class RankDevice(SimDevice):
    """A `SimDevice` whose kernels keep an exact running clock (`KernelExecutor(clock=True)`) and
    whose tasks report to the rank's `RankClock`, so a task that waits on a peer grows by the stall."""

    def __init__(self, backend: BackendType, clock: RankClock) -> None:
        super().__init__(backend)
        self.clock = clock
        self.task_hook: Any = None
        clock.device = self

    def kernel(self, func: Function, member: int | None = None) -> KernelExecutor:
        if member is None and func.external is None:
            key = (func, self._sanitize, None)
            ex = self._kernels.get(key)
            if ex is None:
                ex = self._kernels[key] = KernelExecutor(func, self.soc,
                                                         self._sanitizer if self._sanitize else None, clock=True)
            return ex
        return super().kernel(func, member)

    def execute(self, task: Any) -> None:
        start = self.scheduler.now
        self.clock.begin_task(task)
        if self.task_hook is not None:   # checks.on_task: the kernel's collectives
            self.task_hook(task)
        try:
            super().execute(task)
        finally:
            own = task.cost.cycles if task.cost is not None else 0
            task.stall_cycles += self.clock.end_task(start, own)

    def execute_group(self, tasks: list[Any]) -> None:
        start = self.scheduler.now
        self.clock.begin_task(tasks[0])
        try:
            super().execute_group(tasks)
        finally:
            own = max((t.offset_cycles + t.cycles for t in tasks), default=0)
            stall = self.clock.end_task(start, own)
            for t in tasks:
                t.stall_cycles += stall


def _load_programs(spec: Any) -> dict[str, Any]:
    """The chip programs: a dict of CompiledPrograms, or (pickled bytes / build folders) after spawn."""
    if isinstance(spec, dict):
        return spec
    from ..compiled import CompiledProgram

    out = {}
    for name, (kind, value) in spec:
        out[name] = pickle.loads(value) if kind == "pickle" else CompiledProgram.from_dir(value[0], value[1])
    return out


class _Rank:
    def __init__(self, rank: int, nranks: int, ctl_name: str, locks: list[Any], programs: dict[str, Any],
                 config: Any, dfx_root: str | None, bells: list[Any] | None = None) -> None:
        self.rank, self.nranks, self.config = rank, nranks, config
        self.ctl = Control.attach(ctl_name, nranks)
        self.programs = programs
        self.windows: dict[int, WindowMap] = {}
        self.clock = RankClock()
        self.devices: dict[BackendType, RankDevice] = {}
        self.comm = RankComm(rank, nranks, self.ctl, locks, self.windows, self.clock, bells)
        if visibility.weak_mode(config):   # weak visibility (visibility.py)
            self.comm.weak = visibility.WeakMemory(self.comm, ctl_name)
        self.dfx_root = dfx_root
        self.call, self.dispatches = -1, 0

    def device(self, backend: BackendType) -> RankDevice:
        d = self.devices.get(backend)
        if d is None:
            d = self.devices[backend] = RankDevice(backend, self.clock)
            d.task_hook = lambda task: checks.on_task(self.comm, task)
        return d

    def map_windows(self, specs: list[WindowSpec]) -> None:
        live = {s.wid for s in specs}
        for wid in [w for w in self.windows if w not in live]:
            self.windows.pop(wid).segment.close()
        for s in specs:
            if s.wid not in self.windows:
                self.windows[s.wid] = WindowMap(s.wid, s.nbytes, s.stride, shm.Segment.attach(s.name, s.size))

    def arg(self, a: Any) -> Any:
        if isinstance(a, WindowArg):
            w = self.windows[a.wid]
            n = 1
            strides = []
            for d in reversed(a.shape):
                strides.append(n)
                n *= d
            view = w.view(self.rank, a.offset, a.shape, tuple(reversed(strides)), a.dtype)
            return DeviceTensor(visibility.watch(view) if self.comm.weak is not None else view)
        if isinstance(a, torch.Tensor):
            return DeviceTensor(a)
        return a

    def run(self, program: str, args: list[Any]) -> list[TaskSpan]:
        cp = self.programs.get(program)
        if cp is None:
            raise RuntimeSimError(f"rank {self.rank}: no chip program {program!r} in this build (it has "
                                  f"{', '.join(sorted(self.programs)) or 'none'})")
        cfg = self.config
        dev = self.device(cp.backend_type)
        dev_args = bind_host_args(cp.entry_function, [self.arg(a) for a in args])
        base = self.clock.base
        try:
            dev.run(cp.program, cp.entry_function, dev_args,
                    sanitize=bool(cfg is not None and cfg.sanitize),
                    auto_deps=cfg.auto_deps if cfg is not None else True,
                    rings=cfg.rings() if cfg is not None else None,
                    dump_args=cfg.enable_dump_args if cfg is not None else 0)
        finally:
            rec = dev.last_run
            if rec is not None:
                self.clock.base = base + (rec.makespan_cycles or dev.scheduler.makespan)
                self._dfx(rec)
            self.dispatches += 1
        return [TaskSpan(t.task_id, t.kernel, t.core, base + t.start_cycle, base + t.end_cycle, t.stall_cycles)
                for t in dev.tasks if t.start_cycle is not None and t.end_cycle is not None]

    def _dfx(self, rec: Any) -> None:
        """The DFX outputs of this dispatch in `<build>/dfx_outputs/rank<r>/d<k>/` (SPEC §8)."""
        if self.dfx_root is None or not wants_dfx(self.config):
            return
        where = Path(self.dfx_root) / DFX_DIR / f"rank{self.rank}" / f"d{self.dispatches}"
        for path in update_dfx(rec, self.config, where):
            os.replace(path, where / path.name)
        shutil.rmtree(where / DFX_DIR, ignore_errors=True)

    def serve(self, inbox: Any, outbox: Any) -> None:
        parent = os.getppid()
        while True:
            try:
                msg = inbox.get(timeout=0.5)
            except queue.Empty:
                if os.getppid() != parent:   # the host died without cleaning up (SIGKILL): do it for it
                    for name in [self.ctl.seg.name, *(w.segment.name for w in self.windows.values())]:
                        shm.unlink_name(name)
                    return
                continue
            if msg[0] == "stop":
                return
            kind, seq, what, args, windows, not_before, call = msg
            if call != self.call:     # a new host call: its simulated time starts at 0
                self.call, self.dispatches, self.clock.base = call, 0, 0
                if self.comm.weak is not None:
                    self.comm.weak.new_call()
            self.comm.events = []
            self.clock.base = max(self.clock.base, not_before)
            self.ctl.set_state(self.rank, RUNNING)
            cpu = time.process_time()
            try:
                self.map_windows(windows)
                with comm_context(self.comm):
                    if kind == "run":
                        result = self.run(what, args)
                    else:
                        result = what(self.comm, *[_tensor(self.arg(a)) for a in args])
                        result = result.clone() if isinstance(result, torch.Tensor) else result
                reply = ("done", self.rank, seq, result, (self.clock.base, self.comm.events, time.process_time() - cpu))
            except BaseException as e:   # noqa: BLE001 - every failure goes back to the host
                ab = _aborted_wait(e)
                tb = traceback.format_exc()
                reply = (("aborted", self.rank, seq, ab.blocked, None) if ab is not None else
                         ("error", self.rank, seq, _picklable(e), tb))
            finally:
                self.ctl.set_state(self.rank, IDLE)
                self.ctl.bump(self.rank)
            outbox.put(reply)


def _tensor(a: Any) -> Any:
    return a.tensor if isinstance(a, DeviceTensor) else a


def _aborted_wait(e: BaseException | None) -> WaitAborted | None:
    """The `WaitAborted` that `e` is or wraps (kernel errors chain the op's error as their cause)."""
    seen = 0
    while e is not None and seen < 20:
        if isinstance(e, WaitAborted):
            return e
        e, seen = e.__cause__ or e.__context__, seen + 1
    return None


def _picklable(e: BaseException) -> BaseException:
    try:
        pickle.loads(pickle.dumps(e))
        e.__traceback__ = None
        return e
    except Exception:   # noqa: BLE001
        return RuntimeSimError(f"{type(e).__name__}: {e}")


def rank_main(rank: int, nranks: int, ctl_name: str, sync: tuple[list[Any], list[Any]], programs: Any,
              config: Any, dfx_root: str | None, inbox: Any, outbox: Any) -> None:
    """Entry point of rank process `rank` (see the module docstring); `sync` holds the world's
    per-rank locks and bells."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    shm._CREATED.clear()      # a forked copy of the host's list: only the host unlinks
    torch.set_num_threads(1)
    locks, bells = sync
    r = _Rank(rank, nranks, ctl_name, locks, _load_programs(programs), config, dfx_root, bells)
    r.serve(inbox, outbox)
    outbox.close()
    outbox.join_thread()      # every reply is out; skip the interpreter's slow teardown (torch)
    os._exit(0)
