"""InitMemRef: give every on-chip tile value a buffer descriptor (MemRef) (SPEC §5).

Each tile-typed Var defined in an InCore function (assignment targets, loop iter args and return
vars, if return vars) gets `MemRef(space, id, size)`: a distinct buffer id, its memory space and
its size in bytes (elements × dtype bytes, rounded up to the 32-byte alignment). A loop's return
var shares the buffer of its iter arg (the value after the loop *is* the last carried value);
addresses are assigned later by AllocateMemoryAddr. Parameters are DDR tensors and get none.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import FunctionType, MemorySpace
from ..core.errors import InternalError
from ..ir.expr import Var
from ..ir.function import Function, Program
from ..ir.stmt import ForStmt, Stmt, WhileStmt
from ..ir.types import MemRef, TileType, num_elements
from ..ir.visitor import IRMutator
from .base import FunctionPass, PassContext

__all__ = ["InitMemRef", "tile_bytes", "align_up"]


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def tile_bytes(t: TileType) -> int:
    """Bytes a tile of type `t` occupies (sub-byte dtypes packed)."""
    return (num_elements(t) * t.dtype.get_bit() + 7) // 8


class _Assign(IRMutator):
    def __init__(self, alignment: int) -> None:
        super().__init__()
        self.alignment = alignment
        self.next_id = 0
        self.shared: dict[Var, MemRef] = {}  # return var -> memref of its iter arg

    def new_memref(self, t: TileType) -> MemRef:
        space = t.memory_space or MemorySpace.Vec
        m = MemRef(space, self.next_id, align_up(tile_bytes(t), self.alignment))
        self.next_id += 1
        return m

    def visit_binding(self, v: Var) -> Var:
        if v in self.var_map:
            return self.var_map[v]  # type: ignore[return-value]
        t = v.type
        if not isinstance(t, TileType) or t.memref is not None:
            return super().visit_binding(v)
        m = self.shared.get(v) or self.new_memref(t)
        nv = replace(v, var_type=replace(t, memory_space=m.memory_space, memref=m))
        self.var_map[v] = nv
        return nv

    def visit_ForStmt(self, s: ForStmt) -> Stmt:
        self.share(s)
        return super().visit_ForStmt(s)

    def visit_WhileStmt(self, s: WhileStmt) -> Stmt:
        self.share(s)
        return super().visit_WhileStmt(s)

    def share(self, s: ForStmt | WhileStmt) -> None:
        for ia, rv in zip(s.iter_args, s.return_vars):
            if isinstance(ia.type, TileType):
                nia = self.visit_binding(ia)
                m = nia.type.memref  # type: ignore[attr-defined]
                if m is None:
                    raise InternalError("iter arg without memref")
                self.shared[rv] = m


class InitMemRef(FunctionPass):
    name = "InitMemRef"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.func_type is FunctionType.Orchestration:
            return func
        return _Assign(ctx.soc.alignment).visit_function(func)
