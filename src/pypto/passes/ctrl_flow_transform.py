"""CtrlFlowTransform: `break` / `continue` become structured control flow (SPEC §5).

Runs before ConvertToSSA, on IR that may still rebind variables. For a loop whose body (not an
inner loop) contains `break` or `continue`:
- a BOOL flag `_brk` is set to False before the loop and `break` becomes `_brk = True`;
- a BOOL flag `_cnt` is reset to False at the start of every iteration and `continue` becomes
  `_cnt = True` (the leading `_` keeps the compiler's flags out of the W001/W002 warnings);
- every statement after one that may escape is guarded by `if not (_brk or _cnt):`;
- a `for` body is additionally guarded by `if not _brk:` (later iterations do nothing), a `while`
  condition becomes `cond and not _brk`.
The values a loop carries are then exactly Python's: whatever was assigned before the escape.
ConvertToSSA turns the flags into loop-carried scalars. In a loop with explicit `init_values`,
the final `pl.yield_(v...)` becomes `cur = v` assignments inside the guarded code, the body
starts with `cur = iter_arg`, and an unguarded `pl.yield_(cur...)` ends it.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.dtype import BOOL
from ..core.errors import CompileError
from ..ir.expr import BinaryExpr, ConstBool, Expr, UnaryExpr, Var
from ..ir.function import Function, Program
from ..ir.stmt import (
    AssignStmt,
    BreakStmt,
    ContinueStmt,
    ForStmt,
    IfStmt,
    ScopeStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
    YieldStmt,
)
from ..ir.types import ScalarType
from ..ir.visitor import IRMutator
from .base import FunctionPass, PassContext

__all__ = ["CtrlFlowTransform"]

_BOOL = ScalarType(BOOL)


def _escapes(s: Stmt, kind: type) -> bool:
    """Does `s` contain a `kind` (Break/Continue) belonging to the enclosing loop?"""
    if isinstance(s, kind):
        return True
    if isinstance(s, (ForStmt, WhileStmt)):
        return False  # escapes inside an inner loop belong to it
    if isinstance(s, IfStmt):
        return _escapes(s.then_body, kind) or (s.else_body is not None and _escapes(s.else_body, kind))
    if isinstance(s, (SeqStmts, ScopeStmt)):
        stmts = s.stmts if isinstance(s, SeqStmts) else s.body.stmts
        return any(_escapes(x, kind) for x in stmts)
    return False


class _LoopRewriter:
    def __init__(self, brk: Var | None, cnt: Var | None) -> None:
        self.brk, self.cnt = brk, cnt

    def flags_clear(self, span) -> Expr:  # type: ignore[no-untyped-def]
        flags = [f for f in (self.brk, self.cnt) if f is not None]
        e: Expr = flags[0]
        for f in flags[1:]:
            e = BinaryExpr("or", e, f, BOOL, span=span)
        return UnaryExpr("not", e, BOOL, span=span)

    def block(self, s: SeqStmts) -> SeqStmts:
        out: list[Stmt] = []
        stmts = list(s.stmts)
        for i, st in enumerate(stmts):
            if not (_escapes(st, BreakStmt) or _escapes(st, ContinueStmt)):
                out.append(st)
                continue
            out.append(self.rewrite(st))
            rest = stmts[i + 1:]
            if rest:
                guarded = self.block(SeqStmts(tuple(rest), span=rest[0].span))
                out.append(IfStmt(self.flags_clear(rest[0].span), guarded, None, span=rest[0].span))
            break
        return replace(s, stmts=tuple(out))

    def rewrite(self, s: Stmt) -> Stmt:
        if isinstance(s, BreakStmt):
            return AssignStmt(self.brk, ConstBool(True, span=s.span), span=s.span)  # type: ignore[arg-type]
        if isinstance(s, ContinueStmt):
            return AssignStmt(self.cnt, ConstBool(True, span=s.span), span=s.span)  # type: ignore[arg-type]
        if isinstance(s, IfStmt):
            return replace(s, then_body=self.block(s.then_body),
                           else_body=self.block(s.else_body) if s.else_body is not None else None)
        if isinstance(s, ScopeStmt):
            return replace(s, body=self.block(s.body))
        if isinstance(s, SeqStmts):
            return self.block(s)
        return s


class _Transform(IRMutator):
    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for st in s.stmts:
            y = self.visit_stmt(st)
            if isinstance(y, (ForStmt, WhileStmt)) and (
                    _escapes(y.body, BreakStmt) or _escapes(y.body, ContinueStmt)):
                out.extend(self.lower(y))
                changed = True
            else:
                changed |= y is not st
                out.append(y)
        return replace(s, stmts=tuple(out)) if changed else s

    def lower(self, loop: ForStmt | WhileStmt) -> list[Stmt]:
        span = loop.span
        # leading '_': the flags are the compiler's, so value_warnings never reports them (W002)
        brk = Var("_brk", _BOOL, span=span) if _escapes(loop.body, BreakStmt) else None
        cnt = Var("_cnt", _BOOL, span=span) if _escapes(loop.body, ContinueStmt) else None
        stmts = list(loop.body.stmts)
        # Explicit loop-carried values: the final pl.yield_ becomes assignments to "current value"
        # variables (initialised from the iter args), and an unguarded yield of them ends the body.
        cur: list[Var] = []
        head: list[Stmt] = []
        if loop.iter_args:
            last = stmts.pop() if stmts and isinstance(stmts[-1], YieldStmt) else None
            if last is None:
                raise CompileError("a loop with init_values must end with pl.yield_", span)
            for ia, v in zip(loop.iter_args, last.values):
                c = Var(f"{ia.name}_cur", ia.type, span=span)
                cur.append(c)
                head.append(AssignStmt(c, ia, span=span))
                stmts.append(AssignStmt(c, v, span=last.span))
        inner = _LoopRewriter(brk, cnt).block(SeqStmts(tuple(stmts), span=span)).stmts
        if cnt is not None:
            inner = (AssignStmt(cnt, ConstBool(False, span=span), span=span),) + inner
        pre: list[Stmt] = []
        if brk is not None:
            pre.append(AssignStmt(brk, ConstBool(False, span=span), span=span))
            not_brk = UnaryExpr("not", brk, BOOL, span=span)
            if isinstance(loop, ForStmt):
                inner = (IfStmt(not_brk, SeqStmts(inner, span=span), None, span=span),)
            else:
                loop = replace(loop, cond=BinaryExpr("and", loop.cond, not_brk, BOOL, span=span))
        tail = (YieldStmt(tuple(cur), span=span),) if cur else ()
        body = SeqStmts(tuple(head) + inner + tail, span=loop.body.span)
        return pre + [replace(loop, body=body)]


class CtrlFlowTransform(FunctionPass):
    name = "CtrlFlowTransform"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        return _Transform().visit_function(func)
