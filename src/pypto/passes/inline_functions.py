"""InlineFunctions: calls of `FunctionType.Inline` functions are replaced by their bodies (SPEC §5).

`@pl.inline` / `@pl.jit.inline` helpers are already spliced by the parser; this pass handles
programs that contain Inline functions as such (e.g. printed IR, or programs built by hand): each
`x = self.helper(args)` becomes a copy of the helper's body with parameters bound to the
arguments and fresh variables for everything it defines, and `x` bound to the returned value. An
argument that is not a variable or a constant, or whose parameter the body assigns to, is first
bound to a fresh variable (Python's parameter semantics: evaluated once, rebinding stays local).
Explicit dependencies of the call (`self.helper(..., deps=[t])`) go onto every task the spliced
body submits (its calls of program functions and its `pl.at` regions). Inline functions are then
removed from the program. A helper whose return is not its last
statement, or that (indirectly) calls itself, is a CompileError.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import FunctionType, ScopeKind
from ..core.errors import CompileError
from ..ir.expr import Call, ConstBool, ConstFloat, ConstInt, Expr, GlobalVar, MakeTuple, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, EvalStmt, ReturnStmt, ScopeStmt, SeqStmts, Stmt
from ..ir.visitor import IRMutator
from .analysis import defined_vars
from .base import Pass, PassContext
from .rewrite import FreshBindings

__all__ = ["InlineFunctions"]


def _merged(own: tuple[Expr, ...], extra: tuple[Expr, ...]) -> tuple[Expr, ...]:
    return own + tuple(d for d in extra if not any(d is x for x in own))


class _AddDeps(IRMutator):
    """Adds the inlined call's explicit deps to every task-submitting call and InCore region."""

    def __init__(self, deps: tuple[Expr, ...]) -> None:
        super().__init__()
        self.deps = deps

    def visit_Call(self, e: Call) -> Expr:
        e = super().visit_Call(e)  # type: ignore[assignment]
        return replace(e, deps=_merged(e.deps, self.deps)) if isinstance(e.op, GlobalVar) else e

    def visit_ScopeStmt(self, s: ScopeStmt) -> Stmt:
        if s.kind is ScopeKind.InCore:  # one task; calls inside it are part of its kernel
            return replace(s, deps=_merged(s.deps, self.deps))
        return super().visit_ScopeStmt(s)


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
        defined = defined_vars(f.body)
        bound: dict[Var, Expr] = {}
        pre: list[Stmt] = []
        for p, a in zip(f.params, call.args):
            if isinstance(a, (Var, ConstInt, ConstFloat, ConstBool)) and p not in defined:
                bound[p] = a
            else:  # evaluated once, and a variable the body may rebind (like a Python parameter)
                v = Var(p.name, a.type, span=call.span)
                pre.append(AssignStmt(v, a, span=call.span))
                bound[p] = v
        ren = FreshBindings(bound)
        for v in defined:
            ren.visit_binding(v)
        body = _Inliner(self.inline, self.stack + (name,)).visit_seq(ren.visit_seq(f.body))
        if call.deps:
            body = _AddDeps(call.deps).visit_seq(body)
        stmts = pre + list(body.stmts)
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
