"""ConvertToSSA: give every variable exactly one definition (Language Guide "Automatic SSA Conversion").

The parser accepts non-SSA source: a Var may be assigned several times, and a loop or if may
rebind variables of the enclosing scope without `init_values` / `pl.yield_`. This pass:
- renames every re-definition to a fresh Var (the first definition keeps its Var);
- turns an outer variable re-assigned inside a `for`/`while` body into a loop-carried value:
  an IterArg initialised with the value before the loop, yielded at the end of the body, and a
  return var holding the value after the loop;
- turns an outer variable re-assigned in an `if` branch (or assigned in both branches) into an
  if result: both branches yield their value and a return var holds it afterwards.
Variables first defined inside a loop body stay local to it (never loop-carried, SPEC §9), and
so does an outer variable the body re-assigns when its value does not flow around the loop: the
body assigns it before any read (so no iteration reads the previous one's value) and nothing after
the loop — or in an enclosing loop — reads it. Carrying such a variable would only make a value
(possibly an on-chip tile of a `pl.at` region) outlive its scope.
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
from .analysis import UseVisitor, assigned_vars
from .base import FunctionPass, PassContext

__all__ = ["ConvertToSSA"]


class _Subst(IRMutator):
    """Replace uses of original Vars by their current SSA version."""


class _UsePositions(UseVisitor):
    """Statements numbered in pre-order; where each Var is read; each loop's number range and the
    loops around it (keyed by `id` of the original loop statement)."""

    def __init__(self) -> None:
        self.pos = 0
        self.uses: dict[Var, list[int]] = {}
        self.loops: dict[int, tuple[int, int, tuple[int, ...]]] = {}
        self._stack: list[int] = []

    def visit_stmt(self, s: Stmt) -> None:
        self.pos += 1
        if not isinstance(s, (ForStmt, WhileStmt)):
            super().visit_stmt(s)
            return
        start, around = self.pos, tuple(self._stack)
        self._stack.append(id(s))
        super().visit_stmt(s)
        self._stack.pop()
        self.loops[id(s)] = (start, self.pos, around)

    def on_use(self, v: Var) -> None:
        self.uses.setdefault(v, []).append(self.pos)

    def read_after(self, loop: Stmt, v: Var) -> bool:
        """Whether `v` is read after `loop`, or anywhere in a loop around it (its next iteration)."""
        _, end, around = self.loops[id(loop)]
        spans = [self.loops[a][:2] for a in around]
        return any(u > end or any(a <= u <= b for a, b in spans) for u in self.uses.get(v, ()))


def _reads(s: Stmt | Expr, v: Var) -> bool:
    found = [False]

    class _R(UseVisitor):
        def on_use(self, u: Var) -> None:
            found[0] = found[0] or u is v

    r = _R()
    if isinstance(s, Stmt):
        r.visit_stmt(s)
    else:
        r.visit_expr(s)
    return found[0]


def _read_first(stmts: tuple[Stmt, ...], v: Var) -> bool | None:
    """True if `stmts` (run in order) may read `v` before assigning it, False if they surely
    assign it first, None if they do neither."""
    for st in stmts:
        if isinstance(st, (SeqStmts, ScopeStmt)):
            inner = _read_first(st.stmts if isinstance(st, SeqStmts) else st.body.stmts, v)
            if isinstance(st, ScopeStmt) and any(d is v for d in st.deps):
                return True
            if inner is not None:
                return inner
            continue
        if _reads(st, v):
            return True
        if isinstance(st, AssignStmt) and st.var is v:
            return False
    return None


class _SSABuilder:
    def __init__(self, params: tuple[Var, ...], positions: _UsePositions) -> None:
        self.env: dict[Var, Expr] = {p: p for p in params}
        self.defined: set[Var] = set(params)
        self.positions = positions

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

    def carried(self, s: ForStmt | WhileStmt) -> list[Var]:
        """Outer variables (already defined) that the loop body re-assigns and whose value flows
        around the loop (module docstring)."""
        out = []
        for v in assigned_vars(s.body):
            if v not in self.env:
                continue
            if (isinstance(s, WhileStmt) and _reads(s.cond, v)) or _read_first(s.body.stmts, v) is not False \
                    or self.positions.read_after(s, v):
                out.append(v)
        return out

    def loop(self, s: ForStmt | WhileStmt) -> Stmt:
        carried = self.carried(s)
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
        positions = _UsePositions()
        positions.visit_stmt(func.body)
        b = _SSABuilder(func.params, positions)
        body = b.block(func.body)
        return replace(func, body=body)
