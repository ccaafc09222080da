"""AllocateMemoryAddr: place every buffer of a kernel at a concrete address (SPEC §5, §6).

Buffers (distinct MemRef ids) of each memory space are laid out one after another from address 0,
each aligned to the SoC's 32-byte alignment. The total per space is checked against the usable
capacity of that space on one core of the target; exceeding it raises MemoryCapacityError naming
the function, the memory space, the bytes needed and the bytes available, and the three largest
tiles with their lines; it points at the statement defining the largest. Peak bytes per space per
kernel are recorded in `ctx.records["memory"][kernel][space]` as `{"peak": bytes placed,
"naive": bytes without MemoryReuse (one address per tile), "capacity": usable bytes per core}`;
the compile driver writes them to `report/memory_usage.json`.

Cross-core pipe rings (`pipe_rings`: the slots a consumer reserves for a pipe that runs on chip)
are buffers like the others — InitMemRef defines them first, so they sit at the start of their
space — and count towards the capacity. A space holding one also records `"rings": [{"name",
"direction", "addr", "bytes", "slots", "slot_bytes"}]`, and when it overflows the error names the
ring, where it sits, the first tile that no longer fits after it and the
`pl.cross_core_slot(slot_num=N)` that would make room (or says that no ring depth would).
"""

from __future__ import annotations

from dataclasses import replace

from ..backend import SoCModel
from ..core.enums import FunctionType, MemorySpace
from ..core.errors import MemoryCapacityError
from ..core.span import Span
from ..ir.expr import Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt
from ..ir.types import MemRef, TileType
from ..ir.visitor import IRVisitor
from .base import FunctionPass, PassContext
from .blocking_reason import blocking_note
from .pipe_rings import RingUse, ring_uses
from .rewrite import MemRefRewriter
from .tile_layout import align_up

__all__ = ["AllocateMemoryAddr"]

Key = tuple[MemorySpace, int]


class _Collect(IRVisitor):
    def __init__(self) -> None:
        self.memrefs: dict[Key, MemRef] = {}
        self.owner: dict[Key, Var] = {}  # first var seen in each buffer
        self.defined: dict[Var, Span] = {}  # the statement binding each assigned var

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        if s.span.is_known():
            self.defined.setdefault(s.var, s.span)
        super().visit_AssignStmt(s)

    def site(self, v: Var, func: Function) -> Span:
        """Where tile `v` is defined: its assignment, else its own span, else the function's."""
        return self.defined.get(v) or (v.span if v.span.is_known() else func.span)

    def visit_Var(self, e: Var) -> None:
        t = e.type
        if isinstance(t, TileType) and t.memref is not None:
            key = (t.memref.memory_space, t.memref.id)
            self.memrefs.setdefault(key, t.memref)
            self.owner.setdefault(key, e)

    visit_IterArg = visit_Var


class _Place(MemRefRewriter):
    def __init__(self, addrs: dict[Key, int]) -> None:
        super().__init__()
        self.addrs = addrs

    def rewrite_memref(self, m: MemRef) -> MemRef:
        return replace(m, addr=self.addrs[(m.memory_space, m.id)])


def _line(span: Span) -> str:
    return f", line {span.begin_line}" if span.is_known() else ""


def _ring_text(u: RingUse, addr: int) -> str:
    slots, slot_bytes = u.shape
    per = f"{u.rings} rings x {slots // u.rings} slots" if u.rings > 1 else f"{slots} slots"
    space = u.var.type.memref.memory_space.name  # type: ignore[attr-defined]
    return (f"ring '{u.var.name}' of pipe {u.direction} ({per} of {slot_bytes} B) takes "
            f"{space} [{addr}, {addr + slots * slot_bytes})")


def _ring_overflow(func: Function, soc: SoCModel, space: MemorySpace, total: int, placed: list[tuple[Key, int]],
                   c: _Collect, rings: dict[Key, RingUse]) -> MemoryCapacityError:
    """The error for a space holding pipe rings that overflows (module docstring)."""
    cap = soc.capacity_of(space)
    where = "; ".join(_ring_text(rings[k], a) for k, a in placed if k in rings)
    late = next(((k, a) for k, a in placed if k not in rings and a + c.memrefs[k].size > cap), None)
    span = func.span
    if late is None:
        fits = "the ring alone does not fit"
    else:
        v = c.owner[late[0]]
        span = c.site(v, func)
        fits = (f"tile '{v.name}' ({c.memrefs[late[0]].size} B at [{late[1]}, {late[1] + c.memrefs[late[0]].size})"
                f"{_line(span)}) no longer fits")
    per_slot = sum(u.rings * u.shape[1] for k, u in rings.items() if k[0] is space)
    depth = min(u.shape[0] // u.rings for k, u in rings.items() if k[0] is space)
    n = depth - -(-(total - cap) // per_slot)
    hint = (f"shrink the ring with pl.cross_core_slot(slot_num={n}) among the kernel's optimizations, or use "
            f"smaller tiles" if n >= 1 else
            "no ring depth makes room (even 1 slot leaves too little): use smaller tiles or loop over blocks")
    return MemoryCapacityError(
        f"function '{func.name}': its tiles and cross-core pipe ring need {total} bytes of {space.name} memory "
        f"but {soc.backend.name} has only {cap} bytes of {space.name} per core: {where}, and {fits}; {hint}",
        span)


def _tiles_overflow(func: Function, soc: SoCModel, space: MemorySpace, total: int, c: _Collect,
                    unblocked: str | None = None) -> MemoryCapacityError:
    """The error for a space of tiles only that overflows: it names the three largest tiles with their
    lines and points at the largest one's defining statement."""
    cap = soc.capacity_of(space)
    bufs = sorted(((m.size, c.owner[k]) for k, m in c.memrefs.items() if k[0] is space), key=lambda b: -b[0])[:3]
    sites = [c.site(v, func) for _, v in bufs]
    largest = ", ".join(f"'{v.name}' {size} B (line {at.begin_line})" for (size, v), at in zip(bufs, sites))
    return MemoryCapacityError(
        f"function '{func.name}': live tiles need {total} bytes of {space.name} memory but "
        f"{soc.backend.name} has only {cap} bytes of {space.name} per core (largest: {largest}); "
        f"use smaller tiles or loop over blocks{'' if unblocked is None else blocking_note(unblocked)}", sites[0])


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
        rings: dict[Key, RingUse] = {}
        for v, u in ring_uses(func).items():
            m = v.type.memref  # type: ignore[attr-defined]
            if m is not None:
                rings[(m.memory_space, m.id)] = u
        addrs: dict[Key, int] = {}
        used: dict[MemorySpace, int] = {}
        placed: dict[MemorySpace, list[tuple[Key, int]]] = {}
        for (space, mid), m in sorted(c.memrefs.items(), key=lambda kv: (kv[0][0].name, kv[0][1])):
            base = align_up(used.get(space, 0), soc.alignment)
            addrs[(space, mid)] = base
            placed.setdefault(space, []).append(((space, mid), base))
            used[space] = base + m.size
        for space, total in used.items():
            if total > soc.capacity_of(space):
                if any(k[0] is space for k in rings):
                    raise _ring_overflow(func, soc, space, total, placed[space], c, rings)
                raise _tiles_overflow(func, soc, space, total, c, ctx.records.get("unblocked", {}).get(func.name))
        naive = ctx.records.get("memory_reuse", {}).get(func.name, {})
        usage: dict[str, dict] = {
            s.name: {"peak": b, "naive": max(b, naive.get(s.name, {}).get("naive", b)),
                     "capacity": soc.capacity_of(s)}
            for s, b in sorted(used.items(), key=lambda kv: kv[0].name)}
        for key, u in sorted(rings.items(), key=lambda kv: kv[1].var.name):
            slots, slot_bytes = u.shape
            usage[key[0].name].setdefault("rings", []).append(
                {"name": u.var.name, "direction": u.direction, "addr": addrs[key], "bytes": slots * slot_bytes,
                 "slots": slots, "slot_bytes": slot_bytes})
        ctx.records.setdefault("memory", {})[func.name] = usage
        return _Place(addrs).visit_function(func)
