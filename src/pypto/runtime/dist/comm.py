"""`RankComm`: the `Comm` (pypto.ops.dist_comm) of one rank process, over shared memory.

Windows: every window buffer is one shared segment holding one copy per rank (`WindowMap`); rank r's
copy starts at `r * stride`. A local view (a torch view of this rank's copy) is mapped to its window
and byte offset by its address, and the peer's view is the same shape and strides at the same
offset in the peer's copy (`peer_view`).

Atomicity: a notify, and an accumulating remote write, hold the target rank's lock (one
`multiprocessing.Lock` per rank, shared by every process of the world) while they read-modify-write
the peer's memory; waits read their own cell without a lock (aligned 4/8-byte loads are atomic).
Memory ordering is sequentially consistent (a write is visible as soon as it returns), unless
`DistributedConfig(visibility="weak")`: then `self.weak` (`visibility.WeakMemory`) buffers remote
writes until the next fence / notify and records every window access for the happens-before check.

Simulated time (SPEC §8; issue 10 item 4): each rank keeps its own clock (`RankClock`, AI-core cycles
since the world started). A notify carries its issue time (the kernel's clock before the op); it
arrives `link_latency` cycles later, and never before the remote writes this rank issued to that
peer earlier (the fence before every notify): a remote write of B bytes arrives at issue time +
`link_latency` + B / `link_bytes_per_cycle` (cost-model constants). The arrival is stamped on the
peer's signal cell's log (`Control.stamp`); a wait completes no earlier than the arrival of the
notify that first satisfied it in simulated time (`Control.consume`: the logged notifies replayed in
arrival order, so the result does not depend on the wall-clock interleaving of the ranks), and a
remote read no earlier than issue time + latency + bytes / bandwidth; when that is later than the
end of the op's own cost (the op cost model already charges a link op its transfer), the running
task gets longer by the difference (its `stall_cycles`).
Every notify, wait, remote write and remote read is recorded as an event (`CommEvent`) for the
merged timeline.

Deadlocks: a wait that is not satisfied marks the rank BLOCKED in the control block, re-reads the
cell `SPINS` times when every rank has a core of its own (none when the ranks outnumber the cores:
a spinning rank would take the core the rank it waits for needs), then sleeps on
its rank's bell (a semaphore that a notify of the cell it is blocked on releases) with a growing
timeout, re-reading the cell and the abort flag each time it wakes; when the host declares a deadlock the wait raises `WaitAborted`
carrying a `BlockedWait` (kernel, source line, signal name and cell, expected vs current value, the
ranks that did notify the cell in this call).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

import torch

from ...core.errors import RuntimeSimError
from ...core.span import Span
from ..sim.cost_model import const
from .control import ABORT_DEADLOCK, BLOCKED, OP_ADD, OP_SET, RUNNING, Control

__all__ = ["RankComm", "RankClock", "WindowMap", "CommEvent", "BlockedWait", "WaitAborted", "SPINS"]

SPINS = 20   # re-reads of an unsatisfied cell before a wait sleeps (when the ranks have a core each)


@dataclass
class WindowMap:
    """One window buffer as mapped in a process: `segment` holds `nranks` copies of `nbytes` bytes,
    `stride` bytes apart (a multiple of 64)."""

    wid: int
    nbytes: int
    stride: int
    segment: Any
    _typed: dict[torch.dtype, torch.Tensor] = field(default_factory=dict, repr=False, compare=False)
    _ptr: int = field(default=-1, repr=False, compare=False)

    def base(self, rank: int) -> int:
        """The address of rank `rank`'s copy in this process's mapping."""
        if self._ptr < 0:
            self._ptr = self.segment.bytes.data_ptr()
        return self._ptr + rank * self.stride

    def copy(self, rank: int) -> torch.Tensor:
        """Rank `rank`'s copy as uint8."""
        return self.segment.bytes[rank * self.stride: rank * self.stride + self.nbytes]

    def view(self, rank: int, offset: int, shape: tuple[int, ...], stride: tuple[int, ...],
             dtype: torch.dtype) -> torch.Tensor:
        """A typed view into rank `rank`'s copy at byte `offset` with element `stride`s."""
        typed = self._typed.get(dtype)
        if typed is None:     # the segment as `dtype` elements, made once per dtype
            typed = self._typed[dtype] = self.segment.bytes.view(dtype)
        return torch.as_strided(typed, shape, stride, (rank * self.stride + offset) // dtype.itemsize)


@dataclass(slots=True)
class CommEvent:
    """One cross-rank event in simulated time (cycles since the world started).

    kind: "notify", "wait", "remote_write" or "remote_read"; `rank` did it; `peer` is the other
    side (the waiting rank itself for a wait). notify / remote_write: `time` sent, `arrival` when
    the peer sees it. wait: `time` it began, `arrival` when it was released; `cause` the event id
    of the notify whose arrival released it (the latest-arriving one of those that satisfied it in
    simulated time; 0: none came). remote_read: `time` issued, `arrival` data back.
    `eid` = rank << 40 | sequence number; `window`, `offset` the cell or region; `nbytes` moved.
    """

    kind: str
    rank: int
    peer: int
    time: int
    arrival: int
    eid: int
    window: int
    offset: int
    nbytes: int = 0
    value: int = 0
    cause: int = 0
    kernel: str = ""
    task: int = -1
    core: str = ""

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # pickled as the class and its field values (rank replies carry one event per remote access:
        # about 3x cheaper to send and receive than the default slot state)
        return CommEvent, _EVENT_FIELDS(self)


_EVENT_FIELDS = attrgetter(*(f.name for f in fields(CommEvent)))


@dataclass
class BlockedWait:
    """Where a rank is blocked: what the deadlock report prints for it."""

    rank: int
    kernel: str
    task: int
    span: Span | None
    signal: str
    cell: tuple[int, ...]
    expected: int
    cmp: str
    current: int
    senders: list[int] = field(default_factory=list)

    def describe(self) -> str:
        where = f" at {self.span.filename}:{self.span.begin_line}" if self.span and self.span.is_known() else ""
        rel = "==" if self.cmp == "eq" else ">="
        got = (f"notified by rank{'s' if len(self.senders) != 1 else ''} {_ranks(self.senders)}"
               if self.senders else "not notified by any rank")
        return (f"rank {self.rank}: kernel '{self.kernel}' (task {self.task}){where} waits for "
                f"signal '{self.signal}'{list(self.cell)} {rel} {self.expected}, current value "
                f"{self.current}; in this call it was {got}")


def _ranks(rs: list[int]) -> str:
    return ", ".join(str(r) for r in rs)


class WaitAborted(RuntimeSimError):
    """A wait stopped because the host aborted the run (`blocked` says where; `reason` is the
    control block's abort code)."""

    def __init__(self, message: str, span: Span | None = None, blocked: BlockedWait | None = None,
                 reason: int = 0) -> None:
        super().__init__(message, span)
        self.blocked = blocked
        self.reason = reason


class RankClock:
    """The simulated clock of one rank: `base` (cycles of the dispatches before the running one)
    plus the position inside the running one — the scheduler's instant, the running kernel's ops
    so far (`KernelExecutor.cycles_so_far`) and the stalls of this task's waits and reads."""

    def __init__(self) -> None:
        self.base = 0
        self.device: Any = None
        self.task: Any = None
        self.stall = 0
        self.high = 0     # latest instant a link op of the running task reached

    def begin_task(self, task: Any) -> None:
        self.task, self.stall, self.high = task, 0, 0

    def mark(self, at: int | None = None) -> None:
        """A link op just finished (at cycle `at`, default now): the running task lasts at least until then."""
        at = self.now() if at is None else at
        if at > self.high:
            self.high = at

    def end_task(self, start: int, own_cycles: int) -> int:
        """The stall cycles to add to the task that ran from `start` (scheduler cycles) for
        `own_cycles`: its waits and reads, and whatever more keeps its end after its last link op
        (the clock inside a kernel is the serial sum of its ops, its cost the overlapped one)."""
        end = self.base + start + own_cycles + self.stall
        stall = self.stall + max(0, self.high - end)
        self.task, self.stall, self.high = None, 0, 0
        return stall

    def now(self) -> int:
        """Cycles since the world started, up to the end of the op running now."""
        t = self.base
        dev = self.device
        if dev is not None:
            t += dev.scheduler.now
        task = self.task
        if task is not None:
            ex = task.executor
            if task.group is None and hasattr(ex, "cycles_so_far"):
                t += ex.cycles_so_far()
            t += self.stall
        return t

    def _site(self) -> tuple[Any, int | None]:
        ex = getattr(self.task, "executor", None)
        if ex is None or self.task.group is not None or not hasattr(ex, "current_site"):
            return ex, None
        return ex, ex.current_site()

    def issue(self) -> tuple[int, int]:
        """(when the op running now was issued, when its own cost ends): the op's cycles apart."""
        end = self.now()
        ex, k = self._site()
        return (end - ex.sites[k].cycles if k is not None else end), end

    def op_span(self) -> Span | None:
        """The source location of the kernel op running now (None outside a kernel)."""
        ex, k = self._site()
        return ex.site_spans[k] if k is not None else None


def _cycles(nbytes: int) -> int:
    return int(const("link_latency")) + math.ceil(nbytes / const("link_bytes_per_cycle"))


class RankComm:
    """The `Comm` of rank `rank` (see the module docstring and `pypto.ops.dist_comm.Comm`).

    Args:
        rank / nranks: this rank and the world size.
        control: the world's `Control`. locks: one lock per rank. bells: one semaphore per rank,
            released by a notify of the cell its rank is blocked on: a blocked wait sleeps until woken.
        windows: window id -> `WindowMap` (kept up to date by the rank process).
        clock: this rank's `RankClock`.
    """

    def __init__(self, rank: int, nranks: int, control: Control, locks: list[Any],
                 windows: dict[int, WindowMap], clock: RankClock, bells: list[Any] | None = None) -> None:
        self.rank, self.nranks = rank, nranks
        self.ctl, self.locks, self.windows, self.clock = control, locks, windows, clock
        self.bells = bells
        self.events: list[CommEvent] = []
        self._seq = 0
        self._pending: dict[int, int] = {}   # peer -> latest arrival of our writes to it
        self.weak: Any = None   # weak-visibility mode: a visibility.WeakMemory (set by the rank process)
        # a blocked wait re-reads its cell this many times before it sleeps on its bell: worth it only
        # when every rank has a core of its own (else the spinning takes the CPU its peers need)
        self.spins = SPINS if nranks < (os.cpu_count() or 1) else 0

    # ---- addressing ------------------------------------------------------------------------------
    def _span(self, span: Span | None) -> Span | None:
        """`span`, else the source location of the kernel op running now (ops need not pass it)."""
        if span is not None:
            return span
        return self.clock.op_span()

    def _check_peer(self, peer: int, what: str, span: Span | None) -> int:
        """`peer` as an int rank of this world; `span` (None: the running op's) locates the error.

        Raises RuntimeSimError: not an int, or outside [0, nranks)."""
        if type(peer) is int and 0 <= peer < self.nranks:   # the common case: no span needed
            return peer
        span = self._span(span)
        if isinstance(peer, bool) or not isinstance(peer, int) and not hasattr(peer, "__index__"):
            raise RuntimeSimError(f"{what}: peer must be an int rank, got {type(peer).__name__}", span)
        peer = int(peer)
        if not 0 <= peer < self.nranks:
            raise RuntimeSimError(f"{what}: peer {peer} is outside the world [0, {self.nranks})", span)
        return peer

    def locate(self, local: torch.Tensor, what: str, span: Span | None = None) -> tuple[WindowMap, int]:
        """(window, byte offset) of view `local` of this rank's copy of a window.

        Raises RuntimeSimError when `local` is not (wholly) inside one of this rank's windows; `span`
        (None: the running op's) locates the error."""
        if not isinstance(local, torch.Tensor):
            raise RuntimeSimError(f"{what}: expected a window-bound tensor, got {type(local).__name__}",
                                  self._span(span))
        ptr = local.data_ptr()
        for win in self.windows.values():
            off = ptr - win.base(self.rank)
            if 0 <= off < win.nbytes:
                item = local.element_size()
                extent = item + sum((n - 1) * abs(s) for n, s in zip(local.shape, local.stride())) * item \
                    if local.numel() else 0
                if off + extent > win.nbytes:
                    raise RuntimeSimError(f"{what}: the region [{off}, {off + extent}) runs past the end of "
                                          f"window buffer {win.wid} ({win.nbytes} bytes)", self._span(span))
                return win, off
        raise RuntimeSimError(f"{what}: the tensor is not in a window (remote accesses and signals need a "
                              f"window-bound tensor: a pld.DistributedTensor made by pld.window)", self._span(span))

    def _peer_of(self, win: WindowMap, off: int, local: torch.Tensor, peer: int) -> torch.Tensor:
        return win.view(peer, off, tuple(local.shape), tuple(local.stride()), local.dtype)

    def peer_view(self, local: torch.Tensor, peer: int, span: Span | None = None) -> torch.Tensor:
        span = self._span(span)
        peer = self._check_peer(peer, "peer_view", span)
        win, off = self.locate(local, "peer_view", span)
        return self._peer_of(win, off, local, peer)

    # ---- signals ---------------------------------------------------------------------------------
    def _next_eid(self) -> int:
        self._seq += 1
        return (self.rank << 40) | self._seq

    def _event(self, kind: str, peer: int, t: int, arrival: int, eid: int, win: WindowMap, off: int,
               **kw: Any) -> None:
        task = self.clock.task
        if task is not None:
            kw.setdefault("kernel", task.kernel)
            kw.setdefault("task", task.task_id)
            kw.setdefault("core", task.core)
        self.events.append(CommEvent(kind, self.rank, peer, t, arrival, eid, win.wid, off, **kw))

    def notify(self, cell: torch.Tensor, peer: int, value: int, op: str, span: Span | None = None) -> None:
        span = self._span(span)
        peer = self._check_peer(peer, "notify", span)
        win, off = self.locate(cell, "notify", span)
        if cell.numel() != 1:
            raise RuntimeSimError(f"notify: a signal cell is one element, got {list(cell.shape)}", span)
        if op not in ("add", "set"):
            raise RuntimeSimError(f"notify: op must be 'add' or 'set', got {op!r}", span)
        target = self._peer_of(win, off, cell, peer)
        t, _ = self.clock.issue()
        arrival = max(t + int(const("link_latency")), self._pending.get(peer, 0))
        eid = self._next_eid()
        if self.weak is not None:   # weak visibility: fence, publish this rank's clock on the cell
            self.weak.release(peer, win.wid, off, span)
        with self.locks[peer]:   # the log first: a waiter that sees the value sees its arrival
            before = int(target.item())
            self.ctl.stamp(peer, Control.slot(win.wid, off), Control.key(win.wid, off),
                           OP_ADD if op == "add" else OP_SET, int(value), before, arrival, self.rank, eid)
            if op == "add":
                target.add_(int(value))
            else:
                target.fill_(int(value))
        if self.bells is not None and self.ctl.state(peer) == BLOCKED and \
                self.ctl.waiting(peer) in (0, Control.key(win.wid, off)):
            self.bells[peer].release()     # wake the peer sleeping in a wait on this cell (only then: the count stays small)
        self.ctl.bump(self.rank)
        self.clock.mark()
        self._event("notify", peer, t, arrival, eid, win, off, value=int(value))

    def wait(self, cell: torch.Tensor, expected: int, cmp: str, span: Span | None = None) -> None:
        span = self._span(span)
        win, off = self.locate(cell, "wait", span)
        if cell.numel() != 1:
            raise RuntimeSimError(f"wait: a signal cell is one element, got {list(cell.shape)}", span)
        if cmp not in ("eq", "ge"):
            raise RuntimeSimError(f"wait: cmp must be 'eq' or 'ge', got {cmp!r}", span)
        expected = int(expected)

        def ok(v: int) -> bool:
            return v == expected if cmp == "eq" else v >= expected

        t = self.clock.now()
        cell = cell.as_subclass(torch.Tensor)   # a signal read is no data access (weak visibility)
        v = int(cell.item())
        if not ok(v):
            self.ctl.set_waiting(self.rank, Control.key(win.wid, off))
            self.ctl.set_state(self.rank, BLOCKED)
            delay, spins = 0.0, 0
            bell = self.bells[self.rank] if self.bells is not None else None
            try:
                while True:
                    v = int(cell.item())
                    if ok(v):
                        break
                    why = self.ctl.abort
                    if why:
                        raise self._aborted(why, cell, win, off, expected, cmp, v, span)
                    spins += 1
                    if spins <= self.spins:
                        continue
                    # sleep until a notify rings this rank's bell; the timeout covers cells changed
                    # otherwise (a remote store) and the abort flag
                    delay = min(0.05 if bell is not None else 0.001, max(0.001 if bell is not None else 2e-5, delay * 2))
                    if bell is not None:
                        bell.acquire(timeout=delay)
                    else:
                        time.sleep(delay)
            finally:
                self.ctl.set_state(self.rank, RUNNING)
                self.ctl.set_waiting(self.rank, 0)
        slot = Control.slot(win.wid, off)
        with self.locks[self.rank]:
            arrival, cause = self.ctl.consume(self.rank, slot, Control.key(win.wid, off), ok, v)
        if self.weak is not None:   # weak visibility: join the clock published on the cell
            self.weak.acquire(win.wid, off)
        release = max(t, arrival)
        self.clock.stall += release - t
        self.clock.mark()
        self.ctl.bump(self.rank)
        self._event("wait", self.rank, t, release, self._next_eid(), win, off, value=expected,
                    cause=cause)

    def _aborted(self, why: int, cell: torch.Tensor, win: WindowMap, off: int, expected: int, cmp: str,
                 current: int, span: Span | None) -> WaitAborted:
        mask = self.ctl.senders(self.rank, Control.slot(win.wid, off))
        senders = [r for r in range(self.nranks) if (mask >> r) & 1]
        task = self.clock.task
        name, index = self._name_cell(cell, task)
        blocked = BlockedWait(self.rank, task.kernel if task else "?", task.task_id if task else -1, span,
                              name or f"window {win.wid} byte {off}", index, expected, cmp, current, senders)
        what = "a deadlock was detected" if why == ABORT_DEADLOCK else "another rank failed"
        return WaitAborted(f"rank {self.rank}: wait aborted ({what})", span, blocked, why)

    @staticmethod
    def _name_cell(cell: torch.Tensor, task: Any) -> tuple[str | None, tuple[int, ...]]:
        """The kernel parameter whose tensor holds `cell`, and the cell's index in it."""
        if task is None:
            return None, ()
        params = getattr(getattr(task.executor, "func", None), "params", ())
        ptr = cell.data_ptr()
        for p, a in zip(params, task.args):
            if not isinstance(a, torch.Tensor) or a.dtype != cell.dtype or not a.numel():
                continue
            d = (ptr - a.data_ptr()) // a.element_size()
            if d < 0:
                continue
            index = _unravel(d, tuple(a.shape), tuple(a.stride()))
            if index is not None:
                return p.name, index
        return None, ()

    # ---- data ------------------------------------------------------------------------------------
    def remote_write(self, local: torch.Tensor, peer: int, data: torch.Tensor, accumulate: bool,
                     span: Span | None = None) -> None:
        span = self._span(span)
        peer = self._check_peer(peer, "remote_write", span)
        win, off = self.locate(local, "remote_write", span)
        if tuple(data.shape) != tuple(local.shape):
            raise RuntimeSimError(f"remote_write: data has shape {list(data.shape)}, the region "
                                  f"{list(local.shape)}", span)
        target = self._peer_of(win, off, local, peer)
        if self.weak is not None:   # weak visibility: lands at the next fence / notify / host sync
            self.weak.buffer_write(target, data, accumulate, peer)
            self.weak.record(local, peer, win.wid, off, "add" if accumulate else "write", "remote write", span)
        elif accumulate:
            with self.locks[peer]:
                target.add_(data.to(target.dtype))
        else:
            target.copy_(data)
        nbytes = local.numel() * local.element_size()
        t, _ = self.clock.issue()
        arrival = t + _cycles(nbytes)
        self._pending[peer] = max(self._pending.get(peer, 0), arrival)
        self.ctl.bump(self.rank)
        self.clock.mark()
        self._event("remote_write", peer, t, arrival, self._next_eid(), win, off, nbytes=nbytes)

    def remote_read(self, local: torch.Tensor, peer: int, span: Span | None = None) -> torch.Tensor:
        return self.remote_read_into(local, peer, None, span)

    def remote_read_into(self, local: torch.Tensor, peer: int, out: torch.Tensor | None,
                         span: Span | None = None) -> torch.Tensor:
        """`remote_read` into `out` (a tensor of `local`'s shape; None: a new one); returns it."""
        peer = self._check_peer(peer, "remote_read", span)
        win, off = self.locate(local, "remote_read", span)
        src = self._peer_of(win, off, local, peer)
        out = src.clone() if out is None else out.copy_(src)
        if self.weak is not None:
            self.weak.record(local, peer, win.wid, off, "read",
                             "remote read" if peer != self.rank else "read of its own copy", self._span(span))
        nbytes = local.numel() * local.element_size()
        t, end = self.clock.issue()
        done = t + _cycles(nbytes)
        extra = max(0, done - end)
        self.clock.stall += extra
        self.clock.mark(end + extra)   # now(): the stall just added moved it by `extra`
        self._event("remote_read", peer, t, done, self._next_eid(), win, off, nbytes=nbytes)
        return out

    def fence(self, span: Span | None = None) -> None:
        """Writes are visible when they return (sequentially consistent): nothing to do; in weak
        visibility mode the buffered remote writes land now."""
        if self.weak is not None:
            self.weak.flush()


def _unravel(offset: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The index of the element `offset` elements past the start of a tensor of `shape` and
    `strides`, or None when no element lies there. Dimensions of size 1 are always at index 0
    (their stride says nothing: a [NR, 1] signal has strides (1, 1))."""
    index = [0] * len(shape)
    for k in sorted((k for k in range(len(shape)) if shape[k] > 1), key=lambda k: -strides[k]):
        q, offset = divmod(offset, strides[k]) if strides[k] else (0, offset)
        if q >= shape[k]:
            return None
        index[k] = q
    return tuple(index) if offset == 0 else None
