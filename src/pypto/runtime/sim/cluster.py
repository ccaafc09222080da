"""Running the kernels of one Group call together on a cluster (SPEC §1 "Block level", §3 "System",
§6 "Cluster", "Cross-core pipe ring depth").

A Group call (ExpandMixedKernel's `k` calling `k_aic` and `k_aiv`) runs as one unit on one cluster:
its AIC kernel on the cube core and its AIV kernel on one vector core, or on both (subblocks 0 and
1) under a split mode. The kernels talk through the cluster's own `PipeChannel`, made fresh for the
call, so no two groups ever share a pipe. Where memory planning gave a consumer a ring (a pipe on
chip), the channel keeps that ring's slots in the consumer core's arena at the planned address
(`PipeChannel.attach`), so the tiles in flight share the core's memory with its tiles.

`ClusterRun` executes the members *interleaved*, deterministically: each member runs in its own
thread, but only one runs at a time. The running member keeps going until it finishes or waits on
its pipes — a pop from an empty ring, a push into a full one (`PipeChannel` asks `block`). Then the
next member in round-robin order (member order: the group's calls, vector subblocks in order) that
can make progress runs. A member that must follow another one (it conflicts with it on DDR, see
`SimDevice.execute_group`) starts only after that one finished. So pipes may flow both ways, and
the receiver may come first or second in the group. When no member can make progress although
some have not finished, the group is deadlocked: each waiting member's pipe op fails with the
reason, and `run` raises a RuntimeSimError that names every waiting kernel and its source line.

Time: each member has its own clock, in cycles from the group's start: its start (0, or the end
of the members it must follow) plus its executed work (`cycles()`, launch included) plus the
cycles it stalled. A tile pushed at clock t can be popped no earlier than t; a slot freed at clock
t can be refilled no earlier than t. A member's duration is its work plus its stalls; the group
lasts until its last member ends.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.enums import SplitMode
from ...core.errors import RuntimeSimError
from ...core.span import Span

__all__ = ["ClusterMember", "ClusterRun", "PipeStats"]


class _Abort(RuntimeError):
    """Raised inside a waiting member's pipe op when the group cannot continue."""


class ClusterMember:
    """One kernel instance of a group run.

    Args:
        name: how messages name it, e.g. "'k_aiv' (vector core 1)".
        run: executes the kernel (called in the member's thread) and returns its TaskCost.
        cycles: the kernel's cycles so far (launch and executed ops), read while it runs.
        after: indices of the members that must finish before it starts.
        enter / leave: called (in the runner's thread) right before it resumes / after it paused.

    After the run: `cost` (what `run` returned), `stall`, `start`, `end` (cycles from the group's
    start), `error` (the exception it failed with, else None).
    """

    def __init__(self, name: str, run: Callable[[], Any], cycles: Callable[[], int],
                 after: tuple[int, ...] = (), enter: Callable[[], None] | None = None,
                 leave: Callable[[], None] | None = None) -> None:
        self.name, self.body, self.cycles, self.after = name, run, cycles, after
        self.enter, self.leave = enter, leave
        self.cost: Any = None
        self.error: BaseException | None = None
        self.start = self.stall = 0
        self.end: int | None = None
        self.state = "new"   # new -> running -> waiting <-> running -> done
        self.ready: Callable[[], bool] | None = None
        self.what = ""
        self.abort = False
        self._go = threading.Semaphore(0)
        self._thread: threading.Thread | None = None


class ClusterRun:
    """Runs `members` interleaved (module docstring); also the `PipeRunner` of their channel.

    `group` names the Group function in messages.
    """

    def __init__(self, group: str, members: list[ClusterMember]) -> None:
        self.group, self.members = group, members
        self._back = threading.Semaphore(0)
        self._current: ClusterMember | None = None

    # ---- PipeRunner ----------------------------------------------------------------------
    def block(self, ready: Callable[[], bool], what: str) -> None:
        """Wait (letting the other members run) until `ready()`; raise when the group is stuck."""
        if ready():
            return
        m = self._current
        assert m is not None, "pipe wait outside a member"
        m.state, m.ready, m.what = "waiting", ready, what
        self._back.release()
        m._go.acquire()
        m.state, m.ready = "running", None
        if m.abort:
            raise _Abort(f"deadlock: {what}")

    def now(self) -> int:
        m = self._current
        assert m is not None
        return m.start + m.cycles() + m.stall

    def sync_to(self, t: int) -> None:
        m = self._current
        assert m is not None
        behind = t - (m.start + m.cycles() + m.stall)
        if behind > 0:
            m.stall += behind

    # ---- running ---------------------------------------------------------------------------
    def run(self) -> int:
        """Run every member to its end; returns the group's duration in cycles.

        Raises:
            RuntimeSimError: a member failed (its error, first in member order), or the members
                deadlocked on their pipes (naming each waiting kernel and its line).
        """
        last = -1
        try:
            while True:
                k = self._next(last)
                if k is None:
                    break
                self._resume(self.members[k])
                last = k
                if self.members[k].error is not None:
                    break
        finally:
            stuck = [m for m in self.members if m.state == "waiting"]
            for m in stuck:   # let their threads end: their pipe ops raise
                m.abort = True
                self._resume(m)
        failed = next((m for m in self.members if m.error is not None and not isinstance(m.error.__cause__, _Abort)),
                      None)
        if failed is not None:
            raise failed.error  # type: ignore[misc]
        if stuck:
            raise self._deadlock(stuck)
        return max((m.end or 0) for m in self.members)

    def _next(self, last: int) -> int | None:
        n = len(self.members)
        for step in range(1, n + 1):
            k = (last + step) % n
            m = self.members[k]
            if m.state == "waiting" and m.ready is not None and m.ready():
                return k
            if m.state == "new" and all(self.members[j].state == "done" for j in m.after):
                m.start = max((self.members[j].end or 0 for j in m.after), default=0)
                return k
        return None

    def _resume(self, m: ClusterMember) -> None:
        self._current = m
        if m.enter is not None:
            m.enter()
        if m._thread is None:
            ctx = contextvars.copy_context()
            m._thread = threading.Thread(target=self._main, args=(m, ctx), daemon=True,
                                         name=f"pypto-cluster-{m.name}")
            m.state = "running"
            m._thread.start()
        m._go.release()
        self._back.acquire()
        if m.leave is not None:
            m.leave()
        self._current = None
        if m.state == "done":
            m._thread.join()

    def _main(self, m: ClusterMember, ctx: contextvars.Context) -> None:
        m._go.acquire()
        try:
            m.cost = ctx.run(m.body)
            m.end = m.start + m.cycles() + m.stall
        except BaseException as err:   # reported by run() in the runner's thread
            m.error = err
        m.state = "done"
        self._back.release()

    def _deadlock(self, stuck: list[ClusterMember]) -> RuntimeSimError:
        parts = []
        span: Span | None = None
        for m in stuck:
            where = getattr(m.error, "span", None)
            if span is None and where is not None:
                span = where
            at = f" at {where}" if where is not None and where.is_known() else ""
            parts.append(f"kernel {m.name} waits{at}: {m.what}")
        idle = [m.name for m in self.members if m.state == "new"]
        if idle:
            parts.append(f"not started (waiting for other kernels to finish): {', '.join(idle)}")
        return RuntimeSimError("deadlock on the cross-core pipes: " + "; ".join(parts), span)


@dataclass
class PipeStats:
    """What the pipes of one Group call did (shared by the call's tasks as `Task.pipes`).

    Attributes:
        group: the Group function's name. split: its split mode.
        depth: slots per ring of each live direction. route: "direct" / "gm" per direction.
        max_occupancy: {(direction, vector subblock): most slots the ring held at once, in the
            order the simulator ran the kernels (a producer runs ahead until its ring is full, so
            this reaches the depth whenever the producer can get that far ahead)}.
        transfers: {(direction, vector subblock): tiles pushed into the ring}.
    """

    group: str
    split: SplitMode
    depth: dict[str, int]
    route: dict[str, str]
    max_occupancy: dict[tuple[str, int], int] = field(default_factory=dict)
    transfers: dict[tuple[str, int], int] = field(default_factory=dict)
