"""FlattenCallExpr: no call is nested inside another call's arguments (SPEC §5).

`c = pl.tensor.assemble(c, pl.tensor.add(a, b), [0, 0])` becomes
`t = pl.tensor.add(a, b); c = pl.tensor.assemble(c, t, [0, 0])`, so that every op result has a
name (and, later, a buffer). Calls nested in conditions, loop bounds, yields, returns and explicit
`deps=[...]` are hoisted the same way.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.expr import Call, Expr, MakeTuple, TupleGetItem, Var
from ..ir.function import Function, Program
from ..ir.stmt import (
    AssignStmt,
    EvalStmt,
    ForStmt,
    IfStmt,
    ReturnStmt,
    ScopeStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
    YieldStmt,
)
from .base import FunctionPass, PassContext

__all__ = ["FlattenCallExpr"]


class _Flattener:
    def __init__(self) -> None:
        self.pre: list[Stmt] = []

    def hoist(self, e: Expr) -> Expr:
        """`e` with nested calls replaced by fresh Vars (assignments appended to `self.pre`)."""
        if isinstance(e, Call):
            flat = self.flat_call(e)
            v = Var(_name_of(flat), flat.type, span=e.span)
            self.pre.append(AssignStmt(v, flat, span=e.span))
            return v
        if isinstance(e, MakeTuple):
            els = [self.hoist(x) for x in e.elements]
            return e if all(a is b for a, b in zip(els, e.elements)) else replace(e, elements=tuple(els))
        if isinstance(e, TupleGetItem):
            t = self.hoist(e.tuple_value)
            return e if t is e.tuple_value else replace(e, tuple_value=t)
        return e

    def flat_call(self, c: Call) -> Call:
        args = [self.hoist(a) for a in c.args]
        deps = [self.hoist(d) for d in c.deps]  # explicit deps end up as Vars too
        if all(a is b for a, b in zip(args, c.args)) and all(a is b for a, b in zip(deps, c.deps)):
            return c
        return replace(c, args=tuple(args), deps=tuple(deps))

    def top(self, e: Expr) -> Expr:
        """An expression in statement position: a call may stay, its arguments are flattened."""
        return self.flat_call(e) if isinstance(e, Call) else self.hoist(e)

    def block(self, s: SeqStmts) -> SeqStmts:
        out: list[Stmt] = []
        changed = False
        for st in s.stmts:
            self.pre = []
            new = self.stmt(st)
            changed |= new is not st or bool(self.pre)
            out.extend(self.pre)
            out.append(new)
        return replace(s, stmts=tuple(out)) if changed else s

    def stmt(self, s: Stmt) -> Stmt:
        if isinstance(s, AssignStmt):
            v = self.top(s.value)
            return s if v is s.value else replace(s, value=v)
        if isinstance(s, EvalStmt):
            v = self.top(s.expr)
            return s if v is s.expr else replace(s, expr=v)
        if isinstance(s, (ReturnStmt, YieldStmt)):
            vals = tuple(self.hoist(v) for v in s.values)
            return s if all(a is b for a, b in zip(vals, s.values)) else replace(s, values=vals)
        if isinstance(s, IfStmt):
            cond = self.hoist(s.cond)
            pre = self.pre
            then = self.block(s.then_body)
            els = self.block(s.else_body) if s.else_body is not None else None
            self.pre = pre
            return replace(s, cond=cond, then_body=then, else_body=els)
        if isinstance(s, ForStmt):
            pre = self.pre
            body = self.block(s.body)
            self.pre = pre
            return s if body is s.body else replace(s, body=body)
        if isinstance(s, ScopeStmt):
            deps = tuple(self.hoist(d) for d in s.deps)
            pre = self.pre
            body = self.block(s.body)
            self.pre = pre
            if body is s.body and all(a is b for a, b in zip(deps, s.deps)):
                return s
            return replace(s, body=body, deps=deps)
        if isinstance(s, WhileStmt):
            pre = self.pre
            body = self.block(s.body)
            self.pre = pre
            return s if body is s.body else replace(s, body=body)
        return s


def _name_of(c: Call) -> str:
    return c.op_name.rsplit(".", 1)[-1].rstrip("_")


class FlattenCallExpr(FunctionPass):
    name = "FlattenCallExpr"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        body = _Flattener().block(func.body)
        return func if body is func.body else replace(func, body=body)
