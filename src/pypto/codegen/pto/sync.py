"""The set_flag / wait_flag pairs between the pipes of a kernel (issue 14 item 1).

On an AI core each pipe (MTE2 loads, Vector, Cube, MTE1, FIXPIPE, MTE3 stores) runs its own queue
of instructions in order; an instruction that needs the result of another pipe, or must not
overwrite a buffer another pipe still reads, waits on a flag that pipe sets:

    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]     after the producer, on its pipe
    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]    before the consumer, on its pipe

The dependencies are those the simulator orders ops by (`runtime.sim.pipes`): the same buffers per
op (`ops.effects.call_buffers`: on-chip bytes at the planned addresses, one key per DDR tensor Var),
the same conflicts (`ops.effects.conflict`), and the same pipe per op (given by the caller: the
compile driver passes the cost model's, `pipe_of`). The kernel is walked in program order with, per
buffer, its last writer and its last reader on each pipe; a loop body is walked twice, so that what
iteration i+1 needs from iteration i is found too. Ops on one pipe need no flag (a pipe runs in
order), and scalar-pipe ops are not synchronised (the scalar unit issues everything in order).

Where a pair goes, for producer P and consumer C: in the innermost block holding both, P' and C'
are the statements that contain them (the ops themselves, or the loop / if around them).
- P' before C' (the same iteration, or a value made before a loop and used in it): set after P',
  wait before C' — once, around whole loops when P or C is inside one.
- otherwise C needs P of the previous iteration of the innermost loop L holding both: the flag is
  set once before L (so the first iteration does not wait), waited before C' and set after P' in
  every iteration, and waited once after L, so every set has its wait (the ping-pong pattern of a
  double-buffered loop: its two buffer sets get two events).

A pipe runs in order, so of the consumers on one pipe of a producer only the first waits, and of
the producers on one pipe a consumer needs only the last sets a flag for it. Event ids are given per (source pipe, destination pipe) in order of
appearance, modulo the 8 a core has (`EVENT_IDS`). Not covered: the `pto.tmov` copies the emitter adds for carried tiles (`control`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from ...ir.expr import Call, Var
from ...ir.function import Function
from ...ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ScopeStmt, SeqStmts, Stmt, WhileStmt
from ...ir.types import TensorType, TileType
from ...ops import get_op
from ...ops.effects import call_buffers, conflict
from ...ops.registry import OpSpec

__all__ = ["SyncPlan", "plan_sync", "PTO_PIPES", "EVENT_IDS"]

PTO_PIPES = {"mte2": "PIPE_MTE2", "mte3": "PIPE_MTE3", "vector": "PIPE_V", "cube": "PIPE_M",
             "mte1": "PIPE_MTE1", "fixpipe": "PIPE_FIX"}
EVENT_IDS = 8

PipeOf = Callable[[OpSpec, Call], str]


@dataclass(frozen=True)
class _Extent:
    """Bytes [addr, addr + size) of one on-chip memory, as memory planning placed a tile."""

    space: object
    addr: int
    size: int

    def overlaps(self, other: object) -> bool:
        return isinstance(other, _Extent) and self.space is other.space and self.addr < other.addr + other.size \
            and other.addr < self.addr + self.size


def _key(v: Var) -> Hashable | None:
    t = v.type
    if isinstance(t, TileType) and t.memref is not None and t.memref.addr >= 0:
        return _Extent(t.memref.memory_space, t.memref.addr, t.memref.size)
    return ("ddr", v) if isinstance(t, TensorType) else None


@dataclass(eq=False)
class _Op:
    stmt: Stmt
    pipe: str
    path: tuple[tuple[SeqStmts, int], ...]   # (block, index) from the function body down to the op


@dataclass
class SyncPlan:
    """Lines to emit before and after statements (keyed by `id(stmt)`)."""

    before: dict[int, list[str]] = field(default_factory=dict)
    after: dict[int, list[str]] = field(default_factory=dict)

    def count(self) -> int:
        return sum(len(v) for v in self.before.values()) + sum(len(v) for v in self.after.values())


class _Walk:
    def __init__(self, pipe_of: PipeOf) -> None:
        self.pipe_of = pipe_of
        self.writer: dict[Hashable, _Op] = {}
        self.readers: dict[Hashable, dict[str, _Op]] = {}
        self.deps: dict[tuple[int, int], tuple[_Op, _Op]] = {}
        self.path: list[tuple[SeqStmts, int]] = []

    def seq(self, b: SeqStmts) -> None:
        for i, s in enumerate(b.stmts):
            self.path.append((b, i))
            self.stmt(s)
            self.path.pop()

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, (ForStmt, WhileStmt)):
            self.seq(s.body)
            self.seq(s.body)     # what the next iteration needs from this one
        elif isinstance(s, IfStmt):
            self.seq(s.then_body)
            if s.else_body is not None:
                self.seq(s.else_body)
        elif isinstance(s, ScopeStmt):
            self.seq(s.body)
        elif isinstance(s, SeqStmts):
            self.seq(s)
        elif isinstance(s, (AssignStmt, EvalStmt)):
            call = s.value if isinstance(s, AssignStmt) else s.expr
            if isinstance(call, Call) and isinstance(call.op, str):
                self.op(s, call, s.var if isinstance(s, AssignStmt) else None)

    def op(self, s: Stmt, call: Call, dst: Var | None) -> None:
        spec = get_op(call.op)  # type: ignore[arg-type]
        pipe = self.pipe_of(spec, call)
        if pipe not in PTO_PIPES:
            return
        reads, writes = call_buffers(spec, call, dst if dst is not None and isinstance(dst.type, TileType) else None,
                                     _key)
        me = _Op(s, pipe, tuple(self.path))
        for r in reads:
            for k, w in self.writer.items():
                if conflict(r, k):
                    self.dep(w, me)
        for wk in writes:
            for k, w in self.writer.items():
                if conflict(wk, k):
                    self.dep(w, me)
            for k, rs in self.readers.items():
                if conflict(wk, k):
                    for r in rs.values():
                        self.dep(r, me)
        for r in reads:
            self.readers.setdefault(r, {})[pipe] = me
        for wk in writes:
            self.writer[wk] = me
            self.readers[wk] = {}

    def dep(self, p: _Op, c: _Op) -> None:
        if p.pipe != c.pipe and p.stmt is not c.stmt:
            self.deps.setdefault((id(p.stmt), id(c.stmt)), (p, c))


def _place(p: _Op, c: _Op) -> tuple[str, Stmt, Stmt, Stmt | None, int, int] | None:
    """("fwd", P', C', None, index of P', index of C') or ("loop", P'', C'', L, index of P'', index
    of C''); None when the two never meet (branches of one if, outside any loop)."""
    n = min(len(p.path), len(c.path))
    i = 0
    while i < n and p.path[i][0] is c.path[i][0] and p.path[i][1] == c.path[i][1]:
        i += 1
    if i < n and p.path[i][0] is c.path[i][0]:
        block, pi, ci = p.path[i][0], p.path[i][1], c.path[i][1]
        if pi < ci:
            return ("fwd", block.stmts[pi], block.stmts[ci], None, pi, ci)
    # loop-carried: the innermost loop holding both
    for j in range(i - 1, -1, -1):
        block, idx = p.path[j]
        s = block.stmts[idx]
        if isinstance(s, (ForStmt, WhileStmt)):
            bp, bc = p.path[j + 1], c.path[j + 1]
            ps, cs = bp[0].stmts[bp[1]], bc[0].stmts[bc[1]]
            return ("fwd" if bp[1] < bc[1] else "loop", ps, cs, None if bp[1] < bc[1] else s, bp[1], bc[1])
    return None


def plan_sync(func: Function, pipe_of: PipeOf) -> SyncPlan:
    """The set_flag / wait_flag lines of kernel `func` (module docstring); `pipe_of(spec, call)`
    names the pipe an op runs on ("mte2", "vector", ...; others are not synchronised)."""
    w = _Walk(pipe_of)
    w.stmt(func.body)
    # one flag per producer statement and pipe pair: of its consumers on one pipe, the first in the
    # block waits (a pipe runs in order, so the later ones come after it anyway) ...
    first: dict[tuple, tuple[int, Stmt, int]] = {}
    for p, c in w.deps.values():
        where = _place(p, c)
        if where is None:
            continue
        kind, ps, cs, loop, pi, ci = where
        key = (kind, ps, loop, PTO_PIPES[p.pipe], PTO_PIPES[c.pipe])
        if key not in first or ci < first[key][0]:
            first[key] = (ci, cs, pi)
    # ... and of the producers on one pipe a consumer waits for, only the last one
    last: dict[tuple, tuple[int, Stmt]] = {}
    for (kind, ps, loop, src, dst), (_, cs, pi) in first.items():
        key = (kind, cs, loop, src, dst)
        if key not in last or pi > last[key][0]:
            last[key] = (pi, ps)
    plan = SyncPlan()
    next_id: dict[tuple[str, str], int] = {}
    for (_kind, cs, loop, src, dst), (_, ps) in last.items():
        ev = next_id.get((src, dst), 0)
        next_id[(src, dst)] = ev + 1
        args = f"[<{src}>, <{dst}>, <EVENT_ID{ev % EVENT_IDS}>]"
        plan.after.setdefault(id(ps), []).append(f"pto.set_flag{args}")
        plan.before.setdefault(id(cs), []).append(f"pto.wait_flag{args}")
        if loop is not None:
            plan.before.setdefault(id(loop), []).append(f"pto.set_flag{args}")
            plan.after.setdefault(id(loop), []).append(f"pto.wait_flag{args}")
    return plan
