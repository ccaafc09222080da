"""ConvertToSSA: give every variable exactly one definition (Language Guide "Automatic SSA Conversion").

The parser accepts non-SSA source: a Var may be assigned several times, and a loop or if may
rebind variables of the enclosing scope without `init_values` / `pl.yield_`. This pass:
- renames every re-definition to a fresh Var (the first definition keeps its Var);
- turns an outer variable re-assigned inside a `for`/`while` body into a loop-carried value:
  an IterArg initialised with the value before the loop, yielded at the end of the body, and a
  return var holding the value after the loop;
- turns an outer variable re-assigned in an `if` branch (or assigned in both branches) into an
  if result: both branches yield their value and a return var holds it afterwards.
Variables first defined inside a loop body stay local to it (never loop-carried, SPEC §9).
"""

from __future__ import annotations

from dataclasses import replace

from ..core.errors import CompileError
from ..ir.expr import Expr, IterArg, Var
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
from ..ir.visitor import IRMutator
from .analysis import assigned_vars
from .base import FunctionPass, PassContext

__all__ = ["ConvertToSSA"]


class _Subst(IRMutator):
    """Replace uses of original Vars by their current SSA version."""


class _SSABuilder:
    def __init__(self, params: tuple[Var, ...]) -> None:
        self.env: dict[Var, Expr] = {p: p for p in params}
        self.defined: set[Var] = set(params)

    def use(self, e: Expr) -> Expr:
        return _Subst(self.env).visit_expr(e)

    def fresh(self, v: Var) -> Var:
        """The SSA Var for a new definition of original `v`."""
        if v not in self.defined:
            self.defined.add(v)
            nv = v
        else:
            nv = Var(v.name, v.type, span=v.span)
        self.env[v] = nv
        return nv

    # ---- statements ------------------------------------------------------------------------
    def block(self, s: SeqStmts) -> SeqStmts:
        out: list[Stmt] = []
        for st in s.stmts:
            out.extend(self.stmt(st))
        return SeqStmts(tuple(out), span=s.span)

    def stmt(self, s: Stmt) -> list[Stmt]:
        if isinstance(s, AssignStmt):
            value = self.use(s.value)
            return [AssignStmt(self.fresh(s.var), value, span=s.span)]
        if isinstance(s, (EvalStmt, ReturnStmt, YieldStmt)):
            return [_Subst(self.env).visit_stmt(s)]
        if isinstance(s, SeqStmts):
            return list(self.block(s).stmts)
        if isinstance(s, ScopeStmt):  # explicit deps are read before the region runs
            return [replace(s, deps=tuple(self.use(d) for d in s.deps), body=self.block(s.body))]
        if isinstance(s, ForStmt):
            return [self.loop(s)]
        if isinstance(s, WhileStmt):
            return [self.loop(s)]
        if isinstance(s, IfStmt):
            return [self.if_(s)]
        return [s]  # break / continue

    def carried(self, body: Stmt) -> list[Var]:
        """Outer variables (already defined) that `body` re-assigns."""
        return [v for v in assigned_vars(body) if v in self.env]

    def loop(self, s: ForStmt | WhileStmt) -> Stmt:
        carried = self.carried(s.body)
        iter_args = []
        for ia in s.iter_args:  # explicit SSA loop-carried values keep their IterArgs
            init = self.use(ia.init) if ia.init is not None else None
            nia = replace(ia, init=init)
            self.env[ia] = nia
            iter_args.append(nia)
        implicit = []
        for v in carried:
            ia = IterArg(v.name, v.type, init=self.env[v], span=v.span)
            implicit.append((v, ia))
            iter_args.append(ia)
        saved = dict(self.env)
        for v, ia in implicit:
            self.env[v] = ia
        loop_var = s.loop_var if isinstance(s, ForStmt) else None
        if loop_var is not None:
            self.env[loop_var] = loop_var
        cond = self.use(s.cond) if isinstance(s, WhileStmt) else None
        body = self.block(s.body)
        extra = tuple(self.env[v] for v, _ in implicit)
        body = _append_yield(body, extra, s)
        self.env = saved
        rvs = list(s.return_vars)
        for v, _ in implicit:
            rvs.append(self.fresh(v))
        for rv in s.return_vars:
            self.env[rv] = rv
            self.defined.add(rv)
        common = dict(iter_args=tuple(iter_args), body=body, return_vars=tuple(rvs))
        if isinstance(s, ForStmt):
            return replace(s, start=self.use(s.start), stop=self.use(s.stop), step=self.use(s.step), **common)
        return replace(s, cond=cond, **common)

    def if_(self, s: IfStmt) -> IfStmt:
        cond = self.use(s.cond)
        before = dict(self.env)
        then = self.block(s.then_body)
        env_then = self.env
        self.env = dict(before)
        els = self.block(s.else_body) if s.else_body is not None else None
        env_else = self.env
        self.env = dict(before)
        then_assigned = assigned_vars(s.then_body)
        else_assigned = assigned_vars(s.else_body) if s.else_body is not None else {}
        merged = [v for v in {**then_assigned, **else_assigned}
                  if v in before or (v in then_assigned and v in else_assigned)]
        for rv in s.return_vars:  # explicit results (pl.yield_) are defined after the if
            self.env[rv] = rv
            self.defined.add(rv)
        if not merged:
            return replace(s, cond=cond, then_body=then, else_body=els)
        then = _append_yield(then, tuple(env_then[v] for v in merged), s)
        else_vals = tuple(env_else.get(v, before.get(v)) for v in merged)
        base = els if els is not None else SeqStmts((), span=s.span)
        els = _append_yield(base, else_vals, s)  # type: ignore[arg-type]
        rvs = list(s.return_vars)
        for v in merged:
            rvs.append(self.fresh(v))
        return replace(s, cond=cond, then_body=then, else_body=els, return_vars=tuple(rvs))


def _append_yield(body: SeqStmts, extra: tuple[Expr, ...], owner: Stmt) -> SeqStmts:
    if not extra:
        return body
    if any(e is None for e in extra):
        raise CompileError("a variable assigned in only one branch of an if is used after it; "
                           "assign it before the if or in both branches", owner.span)
    stmts = list(body.stmts)
    if stmts and isinstance(stmts[-1], YieldStmt):
        last = stmts.pop()
        stmts.append(replace(last, values=last.values + extra))
    else:
        stmts.append(YieldStmt(extra, span=owner.span))
    return replace(body, stmts=tuple(stmts))


class ConvertToSSA(FunctionPass):
    name = "ConvertToSSA"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        b = _SSABuilder(func.params)
        body = b.block(func.body)
        return replace(func, body=body)
