"""InferTileMemorySpace: every tile gets a memory space; operands are moved where ops need them.

Ops declare the memory space each tile operand must be in (`OpSpec.operand_spaces`, e.g. matmul
wants Left/Right). When an operand lives elsewhere the pass inserts `tile.move(x,
target_memory=...)` before the op, along a path the backend has (SPEC §6 "Allowed moves"):

- one move when the backend moves the tile there directly (Mat → Left, Mat → Bias, ...);
- else two, through Mat — the memory the cube unit stages its operands in — when the backend moves
  Mat there and the tile can reach Mat: a move the chip makes (Acc → Mat; Vec → Mat on Ascend950),
  or, in an InCore kernel that ExpandMixedKernel splits, the vector-to-cube pipe (Vec → DDR → Mat
  on Ascend910B). A Vec operand of a cube op thus becomes `tile.move(x, Mat)` (the transfer) then
  `tile.move(x_mat, Left)`; the Mat copy is made once per block however many ops use it;
- else a CompileError naming the op, the operand and both memory spaces.

Tiles without a memory space default to Vec.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import FunctionType, MemorySpace
from ..core.errors import CompileError
from ..ir.expr import Call, Expr, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, SeqStmts, Stmt
from ..ir.types import TileType, Type
from ..ir.visitor import IRMutator
from ..ops import get_op
from .base import FunctionPass, PassContext
from .op_builder import build_call

__all__ = ["InferTileMemorySpace"]

_STAGE = MemorySpace.Mat  # where the cube unit's operands come from


class _Infer(IRMutator):
    def __init__(self, ctx: PassContext, piped: bool) -> None:
        super().__init__()
        self.ctx = ctx
        self.piped = piped  # an InCore kernel: a vector tile may cross to the cube core
        self.staged: dict[Expr, Var] = {}  # tile -> its copy in Mat, made earlier in this block

    def visit_type(self, t: Type) -> Type:
        t = super().visit_type(t)
        if isinstance(t, TileType) and t.memory_space is None:
            return replace(t, memory_space=MemorySpace.Vec)
        return t

    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        saved = dict(self.staged)  # copies made in a nested block stay in it
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
        self.staged = saved
        return replace(s, stmts=tuple(out)) if changed else s

    def route(self, src: MemorySpace, want: MemorySpace) -> list[MemorySpace] | None:
        """The memories a tile in `src` passes through to reach `want` (module docstring)."""
        soc = self.ctx.soc
        if (src, want) in soc.allowed_moves:
            return [want]
        reach = (src, _STAGE) in soc.allowed_moves or (self.piped and soc.pipe_route(src, _STAGE) is not None)
        if (_STAGE, want) in soc.allowed_moves and reach:
            return [_STAGE, want]
        return None

    def move(self, a: Expr, space: MemorySpace, st: AssignStmt, pre: list[Stmt]) -> Var:
        if space is _STAGE and a in self.staged:
            return self.staged[a]
        mv = build_call("tile.move", [a], {"target_memory": space}, st.span)
        nv = Var(f"{getattr(a, 'name', 't')}_{space.name.lower()}", mv.type, span=st.span)
        pre.append(AssignStmt(nv, mv, span=st.span))
        if space is _STAGE:
            self.staged[a] = nv
        return nv

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
            path = self.route(src, want)
            if path is None:
                raise CompileError(
                    f"{call.op}: operand {spec.params[i]!r} is in {src.name} but must be in {want.name}, "
                    f"and {self.ctx.backend_type.name} cannot move {src.name} → {want.name}; load it "
                    f"with target_memory=pl.Mem.Mat and move it to {want.name}", st.span)
            for space in path:
                a = self.move(a, space, st, pre)
            args[i] = a
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
        return _Infer(ctx, func.func_type is FunctionType.InCore).visit_function(func)
