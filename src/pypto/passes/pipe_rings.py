"""The rings of cross-core pipes in the consumer's on-chip memory: the step of InitMemRef that
reserves them (SPEC §6 "Cross-core pipe ring depth", "Allowed moves"; Language Guide "InCore
Scopes", `pl.cross_core_slot`).

Where a pipe runs on chip — the producer moves each tile straight into the consumer's memory:
Acc → Vec and Vec → Mat on Ascend950 (`SoCModel.pipe_route` "direct") — its slots are bytes of the
*consumer's* memory, holding the tiles in flight; they compete with the consumer's tiles for space.
`add_pipe_rings` gives a kernel that receives on such a pipe (through pops that name no ring yet)
one ring tile per direction, at the top of its body, and makes those pops name it
(`pypto.ops.system`, "The ring in the consumer's memory"):

    c2v_ring = pl.tile.create([slots, slot_bytes], dtype=pl.UINT8, target_memory=pl.Mem.Vec)
    ...
    p = pl.system.tpop_from_aic([64, 64], c2v_ring, dtype=pl.FP32, split=pl.SplitMode.NONE)

- memory: the one the pop delivers into — Vec on a vector core receiving from the cube core
  (AIC->AIV), Mat (L1) on the cube core receiving from the vector cores (AIV->AIC). The producer
  writes the consumer's memory directly (the Acc → Vec / Vec → Mat moves of SPEC §6), so the ring
  lives with the consumer and the producer keeps no copy;
- slots = rings × depth. depth: `ring_depths` of the directions live in the Group function that
  calls the kernel, with its `pl.cross_core_slot(slot_num=...)`. rings: 2 on the cube core when
  its pops take halves from both vector cores (a pop with a split), else 1 (each vector core
  hosts its own ring in its own Vec);
- slot_bytes: the largest tile the kernel pops from the direction — on the cube core under a split,
  one vector core's half — as laid out in the consumer's memory (`buffer_bytes`: a multiple of the
  32-byte alignment).

InitMemRef sizes a ring as the byte array it is (slots × slot_bytes; no fractal layout in Mat). It
is live from the top of the kernel through its last pop, so MemoryReuse never shares its bytes with
a tile while the producer may still write them, and AllocateMemoryAddr places and capacity-checks
it like any buffer: a deeper ring leaves less room for tiles, `pl.cross_core_slot(slot_num=N)` with
a smaller N frees room (the AllocateMemoryAddr error says by how much).

Where a pipe goes through DDR (Ascend910B: Acc → DDR → Vec, Vec → DDR → Mat) the slots are the DDR
slot buffer the runtime provides (`MixedConfig` gm_bytes in the orchestration) and nothing more is
reserved on chip: each tile lands in the popped tile's own buffer, planned like any tile. A kernel
that no Group function calls gets no ring (its pipes cannot run). Pops that already name a ring (a
hand-partitioned kernel's own) are left as written.

`ring_uses(func)` lists the rings a kernel's pops name, with their direction and ring count, for
InitMemRef (dense sizes), AllocateMemoryAddr (report and capacity errors) and codegen.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..backend import SoCModel
from ..core.dtype import INDEX
from ..core.enums import FunctionType, SplitMode
from ..core.errors import CompileError
from ..ir.expr import Call, ConstInt, Expr, GlobalVar, MakeTuple, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, SeqStmts
from ..ir.types import TileType, static_shape
from ..ir.visitor import IRMutator, IRVisitor
from ..ops.system import RING_DTYPE, TO_AIC, TO_AIV, pipe_ring, pipe_role, ring_depths
from .op_builder import build_call
from .split_vector_kernel import split_dim
from .tile_layout import buffer_bytes

__all__ = ["add_pipe_rings", "ring_uses", "RingUse"]

_KERNELS = frozenset({FunctionType.InCore, FunctionType.AIC, FunctionType.AIV})
_TAG = {TO_AIV: "c2v", TO_AIC: "v2c"}   # ring names: c2v_ring (AIC->AIV), v2c_ring (AIV->AIC)


@dataclass
class RingUse:
    """A ring tile named by pops of one kernel: pipe `direction`, popped on core `side` ("AIC" /
    "AIV"); `rings` per tile (2 when the cube core takes halves from both vector cores)."""

    var: Var
    direction: str
    side: str
    rings: int = 1

    @property
    def shape(self) -> tuple[int, int]:
        """(slots, slot_bytes) of the tile."""
        rows, cols = static_shape(self.var.type)  # type: ignore[arg-type]
        return rows, cols


class _Pops(IRVisitor):
    """Pipe pops and pushes of the visited functions."""

    def __init__(self) -> None:
        self.pops: list[Call] = []
        self.pushes: list[Call] = []
        self.directions: set[str] = set()

    def visit_Call(self, e: Call) -> None:
        super().visit_Call(e)
        role = pipe_role(e.op) if isinstance(e.op, str) else None
        if role is None or role.kind == "free":
            return
        self.directions.add(role.direction)
        (self.pops if role.kind == "pop" else self.pushes).append(e)


def _pops_of(func: Function) -> _Pops:
    p = _Pops()
    p.visit_function(func)
    return p


def _split(c: Call) -> bool:
    return c.attr("split", SplitMode.NONE) is not SplitMode.NONE


def ring_uses(func: Function) -> dict[Var, RingUse]:
    """The ring tiles `func`'s pops name (first pop decides the direction)."""
    out: dict[Var, RingUse] = {}
    for c in _pops_of(func).pops:
        v = pipe_ring(c)
        if not isinstance(v, Var):
            continue
        role = pipe_role(c.op)  # type: ignore[arg-type]
        u = out.setdefault(v, RingUse(v, role.direction, role.side))  # type: ignore[union-attr]
        if role.side == "AIC" and _split(c):  # type: ignore[union-attr]
            u.rings = 2
    return out


def _callees(f: Function) -> list[str]:
    names: list[str] = []

    class _Calls(IRVisitor):
        def visit_Call(self, e: Call) -> None:
            super().visit_Call(e)
            if isinstance(e.op, GlobalVar) and e.op.name not in names:
                names.append(e.op.name)

    _Calls().visit_function(f)
    return names


def _group_pipes(func: Function, program: Program, soc: SoCModel) -> tuple[dict[str, int], dict[str, str]] | None:
    """(slots per ring, route) of each live direction of the Group function(s) calling `func`;
    None when no Group function calls it.

    Raises:
        CompileError: two Group functions call `func` with different rings.
    """
    found: dict[str, tuple[dict[str, int], dict[str, str]]] = {}
    for g in program.functions:
        if g.func_type is not FunctionType.Group or func.name not in (members := _callees(g)):
            continue
        pipes = _Pops()
        for name in members:
            m = program.get_function(name)
            if m is not None:
                pipes.visit_function(m)
        route: dict[str, str] = {}
        for c in pipes.pushes:
            role, t = pipe_role(c.op), c.args[0].type  # type: ignore[arg-type]
            if isinstance(t, TileType):
                r = soc.pipe_route(t.memory_space or role.sender_space, role.receiver_space)  # type: ignore[union-attr]
                if r is not None:
                    route[role.direction] = "gm" if "gm" in (r, route.get(role.direction)) else r  # type: ignore[union-attr]
        opts = dict(g.optimizations)
        slot_num = dict(opts["cross_core_slot"])["slot_num"] if "cross_core_slot" in opts else None
        found[g.name] = (ring_depths(frozenset(pipes.directions), slot_num), route)
    if not found:
        return None
    plans = list(found.values())
    if any(p != plans[0] for p in plans[1:]):
        raise CompileError(f"kernel '{func.name}' is called by Group functions {', '.join(sorted(found))} "
                           f"with different cross-core pipe rings; give them the same pl.cross_core_slot",
                           func.span)
    return plans[0]


def _slot_bytes(c: Call, soc: SoCModel) -> int:
    """Bytes of one slot for the tile pop `c` receives: its piece per vector core, laid out in the
    receiving memory."""
    t = c.type
    assert isinstance(t, TileType)
    role = pipe_role(c.op)  # type: ignore[arg-type]
    d = split_dim(t, c.attr("split", SplitMode.NONE)) if role.side == "AIC" else None  # type: ignore[union-attr]
    if d is not None:
        shape = list(static_shape(t))
        shape[d] //= 2
        t = replace(t, shape=tuple(ConstInt(n, INDEX) for n in shape))
    return buffer_bytes(replace(t, memory_space=role.receiver_space), soc)  # type: ignore[union-attr]


class _NameRings(IRMutator):
    def __init__(self, rings: dict[str, Var]) -> None:
        super().__init__()
        self.rings = rings

    def visit_Call(self, e: Call) -> Expr:
        e2 = super().visit_Call(e)
        role = pipe_role(e2.op) if isinstance(e2, Call) and isinstance(e2.op, str) else None
        if role is not None and role.kind == "pop" and pipe_ring(e2) is None and role.direction in self.rings:
            return build_call(e2.op, [*e2.args, self.rings[role.direction]], dict(e2.kwargs), e2.span)  # type: ignore[union-attr, arg-type]
        return e2


def add_pipe_rings(func: Function, program: Program, soc: SoCModel) -> Function:
    """`func` with a ring tile for each pipe direction it receives on chip (module docstring);
    `func` itself when it needs none.

    Raises:
        CompileError: Group functions calling `func` disagree on its rings.
    """
    if func.func_type not in _KERNELS:
        return func
    bare: dict[str, list[Call]] = {}
    for c in _pops_of(func).pops:
        if pipe_ring(c) is None:
            bare.setdefault(pipe_role(c.op).direction, []).append(c)  # type: ignore[arg-type, union-attr]
    if not bare:
        return func
    group = _group_pipes(func, program, soc)
    if group is None:
        return func
    depth, route = group
    defs: list[AssignStmt] = []
    rings: dict[str, Var] = {}
    for direction, calls in sorted(bare.items()):
        if route.get(direction) != "direct" or direction not in depth:
            continue
        role = pipe_role(calls[0].op)  # type: ignore[arg-type]
        n = 2 if role.side == "AIC" and any(_split(c) for c in calls) else 1  # type: ignore[union-attr]
        shape = (n * depth[direction], max(_slot_bytes(c, soc) for c in calls))
        create = build_call("tile.create", [MakeTuple(tuple(ConstInt(x, INDEX) for x in shape))],
                            {"dtype": RING_DTYPE, "target_memory": role.receiver_space}, func.span)  # type: ignore[union-attr]
        v = Var(f"{_TAG[direction]}_ring", create.type, span=func.span)
        defs.append(AssignStmt(v, create, span=func.span))
        rings[direction] = v
    if not rings:
        return func
    body = _NameRings(rings).visit_seq(func.body)
    return replace(func, body=SeqStmts(tuple(defs) + body.stmts, span=func.body.span))
