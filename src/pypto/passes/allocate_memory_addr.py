"""AllocateMemoryAddr: place every buffer of a kernel at a concrete address (SPEC §5, §6).

Buffers (distinct MemRef ids) of each memory space are laid out one after another from address 0,
each aligned to the SoC's 32-byte alignment. The total per space is checked against the usable
capacity of that space on one core of the target; exceeding it raises MemoryCapacityError naming
the function, the memory space, the bytes needed and the bytes available. Peak bytes per space per
kernel are recorded in `ctx.records["memory"][kernel][space]` as `{"peak": bytes placed,
"naive": bytes without MemoryReuse (one address per tile), "capacity": usable bytes per core}`;
the compile driver writes them to `report/memory_usage.json`.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import FunctionType, MemorySpace
from ..core.errors import MemoryCapacityError
from ..ir.expr import Var
from ..ir.function import Function, Program
from ..ir.types import MemRef, TileType
from ..ir.visitor import IRVisitor
from .base import FunctionPass, PassContext
from .init_memref import align_up
from .rewrite import MemRefRewriter

__all__ = ["AllocateMemoryAddr"]


class _Collect(IRVisitor):
    def __init__(self) -> None:
        self.memrefs: dict[tuple[MemorySpace, int], MemRef] = {}
        self.owner: dict[tuple[MemorySpace, int], Var] = {}  # first var seen in each buffer

    def visit_Var(self, e: Var) -> None:
        t = e.type
        if isinstance(t, TileType) and t.memref is not None:
            key = (t.memref.memory_space, t.memref.id)
            self.memrefs.setdefault(key, t.memref)
            self.owner.setdefault(key, e)

    visit_IterArg = visit_Var


class _Place(MemRefRewriter):
    def __init__(self, addrs: dict[tuple[MemorySpace, int], int]) -> None:
        super().__init__()
        self.addrs = addrs

    def rewrite_memref(self, m: MemRef) -> MemRef:
        return replace(m, addr=self.addrs[(m.memory_space, m.id)])


class AllocateMemoryAddr(FunctionPass):
    name = "AllocateMemoryAddr"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.func_type is FunctionType.Orchestration:
            return func
        c = _Collect()
        c.visit_function(func)
        if not c.memrefs:
            return func
        soc = ctx.soc
        addrs: dict[tuple[MemorySpace, int], int] = {}
        used: dict[MemorySpace, int] = {}
        for (space, mid), m in sorted(c.memrefs.items(), key=lambda kv: (kv[0][0].name, kv[0][1])):
            if m.addr >= 0 and (space, mid) in addrs:
                continue
            base = align_up(used.get(space, 0), soc.alignment)
            addrs[(space, mid)] = base
            used[space] = base + m.size
        for space, total in used.items():
            cap = soc.capacity_of(space)
            if total > cap:
                bufs = sorted(((m.size, c.owner[k]) for k, m in c.memrefs.items() if k[0] is space),
                              key=lambda b: -b[0])[:3]
                largest = ", ".join(f"'{v.name}' {size} B (line {v.span.begin_line})" for size, v in bufs)
                raise MemoryCapacityError(
                    f"function '{func.name}': live tiles need {total} bytes of {space.name} memory but "
                    f"{soc.backend.name} has only {cap} bytes of {space.name} per core (largest: {largest}); "
                    f"use smaller tiles or loop over blocks", func.span)
        naive = ctx.records.get("memory_reuse", {}).get(func.name, {})
        ctx.records.setdefault("memory", {})[func.name] = {
            s.name: {"peak": b, "naive": max(b, naive.get(s.name, {}).get("naive", b)),
                     "capacity": soc.capacity_of(s)}
            for s, b in sorted(used.items(), key=lambda kv: kv[0].name)}
        return _Place(addrs).visit_function(func)
