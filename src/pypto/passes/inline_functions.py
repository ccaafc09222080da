"""InlineFunctions: calls of `FunctionType.Inline` functions are replaced by their bodies (SPEC §5).

`@pl.inline` / `@pl.jit.inline` helpers are already spliced by the parser; this pass handles
programs that contain Inline functions as such (e.g. printed IR, or programs built by hand): each
`x = self.helper(args)` becomes a copy of the helper's body with parameters bound to the
arguments and fresh variables for everything it defines, and `x` bound to the returned value.
Inline functions are then removed from the program. A helper whose return is not its last
statement, or that (indirectly) calls itself, is a CompileError.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import FunctionType
from ..core.errors import CompileError
from ..ir.expr import Call, Expr, GlobalVar, MakeTuple
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, EvalStmt, ReturnStmt, SeqStmts, Stmt
from ..ir.visitor import IRMutator
from .analysis import defined_vars
from .base import Pass, PassContext
from .rewrite import FreshBindings

__all__ = ["InlineFunctions"]


class _Inliner(IRMutator):
    def __init__(self, inline: dict[str, Function], stack: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.inline = inline
        self.stack = stack

    def splice(self, call: Call) -> tuple[list[Stmt], Expr]:
        name = call.op.name  # type: ignore[union-attr]
        if name in self.stack:
            raise CompileError(f"inline function '{name}' calls itself", call.span)
        f = self.inline[name]
        ren = FreshBindings(dict(zip(f.params, call.args)))
        for v in defined_vars(f.body):
            ren.visit_binding(v)
        body = _Inliner(self.inline, self.stack + (name,)).visit_seq(ren.visit_seq(f.body))
        stmts = list(body.stmts)
        rets = [i for i, s in enumerate(stmts) if isinstance(s, ReturnStmt)]
        if rets and rets != [len(stmts) - 1]:
            raise CompileError(f"inline function '{name}' must return only at its end", f.span)
        if not rets:
            return stmts, MakeTuple(())
        ret = stmts.pop()
        vals = ret.values  # type: ignore[attr-defined]
        return stmts, vals[0] if len(vals) == 1 else MakeTuple(tuple(vals), span=call.span)

    def is_inline_call(self, e: Expr) -> bool:
        return isinstance(e, Call) and isinstance(e.op, GlobalVar) and e.op.name in self.inline

    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for st in s.stmts:
            st2 = self.visit_stmt(st)
            value = st2.value if isinstance(st2, AssignStmt) else st2.expr if isinstance(st2, EvalStmt) else None
            if value is not None and self.is_inline_call(value):
                pre, result = self.splice(value)  # type: ignore[arg-type]
                out.extend(pre)
                if isinstance(st2, AssignStmt):
                    out.append(AssignStmt(st2.var, result, span=st2.span))
                changed = True
            else:
                changed |= st2 is not st
                out.append(st2)
        return replace(s, stmts=tuple(out)) if changed else s


class InlineFunctions(Pass):
    name = "InlineFunctions"

    def run(self, program: Program, ctx: PassContext) -> Program:
        inline = {f.name: f for f in program.functions if f.func_type is FunctionType.Inline}
        if not inline:
            return program
        kept = [_Inliner(inline).visit_function(f) for f in program.functions
                if f.func_type is not FunctionType.Inline]
        return replace(program, functions=tuple(kept))
