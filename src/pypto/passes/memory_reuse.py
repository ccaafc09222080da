"""MemoryReuse: buffers whose lifetimes do not overlap share one buffer (SPEC §5 "MemoryReuse").

Runs between InitMemRef (every tile has its own MemRef, except the sharing InitMemRef itself does
for carried values) and AllocateMemoryAddr (one address per MemRef id). For each kernel and memory
space, the buffers' live intervals (`liveness.buffer_intervals`, which keeps loop-carried and
loop-returned values alive through the whole loop and until their last use) are packed by a linear
scan: buffers in order of first definition, each joining the *best-fitting* earlier group whose
buffers are all dead before it starts (smallest group at least as large; else the largest group,
which grows), or opening a new group. Every Var of a group then carries the group's MemRef (the id
of its first buffer, the size of its largest), so AllocateMemoryAddr places the group at one address.

In place: a buffer defined by an op that may write its result over an operand (`OpSpec.inplace_args`:
elementwise ops, matmul_acc's accumulator; operand of the result's shape and dtype) may also join
the group of that operand when the operand dies at that very op — `c = a + b` with `a` read for the
last time computes `c` in `a`'s buffer.

Records, per kernel and memory space, in `ctx.records["memory_reuse"][kernel][space]`:
`naive` (bytes if every buffer had its own address, each rounded to the 32-byte alignment),
`reused` (bytes after sharing) and `buffers` / `groups` (counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.enums import FunctionType, MemorySpace
from ..ir.function import Function, Program
from ..ir.types import MemRef
from .base import FunctionPass, PassContext
from .init_memref import align_up
from .liveness import BufferKey, Interval, buffer_intervals_in_place
from .rewrite import MemRefRewriter

__all__ = ["MemoryReuse", "plan_reuse", "reuse_plan"]


@dataclass
class _Group:
    id: int
    size: int
    end: int
    members: list[int] = field(default_factory=list)


def plan_reuse(intervals: dict[BufferKey, Interval],
               in_place: dict[BufferKey, frozenset[BufferKey]] | None = None) -> dict[BufferKey, tuple[int, int]]:
    """Map each buffer to (shared id, shared size in bytes); see the module docstring.

    `in_place` (from `liveness.in_place_operands`): a buffer may also join the group whose last
    member is one of its in-place operands dying at the buffer's defining op.
    Buffers of different memory spaces never share. Deterministic: ties break on buffer id.
    """
    in_place = in_place or {}
    plan: dict[BufferKey, tuple[int, int]] = {}
    by_space: dict[MemorySpace, list[tuple[int, Interval]]] = {}
    for (space, mid), iv in intervals.items():
        by_space.setdefault(space, []).append((mid, iv))
    for space, bufs in by_space.items():
        groups: list[_Group] = []
        for mid, iv in sorted(bufs, key=lambda b: (b[1].start, b[0])):
            over = in_place.get((space, mid), frozenset())
            free = [g for g in groups if g.end < iv.start
                    or (g.end == iv.start and (space, g.members[-1]) in over)]
            fits = [g for g in free if g.size >= iv.size]
            if fits:
                g = min(fits, key=lambda g: (g.size, g.id))
            elif free:
                g = max(free, key=lambda g: (g.size, -g.id))
            else:
                g = _Group(mid, 0, -1)
                groups.append(g)
            g.size, g.end = max(g.size, iv.size), max(g.end, iv.end)
            g.members.append(mid)
        for g in groups:
            for mid in g.members:
                plan[(space, mid)] = (g.id, g.size)
    return plan


class _Share(MemRefRewriter):
    def __init__(self, plan: dict[BufferKey, tuple[int, int]]) -> None:
        super().__init__()
        self.plan = plan

    def rewrite_memref(self, m: MemRef) -> MemRef:
        gid, size = self.plan[(m.memory_space, m.id)]
        return MemRef(m.memory_space, gid, size)


class MemoryReuse(FunctionPass):
    """Share on-chip buffers between tiles whose live ranges do not overlap."""

    name = "MemoryReuse"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        planned = reuse_plan(func, ctx)
        if planned is None:
            return func
        plan, stats = planned
        ctx.records.setdefault("memory_reuse", {})[func.name] = stats
        return _Share(plan).visit_function(func)


def reuse_plan(func: Function, ctx: PassContext) -> tuple[dict[BufferKey, tuple[int, int]],
                                                          dict[str, dict[str, int]]] | None:
    """What MemoryReuse does to kernel `func`, without rewriting it: the plan (`plan_reuse`) and
    the function's entry of `ctx.records["memory_reuse"]` (module docstring); None when the pass
    leaves `func` as it is (an Orchestration function, or no buffers). Used as it is by the block
    footprint of TileTensorBlocks (`block_shape.footprint`)."""
    if func.func_type is FunctionType.Orchestration:
        return None
    intervals, in_place = buffer_intervals_in_place(func)
    if not intervals:
        return None
    plan = plan_reuse(intervals, in_place)
    align = ctx.soc.alignment
    stats: dict[str, dict[str, int]] = {}
    for (space, mid), iv in sorted(intervals.items(), key=lambda kv: (kv[0][0].name, kv[0][1])):
        s = stats.setdefault(space.name, {"naive": 0, "reused": 0, "buffers": 0, "groups": 0})
        s["naive"] += align_up(iv.size, align)
        s["buffers"] += 1
        gid, size = plan[(space, mid)]
        if gid == mid:
            s["reused"] += align_up(size, align)
            s["groups"] += 1
    return plan, stats
