"""InferTileMemorySpace: every tile gets a memory space; operands are moved where ops need them.

Ops declare the memory space each tile operand must be in (`OpSpec.operand_spaces`, e.g. matmul
wants Left/Right). When an operand lives elsewhere the pass inserts `tile.move(x,
target_memory=...)` before the op, if the backend allows that move (SPEC §6 "Allowed moves");
otherwise it raises CompileError naming the op, operand and both memory spaces. Tiles without a
memory space default to Vec.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import FunctionType, MemorySpace
from ..core.errors import CompileError
from ..ir.expr import Call, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, SeqStmts, Stmt
from ..ir.types import TileType, Type
from ..ir.visitor import IRMutator
from ..ops import get_op
from .base import FunctionPass, PassContext
from .op_builder import build_call

__all__ = ["InferTileMemorySpace"]


class _Infer(IRMutator):
    def __init__(self, ctx: PassContext) -> None:
        super().__init__()
        self.ctx = ctx

    def visit_type(self, t: Type) -> Type:
        t = super().visit_type(t)
        if isinstance(t, TileType) and t.memory_space is None:
            return replace(t, memory_space=MemorySpace.Vec)
        return t

    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for st in s.stmts:
            pre: list[Stmt] = []
            if isinstance(st, AssignStmt) and isinstance(st.value, Call) and isinstance(st.value.op, str):
                st2 = self.place_operands(st, pre)
                changed |= st2 is not st
                st = st2
            y = self.visit_stmt(st)
            changed |= y is not st or bool(pre)
            out.extend(pre)
            out.append(y)
        return replace(s, stmts=tuple(out)) if changed else s

    def place_operands(self, st: AssignStmt, pre: list[Stmt]) -> AssignStmt:
        call = st.value
        spec = get_op(call.op)  # type: ignore[arg-type]
        if not spec.operand_spaces:
            return st
        args = list(call.args)
        for i, spaces in spec.operand_spaces.items():
            a = self.visit_expr(args[i])
            t = a.type
            if not isinstance(t, TileType) or t.memory_space in spaces:
                continue
            want = spaces[0]
            src = t.memory_space or MemorySpace.Vec
            if (src, want) not in self.ctx.soc.allowed_moves:
                raise CompileError(
                    f"{call.op}: operand {spec.params[i]!r} is in {src.name} but must be in {want.name}, "
                    f"and {self.ctx.backend_type.name} cannot move {src.name} → {want.name}; load it "
                    f"with target_memory=pl.Mem.Mat and move it to {want.name}", st.span)
            mv = build_call("tile.move", [a], {"target_memory": want}, st.span)
            nv = Var(f"{getattr(a, 'name', 't')}_{want.name.lower()}", mv.type, span=st.span)
            pre.append(AssignStmt(nv, mv, span=st.span))
            args[i] = nv
        new_call = build_call(call.op, [self.visit_expr(a) for a in args], dict(call.kwargs), st.span)  # type: ignore[arg-type]
        nv = replace(st.var, var_type=new_call.type) if isinstance(st.var.type, TileType) else st.var
        if nv is not st.var:
            self.var_map[st.var] = nv
        return AssignStmt(nv, new_call, span=st.span)


class InferTileMemorySpace(FunctionPass):
    name = "InferTileMemorySpace"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.func_type is FunctionType.Orchestration:
            return func
        return _Infer(ctx).visit_function(func)
