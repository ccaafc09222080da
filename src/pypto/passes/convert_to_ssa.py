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
body assigns it before any read (so no iteration reads the previous one's value) and no statement
that may run after the loop reads it before assigning it again (the rest of the enclosing blocks,
the next iterations of enclosing loops). Likewise an `if` merges only variables whose value may be
read after it. Carrying or merging such a variable would only make a value (possibly an on-chip
tile of a `pl.at` region, its name reused by later regions) outlive its scope.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.errors import CompileError
from ..ir.expr import Expr, IterArg, Var
from ..ir.function import Function, Program
from ..ir.stmt import (
    AssignStmt,
    BreakStmt,
    ContinueStmt,
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
from .analysis import assigned_vars, reads_var
from .base import FunctionPass, PassContext

__all__ = ["ConvertToSSA"]


class _Subst(IRMutator):
    """Replace uses of original Vars by their current SSA version."""


# How running statements in order meets a variable (`_flow`).
_READ = "read"          # some path may read it before assigning it
_ASSIGNED = "assigned"  # every path assigns it before reading it
_JUMP = "jump"          # no path reads it first, but one may leave (break / continue / return) first
_NONE = "none"          # they neither read it nor surely assign it


def _flow(stmts: tuple[Stmt, ...], v: Var) -> str:
    """`_READ`, `_ASSIGNED`, `_JUMP` or `_NONE` for `stmts` run in order (see the constants)."""
    jumped = False
    for st in stmts:
        r = _flow_stmt(st, v)
        if r is _READ:
            return _READ
        if r is _ASSIGNED:
            return _JUMP if jumped else _ASSIGNED
        jumped = jumped or r is _JUMP
    return _JUMP if jumped else _NONE


def _flow_stmt(st: Stmt, v: Var) -> str:
    if isinstance(st, SeqStmts):
        return _flow(st.stmts, v)
    if isinstance(st, ScopeStmt):  # explicit deps are read before the region runs
        return _READ if any(reads_var(d, v) for d in (*st.deps, *st.no_dep_args)) else _flow(st.body.stmts, v)
    if isinstance(st, IfStmt):
        if reads_var(st.cond, v):
            return _READ
        branches = (_flow(st.then_body.stmts, v), _flow(st.else_body.stmts, v) if st.else_body is not None else _NONE)
        for r in (_READ, _JUMP):
            if r in branches:
                return r
        return _ASSIGNED if branches == (_ASSIGNED, _ASSIGNED) else _NONE
    if isinstance(st, (ForStmt, WhileStmt)):  # may run zero times; its jumps stay inside it
        heads = [ia.init for ia in st.iter_args if ia.init is not None]
        heads += [st.start, st.stop, st.step] if isinstance(st, ForStmt) else [st.cond]
        return _READ if any(reads_var(e, v) for e in heads) or _flow(st.body.stmts, v) is _READ else _NONE
    if reads_var(st, v):
        return _READ
    if isinstance(st, AssignStmt) and st.var is v:
        return _ASSIGNED
    return _JUMP if isinstance(st, (BreakStmt, ContinueStmt, ReturnStmt)) else _NONE


class _Places:
    """Where each statement of a function body sits: its block, its index there and the statement
    owning that block (None for the function body), keyed by `id` of the original statement."""

    def __init__(self, body: SeqStmts) -> None:
        self.at: dict[int, tuple[Stmt | None, tuple[Stmt, ...], int]] = {}
        self._walk(None, body)

    def _walk(self, owner: Stmt | None, block: SeqStmts) -> None:
        for i, st in enumerate(block.stmts):
            self.at[id(st)] = (owner, block.stmts, i)
            if isinstance(st, SeqStmts):
                self._walk(st, st)
            elif isinstance(st, IfStmt):
                self._walk(st, st.then_body)
                if st.else_body is not None:
                    self._walk(st, st.else_body)
            elif isinstance(st, (ForStmt, WhileStmt, ScopeStmt)):
                self._walk(st, st.body)

    def read_after(self, stmt: Stmt, v: Var) -> bool:
        """Whether a statement that may run after `stmt` may read `v` before assigning it: the rest
        of each enclosing block, outwards, and the next iteration of each enclosing loop."""
        node: Stmt | None = stmt
        while node is not None and id(node) in self.at:
            owner, block, i = self.at[id(node)]
            r = _flow(block[i + 1:], v)
            if r is _READ:
                return True
            if r is _ASSIGNED:
                return False
            if isinstance(owner, (ForStmt, WhileStmt)) and (
                    (isinstance(owner, WhileStmt) and reads_var(owner.cond, v)) or _flow(owner.body.stmts, v) is _READ):
                return True
            node = owner
        return False


class _SSABuilder:
    def __init__(self, params: tuple[Var, ...], places: _Places) -> None:
        self.env: dict[Var, Expr] = {p: p for p in params}
        self.defined: set[Var] = set(params)
        self.places = places

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
            return [replace(s, deps=tuple(self.use(d) for d in s.deps),
                            no_dep_args=tuple(self.use(d) for d in s.no_dep_args), body=self.block(s.body))]
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
            if (isinstance(s, WhileStmt) and reads_var(s.cond, v)) or _flow(s.body.stmts, v) is _READ \
                    or self.places.read_after(s, v):
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
                  if (v in before or (v in then_assigned and v in else_assigned)) and self.places.read_after(s, v)]
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
        b = _SSABuilder(func.params, _Places(func.body))
        body = b.block(func.body)
        return replace(func, body=body)
